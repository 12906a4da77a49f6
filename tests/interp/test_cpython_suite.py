#!/usr/bin/env python
"""CPython's own language tests (``Lib/test``) run through the MagPy VM: the check and the report.

``cpython_suite.py`` beside this file says which tests run and how: each test that passes natively
runs again with its body executed by ``magpy.interp.run`` (unittest test methods, and every
doctest example; fixtures stay native).

    python tests/interp/test_cpython_suite.py --report              # every module, every test
    python tests/interp/test_cpython_suite.py --report --subset     # what pytest runs
    python tests/interp/test_cpython_suite.py --module test_with -v # one module, non-passing tests listed
    python tests/interp/test_cpython_suite.py --report --json out.json   # also every test's record

Under pytest, ``test_vm_pass_count_holds`` runs the CI subset of each module and asserts that at
least the checked-in number of tests (``FLOOR_TABLE``) passes through the VM on the running Python.
"""
import argparse
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
# cpython_suite.py lies beside this file, whether or not tests/interp is a package.
from cpython_suite import MODULES, run_modules, summarise  # noqa: E402

PYTHON = "%d.%d" % sys.version_info[:2]

# The floors pytest asserts, for the CI subset: "passed/eligible" per module and Python, where
# ``eligible`` tests pass natively and ``passed`` of them passed through the VM when measured (with
# 3.11.7, 3.12.1, 3.13.0; runs are deterministic, so a floor is the measured count). Where the
# running Python has another number of eligible tests (another patch release), the rate is
# asserted instead. ``--report --subset --floors`` prints this table with the running Python's
# column re-measured.
FLOOR_TABLE = """
module                              3.11        3.12        3.13
test_grammar                       76/78       76/78       76/78
test_exceptions                    67/84       57/70       57/70
test_generators                  296/301     303/308     312/317
test_with                          50/50       50/50       50/51
test_scope                         38/38       38/38       39/39
test_class                         18/18       19/19       32/32
test_patma                       300/309     301/310     317/326
test_super                         22/23       32/34       34/36
test_contextlib                    84/87       85/88       86/89
test_unpack                        35/35       35/35       35/35
test_unpack_ex                     90/91       90/91       92/93
test_keywordonlyarg                11/11       11/11       11/11
test_positional_only_arg           28/28       28/28       28/28
test_listcomps                     38/38       68/70       74/77
test_setcomps                      39/39       39/39       39/40
test_dictcomps                       9/9         9/9        9/10
test_genexps                       80/81       80/81       80/81
test_exception_group               44/49       47/50       47/50
test_except_star                   51/59       51/59       51/59
test_raise                         32/35       32/35       32/36
test_opcodes                         8/8         8/8         8/8
test_yield_from                    30/32       37/39       37/39
test_named_expressions             67/67       69/69       74/74
test_generator_stop                  2/2         2/2         2/2
test_exception_variations          30/30       30/30       30/30
test_extcall                     138/138     148/148     148/148
test_augassign                       7/7         7/7         7/7
test_compare                       15/16       15/16       15/16
test_unary                           6/6         6/6         6/6
test_binop                         12/12       12/12       12/12
test_contains                        4/4         4/4         4/4
test_richcmp                       10/11       10/11       10/11
test_global                          4/4         4/4         4/4
test_decorators                    18/18       18/18       16/16
test_baseexception                 10/10       10/10       10/10
test_int_literal                     6/6         6/6         6/6
test_bool                          30/30       31/31       31/31
test_property                      23/23       28/28       29/29
test_funcattrs                     31/32       32/33       33/34
"""


def _parse_floors(text):
    """{python: {module: (passed, eligible)}} from FLOOR_TABLE."""
    header, *rows = text.strip().splitlines()
    pythons = header.split()[1:]
    floors = {python: {} for python in pythons}
    for row in rows:
        module_name, *cells = row.split()
        for python, cell in zip(pythons, cells):
            passed, eligible = cell.split("/")
            floors[python][module_name] = (int(passed), int(eligible))
    return floors


def _render_floors(floors):
    pythons = sorted(floors)
    lines = [f"{'module':28}" + "".join(f"{python:>12}" for python in pythons)]
    for module_name in MODULES:
        cells = [floors[python].get(module_name) for python in pythons]
        lines.append(f"{module_name:28}" + "".join(
            f"{'%d/%d' % cell if cell else '-':>12}" for cell in cells))
    return "\n".join(lines)


FLOORS = _parse_floors(FLOOR_TABLE)


# ---------------------------------------------------------------------------------------------
# pytest


try:
    import pytest
except ImportError:       # the report mode needs no pytest
    pytest = None

if pytest is not None:

    @pytest.fixture(scope="module")
    def subset_records():
        """The CI subset of every module with a floor, run once for all the tests below."""
        measured = [m for m in MODULES if m in FLOORS.get(PYTHON, {})]
        return run_modules(measured, subset=True, jobs=min(2, os.cpu_count() or 1))

    @pytest.mark.parametrize("module_name", MODULES)
    def test_vm_pass_count_holds(module_name, subset_records):
        floor, eligible_then = FLOORS.get(PYTHON, {}).get(module_name, (None, None))
        if floor is None:
            pytest.skip(f"no floor measured for {module_name} on Python {PYTHON}")
        records = subset_records[module_name]
        crash = [r for r in records if r["id"] == "<child>"]
        passed, eligible = summarise(records)
        failing = "\n".join(f"  {r['id']}: {r['vm']} {r['detail'][:200]}"
                            for r in records if r["vm"] not in ("pass", None))
        assert not crash, f"the child running {module_name} died:\n{failing}"
        if eligible == eligible_then:
            assert passed >= floor, (
                f"{module_name}: {passed}/{eligible} pass through the VM, floor {floor}:\n{failing}")
        else:
            rate, floor_rate = passed / max(eligible, 1), floor / max(eligible_then, 1)
            assert rate >= floor_rate, (
                f"{module_name}: {passed}/{eligible} pass through the VM ({rate:.1%}), "
                f"floor {floor}/{eligible_then} ({floor_rate:.1%}):\n{failing}")


# ---------------------------------------------------------------------------------------------
# Report


def report(modules, subset, verbose, jobs, as_floors, dump=None):
    started = time.perf_counter()
    results = run_modules(list(modules), subset, jobs).items()
    if dump:
        Path(dump).write_text(json.dumps(dict(results), indent=1))
    total_pass = total = 0
    floors = {}
    print(f"Python {sys.version.split()[0]}  {'CI subset' if subset else 'all tests'}")
    print(f"{'module':28} {'pass':>5} {'of':>5} {'rate':>7} {'native s':>9} {'vm s':>8}  other")
    for module_name, records in results:
        passed, count = summarise(records)
        total_pass += passed
        total += count
        floors[module_name] = (passed, count)
        others = {}
        excluded = sum(r["native"] not in ("pass", None) for r in records)
        if excluded:
            others["excluded"] = excluded
        for r in records:
            if r["vm"] not in ("pass", None):
                others[r["vm"]] = others.get(r["vm"], 0) + 1
        native_s = sum(r["native_s"] for r in records)
        vm_s = sum(r["vm_s"] for r in records)
        rate = f"{passed / count:.1%}" if count else "-"
        other = " ".join(f"{k}={v}" for k, v in sorted(others.items()))
        print(f"{module_name:28} {passed:5} {count:5} {rate:>7} {native_s:9.2f} {vm_s:8.2f}  {other}")
        if verbose:
            for r in records:
                if r["vm"] not in ("pass", None):
                    print(f"    {r['vm']:8} {r['id']}: {r['detail'][:300]}")
    rate = f"{total_pass / total:.1%}" if total else "-"
    print(f"{'overall':28} {total_pass:5} {total:5} {rate:>7}   "
          f"({time.perf_counter() - started:.1f} s wall)")
    if as_floors:
        print("\nFLOOR_TABLE with this Python's column re-measured:")
        print(_render_floors({**FLOORS, PYTHON: {**FLOORS.get(PYTHON, {}), **floors}}))
    return total_pass, total


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--report", action="store_true", help="run every module, print pass counts")
    parser.add_argument("--module", action="append", help="run only this module (repeatable)")
    parser.add_argument("--subset", action="store_true", help="only the CI subset")
    parser.add_argument("-v", "--verbose", action="store_true", help="list tests that do not pass")
    parser.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--floors", action="store_true", help="also print FLOOR_TABLE, this Python re-measured")
    parser.add_argument("--json", metavar="FILE", help="also write every test's record to FILE")
    args = parser.parse_args(argv)
    if not (args.report or args.module):
        parser.error("give --report or --module")
    report(args.module or MODULES, args.subset, args.verbose, args.jobs, args.floors, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
