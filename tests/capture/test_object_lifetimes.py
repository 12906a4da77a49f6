"""An object the call drops dies when eager's would, not when the garbage collector next runs.

Its death can be its effect: torch's guards undo what they did when collected (``Tensor.__str__`` holds
``guard = torch._C._DisableFuncTorch()`` while it formats), a ``__del__`` or a weakref callback runs then.
Capture records what the call made; holding those objects past the frame that dropped them left functorch
off for the rest of the call, and after it until a collection, at a moment no program chose (a later
``torch.vmap`` of a ``vmap`` then failed).
"""
import gc
import weakref

import pytest
import torch

import magpy
from twin import FromEnv, differential, fresh, plain

BACKENDS = ["eager", "magpy"]


@pytest.fixture
def no_collector():
    """The garbage collector off: only what reference counting frees dies (as it does in eager)."""
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def text_then_vmap_of_vmap(x, y, w):
    # (``_str``'s guard turns functorch off while it formats, and dies when it returns)
    text = f"{x} {format(w.sum(), '.2f')}"

    def inner(a, b):
        return (a * b * w).sum()
    return torch.vmap(torch.vmap(inner, in_dims=(None, 0)), in_dims=(0, None))(x, y), len(text)


def functorch_layers():
    return torch._C._functorch.get_dynamic_layer_stack_depth(), str(torch._C._dispatch_tls_local_exclude_set())


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_text_of_a_tensor_leaves_functorch_on_for_the_rest_of_the_call(backend, no_collector):
    before = functorch_layers()
    differential(plain(text_then_vmap_of_vmap), fresh(lambda: (torch.randn(3, 2), torch.randn(4, 2), torch.randn(2))),
                 backend=backend)
    assert functorch_layers() == before


class Finalized:
    """Logs its own death (a resource released in ``__del__``)."""

    def __init__(self, log, name):
        self.log, self.name = log, name

    def __del__(self):
        self.log.append(self.name)


def drops_a_resource(x, log):
    r = Finalized(log, "first")
    y = x * 2
    del r               # (dies here in eager: the log has it before the next line runs)
    n = len(log)
    keep = Finalized(log, "second")  # (dies when the call returns)
    return y + n, keep.name


@pytest.mark.parametrize("backend", BACKENDS)
def test_an_object_the_call_drops_is_finalized_when_eager_finalizes_it(backend, no_collector):
    def make():
        return drops_a_resource, []
    differential(make, fresh(lambda: (torch.randn(3), FromEnv())), backend=backend, observe=list)


def made_in_a_helper(x, log):
    def helper(t):
        scratch = Finalized(log, "scratch")   # (a local of the helper: dies when the helper returns)
        return t + len(scratch.name)
    y = helper(x)
    return y * len(log)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_local_of_a_returned_helper_is_finalized_before_the_caller_goes_on(backend, no_collector):
    def make():
        return made_in_a_helper, []
    differential(make, fresh(lambda: (torch.randn(3), FromEnv())), backend=backend, observe=list)


def formats_and_adds(x):
    return f"{x}", format(x.sum(), ".2f"), x + 1


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_call_that_formats_a_tensor_leaves_functorch_as_it_found_it(backend, no_collector):
    before = functorch_layers()
    compiled = magpy.compile(formats_and_adds, backend=backend)
    for _ in range(3):
        x = torch.randn(3)
        text, total, y = compiled(x)
        assert functorch_layers() == before
        assert (text, total) == (f"{x}", format(x.sum(), ".2f")) and torch.equal(y, x + 1)
        # (eager's nested vmap, right after: it needs functorch on)
        assert torch.allclose(text_then_vmap_of_vmap(x.view(3, 1), y.view(3, 1), x[:1])[0],
                              (x.view(3, 1, 1) * y.view(1, 3, 1) * x[:1]).sum(-1))


class Plain:
    """An object the call makes (no finalizer of its own: its death is seen by a weak reference)."""


def makes_then_raises(x, made):
    obj = Plain()
    made.append(weakref.ref(obj))
    y = x * 2
    if x.sum() > 0:   # (a branch on data: the capture raises as the program does)
        raise ValueError("positive")
    return y + 1


@pytest.mark.parametrize("backend", BACKENDS)
def test_an_exception_the_call_raised_holds_the_call_s_objects_no_longer_than_eager_s(backend, no_collector):
    compiled = magpy.compile(makes_then_raises, backend=backend)
    for fn in (makes_then_raises, compiled, compiled, compiled):
        made = []
        try:
            fn(torch.ones(3), made)
        except ValueError:
            pass    # (dropped at the end of this block, as a program drops it)
        else:
            raise AssertionError("the call did not raise")
        # (the exception is gone: nothing holds the frame it left, nor a cycle through it)
        assert made and made[0]() is None
        made = []
        fn(-torch.ones(3), made)
        assert made[0]() is None


class NoInit:
    """Made natively (``type.__call__``: no ``__init__`` of its own to interpret)."""


class FinalizedNatively:
    """Logs its death; made natively (no ``__init__``)."""
    log = None

    def __del__(self):
        FinalizedNatively.log.append("died")


def a_weak_callback_then_a_read(x, log):
    obj = NoInit()
    ref = weakref.ref(obj, lambda _: log.append("callback"))
    del obj           # (the callback runs here in eager)
    return x * len(log), ref() is None


def finalized_natively(x, log):
    FinalizedNatively.log = log
    obj = FinalizedNatively()
    y = x + 1
    del obj
    return y * len(log)


@pytest.mark.parametrize("program", [a_weak_callback_then_a_read, finalized_natively])
@pytest.mark.parametrize("backend", BACKENDS)
def test_a_death_with_an_effect_after_a_break_happens_where_eager_s_does(program, backend, no_collector):
    # (each object is made by a native call: a graph break, the rest of the call in a resume function)
    def make():
        return program, []
    differential(make, fresh(lambda: (torch.randn(3), FromEnv())), backend=backend, observe=list)


def a_weak_dictionary_of_a_temporary(x):
    cache = weakref.WeakValueDictionary()
    cache["k"] = Plain()     # (dies at once: the entry goes with it)
    return x + len(cache)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_weak_dictionary_loses_a_dead_entry_at_once(backend, no_collector):
    differential(plain(a_weak_dictionary_of_a_temporary), fresh(lambda: (torch.randn(3),)), backend=backend)
