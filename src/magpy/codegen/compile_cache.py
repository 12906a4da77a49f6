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


def compile_sources(sources: Sequence[str], jobs: int | None = None,
                    extra_flags: Sequence[Sequence[str]] | None = None) -> list[Path]:
    """Shared objects for ``sources`` (compiled in parallel where not cached); ``extra_flags``
    gives each source's flags beyond the common ones."""
    extra_flags = extra_flags or [()] * len(sources)
    paths = [library_path(s, e) for s, e in zip(sources, extra_flags)]
    todo = {}
    for source, extra, path in zip(sources, extra_flags, paths):
        if not path.exists():
            todo[path] = (source, extra)
    jobs = jobs or max(os.cpu_count() or 1, 1)
    pending = list(todo.items())
    running = []
    errors = []
    while pending or running:
        while pending and len(running) < jobs:
            path, (source, extra) = pending.pop()
            running.append(_start(path, source, extra))
        proc, path, tmp_so, tmp_cpp = running.pop(0)
        _, err = proc.communicate()
        if proc.returncode != 0:
            errors.append(f"{path.name}: {err.decode(errors='replace')[-4000:]}")
            _unlink(tmp_so)
        else:
            os.replace(tmp_so, path)
        _unlink(tmp_cpp)
    if errors:
        raise CompileError("C++ compilation failed:\n" + "\n".join(errors))
    return paths


#: Source characters of kernels worth a shared object of their own: gcc pays about 0.2 s per object to parse
#: the prelude's headers, and about as much again per 10,000 characters of kernels at -O3; a graph's kernels
#: share objects (one per core at most, none smaller than this), not one each (hf_gpt2's 48 kernels:
#: 10.4 s of gcc apart, 1.8 s in two objects).
CHUNK_MIN_CHARS = 16_000


def compile_kernels(kernels: Sequence[tuple[str, str, Sequence[str]]], wrap, jobs: int | None = None) -> dict[str, Path]:
    """Kernel name -> the shared object holding it, for ``kernels`` (name, source of its function, its extra
    flags): those of the same flags compiled together, ``wrap`` making a file of their joined sources, in as
    many objects as ``jobs`` (one per core) and ``CHUNK_MIN_CHARS`` allow, compiled in parallel."""
    jobs = jobs or max(os.cpu_count() or 1, 1)
    groups: dict[tuple, list] = {}
    for name, body, extra in kernels:
        groups.setdefault(tuple(extra), []).append((name, body))
    chunks = []
    for extra, members in groups.items():
        total = sum(len(body) for _, body in members)
        count = max(1, min(jobs, len(members), total // CHUNK_MIN_CHARS))
        loads, bins = [0] * count, [[] for _ in range(count)]
        for k in sorted(range(len(members)), key=lambda k: -len(members[k][1])):  # (largest to the lightest)
            i = loads.index(min(loads))
            loads[i] += len(members[k][1])
            bins[i].append(k)
        chunks += [(extra, [members[k] for k in sorted(b)]) for b in bins]
    paths = compile_sources([wrap("\n".join(body for _, body in chunk)) for _, chunk in chunks], jobs,
                            [extra for extra, _ in chunks])
    return {name: path for (_, chunk), path in zip(chunks, paths) for name, _ in chunk}


def _start(path: Path, source: str, extra: Sequence[str]):
    fd, tmp_cpp = tempfile.mkstemp(suffix=".cpp", dir=path.parent)
    with os.fdopen(fd, "w") as f:
        f.write(source)
    tmp_so = f"{path}.tmp{os.getpid()}.{threading.get_ident()}"
    cmd = [compiler(), *flags(extra), tmp_cpp, "-o", tmp_so, *LIBS]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    return proc, path, tmp_so, tmp_cpp


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
