"""One forward+backward of a zoo model on CUDA: per-parameter gradient error against eager (float32 and bf16
autocast), eager against itself, magpy with and without the scatter kernels."""
import sys, copy, torch, magpy
from magpy import zoo
from magpy.codegen.lowering import scatter as LS
from magpy.backends import choose as CH

CH.faster_of = lambda compiled, captured, *a, **k: compiled
name = sys.argv[1] if len(sys.argv) > 1 else "monodepth"
m, inp = zoo.get(name).make("large", "cuda")
m.train()


def grads(model, fwd, amp, calls=1):
    model = copy.deepcopy(model)
    f = fwd(model)
    for _ in range(calls - 1):
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=amp):
            out = f(*inp)
            outs = [out] if isinstance(out, torch.Tensor) else [o for o in out if isinstance(o, torch.Tensor)]
            sum(o.float().pow(2).mean() for o in outs if o.requires_grad).backward()
        model.zero_grad(set_to_none=True)
    with torch.autocast("cuda", dtype=torch.bfloat16, enabled=amp):
        out = f(*inp)
        outs = [out] if isinstance(out, torch.Tensor) else [o for o in out if isinstance(o, torch.Tensor)]
        loss = sum(o.float().pow(2).mean() for o in outs if o.requires_grad)
    loss.backward()
    return {k: p.grad.double() for k, p in model.named_parameters() if p.grad is not None}


def err(a, b):
    rel = sorted((((a[k] - b[k]).norm() / (b[k].norm() + 1e-30)).item(), k) for k in b)
    return f"median {rel[len(rel)//2][0]:.1e} worst {rel[-1][0]:.1e} ({rel[-1][1]})"


for amp in (False, True):
    ref = grads(m, lambda mod: mod, amp)
    print(f"amp={amp} eager again: {err(grads(m, lambda mod: mod, amp), ref)}", flush=True)
    for on in (False, True):
        LS.ON_GPU = on
        magpy.reset()
        g2 = grads(m, magpy.compile, amp, calls=3)  # compiled calls, not the capturing one
        print(f"amp={amp} magpy scatter {'on ' if on else 'off'}: {err(g2, ref)}", flush=True)
