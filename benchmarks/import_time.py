#!/usr/bin/env python
"""What ``import magpy`` costs a program, next to ``import torch``.

Each measurement is a fresh interpreter (a warm file cache, nothing imported yet), timed inside the
child so that interpreter start-up does not count. Rows:

    import torch                     the baseline every MagPy user pays anyway
    import torch, magpy              + MagPy's package
    … + magpy.compile(f)             + what the first ``magpy.compile`` imports (the API, capture, emit)
    … + torch.compile(f)             for scale: ``torch.compile(f, backend="magpy")`` (imports Dynamo)

Prints the median of ``--runs`` runs of each, in milliseconds, the ratio to ``import torch``, the median
time of the row's last line alone (the first ``magpy.compile(f)``: the call that makes the compiled
function, not a call of it), and which of ``torch._dynamo``, ``sympy`` and ``triton`` the row left
imported.

    python benchmarks/import_time.py             # 7 runs of each row
    python benchmarks/import_time.py --runs 15
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"
HEAVY = ("torch._dynamo", "sympy", "triton")

# row name -> the statements timed after ``import torch`` (its own time is the first row)
ROWS = {
    "import torch": "",
    "import torch, magpy": "import magpy",
    "... + magpy.compile(f)": "import magpy\nmagpy.compile(lambda x: x + 1)",
    "... + torch.compile(f, backend='magpy')": "import magpy\ntorch.compile(lambda x: x + 1, backend='magpy')",
}

CHILD = """
import json, sys, time
start = time.perf_counter()
import torch
torch_done = time.perf_counter()
last = torch_done
for line in {body!r}.splitlines():
    last = time.perf_counter()
    exec(compile(line, "<timed>", "exec"))
end = time.perf_counter()
print(json.dumps({{"torch": torch_done - start, "total": end - start, "last": end - last,
                   "heavy": [m for m in {heavy!r} if m in sys.modules]}}))
"""


def measure(body: str) -> dict:
    """One fresh interpreter running ``import torch`` then ``body``: its timings (seconds)."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(SRC), os.environ.get("PYTHONPATH")])))
    out = subprocess.run([sys.executable, "-c", CHILD.format(body=body, heavy=HEAVY)], env=env,
                         capture_output=True, text=True, check=True).stdout
    return json.loads(out.splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=7, help="fresh interpreters per row (default 7)")
    args = parser.parse_args()
    measure("")  # (the first run of all fills the file cache: not counted)
    runs = {name: [] for name in ROWS}
    for _ in range(args.runs):  # (rows by turns: a load that drifts during the run weighs on all alike)
        for name, body in ROWS.items():
            runs[name].append(measure(body))
    results = {name: (statistics.median(r["total"] for r in rows) * 1e3,
                      statistics.median(r["last"] for r in rows) * 1e3, rows[-1]["heavy"])
               for name, rows in runs.items()}
    base = results["import torch"][0]
    print(f"{'':42s} {'median ms':>10s} {'x torch':>8s} {'last line ms':>13s}  also imported")
    for name, (ms, last, heavy) in results.items():
        print(f"{name:42s} {ms:10.0f} {ms / base:8.2f} {last:13.0f}  {', '.join(heavy) or '-'}")


if __name__ == "__main__":
    main()
