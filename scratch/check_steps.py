"""3 AdamW steps of monodepth under bf16 autocast on CUDA: eager vs magpy weights, variants."""
import sys, copy, torch, magpy, functools
from magpy import zoo
from magpy.codegen import lowering as L
import magpy.backends as B
from magpy.codegen.lowering import scatter as LS
import os
# (GPU_SCATTER: scatter kernels are always on now; the variable is kept for older notes)

aten = torch.ops.aten
SCATTERS = [aten.index_put.default, aten._unsafe_index_put.default, aten.index_add.default, aten.index_copy.default,
            aten.scatter_add.default, aten.scatter_reduce.two]
name = sys.argv[1] if len(sys.argv) > 1 else "monodepth"
m, inp = zoo.get(name).make("large", "cuda")
m.train()
torch.manual_seed(0)

def train(model, fwd, steps=3):
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    for _ in range(steps):
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            out = fwd(*inp)
            outs = [out] if isinstance(out, torch.Tensor) else [o for o in out if isinstance(o, torch.Tensor)]
            loss = sum(o.float().pow(2).mean() for o in outs if o.requires_grad)
        loss.backward()
        opt.step()
    return {k: v.detach().float().clone() for k, v in model.state_dict().items() if v.is_floating_point()}

init = {k: v.detach().float().clone() for k, v in m.state_dict().items() if v.is_floating_point()}
e1 = train(copy.deepcopy(m), None) if False else None
a = copy.deepcopy(m); ref = train(a, a)
a2 = copy.deepcopy(m); ref2 = train(a2, a2)

def score(tag, st):
    rel = sorted((((st[k] - ref[k]).norm() / ((ref[k] - init[k]).norm() + 1e-30)).item(), k) for k in ref if "bias" not in k or "normalize" in k)
    print(f"{tag}: worst {[(f'{r:.1e}', k) for r, k in rel[-3:]]}", flush=True)

score("eager again", ref2)
orig_compiler = B._aten_compiler
from magpy.codegen.triton import runtime as TR
from magpy.backends import choose as CH
def nobind():
    TR.TritonGraph.BIND_TRIES = 0
    orig_init = TR.TritonGraph.__init__
    def init(self, wrapper, bind):
        orig_init(self, wrapper, None)
    TR.TritonGraph.__init__ = init
def always_compiled():
    CH.faster_of = lambda compiled, captured, *a, **k: compiled
    B_choose = __import__("magpy.backends.choose", fromlist=["x"])
variants = {"current": lambda: None, "always compiled": always_compiled}
for tag, apply in variants.items():
    apply()
    magpy.reset()
    b = copy.deepcopy(m)
    score(tag, train(b, magpy.compile(b)))
