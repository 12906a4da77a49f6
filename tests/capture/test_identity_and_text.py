"""The identity and the text of a value are values like any other: ``id(t)``/``hash(t)`` of the tensor a call
is given, and ``str``/``repr``/``%``/``format`` of its numbers, differ from call to call; a compiled call
must compute them again (or re-read them in its guards), never return the first call's.
"""
import pytest
import torch

from twin import FromEnv, differential, fresh, plain

BACKENDS = ["eager", "magpy"]


def text_of(x):
    return str(x), repr(x), "%s" % x, "%s and %r" % (x, x.sum()), format(x.sum(), ".2f"), "{}".format(x), f"{x}"


def text_in_a_key(x, log):
    log[str(x.argmax())] = x.max()
    return x * len(log)


@pytest.mark.parametrize("backend", BACKENDS)
def test_text_of_a_tensor_is_made_again_each_call(backend):
    differential(plain(text_of), fresh(lambda: (torch.randn(3),), 4), backend=backend)


@pytest.mark.parametrize("backend", BACKENDS)
def test_text_of_a_tensor_used_as_a_key(backend):
    def make():
        return text_in_a_key, {}
    differential(make, fresh(lambda: (torch.randn(3), FromEnv()), 4), backend=backend,
                 observe=lambda log: sorted(log))


def memo_by_id(x, cache):
    key = id(x)
    if key not in cache:
        cache[key] = x * 2
    return cache[key]


def memo_by_hash(x, cache):
    return cache.setdefault(hash(x), x + 1)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("fn", [memo_by_id, memo_by_hash], ids=lambda f: f.__name__)
def test_a_memo_keyed_by_identity_tells_tensors_apart(fn, backend):
    # the same three tensors in turn: ids repeat exactly where eager's do
    tensors = [torch.randn(3) for _ in range(3)]

    def make():
        return fn, {}
    order = [0, 1, 0, 2, 1, 2]
    calls = [(FromEnv(lambda env, k=k: tensors[k]), FromEnv()) for k in order]
    differential(make, calls, backend=backend, observe=lambda cache: len(cache))


@pytest.mark.parametrize("backend", BACKENDS)
def test_identity_in_arithmetic(backend):
    tensors = [torch.randn(3) for _ in range(3)]

    def fn(x):
        return x * (id(x) % 7), hash(x) == id(x)

    calls = [(FromEnv(lambda env, k=k: tensors[k]),) for k in [0, 1, 2, 0]]
    differential(plain(fn), calls, backend=backend)
