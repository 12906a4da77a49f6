"""The compilers a run compares, each behind the same small interface, in one table.

A Compiler turns an ``nn.Module`` into a full-graph compiled callable and explains its failures: ``classify``
sorts an exception into a graph break (the compiler declined the code, which ``fullgraph=True`` turns into an
error) or an error (anything else), with a reason to count. ``availability`` says why a compiler cannot run here;
such a compiler's column reads "unavailable" and the rest of the run goes on. New compilers are new rows.
"""
from __future__ import annotations

import dataclasses
import re
from typing import Callable

from . import reasons


class Compiler:
    name = ""
    label = ""

    def availability(self) -> str | None:
        """None when the compiler can run here, else why not (one line)."""
        raise NotImplementedError

    def reset(self) -> None:
        """Forget everything compiled so far, so each test case starts cold."""

    def warm_up(self, backend: str) -> None:
        """Compile and call a tiny module once, so that the one-time setup cost (lazy imports, first-use
        caches) is paid before the workers fork, not once per worker. Failures are left for the real cases."""
        try:
            import torch
            module = torch.nn.Linear(2, 2)
            self.compile(module, backend)(torch.ones(1, 2))
        except Exception:
            pass
        finally:
            try:
                self.reset()
            except Exception:
                pass

    def compile(self, module, backend: str) -> Callable:
        raise NotImplementedError

    def classify(self, error: BaseException, file_name: str) -> dict:
        """``{"status": "break" | "error", "reason", "detail", "where"}`` for an exception out of compile or call."""
        return {"status": "error", **reasons.describe(error, file_name)}

    def stats(self, compiled) -> dict | None:
        """Counters the compiler keeps about ``compiled`` (graphs, breaks, cache hits…), if any."""
        return None

    def fell_back(self, stats: dict | None) -> bool:
        """True when ``stats`` say the calls ran uncompiled, which is not a full-graph capture."""
        return False


class Dynamo(Compiler):
    """``torch.compile(module, fullgraph=True, backend=…)``."""

    name, label = "dynamo", "TorchDynamo"

    def availability(self) -> str | None:
        try:
            import torch._dynamo  # noqa: F401
        except Exception as error:
            return reasons.first_line(error)
        return None

    def reset(self) -> None:
        import torch._dynamo
        torch._dynamo.reset()

    def compile(self, module, backend: str) -> Callable:
        import torch
        return torch.compile(module, fullgraph=True, backend=backend)

    def classify(self, error: BaseException, file_name: str) -> dict:
        import torch._dynamo.exc as exc
        breaks = tuple(getattr(exc, name) for name in ("Unsupported", "UserError") if hasattr(exc, name))
        status = "break" if isinstance(error, breaks) else "error"
        text = getattr(error, "msg", None) or str(error)
        kind = getattr(error, "gb_type", None)
        reason = kind or _first(text) or type(error).__name__
        if status == "error":
            reason = f"{type(error).__name__}: {reason}"
        explanation = re.search(r"Explanation:\s*(.+)", text)
        found = explanation.group(1) if explanation else _first(text)
        return {"status": status, "reason": reasons.normalise(reason), "detail": reasons.detail(found),
                "where": _user_frame(str(error), file_name) or reasons.where(error, file_name)}


class MagPy(Compiler):
    """``magpy.compile(module, fullgraph=True, backend=…)``; breaks raise ``magpy.GraphBreakError``."""

    name, label = "magpy", "MagPy"

    def availability(self) -> str | None:
        try:
            import magpy
            magpy.compile  # noqa: B018 — the API loads lazily; touching it imports it
        except Exception as error:
            return reasons.first_line(error)
        return None

    def reset(self) -> None:
        import magpy
        reset = getattr(magpy, "reset", None)
        if reset is not None:
            reset()

    def compile(self, module, backend: str) -> Callable:
        import magpy
        return magpy.compile(module, backend=backend, fullgraph=True)

    def classify(self, error: BaseException, file_name: str) -> dict:
        if not self._is_break(error):
            return super().classify(error, file_name)
        reason = getattr(error, "reason", None) or _first(str(error)) or type(error).__name__
        filename, lineno = getattr(error, "filename", None), getattr(error, "lineno", None)
        place = f"{str(filename).rsplit('/', 1)[-1]}:{lineno}" if filename and lineno else ""
        return {"status": "break", "reason": reasons.normalise(str(reason)), "detail": reasons.detail(str(error)),
                "where": place or reasons.where(error, file_name)}

    def stats(self, compiled) -> dict | None:
        stats = getattr(compiled, "stats", None)
        if stats is None:               # a compiled module keeps them on its compiled forward
            stats = getattr(getattr(compiled, "_magpy_compiled", None), "stats", None)
        if stats is None:
            return None
        if dataclasses.is_dataclass(stats):
            fields = dataclasses.asdict(stats)
        else:
            fields = {k: v for k, v in getattr(stats, "__dict__", {}).items() if not k.startswith("_")}
        return {k: v for k, v in fields.items() if isinstance(v, (int, float, bool))}

    def fell_back(self, stats: dict | None) -> bool:
        return bool(stats and stats.get("fallbacks"))

    @staticmethod
    def _is_break(error: BaseException) -> bool:
        try:
            import magpy
            return isinstance(error, magpy.GraphBreakError)
        except Exception:               # no errors module yet: recognise the class by name
            return any(cls.__name__ == "GraphBreakError" for cls in type(error).__mro__)


COMPILERS: dict[str, Compiler] = {compiler.name: compiler for compiler in (Dynamo(), MagPy())}


def _first(text: str) -> str:
    for line in str(text).splitlines():
        if line.strip():
            return line.strip()
    return ""


_USER_FRAME = re.compile(r'File "([^"]+)", line (\d+), in (\S+)')


def _user_frame(text: str, file_name: str) -> str:
    """The last ``File "…test_x.py", line N, in f`` of Dynamo's "from user code" section."""
    found = ""
    for path, line, function in _USER_FRAME.findall(text):
        if path.endswith(file_name):
            found = f"{file_name}:{line} in {function}"
    return found


def resolve(names: list[str]) -> list[Compiler]:
    """The compilers called ``names``; raises KeyError naming an unknown one."""
    unknown = [name for name in names if name not in COMPILERS]
    if unknown:
        raise KeyError(f"unknown compiler {unknown[0]!r} (choose from {', '.join(COMPILERS)})")
    return [COMPILERS[name] for name in names]

