"""The generated wrapper: what it runs per call (views from layouts, torch's bindings for library
calls, direct kernel launches on a GPU), checked against eager."""
import os

if os.environ.get("MAGPY_TEST_DEVICE", "cpu") == "cpu":
    os.environ.setdefault("TRITON_INTERPRET", "1")  # before triton is imported (tests/conftest.py does too)

import pytest  # noqa: E402
import torch  # noqa: E402

from codegen_check import DEVICE, check, trace  # noqa: E402
from magpy.codegen import compile_aten_graph  # noqa: E402


def test_views_for_library_calls_are_made_from_their_layouts():
    def fn(x, w):
        return (x.view(8, 16) @ w.t()).relu()

    report = check(fn, torch.randn(2, 4, 16), torch.randn(8, 16), mode="cpp")
    assert "reinterpret(" in report.wrapper and "aten.view" not in report.wrapper
    assert "torch.mm(" in report.wrapper


def test_a_view_of_an_input_starting_mid_storage_keeps_its_offset():
    def fn(x, w):
        return (x[:, 2:] @ w).sin()

    storage = torch.randn(7 * 10 + 3)
    x = storage[3:].view(7, 10)  # the input itself starts 3 elements into its storage
    report = check(fn, x, torch.randn(8, 5), mode="cpp")
    assert "reinterpret(" in report.wrapper


def test_a_flip_returned_as_it_is_stays_a_flip():
    # (a view in our IR, a new tensor to torch: made from its meta layout it was the identity)
    def fn(x, y):
        return x.flip(-1), y.flip(0) + 1

    check(fn, torch.randn(3, 5), torch.randn(4, 2), mode="cpp")


triton = pytest.importorskip("triton")


@pytest.mark.skipif(DEVICE.type != "cpu", reason="fakes the GPU launcher around interpreted kernels")
def test_direct_launches_pass_pointers_and_sizes_and_check_input_alignment(monkeypatch):
    """After the first call, kernels launch through their DirectLaunch: pointers in parameter
    order, then sizes; the stream read once; a misaligned input goes back to the first wrapper."""
    from magpy.codegen import wrapper
    from magpy.codegen.triton.runtime import DirectLaunch, TritonLauncher, interpreting

    if not interpreting():
        pytest.skip("triton was imported before TRITON_INTERPRET=1")
    launches = []

    def launch(*args):
        launches.append(args)

    def direct(self):
        return DirectLaunch(launch, self.grid(self.config), 0x1234, False, False, (4, 1, 0),
                            self.sizes + (self.config[0],), 0)

    monkeypatch.setattr(TritonLauncher, "direct", direct)
    monkeypatch.setattr(wrapper, "cuda_runtime", lambda: (lambda device: 99, lambda: 0))

    def fn(x, y):
        return x.sin() + y

    x, y = torch.randn(64), torch.randn(64)
    compiled = compile_aten_graph(trace(fn, x, y), (x, y), mode="triton")
    torch.testing.assert_close(compiled(x, y), fn(x, y))  # first wrapper: compiles the kernel
    assert not launches and "stream = _raw_stream(0)" in compiled.magpy_report.wrapper
    compiled(x, y)
    (args,) = launches
    assert args[3] == 99 and args[4] == 0x1234 and set(args[14:16]) == {x.data_ptr(), y.data_ptr()}
    assert args[16:] == (64, 64)
    storage = torch.randn(65)
    torch.testing.assert_close(compiled(storage[1:], y), fn(storage[1:], y))  # misaligned: first wrapper
    assert len(launches) == 1


@pytest.mark.skipif(DEVICE.type != "cuda", reason="needs a GPU")
def test_on_a_gpu_later_calls_launch_directly_and_follow_their_inputs():
    def fn(x, y):
        return (x.sin() + y).softmax(-1)

    x, y = torch.randn(64, 128, device="cuda"), torch.randn(128, device="cuda")
    compiled = compile_aten_graph(trace(fn, x, y), (x, y), mode="triton")
    torch.testing.assert_close(compiled(x, y), fn(x, y))
    assert "_launch(" in compiled.magpy_report.wrapper
    for _ in range(3):
        x = torch.randn(64, 128, device="cuda")
        torch.testing.assert_close(compiled(x, y), fn(x, y))
    misaligned = torch.randn(64 * 128 + 1, device="cuda")[1:].view(64, 128)
    torch.testing.assert_close(compiled(misaligned, y), fn(misaligned, y))


_dropped = []   # what the probe saw: was the first input freed by the time it ran?
_watched = {}


@torch.library.custom_op("magpy_test::probe_freed", mutates_args=())
def _probe_freed(x: torch.Tensor) -> torch.Tensor:
    ref = _watched.get("a")
    _dropped.append(ref is not None and ref() is None)
    return x.clone()


_probe_freed.register_fake(lambda x: torch.empty_like(x))


def test_a_boxed_call_frees_each_input_after_its_last_use_as_autograd_frees_saved_tensors():
    """AOTAutograd hands a backward its saved activations in a list it lets the graph empty: holding every
    one to the end made a BERT's training step peak at 1.8x eager's memory."""
    import weakref

    def fn(a, b):
        return torch.ops.magpy_test.probe_freed((a * 2).sum() + b) * 3

    a, b = torch.randn(64), torch.randn(64)
    expected = fn(a, b)
    compiled = compile_aten_graph(trace(fn, a, b), [a, b], mode="cpp")
    args = [a.clone(), b.clone()]
    _watched["a"] = weakref.ref(args[0])
    _dropped.clear()
    torch.testing.assert_close(compiled.boxed(args), expected)
    assert args == [] and _dropped[0] is True   # the caller's list emptied, `a` gone before the probe ran
    # a plain call leaves the caller's tensors alone
    kept = (a.clone(), b.clone())
    torch.testing.assert_close(compiled(*kept), expected)
    assert len(kept) == 2
