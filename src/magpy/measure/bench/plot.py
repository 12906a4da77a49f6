"""Speedup chart of a benchmark report (needs matplotlib, which MagPy does not depend on)."""
from __future__ import annotations

from .report import Report


def plot_speedups(report: Report, path: str) -> str | None:
    """Draw speedups over eager per model (plus the geomean) into ``path``.

    Returns None when the chart was written, or a sentence saying why it was not.
    """
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return "--plot skipped: matplotlib is not installed (pip install matplotlib)"
    compilers = report.compilers()
    if not compilers:
        return "--plot skipped: no compiler backend to compare with eager"
    labels = [row.model for row in report.rows] + ["geomean"]
    width = 0.8 / len(compilers)
    figure, axes = plt.subplots(figsize=(max(6.0, 0.9 * len(labels)), 4.0))
    for i, backend in enumerate(compilers):
        values = [row.speedup(backend) or 0.0 for row in report.rows] + [report.geomean(backend).value or 0.0]
        positions = [x + (i - (len(compilers) - 1) / 2) * width for x in range(len(labels))]
        axes.bar(positions, values, width, label=backend)
    axes.axhline(1.0, color="black", linewidth=0.8)
    axes.set_xticks(range(len(labels)), labels, rotation=30, ha="right")
    axes.set_ylabel("speedup over eager (×)")
    meta = report.meta
    axes.set_title(f"MagPy bench · {meta.get('size')} · {meta.get('device')} · torch {meta.get('torch')}")
    axes.legend()
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)
    return None
