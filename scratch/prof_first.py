"""Where a first (capturing + compiling) training step's time goes, cold caches: cProfile of one
bf16 step of a zoo model on CUDA; prints the stages' cumulative seconds and the top functions."""
import cProfile, copy, os, pstats, sys, tempfile, time
root = tempfile.mkdtemp()
for var in ("MAGPY_CACHE_DIR", "TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR"):
    os.environ[var] = os.path.join(root, var.lower())
import torch, magpy
from magpy import zoo

name = sys.argv[1]
m, inp = zoo.get(name).make("large", "cuda")
m.train()
model = copy.deepcopy(m)
fwd = magpy.compile(model)
opt = torch.optim.AdamW(model.parameters(), lr=1e-4)

def step():
    opt.zero_grad(set_to_none=True)
    with torch.autocast("cuda", dtype=torch.bfloat16):
        out = fwd(*inp)
        out = out if isinstance(out, torch.Tensor) else (next(iter(out.values())) if isinstance(out, dict) else out[0])
        loss = out.float().pow(2).mean()
    loss.backward()
    opt.step()
    torch.cuda.synchronize()

prof = cProfile.Profile()
t0 = time.perf_counter()
prof.enable()
step()
prof.disable()
print(f"===== {name}: first step {time.perf_counter() - t0:.2f} s (under cProfile)")
st = pstats.Stats(prof)
stages = {"capture": "capture/observer.py", "aot": "aot_autograd.py", "compile_aten_graph": "codegen/__init__.py",
          "triton compile": "triton/compiler/compiler.py", "load_kernel": "codegen/triton/runtime.py",
          "fastest/tune": "codegen/triton/runtime.py", "faster_of": "backends/choose.py",
          "lowering": "codegen/graph.py", "scheduler": "codegen/scheduler.py", "cpp": "codegen/cpp/"}
names = {"capture": "capture", "aot": "aot_dispatch_autograd", "compile_aten_graph": "compile_aten_graph",
         "triton compile": "compile", "load_kernel": "load_kernel", "fastest/tune": "fastest",
         "faster_of": "faster_of", "lowering": "run", "scheduler": "schedule", "cpp": "compile"}
for stage, file in stages.items():
    tot = [(v[3], k) for k, v in st.stats.items() if file in k[0] and k[2] == names[stage]]
    if tot:
        print(f"{stage:20s} {max(tot)[0]:7.2f} s  ({len(tot)} fns)")
ncomp = [v for k, v in st.stats.items() if "triton/compiler/compiler.py" in k[0] and k[2] == "compile"]
if ncomp:
    print("triton.compile calls:", ncomp[0][1])
st.sort_stats("cumulative").print_stats(70)
st.sort_stats("tottime").print_stats(25)
for _ in range(3):
    t = time.perf_counter(); step(); print(f"later step {1000 * (time.perf_counter() - t):.1f} ms")
