"""Triton kernels compiled ahead of their first launch in worker processes (``triton.precompile``).

On CPU: the workers compile for an H100's target (Triton's NVIDIA stages and ptxas run without a
GPU), jobs are recorded through Triton's JIT entry with a stand-in driver in a process that does
not interpret, and interpreting makes none. With ``MAGPY_TEST_DEVICE=cuda``: a compiled graph's
first launch compiles nothing (every compile a cache hit) and matches eager.
"""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from codegen_check import DEVICE

triton = pytest.importorskip("triton")

from magpy.codegen.triton import precompile  # noqa: E402
from magpy.codegen.triton.runtime import TritonLauncher, interpreting  # noqa: E402

HERE = Path(__file__).parent
SRC = HERE.parent.parent / "src"

KERNEL = '''import triton
import triton.language as tl


@triton.jit
def scale(in0, out0, f0: "fp64", xnumel, XBLOCK: tl.constexpr):
    xindex = tl.program_id(0) * XBLOCK + tl.arange(0, XBLOCK)
    xmask = xindex < xnumel
    tl.store(out0 + xindex, (tl.load(in0 + xindex, xmask) * f0).to(tl.float32), xmask)
'''


def _nvidia_offline() -> bool:
    try:
        from triton.backends.nvidia.compiler import get_ptxas

        return os.path.exists(get_ptxas(90).path)
    except Exception:  # noqa: BLE001
        return False


nvidia = pytest.mark.skipif(not _nvidia_offline(), reason="Triton's NVIDIA backend (ptxas) is not installed")
cpu_only = pytest.mark.skipif(DEVICE.type != "cpu", reason="a CPU run's test")


def _job(tmp_path, xblock=1024, warps=4):
    """A compile job of ``scale`` as Triton's JIT entry would record it for an H100."""
    path = tmp_path / "kscale.py"
    path.write_text(KERNEL)
    module = "magpy_test_kscale"
    aligned = [["tt.divisibility", 16]]
    data = json.dumps({
        "name": f"{module}.scale", "key": "test",
        "signature": {"in0": "*fp16", "out0": "*fp32", "f0": "fp64", "xnumel": "i32", "XBLOCK": "constexpr"},
        "constant_keys": [[4]], "constant_vals": [xblock],
        "attrs_keys": [[0], [1], [3]], "attrs_vals": [aligned, aligned, aligned],
        "options": {"num_warps": warps}})
    return (str(path), module, "scale", ("cuda", 90, 32), data, str(tmp_path / "cache"))


def _binaries(folder: Path) -> list:
    return sorted(p.name for p in folder.rglob("*.cubin")) if folder.exists() else []


@pytest.fixture
def pool():
    pool = precompile.CompilePool(2)
    yield pool
    pool.close()


@nvidia
def test_a_worker_compiles_a_job_into_the_cache(tmp_path, pool):
    assert pool.submit(_job(tmp_path)).result(timeout=120) is None
    assert _binaries(tmp_path / "cache") == ["scale.cubin"]


@nvidia
def test_a_config_that_does_not_compile_fails_its_future_only(tmp_path, pool):
    bad = pool.submit(_job(tmp_path, xblock=1000))  # (tl.arange wants a power of two)
    good = pool.submit(_job(tmp_path, xblock=512))
    assert isinstance(bad.exception(timeout=120), precompile.PrecompileFailed)
    assert good.result(timeout=120) is None
    assert len(_binaries(tmp_path / "cache")) == 1


@nvidia
def test_a_worker_that_died_fails_its_job_and_is_replaced(tmp_path):
    pool = precompile.CompilePool(1)
    try:
        pool.submit(_job(tmp_path)).result(timeout=120)
        worker, = pool.workers
        worker.process.kill()
        worker.process.wait()
        assert isinstance(pool.submit(_job(tmp_path, xblock=128)).exception(timeout=120), (OSError, EOFError))
        assert pool.submit(_job(tmp_path, xblock=256)).result(timeout=120) is None
        assert len(pool.workers) == 1 and pool.workers[0] is not worker
    finally:
        pool.close()


def test_workers_that_cannot_start_break_the_pool_after_a_few_tries(tmp_path, monkeypatch):
    def no_worker():
        raise OSError("no python here")

    monkeypatch.setattr(precompile, "WorkerProcess", no_worker)
    pool = precompile.CompilePool(1)
    tries = [pool.submit(_job(tmp_path, xblock=2 ** i)) for i in range(precompile.CompilePool.DEATHS + 2)]
    errors = [type(f.exception(timeout=60)) for f in tries]
    assert errors == [OSError] * pool.DEATHS + [precompile.PrecompileFailed] * 2 and pool.broken


def test_the_same_pending_job_shares_its_future(tmp_path, pool):
    job = _job(tmp_path)
    assert pool.submit(job) is pool.submit(job)


def test_settle_takes_back_queued_compiles_and_ignores_failures():
    from concurrent.futures import Future

    queued, failed, done = Future(), Future(), Future()
    failed.set_running_or_notify_cancel()
    failed.set_exception(precompile.PrecompileFailed("out of resources"))
    done.set_running_or_notify_cancel()
    done.set_result(None)
    precompile.settle([queued, failed, done])
    assert queued.cancelled()


def test_workers_default_to_the_cpus_and_zero_turns_them_off(monkeypatch):
    monkeypatch.delenv(precompile.WORKERS_VARIABLE, raising=False)
    assert 1 <= precompile.worker_count() <= precompile.MAX_WORKERS
    monkeypatch.setenv(precompile.WORKERS_VARIABLE, "3")
    assert precompile.worker_count() == 3
    monkeypatch.setenv(precompile.WORKERS_VARIABLE, "0")
    assert precompile.worker_count() == 0 and precompile.compile_pool() is None


@nvidia
@cpu_only
def test_recorded_jobs_make_every_launch_a_cache_hit(tmp_path):
    """In a process that compiles (with a stand-in driver): each config's compile, asked again of
    Triton's JIT entry after the pool has run the graph's jobs, finds its binary in the cache."""
    env = dict(os.environ, TRITON_CACHE_DIR=str(tmp_path / "triton"), MAGPY_CACHE_DIR=str(tmp_path / "magpy"),
               PYTHONPATH=os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")]))
    env.pop("TRITON_INTERPRET", None)
    env.pop(precompile.WORKERS_VARIABLE, None)
    done = subprocess.run([sys.executable, str(HERE / "precompile_check.py")], env=env, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["fallback"] is None and result["launchers"] == result["kernels"] >= 2
    assert result["jobs"] == result["configs"] > result["launchers"]  # (some kernels time several configs)
    assert (result["hits"], result["misses"]) == (result["configs"], 0)


@cpu_only
def test_interpreting_compiles_nothing_ahead(monkeypatch):
    from codegen_check import trace
    from magpy.codegen import compile_aten_graph

    if not interpreting():
        pytest.skip("triton was imported before TRITON_INTERPRET=1")
    made = []
    monkeypatch.setattr(precompile, "precompile_graph", lambda *args: made.append(args))
    monkeypatch.setattr(precompile, "compile_pool", lambda: made.append("pool"))
    x = torch.randn(64, 64)
    fn = compile_aten_graph(trace(lambda x: (x.sin() + 1,), x), [x], mode="triton")
    torch.testing.assert_close(fn(x)[0], x.sin() + 1)
    assert made == []


@pytest.mark.skipif(DEVICE.type != "cuda" or not torch.cuda.is_available(), reason="needs MAGPY_TEST_DEVICE=cuda")
def test_a_first_launch_compiles_nothing_and_matches_eager(tmp_path, monkeypatch):
    from triton import knobs

    from codegen_check import trace
    from magpy.codegen import compile_aten_graph

    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "triton"))  # (empty: no binary from earlier runs)
    monkeypatch.delenv(precompile.WORKERS_VARIABLE, raising=False)
    made = []
    jobs = precompile.jobs

    def recording(launcher, *args):
        made.append(launcher)
        return jobs(launcher, *args)

    monkeypatch.setattr(precompile, "jobs", recording)

    def fn(x, y):
        return (x.sin() * y + 1, torch.softmax(x, -1), x.sum(0), (x.t() * 2).contiguous())

    x = torch.randn(4096, 1024, device="cuda")
    y = torch.randn(4096, 1024, device="cuda", dtype=torch.bfloat16)
    compiled = compile_aten_graph(trace(fn, x, y), [x, y], mode="triton")
    assert made and all(isinstance(launcher, TritonLauncher) for launcher in made)
    assert any(launcher.pending for launcher in made)
    events = []
    monkeypatch.setattr(knobs.compilation, "listener", lambda **event: events.append(event["cache_hit"]))
    out = compiled(x, y)
    torch.cuda.synchronize()
    assert events and all(events), f"{events.count(False)} of {len(events)} compiles at launch missed the cache"
    for a, b in zip(out, fn(x, y)):
        torch.testing.assert_close(a, b, rtol=2e-2, atol=2e-2)
