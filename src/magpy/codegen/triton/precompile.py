"""Compiling a graph's Triton kernels ahead of their first launch, in worker processes.

Triton compiles a kernel at its first launch, one block config after another (about 0.2 s each on
the GPU machine's host): a BERT-large training step's few hundred kernels made its second call a
minute long. Here, as soon as a graph's kernels are made on a GPU, every block config each static
kernel may launch or time (``plan.configs``) is compiled in a pool of worker processes
(``compile_worker.py``) into Triton's on-disk cache, while the program goes on (the forward's
kernels compile while AOTAutograd traces the backward and we print its kernels). A launcher waits
for its own compiles before its first launch (``settle``); that launch's compile is then a cache
hit.

The cache key must be the launch's exactly. So the jobs are not rebuilt from what we know of a
kernel: Triton's own JIT entry is run as a warmup (``TritonLauncher.warmup``) on stand-in
arguments — pointers of the kernel's dtypes, the plan's real sizes (Triton specialises on a size
being 1 or a multiple of 16) — with a ``jit_cache_hook`` that records the specialisation it would
compile and stops it there; a worker compiles that through ``JITFunction.preload``. Pointers are
taken as 16-byte aligned (as allocations are; a view at an odd offset compiles at its launch).

Nothing here can fail a graph: a job that cannot be made or compiled (a config past the GPU's
resources, another Triton) leaves that compile to the launch, as before. Kernels with symbolic
sizes (``SymbolicLauncher``) compile at launch: their forms and configs follow each launch's sizes.

``MAGPY_COMPILE_WORKERS``: the number of worker processes (default: the CPUs this process may
use, at most ``MAX_WORKERS``); 0 turns precompiling off. The pool starts at its first job, once
per process (again in a forked child), and its workers end with the process.
"""
from __future__ import annotations

import atexit
import concurrent.futures
import dataclasses
import os
import queue
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Optional

from . import compile_worker

WORKERS_VARIABLE = "MAGPY_COMPILE_WORKERS"
MAX_WORKERS = 16
# A worker is started as ``python -c BOOT <this folder's compile_worker.py>``: run by path, so that
# neither magpy nor torch is imported, and with no script folder put first on its path (this
# folder's ``math.py`` would hide the standard library's).
BOOT = "import runpy, sys; runpy.run_path(sys.argv[1], run_name='__main__')"
WORKER_FILE = Path(compile_worker.__file__)


class PrecompileFailed(Exception):
    """A worker could not compile a job (what it said); the launch compiles it instead."""


@dataclasses.dataclass(frozen=True)
class Pointer:
    """Stands for a tensor argument in a warmup: what Triton reads of one (its dtype, and its
    address for alignment)."""

    dtype: object
    aligned: bool = True

    def data_ptr(self) -> int:
        return 0 if self.aligned else 8


# ----------------------------------------------------------------------------------------------
# Jobs: what a launch would compile, recorded by Triton's JIT entry


def jobs(launcher, pointers, numbers=()) -> list[tuple]:
    """The compile jobs of every block config ``launcher`` (a ``TritonLauncher``) may launch on
    arguments like ``pointers`` and ``numbers``: ``compile_worker.compile_job``'s tuples. Configs
    this process has compiled already give none. Needs Triton's active driver (a GPU)."""
    from triton import knobs
    from triton.runtime import driver

    fn = launcher.fn
    recorded = []
    previous = knobs.runtime.jit_cache_hook
    thread = threading.get_ident()

    def record(**hook):
        if hook["fn"].jit_function is fn and threading.get_ident() == thread:
            recorded.append(hook["compile"]["specialization_data"])
            return True  # (Triton's JIT entry stops before compiling)
        return previous(**hook) if previous is not None else None

    knobs.runtime.jit_cache_hook = record
    try:
        for config in launcher.plan.configs:
            launcher.warmup(config, pointers, numbers)
    finally:
        knobs.runtime.jit_cache_hook = previous
    target = driver.active.get_current_target()
    module = sys.modules[fn.fn.__module__]
    where = (module.__file__, module.__name__, fn.__name__, (target.backend, target.arch, target.warp_size))
    return [(*where, data, knobs.cache.dir) for data in recorded]


def stand_ins(names, layouts) -> Optional[list]:
    """A kernel's pointer arguments as ``Pointer``s: ``names`` its buffers, ``layouts`` the
    graph's (None where one is not known)."""
    from ..checks import ERROR_FLAG

    import torch

    pointers = []
    for name in names:
        if name == ERROR_FLAG:
            pointers.append(Pointer(torch.int32))
        elif name in layouts:
            pointers.append(Pointer(layouts[name].dtype))
        else:
            return None
    return pointers


def precompile_graph(launchers: dict, params: dict, sizes: dict, layouts) -> None:
    """Start compiling each static launcher's configs (``launchers``: name -> TritonLauncher;
    ``params``/``sizes``: each kernel's buffers and size symbols). Each launcher keeps its
    compiles' futures in ``pending``."""
    from ..sizes import is_float_symbol

    pool = compile_pool()
    if pool is None or pool.broken:
        return
    for name, launcher in launchers.items():
        try:
            pointers = stand_ins(params[name], layouts)
            # (a static kernel's numbers are float inputs, typed fp64 in the kernel: any value will do)
            if pointers is None or not all(is_float_symbol(s) for s in sizes[name]):
                continue
            found = jobs(launcher, pointers, [0.5] * len(sizes[name]))
            launcher.pending = [pool.submit(job) for job in found] or None
        except Exception:  # noqa: BLE001 - no driver, another Triton: the launch compiles as before
            continue


def settle(futures) -> None:
    """Before a launcher's first launch: wait for its compiles that have started, and take back
    those still queued (the launch compiles them sooner than the queue would). Failures are the
    launch's to meet again (or to skip, when timing configs)."""
    for future in futures:
        if future.cancel():
            continue
        try:
            future.result()
        except Exception:  # noqa: BLE001 - the launch compiles what is missing
            pass


# ----------------------------------------------------------------------------------------------
# The pool of worker processes


def worker_count() -> int:
    """``MAGPY_COMPILE_WORKERS`` if set (0: off), else the CPUs this process may use, at most
    ``MAX_WORKERS``."""
    text = os.environ.get(WORKERS_VARIABLE, "").strip()
    if text:
        try:
            return max(0, int(text))
        except ValueError:
            pass
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return min(cpus, MAX_WORKERS)


_pool: Optional["CompilePool"] = None
_pool_lock = threading.Lock()


def compile_pool() -> Optional["CompilePool"]:
    """This process's pool (made at the first call, and again in a forked child), or None when
    ``MAGPY_COMPILE_WORKERS=0``."""
    global _pool
    size = worker_count()
    if size == 0:
        return None
    with _pool_lock:
        if _pool is None or _pool.pid != os.getpid():
            _pool = CompilePool(size)
            atexit.register(_pool.close)
        return _pool


class CompilePool:
    """``size`` worker processes, each served by a daemon thread of this process taking jobs from
    one queue in the order they came (threads and processes start as jobs arrive). The same job
    submitted again while it is pending shares its future."""

    DEATHS = 4  # workers dying one after another (none answering between) that make the pool ``broken``

    def __init__(self, size: int):
        self.size = size
        self.deaths = 0
        self.broken = False  # (workers cannot start here: later jobs fail at once, graphs submit none)
        self.pid = os.getpid()
        self.queue: queue.SimpleQueue = queue.SimpleQueue()
        self.threads: list = []
        self.workers: list = []
        self.pending: dict = {}  # job -> its future, until done
        self.lock = threading.Lock()
        self.closed = False

    def submit(self, job: tuple) -> concurrent.futures.Future:
        """A future of compiling ``job``: None when done; ``PrecompileFailed`` when the worker
        could not; OSError/EOFError when the worker died."""
        with self.lock:
            future = self.pending.get(job)
            if future is not None:
                return future
            future = self.pending[job] = concurrent.futures.Future()
            future.add_done_callback(lambda _: self.pending.pop(job, None))
            if len(self.threads) < self.size:
                thread = threading.Thread(target=self._serve, name=f"magpy-compile-{len(self.threads)}", daemon=True)
                self.threads.append(thread)
                thread.start()
        self.queue.put((job, future))
        return future

    def _serve(self):
        worker = None
        while True:
            job, future = self.queue.get()
            if not future.set_running_or_notify_cancel():
                continue
            if self.closed or self.broken:
                future.set_exception(PrecompileFailed(f"the pool is {'closed' if self.closed else 'broken'}"))
                continue
            try:
                if worker is None:
                    worker = WorkerProcess()
                    with self.lock:
                        self.workers.append(worker)
                answer = worker.ask(job)
                self.deaths = 0
            except Exception as e:  # noqa: BLE001 - the worker died (or never started): a new one next time
                self.deaths += 1
                self.broken = self.deaths >= self.DEATHS
                if worker is not None:
                    worker.close()
                    worker.wait(1.0)
                    with self.lock:
                        if worker in self.workers:
                            self.workers.remove(worker)
                    worker = None
                future.set_exception(e)
                continue
            if answer is None:
                future.set_result(None)
            else:
                future.set_exception(PrecompileFailed(answer))

    def close(self, timeout: float = 1.0):
        """End the workers: each finishes the job it has (or is killed after ``timeout``). Not in a
        forked child: the workers are its parent's."""
        if os.getpid() != self.pid:
            return
        with self.lock:
            self.closed = True
            workers, self.workers = self.workers, []
        for worker in workers:
            worker.close()
        deadline = time.monotonic() + timeout
        for worker in workers:
            worker.wait(max(deadline - time.monotonic(), 0))


class WorkerProcess:
    """One ``compile_worker.py`` process, talked to through its stdin and stdout."""

    def __init__(self):
        env = dict(os.environ)
        env.pop("TRITON_INTERPRET", None)  # (a worker compiles; it never interprets)
        self.process = subprocess.Popen([sys.executable, "-c", BOOT, str(WORKER_FILE)], stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, env=env)
        compile_worker.write_message(self.process.stdin, list(sys.path))

    def ask(self, job: tuple):
        """The worker's answer to ``job``: None, or the error that stopped it."""
        compile_worker.write_message(self.process.stdin, job)
        return compile_worker.read_message(self.process.stdout)

    def close(self):
        try:
            self.process.stdin.close()
        except OSError:
            pass

    def wait(self, timeout: float):
        """Wait for the process to end (after ``close``); kill it after ``timeout`` seconds."""
        try:
            self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.process.stdout.close()
