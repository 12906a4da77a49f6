"""Building C++ kernels with the system compiler, cached by content hash, loaded with ctypes.

The cache lives in ``$MAGPY_CACHE_DIR`` (default ``$XDG_CACHE_HOME/magpy`` or ``~/.cache/magpy``),
created with mode 0700 since it holds code this process will load and run. A shared object is
named by the SHA-256 of its source, the compiler's identity and the flags, and is written under a
temporary name then renamed, so concurrent processes never load a half-written file.
"""
from __future__ import annotations

import ctypes
import functools
import hashlib
import os
import shutil
import subprocess
import tempfile
import threading
from pathlib import Path
from typing import Sequence

FLAGS = (
    "-O3", "-march=native", "-fopenmp", "-shared", "-fPIC", "-std=c++17",
    # libmvec vector math without -ffast-math: errno and FP traps are not observable from torch.
    "-fno-math-errno", "-fno-trapping-math", "-fdisable-tree-sincos",
    "-w",
)
LIBS = ("-lmvec", "-lm")


# For kernels heavy in vector math: 512-bit vectors where the CPU has them (gcc prefers 256 on
# most AVX-512 parts; libmvec's 16-wide sin/exp/erf then do twice the work per call).
WIDE_VECTORS = ("-mprefer-vector-width=512",)


def flags(extra: Sequence[str] = ()) -> tuple[str, ...]:
    """The compiler flags: ``FLAGS``, then ``extra``, then any in ``$MAGPY_CXXFLAGS``."""
    return FLAGS + tuple(extra) + tuple(os.environ.get("MAGPY_CXXFLAGS", "").split())


class CompileError(RuntimeError):
    """The C++ compiler rejected a generated kernel (a bug of ours; the graph falls back)."""


def cache_dir() -> Path:
    """The per-user kernel cache directory (created, mode 0700)."""
    root = os.environ.get("MAGPY_CACHE_DIR")
    if root:
        path = Path(root)
    else:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        path = Path(base) / "magpy"
    path = path / "cpp"
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    for p in (path, path.parent):
        try:
            if p.stat().st_uid == os.getuid():
                os.chmod(p, 0o700)
        except OSError:
            pass
    return path


@functools.lru_cache(maxsize=None)
def compiler() -> str:
    cxx = os.environ.get("CXX") or shutil.which("g++") or shutil.which("c++")
    if cxx is None:
        raise CompileError("no C++ compiler found (install g++ or set CXX)")
    return cxx


@functools.lru_cache(maxsize=None)
def compiler_identity() -> str:
    out = subprocess.run([compiler(), "--version"], capture_output=True, text=True)
    return out.stdout.splitlines()[0] if out.stdout else compiler()


def source_key(source: str, extra: Sequence[str] = ()) -> str:
    h = hashlib.sha256()
    for part in (compiler_identity(), " ".join(flags(extra) + LIBS), source):
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()[:40]


def library_path(source: str, extra: Sequence[str] = ()) -> Path:
    return cache_dir() / f"k{source_key(source, extra)}.so"


#: A graph's kernels share shared objects, not one each: gcc pays about 0.2 s per object to parse the
#: prelude's headers, and about 0.15 s per 10,000 characters of kernels at -O3 (hf_gpt2's 48 kernels: 10.4 s of
#: gcc apart, 1.8 s in two objects). ``CHUNK_CHARS`` of one set of flags make an object that starts compiling
#: while the rest of the graph is printed; what is left at the end is split over the cores, in objects of at
#: least ``CHUNK_MIN_CHARS``.
CHUNK_CHARS = 48_000
CHUNK_MIN_CHARS = 16_000


class KernelBuild:
    """The shared objects of one graph's kernels, compiled while the rest are printed: ``add`` queues a
    kernel's function (its name, its source, its flags beyond the common ones); ``finish`` compiles what is
    left and returns kernel name -> shared object. ``wrap`` makes a source file of functions joined; at most
    ``jobs`` (one per core) gcc processes run at once."""

    def __init__(self, wrap, jobs: int | None = None):
        self.wrap = wrap
        self.jobs = jobs or max(os.cpu_count() or 1, 1)
        self.queued: dict[tuple, list[tuple[str, str]]] = {}
        self.running: list[tuple[tuple, list[str]]] = []
        self.paths: dict[str, Path] = {}
        self.errors: list[str] = []

    def add(self, name: str, body: str, extra: Sequence[str] = ()) -> None:
        group = self.queued.setdefault(tuple(extra), [])
        group.append((name, body))
        if sum(len(text) for _, text in group) >= CHUNK_CHARS:
            self._compile(tuple(extra), group)
            self.queued[tuple(extra)] = []

    def finish(self) -> dict[str, Path]:
        for extra, members in self.queued.items():
            total = sum(len(text) for _, text in members)
            for chunk in _balanced(members, max(1, min(self.jobs, len(members), total // CHUNK_MIN_CHARS))):
                self._compile(extra, chunk)
        self.queued = {}
        while self.running:
            self._wait_oldest()
        if self.errors:
            raise CompileError("C++ compilation failed:\n" + "\n".join(self.errors))
        return self.paths

    def _compile(self, extra: tuple, members: list[tuple[str, str]]) -> None:
        if not members:
            return
        source = self.wrap("\n".join(text for _, text in members))
        path = library_path(source, extra)
        names = [name for name, _ in members]
        if path.exists():
            self.paths.update(dict.fromkeys(names, path))
            return
        while len(self.running) >= self.jobs:
            self._wait_oldest()
        self.running.append((_start(path, source, extra), names))

    def _wait_oldest(self) -> None:
        job, names = self.running.pop(0)
        error = _finish(job)
        if error:
            self.errors.append(error)
        else:
            self.paths.update(dict.fromkeys(names, job[1]))


def _balanced(members: list, count: int) -> list[list]:
    """``members`` (name, source) in ``count`` lists of about the same source length, each in their order."""
    loads, bins = [0] * count, [[] for _ in range(count)]
    for k in sorted(range(len(members)), key=lambda k: -len(members[k][1])):  # (largest to the lightest)
        i = loads.index(min(loads))
        loads[i] += len(members[k][1])
        bins[i].append(k)
    return [[members[k] for k in sorted(b)] for b in bins]


def compile_kernels(kernels: Sequence[tuple[str, str, Sequence[str]]], wrap, jobs: int | None = None) -> dict[str, Path]:
    """``KernelBuild`` of ``kernels`` (name, source, extra flags) all at once."""
    build = KernelBuild(wrap, jobs)
    for name, body, extra in kernels:
        build.add(name, body, extra)
    return build.finish()


def _start(path: Path, source: str, extra: Sequence[str]):
    fd, tmp_cpp = tempfile.mkstemp(suffix=".cpp", dir=path.parent)
    with os.fdopen(fd, "w") as f:
        f.write(source)
    tmp_so = f"{path}.tmp{os.getpid()}.{threading.get_ident()}"
    cmd = [compiler(), *flags(extra), tmp_cpp, "-o", tmp_so, *LIBS]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    return proc, path, tmp_so, tmp_cpp


def _finish(job) -> str | None:
    """Wait for a compile ``_start`` began; its error, or None once the object is in place."""
    proc, path, tmp_so, tmp_cpp = job
    _, err = proc.communicate()
    _unlink(tmp_cpp)
    if proc.returncode != 0:
        _unlink(tmp_so)
        return f"{path.name}: {err.decode(errors='replace')[-4000:]}"
    os.replace(tmp_so, path)
    return None


def _unlink(p):
    try:
        os.unlink(p)
    except OSError:
        pass


_libraries: dict[Path, ctypes.CDLL] = {}
_lock = threading.Lock()


def load_function(path: Path, name: str, nargs: int, scalars: Sequence[type] = (), returns_code: bool = False):
    """The ``extern "C"`` function ``name`` of the library at ``path``, taking ``nargs`` pointers
    then one number per item of ``scalars``: an int64 for ``int``, a double for ``float``;
    ``returns_code``: it returns an int32 (the code of a failed check), else nothing."""
    with _lock:
        lib = _libraries.get(path)
        if lib is None:
            lib = _libraries[path] = ctypes.CDLL(str(path))
    fn = getattr(lib, name)
    fn.argtypes = [ctypes.c_void_p] * nargs + [ctypes.c_double if t is float else ctypes.c_int64 for t in scalars]
    fn.restype = ctypes.c_int32 if returns_code else None
    return fn
