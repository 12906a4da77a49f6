"""``python -m fuzz opinfo``: PyTorch's OpInfo samples through our compiler, as a table of ops x dtypes.

The checks themselves are ``tests/codegen/opinfo_check.py`` (shared with the pytest sample). Each
cell is one of ``opinfo_check.STATUSES``; ``--save`` appends every cell to a JSON-lines file and
``--load`` prints the table of saved cells instead of running (a long run in chunks: ``--shard k/n``).
"""
import collections
import json
import os
import sys
import time
from pathlib import Path

CODEGEN_TESTS = Path(__file__).resolve().parent.parent / "tests" / "codegen"

# What a cell prints as (short, so that seven dtypes fit a line).
MARKS = {"pass": "ok", "xfail": "xf", "xpass": "XP", "FAIL": "FAIL", "skip": "-"}


def run(args) -> int:
    if args.triton:
        os.environ.setdefault("TRITON_INTERPRET", "1")  # before anything imports triton
    sys.path.insert(0, str(CODEGEN_TESTS))
    import opinfo_check

    if args.load:
        outcomes = [opinfo_check.Outcome(**json.loads(line)) for path in args.load for line in open(path)]
        return report(outcomes, opinfo_check.DTYPES, args.compact)
    names = _selected_ops(opinfo_check, args)
    dtypes = args.dtypes.split(",") if args.dtypes else list(opinfo_check.DTYPES)
    codegen = "triton" if args.triton else "cpp"
    variants = args.variants.split(",") if args.variants else opinfo_check.VARIANTS
    outcomes = []
    save = open(args.save, "a") if args.save else None
    started = time.monotonic()
    for name in names:
        op = opinfo_check.op_table()[name]
        for dtype in [d for d in opinfo_check.dtypes_of(op) if d in dtypes]:
            outcome = opinfo_check.check_cell(name, dtype, codegen, limit=args.samples or None, variants=variants)
            outcomes.append(outcome)
            if outcome.status in ("FAIL", "xpass") or args.verbose:
                print(f"  {outcome.status:5s} {name} {dtype}: {outcome.detail}", flush=True)
            if save:
                save.write(json.dumps(outcome.__dict__) + "\n")
                save.flush()
    print(f"({time.monotonic() - started:.0f} s)")
    return report(outcomes, opinfo_check.DTYPES, args.compact)


def _selected_ops(opinfo_check, args) -> list:
    """The ops to run: ``--ops`` (names, or all of op_db), this process's ``--shard`` of them, then
    only the served ones unless ``--all`` (deciding that traces each op: after sharding)."""
    table = opinfo_check.op_table()
    names = args.ops.split(",") if args.ops else sorted(table)
    unknown = [n for n in names if n not in table]
    if unknown:
        raise SystemExit(f"not in op_db: {', '.join(unknown)}")
    if args.shard:
        k, n = map(int, args.shard.split("/"))
        names = names[k - 1::n]
    if not args.all:
        names = [n for n in names if opinfo_check.unserved_reason(n) is None]
    return names


def report(outcomes, dtypes, compact=False) -> int:
    """Print the table (one row per op with any cell run) and a summary; 1 when a cell FAILed or
    passed against the expected failures. ``compact``: ops whose every cell passed are listed
    by name (grouped by the dtypes they ran at) instead of one row each."""
    outcomes = list({(o.name, o.dtype): o for o in outcomes}.values())  # (a cell run again: its last run)
    cells = collections.defaultdict(dict)
    for o in outcomes:
        cells[o.name][o.dtype] = o.status
    rows = sorted(cells)
    if compact:
        rows = [n for n in rows if set(cells[n].values()) != {"pass"}]
        _all_passing(cells, dtypes)
    width = max([len(n) for n in rows] + [10])
    print(f"{'op':{width}s} " + " ".join(f"{d:>4s}" for d in dtypes))
    for name in rows:
        row = cells[name]
        print(f"{name:{width}s} " + " ".join(f"{MARKS[row[d]] if d in row else '':>4s}" for d in dtypes))
    counts = collections.Counter(o.status for o in outcomes)
    print("cells: " + ", ".join(f"{counts[s]} {s}" for s in MARKS) + f"; ops with a passing cell: "
          f"{sum(any(s == 'pass' for s in row.values()) for row in cells.values())} of {len(cells)}")
    for o in outcomes:
        if o.status in ("FAIL", "xpass"):
            print(f"{o.status} {o.name} {o.dtype}: {o.detail}")
    return 1 if counts["FAIL"] or counts["xpass"] else 0


def _all_passing(cells, dtypes):
    groups = collections.defaultdict(list)
    for name, row in sorted(cells.items()):
        if set(row.values()) == {"pass"}:
            groups[" ".join(d for d in dtypes if d in row)].append(name)
    for signature, names in sorted(groups.items(), key=lambda kv: -len(kv[1])):
        print(f"ok at {signature} ({len(names)}): {', '.join(names)}")
    print()


def add_parser(sub):
    p = sub.add_parser("opinfo", help="compiled vs eager on PyTorch's OpInfo samples of the ops we serve")
    p.add_argument("--ops", help="comma-separated OpInfo names (default: every served op)")
    p.add_argument("--dtypes", help="comma-separated: f32,f64,f16,bf16,i64,i32,b8 (default: all)")
    p.add_argument("--triton", action="store_true", help="Triton kernels in its interpreter, not C++")
    p.add_argument("--samples", type=int, default=0, help="at most this many samples per op and dtype (0: all)")
    p.add_argument("--variants", help="comma-separated: function,inplace,bad values (default: all)")
    p.add_argument("--shard", help="k/n: only every n-th op starting at the k-th (a long run in chunks)")
    p.add_argument("--all", action="store_true", help="also ops our lowerings do not serve")
    p.add_argument("--save", help="append each cell to this JSON-lines file")
    p.add_argument("--load", nargs="+", help="print the table of cells saved by --save, run nothing")
    p.add_argument("--compact", action="store_true", help="list the ops whose every cell passed by name")
    p.add_argument("-v", "--verbose", action="store_true", help="print every cell as it finishes")
    return p
