"""Scatter kernels on a GPU: gradients through gathers, compiled (Triton scatter kernels) vs eager vs float64."""
import sys, copy, torch, magpy
import torch.nn.functional as F
from magpy.codegen.lowering import scatter as LS
from magpy.backends import choose as CH

LS.ON_GPU = True
CH.faster_of = lambda compiled, captured, *a, **k: compiled
dev = "cuda"
torch.manual_seed(0)


def grads(fn, xs, compiled):
    xs = [x.detach().clone().requires_grad_(x.is_floating_point()) for x in xs]
    f = magpy.compile(fn) if compiled else fn
    out = f(*xs)
    g = torch.randn_like(out, dtype=torch.float32).to(out.dtype)
    torch.manual_seed(1); g = torch.randn(out.shape, device=out.device).to(out.dtype)
    out.backward(g)
    return [x.grad for x in xs if x.is_floating_point()]


def case(name, fn, xs):
    magpy.reset()
    ref = grads(fn, [x.double() if x.is_floating_point() else x for x in xs], False)
    eag = grads(fn, xs, False)
    ours = grads(fn, xs, True)
    rep = magpy.codegen.last_report() if hasattr(magpy.codegen, "last_report") else None
    def err(a, b):
        return max(((x.double() - y.double()).abs().max() / (y.double().abs().max() + 1e-30)).item() for x, y in zip(a, b))
    print(f"{name:40s} eager {err(eag, ref):.1e}  magpy {err(ours, ref):.1e}", flush=True)


def up(x, ac=False):
    return F.interpolate(x, scale_factor=2, mode="bilinear", align_corners=ac)


x = torch.randn(4, 64, 48, 160, device=dev)
case("upsample f32", up, [x])
case("upsample f32 ac", lambda x: up(x, True), [x])
case("upsample f32 channels_last", up, [x.to(memory_format=torch.channels_last)])
case("upsample small C", up, [torch.randn(4, 3, 48, 160, device=dev)])
def up_amp(x):
    with torch.autocast("cuda", dtype=torch.bfloat16):
        return up(x * 1.0).float()
case("upsample under autocast", up_amp, [x])
def conv_up(x, w):
    with torch.autocast("cuda", dtype=torch.bfloat16):
        return up(F.conv2d(x, w, padding=1)).float().sigmoid()
case("conv+upsample autocast", conv_up, [x, torch.randn(32, 64, 3, 3, device=dev) * 0.05])
emb = torch.randn(1000, 64, device=dev)
ids = torch.randint(0, 1000, (8, 512), device=dev)
case("embedding", lambda w, i: F.embedding(i, w), [emb, ids])
case("index_add", lambda a, b: a.index_add(0, ids[0, :100] % 50, b), [torch.randn(50, 64, device=dev), torch.randn(100, 64, device=dev)])
case("scatter_add", lambda a, b: a.scatter_add(1, (ids[:, :64] % 30), b), [torch.randn(8, 30, device=dev), torch.randn(8, 64, device=dev)])
case("gather grad", lambda a: a.gather(1, ids[:, :64] % 30).sin(), [torch.randn(8, 30, device=dev)])
