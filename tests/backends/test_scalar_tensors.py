"""Scalars given as 0-dim tensors (``addcdiv_(a, b, value=t)``) compile as tensor arithmetic: an
optimizer's step, which takes that path while compilers trace it, runs compiled and as eager does."""
import warnings

import pytest
import torch

import magpy


def _no_fallback(fn, *args):
    with warnings.catch_warnings():
        warnings.simplefilter("error")   # (a graph the backend could not compile warns)
        return fn(*args)


@pytest.mark.parametrize("name", ["addcdiv_", "addcmul_", "addcdiv", "addcmul"])
@pytest.mark.parametrize("form", ["method", "function"])
def test_a_0_dim_tensor_value_matches_eager(name, form):
    if form == "function" and name.endswith("_"):
        call = getattr(torch.Tensor, name)
    else:
        call = getattr(torch, name.rstrip("_")) if form == "function" else None

    def fn(x, a, b, v):
        x = x * 1.0
        out = call(x, a, b, value=v) if call is not None else getattr(x, name)(a, b, value=v)
        return out, x

    compiled = magpy.compile(fn)
    for value in (-0.5, 3.0):
        args = (torch.randn(5, 7), torch.randn(5, 7), torch.rand(5, 7) + 0.5, torch.tensor(value))
        torch.testing.assert_close(_no_fallback(compiled, *args), fn(*args))


_TRAIN_AS_EAGER = """
import copy, sys, warnings
import torch, magpy
import magpy.codegen

# torch.compile first: once Dynamo has run it wraps every optimizer's _init_group in its own disable
torch.compile(lambda x: x * 2, backend="eager")(torch.randn(3))

makers = {
    "adamw": lambda ps: torch.optim.AdamW(ps, lr=1e-2),
    "adam-amsgrad": lambda ps: torch.optim.Adam(ps, lr=1e-2, amsgrad=True),
    "rmsprop": lambda ps: torch.optim.RMSprop(ps, lr=1e-2),
}
for name, make in makers.items():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.Tanh(), torch.nn.Linear(32, 4))
    twin = copy.deepcopy(model)
    eager_opt, opt = make(model.parameters()), make(twin.parameters())
    step = magpy.compile(opt.step)
    since = magpy.codegen.mark()
    for k in range(4):
        x = torch.randn(8, 16)
        for m, o, s in ((model, eager_opt, eager_opt.step), (twin, opt, step)):
            o.zero_grad()
            m(x).pow(2).mean().backward()
            with warnings.catch_warnings():
                warnings.simplefilter("error" if k else "ignore")   # (a graph run eagerly warns)
                s()
    for a, b in zip(model.parameters(), twin.parameters()):
        torch.testing.assert_close(b, a, rtol=1e-5, atol=1e-6)
    reports = magpy.codegen.reports(since=since)
    assert reports and all(r.graph_fallback is None and r.kernels for r in reports), (name, reports)
    print(name, "ok")
"""


def test_a_compiled_optimizer_step_trains_as_eager():
    # (in a process of its own, whatever ran before: Dynamo, once it has run, disables optimizers'
    # _init_group for itself)
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", _TRAIN_AS_EAGER], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split() == ["adamw", "ok", "adam-amsgrad", "ok", "rmsprop", "ok"]
