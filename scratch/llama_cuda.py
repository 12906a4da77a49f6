import sys, torch, magpy, inspect, torch.nn.modules.container as c
lines = inspect.getsource(c).splitlines()
print("\n".join(f"{i+1}: {l}" for i, l in enumerate(lines) if 376 <= i+1 <= 386))
from magpy.measure.transformers.models import build
from magpy.measure.transformers.inputs import input_sets, make_inputs
model, config = build("llama", "cuda")
names = input_sets(model, config)[0]
inputs = {k: v.cuda() for k, v in make_inputs(names, config, 1).items()}
t = magpy.trace(model)
with torch.no_grad():
    t(**inputs)
evs = [str(e) for e in t.last.events]
hit = [i for i, e in enumerate(evs) if "no rule" in e or "gave up" in e.lower() or "unsupported" in e.lower()]
print(len(evs), hit[:5])
for i in hit[:1]:
    print("\n".join(evs[max(0, i-40): i+2]))
