"""``python -m fuzz capture|shapes --minutes N``: run a capture fuzzer for a while, report what it found.
``python -m fuzz opinfo``: PyTorch's OpInfo samples compiled vs eager, as a table (``opinfo_table.py``).

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


def capture(minutes, seed, families=None, bindings=None, stop=False, shrink=False, reasons=()):
    import random

    import prop_capture
    from capture_programs import draw_case

    rng = random.Random(seed)

    def draw():
        case = draw_case(rng.choice, prop_capture.CALLS, families, bindings)
        return f"    {case!r}", [("", lambda: _checked(case, prop_capture.check, shrink))]

    return _fuzz(minutes, draw, stop, reasons)


def _checked(case, check, shrink):
    """``check(case)``; with ``shrink``, a failure also shows the smallest case found that still fails."""
    start = time.monotonic()
    try:
        return check(case)
    except AssertionError as err:
        if not shrink:
            raise
        seconds = time.monotonic() - start
        smallest, error = _shrunk(case, check)
        shrunk = AssertionError(f"{err}\n  shrunk to: {error}\n    {smallest!r}")
        shrunk.seconds_to_fail = seconds
        raise shrunk from err


def _shrunk(case, check):
    """The case with as few statements and changes between calls as still fail (statements dropped one
    at a time, changes set to ``pass``), and its failure."""
    import dataclasses

    def failure(candidate):
        try:
            check(candidate)
        except AssertionError as err:
            return err
        return None

    error = failure(case)
    for k in reversed(range(len(case.body))):
        smaller = dataclasses.replace(case, body=case.body[:k] + case.body[k + 1:])
        if smaller.body and (err := failure(smaller)):
            case, error = smaller, err
    for k, change in enumerate(case.changes):
        calmer = dataclasses.replace(case, changes=case.changes[:k] + ["pass"] + case.changes[k + 1:])
        if change != "pass" and (err := failure(calmer)):
            case, error = calmer, err
    return case, error


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


def _fuzz(minutes, draw, stop=False, wanted=()):
    """Check programs until ``minutes`` are up (or, with ``stop``, until the first failure; with ``wanted``,
    until a program falls back or breaks for a reason containing one of those texts). ``draw()``
    gives one: (how to print it, [(label, check)]), each ``check()`` returning the compiled side's Stats
    or raising; a program's first failure or crash is printed (with the seconds and programs it took to
    find) and ends its checks."""
    start = time.monotonic()
    deadline = start + 60 * minutes
    tried = failures = 0
    totals = collections.Counter()
    reasons = collections.Counter()
    found = None
    while time.monotonic() < deadline and not (stop and failures) and found is None:
        shown, checks = draw()
        tried += 1
        for label, check in checks:
            where = f" ({label})" if label else ""
            begun = time.monotonic()
            try:
                stats = check()
            except AssertionError as err:
                # (when found: shrinking it afterwards is not finding it)
                took = getattr(err, "seconds_to_fail", time.monotonic() - begun)
                where += f" after {begun - start + took:.1f} s, program {tried}"
                failures += 1
                print(f"--- FAILURE {failures}{where}: {err}\n{shown}", flush=True)
                break
            except Exception:  # noqa: BLE001 - a crash of the harness or of ours: report it too
                where += f" after {time.monotonic() - start:.1f} s, program {tried}"
                failures += 1
                print(f"--- CRASH {failures}{where}:\n{traceback.format_exc()}{shown}", flush=True)
                break
            totals.update(compiles=stats.compiles, cache_hits=stats.cache_hits, fallbacks=stats.fallbacks,
                          calls=stats.calls)
            reasons.update(r for r, _ in stats.reasons)
            found = next((r for r, _ in stats.reasons for text in wanted if text in r), None)
            if found is not None:
                print(f"--- REASON after {time.monotonic() - start:.1f} s, program {tried}: {found}\n{shown}",
                      flush=True)
                break
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
    cap.add_argument("--shrink", action="store_true", help="also show each failure's smallest failing case")
    cap.add_argument("--reason", action="append", default=[],
                     help="stop at the first program whose fallback or break reason contains this text "
                          "(repeatable): how to find a program behind a line of the closing table")
    shp = sub.add_parser("shapes", help="compiled vs eager on programs reading sizes that change between calls")
    shp.add_argument("--minutes", type=float, default=5.0)
    shp.add_argument("--seed", type=int, default=0)
    import opinfo_table

    opinfo_table.add_parser(sub)
    args = parser.parse_args(argv)
    if args.what == "opinfo":
        return opinfo_table.run(args)
    if args.what == "capture":
        return capture(args.minutes, args.seed, args.family, args.binding, args.stop, args.shrink, args.reason)
    return shapes(args.minutes, args.seed)


if __name__ == "__main__":
    sys.exit(main())
