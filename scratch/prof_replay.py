"""Where a reduce-overhead training step's CPU time goes (cProfile of warm steps), resnet large bf16 on CUDA."""
import sys, cProfile, pstats, time, torch, magpy
from magpy import zoo

name = sys.argv[1] if len(sys.argv) > 1 else "resnet"
mode = sys.argv[2] if len(sys.argv) > 2 else "reduce-overhead"
m, inp = zoo.get(name).make("large", "cuda")
m.train()
f = magpy.compile(m, mode=mode)
opt = torch.optim.AdamW(m.parameters(), lr=1e-4)


def step():
    opt.zero_grad(set_to_none=True)
    with torch.autocast("cuda", dtype=torch.bfloat16):
        out = f(*inp)
        outs = [out] if isinstance(out, torch.Tensor) else [o for o in out if isinstance(o, torch.Tensor)]
        loss = sum(o.float().pow(2).mean() for o in outs if o.requires_grad)
    loss.backward()
    opt.step()


for _ in range(30):
    step()
torch.cuda.synchronize()
t = time.perf_counter()
for _ in range(20):
    step()
torch.cuda.synchronize()
print(f"{name} {mode}: {(time.perf_counter() - t) / 20 * 1e3:.2f} ms/step")
pr = cProfile.Profile()
pr.enable()
for _ in range(20):
    step()
torch.cuda.synchronize()
pr.disable()
st = pstats.Stats(pr)
st.sort_stats("tottime").print_stats(18)
pass
