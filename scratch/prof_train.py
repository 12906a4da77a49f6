"""Profile one zoo model's training step (bf16 autocast on CUDA) under eager and magpy; print top kernels."""
import sys, copy, torch, magpy
from magpy import zoo
from torch.profiler import profile, ProfilerActivity

name = sys.argv[1]
m, inp = zoo.get(name).make("large", "cuda")
m.train()
for mode in ("eager", "magpy"):
    model = copy.deepcopy(m)
    fwd = magpy.compile(model) if mode == "magpy" else model
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    def step():
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            out = fwd(*inp)
            out = out if isinstance(out, torch.Tensor) else out[0]
            loss = out.float().pow(2).mean()
        loss.backward()
        opt.step()
    for _ in range(5):
        step()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA, ProfilerActivity.CPU]) as p:
        for _ in range(5):
            step()
        torch.cuda.synchronize()
    print(f"===== {name} {mode}")
    print(p.key_averages().table(sort_by="cuda_time_total", row_limit=22, max_name_column_width=60))
