"""A process compiling Triton kernels into Triton's on-disk cache, for ``precompile``'s pool.

It is run by path (``python -c`` running this file), not imported as part of magpy: importing
``magpy.codegen`` imports torch, which a compiler process has no use for (its start-up time and
memory, once per worker). So this file uses the standard library and Triton only.

The parent talks to it through its stdin and stdout: length-prefixed pickles. First the parent's
``sys.path`` (so that ``import triton`` is the parent's Triton, and a kernel file's imports resolve
as they did there), then one ``Job`` tuple at a time, each answered by None (compiled) or the text
of the error that stopped it. End of input ends the process. Whatever Triton or ptxas print goes
to stderr: stdout carries only the answers.

A job is what Triton's own ``JITFunction.preload`` takes: the kernel's specialisation as its
launch recorded it (``specialization_data``: signature, constexprs, attributes, options). Compiling
through ``preload`` is compiling what that launch would have (the same source object, options and
on-disk cache key), so the launch finds the binary in the cache. No GPU is touched here: a
stand-in driver names the parent's target (Triton's NVIDIA stages and ptxas run offline).
"""
import importlib.util
import os
import pickle
import signal
import struct
import sys

HEADER = struct.Struct("<Q")


def read_message(stream):
    """The next pickled message of ``stream``; raises EOFError at its end."""
    header = stream.read(HEADER.size)
    if len(header) < HEADER.size:
        raise EOFError
    size, = HEADER.unpack(header)
    body = stream.read(size)
    if len(body) < size:
        raise EOFError
    return pickle.loads(body)


def write_message(stream, message) -> None:
    body = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(HEADER.pack(len(body)) + body)
    stream.flush()


class StandInDriver:
    """What ``JITFunction.preload`` asks of Triton's active driver: a device, a stream and the
    target to compile for (the parent's GPU), without initialising any GPU."""

    def __init__(self, target):
        self.target = target

    def get_current_device(self):
        return 0

    def get_current_stream(self, device=None):
        return 0

    def get_current_target(self):
        return self.target


_kernels: dict = {}  # (path, module name) -> module


def kernel_function(path: str, module_name: str, function: str):
    """The ``@triton.jit`` function of a kernel file, imported under the name the parent gave its
    module (the name is part of the function's identity to Triton)."""
    module = _kernels.get((path, module_name))
    if module is None:
        spec = importlib.util.spec_from_file_location(module_name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[module_name] = module
        spec.loader.exec_module(module)
        _kernels[path, module_name] = module
    return getattr(module, function)


def compile_job(job) -> None:
    """Compile one job: ``(path, module name, function, target (backend, arch, warp size),
    specialization_data, Triton's cache directory)``. Raises what the compile raises."""
    path, module_name, function, target, data, cache = job
    from triton import knobs
    from triton.backends.compiler import GPUTarget
    from triton.runtime import driver

    knobs.cache.dir = cache
    driver.set_active(StandInDriver(GPUTarget(*target)))
    kernel_function(path, module_name, function).preload(data)


def serve(requests, answers) -> None:
    """Answer jobs from ``requests`` until its end."""
    sys.path[:] = read_message(requests)
    while True:
        try:
            job = read_message(requests)
        except EOFError:
            return
        try:
            compile_job(job)
            answer = None
        except BaseException as e:  # noqa: BLE001 - reported to the parent, which goes on without it
            answer = f"{type(e).__name__}: {e}"
        write_message(answers, answer)


def main() -> None:
    # Ctrl-C in a terminal reaches the whole process group: the parent decides, this one goes on
    # until its input ends.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    answers = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    serve(sys.stdin.buffer, answers)


if __name__ == "__main__":
    main()
