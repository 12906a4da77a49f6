"""``python -m fuzz capture|shapes --minutes N``: run a capture fuzzer for a while, report what it found.
``python -m fuzz opinfo``: PyTorch's OpInfo samples compiled vs eager, as a table (``opinfo_table.py``).

Each failure is printed with its program and changes between calls (ready to paste into
``prop_capture.FOUND``); the run goes on to the next program. The closing line counts the programs
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


def capture(minutes, seed):
    import random

    import prop_capture

    rng = random.Random(seed)

    def draw():
        body, changes = _draw(rng), _draw_changes(rng, prop_capture.CALLS)
        source = prop_capture.render(body)
        return f"    body={body!r}\n    changes={changes!r}", [("", lambda: prop_capture.check(source, changes))]

    return _fuzz(minutes, draw)


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


def _fuzz(minutes, draw):
    """Check programs until ``minutes`` are up. ``draw()`` gives one: (how to print it, [(label, check)]),
    each ``check()`` returning the compiled side's Stats or raising; a program's first failure or crash is
    printed and ends its checks."""
    deadline = time.monotonic() + 60 * minutes
    tried = failures = 0
    totals = collections.Counter()
    reasons = collections.Counter()
    while time.monotonic() < deadline:
        shown, checks = draw()
        tried += 1
        for label, check in checks:
            where = f" ({label})" if label else ""
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


def _draw(rng):
    """A list of 1–8 statements drawn with ``rng`` (reproducible by seed, unlike ``.example()``)."""
    from capture_programs import STATEMENTS, TENSOR_LISTS, INT_LISTS, TENSOR_DICTS, KEYS
    out = []
    for _ in range(rng.randint(1, 8)):
        out.append(rng.choice(STATEMENTS).format(
            T=rng.choice(TENSOR_LISTS), I=rng.choice(INT_LISTS), D=rng.choice(TENSOR_DICTS),
            k=rng.choice(KEYS), c=rng.randint(1, 3), i=rng.choice([0, -1]), big=rng.choice([2, 5])))
    return out


def _draw_changes(rng, calls):
    from capture_programs import BETWEEN
    return [rng.choice(BETWEEN) for _ in range(calls)]


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m fuzz")
    sub = parser.add_subparsers(dest="what", required=True)
    cap = sub.add_parser("capture", help="compiled vs eager on programs that change outside state")
    cap.add_argument("--minutes", type=float, default=5.0)
    cap.add_argument("--seed", type=int, default=0)
    shp = sub.add_parser("shapes", help="compiled vs eager on programs reading sizes that change between calls")
    shp.add_argument("--minutes", type=float, default=5.0)
    shp.add_argument("--seed", type=int, default=0)
    import opinfo_table

    opinfo_table.add_parser(sub)
    args = parser.parse_args(argv)
    if args.what == "opinfo":
        return opinfo_table.run(args)
    return (capture if args.what == "capture" else shapes)(args.minutes, args.seed)


if __name__ == "__main__":
    sys.exit(main())
