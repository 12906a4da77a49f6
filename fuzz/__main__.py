"""``python -m fuzz capture|shapes --minutes N``: run a capture fuzzer for a while, report what it found.

Each failure is printed as its ``Case`` (program, changes between calls, binding, backend; ready to
paste into ``prop_capture.FOUND``); the run goes on to the next program. ``--family NAME`` (repeatable)
draws programs of those families only (``capture_programs.ALL_FAMILIES``). The closing line counts the programs
tried, the failures, and how the compiled side fared (compiles, cache hits, fallbacks and their reasons).
"""
import argparse
import collections
import sys
import time
import traceback
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent / "src")]


def capture(minutes, seed, families=None, bindings=None, stop=False):
    import random

    import prop_capture
    from capture_programs import draw_case

    rng = random.Random(seed)

    def draw():
        case = draw_case(rng.choice, prop_capture.CALLS, families, bindings)
        return f"    {case!r}", [("", lambda: prop_capture.check(case))]

    return _fuzz(minutes, draw, stop)


def shapes(minutes, seed):
    """The dynamic-shapes fuzzer (``prop_shapes``): programs reading sizes, called at changing sizes."""
    import random

    import prop_shapes

    rng = random.Random(seed)

    def draw():
        source = prop_shapes.program(rng)
        return source, [("automatic", lambda: prop_shapes.check(source)),
                        ("dynamic=True", lambda: prop_shapes.check(source, dynamic=True))]

    return _fuzz(minutes, draw)


def _fuzz(minutes, draw, stop=False):
    """Check programs until ``minutes`` are up (or, with ``stop``, until the first failure). ``draw()``
    gives one: (how to print it, [(label, check)]), each ``check()`` returning the compiled side's Stats
    or raising; a program's first failure or crash is printed (with the seconds and programs it took to
    find) and ends its checks."""
    start = time.monotonic()
    deadline = start + 60 * minutes
    tried = failures = 0
    totals = collections.Counter()
    reasons = collections.Counter()
    while time.monotonic() < deadline and not (stop and failures):
        shown, checks = draw()
        tried += 1
        for label, check in checks:
            where = f" ({label})" if label else ""
            where += f" after {time.monotonic() - start:.1f} s, program {tried}"
            try:
                stats = check()
            except AssertionError as err:
                failures += 1
                print(f"--- FAILURE {failures}{where}: {err}\n{shown}", flush=True)
                break
            except Exception:  # noqa: BLE001 - a crash of the harness or of ours: report it too
                failures += 1
                print(f"--- CRASH {failures}{where}:\n{traceback.format_exc()}{shown}", flush=True)
                break
            totals.update(compiles=stats.compiles, cache_hits=stats.cache_hits, fallbacks=stats.fallbacks,
                          calls=stats.calls)
            reasons.update(r for r, _ in stats.reasons)
    print(f"{tried} programs, {failures} failures; compiled side: {dict(totals)}")
    for reason, n in reasons.most_common(10):
        print(f"  {n:5d}  {reason}")
    return 1 if failures else 0


def main(argv=None):
    from capture_programs import ALL_FAMILIES, BINDINGS
    parser = argparse.ArgumentParser(prog="python -m fuzz")
    sub = parser.add_subparsers(dest="what", required=True)
    cap = sub.add_parser("capture", help="compiled vs eager on programs that change outside state")
    cap.add_argument("--minutes", type=float, default=5.0)
    cap.add_argument("--seed", type=int, default=0)
    cap.add_argument("--family", action="append", choices=sorted(ALL_FAMILIES),
                     help="draw programs of this family only (repeatable; default: every family)")
    cap.add_argument("--binding", action="append", choices=sorted(BINDINGS),
                     help="bind the compiled function this way only (repeatable; default: every way)")
    cap.add_argument("--stop", action="store_true", help="stop at the first failure")
    shp = sub.add_parser("shapes", help="compiled vs eager on programs reading sizes that change between calls")
    shp.add_argument("--minutes", type=float, default=5.0)
    shp.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if args.what == "capture":
        return capture(args.minutes, args.seed, args.family, args.binding, args.stop)
    return shapes(args.minutes, args.seed)


if __name__ == "__main__":
    sys.exit(main())
