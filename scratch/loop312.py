import dis, torch, magpy
import magpy.emit.continuation as C
from magpy.interp.decode import decode
orig_call = C.Continuation.__call__
def traced(self, *live):
    names = decode(self.split.code).names
    out = orig_call(self, *live)
    print(f"  continuation {self.split.code.co_name} at {self.split.index} {names[self.split.index]} "
          f"resumes={sorted(self.resumed)} -> {type(out).__name__}")
    return out
C.Continuation.__call__ = traced
import magpy.capture.resume as R
orig_resume = R.resume_code
def rc(code, index, layout):
    new = orig_resume(code, index, layout)
    names = decode(code).names
    print(f"  resume_code at {index} ({names[index-1:index+2]}) nulls={layout.nulls}")
    return new
R.resume_code = rc
def f(x, steps):
    outs = []
    for k in range(steps):
        x = x * 0.5 + k
        if x.mean() > 2:
            x = x - 1
        outs.append(x)
    return torch.stack(outs)
print(list(enumerate(decode(f.__code__).names)))
c = magpy.compile(f)
for v in (0, 5, 9, 1):
    x = torch.full((3,), float(v))
    got = c(x, 4)
    print("call", v, None if got is None else torch.equal(got, f(x, 4)))
print(c.stats)
