"""One capture or graph compile at a time in the process.

Capturing and compiling share process-wide state that is not ours to make thread-safe: AOTAutograd
traces with ``torch.fx``, whose tracer patches ``nn.Module.__call__``/``__getattr__`` and module
globals for the whole process while it runs (a capture interpreting a module meanwhile would run the
tracer's wrappers; two traces at once fail with "CURRENT_PATCHER is None"). So every capture and every
backend compile holds ``LOCK``.

A compiled function's call that finds it held by another thread does not wait: it runs eagerly, as
the capturing call itself does (that call runs the user's code, which may be waiting for the very
thread that would wait here). Tools that must capture (``explain``, ``trace``) and backends entered
from outside (``torch.compile(backend="magpy")``) wait for it. Reentrant: a capture may compile.
"""
import threading

LOCK = threading.RLock()
