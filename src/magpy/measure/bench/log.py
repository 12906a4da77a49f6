"""The run's log: what the table has no room for (tracebacks, compilers' warnings, mismatches in full, every
round's times), written as the run goes so that an interrupted run keeps what came before."""
from __future__ import annotations

import os
import time
from pathlib import Path
from typing import TextIO


def default_log_path() -> str:
    """``bench.log`` beside MagPy's kernel cache (``$MAGPY_CACHE_DIR``, else ``$XDG_CACHE_HOME/magpy`` or
    ``~/.cache/magpy``); each run overwrites it."""
    root = os.environ.get("MAGPY_CACHE_DIR")
    if not root:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        root = os.path.join(base, "magpy")
    return os.path.join(root, "bench.log")


class DetailLog:
    """Append-only text log of one run; with no path it writes nothing."""

    def __init__(self, path: str | None):
        self.path = path
        self.started = time.perf_counter()
        self._stream: TextIO | None = None
        if path:
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            self._stream = open(path, "w")
            self.write(f"magpy bench, {time.strftime('%Y-%m-%d %H:%M:%S')}")

    def write(self, text: str) -> None:
        if self._stream is not None:
            self._stream.write(text.rstrip() + "\n")
            self._stream.flush()

    def entry(self, model: str, backend: str, title: str, body: str) -> None:
        indented = "\n".join("    " + line for line in body.rstrip().splitlines())
        elapsed = time.perf_counter() - self.started     # (where a slow run spent its time)
        self.write(f"\n== [{elapsed:6.1f} s] {model} · {backend}: {title}\n{indented}")

    def rounds(self, model: str, samples: dict[str, list[float]]) -> None:
        """Every round's time of every backend (ms), round by round."""
        body = "\n".join(f"{name:>9}: " + " ".join(f"{1e3 * t:.3f}" for t in times)
                         for name, times in samples.items())
        self.entry(model, "timing", "ms per round, in round order", body or "(no round)")

    def close(self) -> None:
        if self._stream is not None:
            self._stream.close()
            self._stream = None
