"""A progress bar on stderr: redrawn in place on a terminal, one line per step otherwise."""
from __future__ import annotations

import sys
import time
from typing import TextIO


class Progress:
    def __init__(self, total: int, stream: TextIO | None = None, enabled: bool = True, width: int = 24):
        self.total = max(total, 1)
        self.done = 0
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = enabled
        self.width = width
        self.started = time.perf_counter()
        self.interactive = enabled and hasattr(self.stream, "isatty") and self.stream.isatty()
        self._last_length = 0

    def start(self, label: str) -> None:
        """Show that the next step, ``label``, is under way."""
        if not self.enabled:
            return
        if self.interactive:
            self._draw(label)
        else:
            print(f"[{self.done + 1:>3}/{self.total}] {label}", file=self.stream, flush=True)

    def status(self, label: str) -> None:
        """Show ``label`` on a terminal only: a detail not worth a line of its own in a log."""
        if self.interactive:
            self._draw(label)

    def advance(self, steps: int = 1) -> None:
        self.done = min(self.done + steps, self.total)

    def close(self) -> None:
        if self.interactive:
            self.stream.write("\r" + " " * self._last_length + "\r")
            self.stream.flush()

    def _draw(self, label: str) -> None:
        filled = round(self.width * self.done / self.total)
        elapsed = int(time.perf_counter() - self.started)
        bar = "█" * filled + "░" * (self.width - filled)
        text = f"{bar} {self.done}/{self.total} {elapsed // 60}:{elapsed % 60:02d} {label}"
        padding = " " * max(self._last_length - len(text), 0)
        self.stream.write("\r" + text + padding)
        self.stream.flush()
        self._last_length = len(text)
