"""Calls between user functions: *args/**kwargs forwarding, defaults, closures, closure factories,
nested and recursive functions, decorators, lambdas."""
import functools

import torch

try:
    from .twin import fresh, differential, expect, expect_one_graph, expect_recompile, plain, unsupported, Call
except ImportError:  # tests/capture is not a package: pytest put this folder on sys.path
    from twin import fresh, differential, expect, expect_one_graph, expect_recompile, plain, unsupported, Call


def t(*shape):
    return torch.randn(*shape) if shape else torch.randn(2, 3)


# ---- *args / **kwargs (the original's call_function_ex tests) --------------------------------------

def _inner(a, b, scale=1.0, *, shift=0.0):
    return a * scale + b + shift


def test_star_args_forwarding():
    def fn(*args):
        return _inner(*args)

    stats = differential(plain(fn), [(t(), t()), (t(), t()), (t(), t(), 2.0)])
    expect_recompile(stats)


def test_star_kwargs_forwarding():
    def fn(a, b, **kwargs):
        return _inner(a, b, **kwargs)

    calls = [Call((t(), t()), {"shift": 1.0}), Call((t(), t()), {"shift": 1.0}),
             Call((t(), t()), {"shift": 1.0, "scale": 3.0})]
    stats = differential(plain(fn), calls)
    expect_recompile(stats)


def test_args_and_kwargs_forwarded_through_a_wrapper():
    def wrapper(*args, **kwargs):
        return _inner(*args, **kwargs) * 2

    calls = [Call((t(), t(), 0.5), {"shift": -1.0}) for _ in range(2)] + [Call((t(), t()), {"scale": 0.5})]
    stats = differential(plain(wrapper), calls)
    expect_recompile(stats)


def test_star_call_with_a_list_and_a_dict_built_inside():
    def fn(a, b):
        pos = [a, b]
        opts = {"scale": 2.0}
        opts["shift"] = a.shape[0]
        return _inner(*pos, **opts)

    stats = differential(plain(fn), fresh(lambda: (t(), t()), 2) + [(t(4, 1), t(4, 1))])
    expect_recompile(stats)


def test_star_args_of_an_iterator():
    # (adapter-transformers' reshape_fortran: ``x.permute(*reversed(range(len(x.shape))))`` — the
    # iterator is consumed once; its items are the call's arguments)
    def fn(x):
        x = x.permute(*reversed(range(len(x.shape))))
        return x.reshape(*reversed([4, 3, 2])) * 2

    stats = differential(plain(fn), fresh(lambda: (torch.randn(2, 3, 4),)))
    expect_one_graph(stats)


def test_star_args_of_an_iterator_over_an_argument():
    # (the items come from the argument: a call with other dims must not reuse the first's)
    def fn(x, dims):
        return x.permute(*reversed(dims)) + x.permute(*iter(dims)).sum()

    differential(plain(fn), [(torch.randn(3, 3), [0, 1]), (torch.randn(3, 3), [0, 1]),
                             (torch.randn(3, 3), [1, 0])])


def test_star_args_of_a_tuple_argument():
    def fn(pair):
        return torch.add(*pair)

    stats = differential(plain(fn), fresh(lambda: ((t(), t()),)))
    expect_one_graph(stats)


def test_default_and_keyword_only_arguments():
    def fn(x, k=2, *, bias=None):
        y = x * k
        if bias is not None:
            y = y + bias
        return y

    calls = [Call((t(),)), Call((t(),)), Call((t(),), {"bias": t()})]
    stats = differential(plain(fn), calls)
    expect_recompile(stats)


def test_positional_only_and_varargs_count():
    def fn(x, /, *rest):
        for r in rest:
            x = x - r
        return x, len(rest)

    stats = differential(plain(fn), [(t(), t()), (t(), t()), (t(), t(), t())])
    expect_recompile(stats)


def test_unpacking_a_returned_tuple():
    def split(x):
        return x.relu(), -x

    def fn(x):
        a, b = split(x)
        first, *rest = [a, b, a + b]
        return first * rest[0] + rest[1]

    stats = differential(plain(fn), fresh(lambda: (t(),)))
    expect_one_graph(stats)


# ---- closures --------------------------------------------------------------------------------------

def make_scaler(factor):
    def scale(x):
        return x * factor
    return scale


def test_closure_reading_a_cell():
    scale = make_scaler(3.0)

    def fn(x):
        return scale(x) + 1

    stats = differential(plain(fn), fresh(lambda: (t(),)))
    expect_one_graph(stats)


def test_compiling_a_closure_directly():
    stats = differential(lambda: (make_scaler(2.5), None), fresh(lambda: (t(),)))
    expect_one_graph(stats)


def test_closure_factory_called_inside():
    def fn(x, factors):
        layers = [make_scaler(f) for f in factors]
        for layer in layers:
            x = layer(x)
        return x

    stats = differential(plain(fn), fresh(lambda: (t(), (2.0, 3.0)), 2) + [(t(), (2.0, 4.0))])
    expect_recompile(stats)


def test_closure_over_a_tensor():
    w = torch.randn(3)

    def fn(x):
        return x * w

    stats = differential(plain(fn), fresh(lambda: (t(),)))
    expect_one_graph(stats)


def test_closure_cell_changed_between_calls_recompiles():
    def make():
        k = 2

        def fn(x):
            return x * k

        def set_k(v):
            nonlocal k
            k = v
        fn.set_k = set_k
        return fn, fn

    calls = [Call((t(),)), Call((t(),)), Call((t(),), before=lambda env: env.set_k(5))]
    stats = differential(make, calls, observe=lambda env: None)
    expect_recompile(stats)


def test_densenet_style_closure_factory_with_star_features():
    # DenseNet: a closure factory builds the bottleneck, called as ``layer(*features)``
    def bn_function_factory(conv):
        def bn_function(*inputs):
            return conv(torch.cat(inputs, 1))
        return bn_function

    conv = torch.nn.Linear(8, 2)

    def make():
        layer = bn_function_factory(conv)

        def fn(x):
            features = [x]
            for _ in range(2):
                features.append(layer(*features[:2]) if len(features) > 1 else torch.cat([x, x, x], 1))
            return torch.cat(features, 1)
        return fn, None

    stats = differential(make, fresh(lambda: (t(2, 2),)))
    expect_one_graph(stats)


# ---- nested and other user functions ---------------------------------------------------------------

def _helper_deep(x, depth):
    if depth == 0:
        return x
    return _helper_deep(x.sin(), depth - 1) + depth


def test_recursive_user_function():
    def fn(x, depth):
        return _helper_deep(x, depth)

    stats = differential(plain(fn), [(t(), 3), (t(), 3), (t(), 2)])
    expect_recompile(stats)


def test_function_defined_inside_the_call():
    def fn(x, y):
        def combine(a, b=y):
            return a * b + a
        return combine(x) + combine(y, x)

    stats = differential(plain(fn), fresh(lambda: (t(), t())))
    expect_one_graph(stats)


def test_lambda_and_functools_partial():
    def fn(x, alpha):
        act = functools.partial(torch.nn.functional.leaky_relu, negative_slope=alpha)
        sq = lambda v: v * v  # noqa: E731
        return sq(act(x))

    stats = differential(plain(fn), [(t(), 0.1), (t(), 0.1), (t(), 0.2)])
    expect_recompile(stats)


def _twice(f):
    @functools.wraps(f)
    def wrapped(*args, **kwargs):
        return f(*f(*args, **kwargs), **kwargs)
    return wrapped


@_twice
def _pair_step(a, b, k=1.0):
    return a + b * k, b


def test_decorated_user_function():
    def fn(a, b):
        return _pair_step(a, b, k=0.5)

    stats = differential(plain(fn), fresh(lambda: (t(), t())))
    expect_one_graph(stats)


def test_method_of_a_user_object_passed_as_argument():
    class Affine:
        def __init__(self, w):
            self.w = w

        def __call__(self, x):
            return self.apply(x) + 1

        def apply(self, x):
            return x * self.w

    def fn(f, x):
        return f(x)

    stats = differential(plain(fn), fresh(lambda: (Affine(2.0), t()), 2) + [(Affine(3.0), t())])
    expect_recompile(stats)


def test_function_argument_identity_recompiles():
    def fn(act, x):
        return act(x) * 2

    stats = differential(plain(fn), [(torch.relu, t()), (torch.relu, t()), (torch.tanh, t())])
    expect_recompile(stats)


def test_generator_expression_feeding_a_tensor_op():
    def fn(xs):
        return torch.stack(tuple(x * 2 for x in xs))

    stats = differential(plain(fn), fresh(lambda: ([t(), t()],)))
    expect_one_graph(stats)


def test_user_generator_function():
    def pairs(xs):
        for k in range(0, len(xs) - 1):
            yield xs[k], xs[k + 1]

    def fn(xs):
        return [a - b for a, b in pairs(xs)]

    stats = differential(plain(fn), fresh(lambda: ([t(), t(), t()],)))
    expect_one_graph(stats)


def test_compiled_function_called_inside_a_compiled_function():
    import magpy

    def make():
        inner = magpy.compile(lambda v: v * 3 + 1, backend="eager")

        def outer(x):
            return inner(x).relu()
        return outer, None

    stats = differential(make, fresh(lambda: (t(),)))
    expect_one_graph(stats)


# ---- frame introspection (logging, warnings and some libraries look at their callers) ---------------------

def test_inspect_stack_inside_the_call():
    import inspect

    def who_called():
        return inspect.stack()[1].function

    def fn(x):
        return x * len(who_called())

    stats = differential(plain(fn), fresh(lambda: (t(),)))
    expect(stats, fallbacks=0)


def test_current_frame_line_number_is_live():
    import inspect

    def fn(x):
        frame = inspect.currentframe()
        first = frame.f_lineno
        second = frame.f_lineno
        return x * (second - first)

    stats = differential(plain(fn), fresh(lambda: (t(),)))
    expect(stats, fallbacks=0)


def test_partial_of_a_torch_builtin_called_on_tensors():
    conv = functools.partial(torch.conv2d, padding=1, stride=1)

    def fn(x, w, s):
        dilated = functools.partial(torch.nn.functional.conv2d, dilation=s)
        return conv(x, w) + dilated(x, w, padding=s)

    stats = differential(plain(fn), [(t(1, 2, 5, 5), t(3, 2, 3, 3), 1), (t(1, 2, 5, 5), t(3, 2, 3, 3), 1),
                                     (t(1, 2, 5, 5), t(3, 2, 3, 3), 2)])
    expect(stats, fallbacks=0)


# ---- TorchScript functions (their Python source runs in the capture) -------------------------------

@torch.jit.script
def _crop_to(a: torch.Tensor, b: torch.Tensor):
    if a.shape[-1] == b.shape[-1]:
        return a
    return a[..., : b.shape[-1]]


def test_a_torchscript_function_joins_the_graph():
    def fn(x, y):
        return _crop_to(x, y).relu() + y

    stats = differential(plain(fn), [(t(2, 5), t(2, 3)), (t(2, 5), t(2, 3)), (t(2, 3), t(2, 3))])
    expect_recompile(stats)
