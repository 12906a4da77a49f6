#!/usr/bin/env python
"""How much slower the VM runs a program than CPython does.

Prints one table: for each workload, CPython's time, the VM's time, and their ratio — without an
observer, with the base ``Observer`` (every event a no-op: what observation costs the VM itself),
with an observer that gives every value a provenance and logs every event, and under MagPy's own
capture (``magpy.capture.capture`` whole: its observer, guards, graph and the mock's templates —
what a first compiled call pays; needs torch):

- ``records``: a pure-Python loop in the style of pystone — objects with attributes, int
  arithmetic, function and method calls, string operations, list indexing;
- ``transformer``: the forward of a small two-layer transformer written with torch ops, at a
  size where Python overhead dominates (skipped without torch).

Targets (the VM's design): at most 25x on ``records`` without an observer, at most 40x with a
recording one;
the script exits with status 1 when a target is missed. The ``rec.alone`` row times the recording
observer's own event methods, called as the VM called them but without the VM: no VM can run the
recording row faster than that.
Each VM run is paired with CPython runs filling the same wall time, so both see the same machine
load; the ratio is the median over the pairs (the best-over-best ratio is printed too).

    python benchmarks/interp_overhead.py              # the table (well under a minute)
    python benchmarks/interp_overhead.py --profile    # also: VM time per handler function
    python benchmarks/interp_overhead.py --profile recording   # the same, with that observer
    python benchmarks/interp_overhead.py --quick      # fewer repeats
"""
import argparse
import cProfile
import pstats
import statistics
import sys
import time
from pathlib import Path

# Without an observer, with the base Observer (every event a no-op: the VM's own cost of
# observation), with a recording one, the recording observer's own work alone (its event methods
# called with the arguments the VM gave them, without the VM: the floor under the recording row),
# and with MagPy's own capture (needs torch): what compiling such a program costs on its first call
# (guards, graph and mock included).
OBSERVERS = ("none", "no-op", "recording", "rec.alone", "capture")
TARGETS = {("records", "none"): 25.0, ("records", "recording"): 40.0}


def _interp():
    try:
        import magpy.interp
    except ImportError:
        sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
        import magpy.interp
    return magpy.interp


# ---------------------------------------------------------------------------------------------
# The pure-Python workload


class Record:
    def __init__(self, ident, kind, value, name):
        self.ident = ident
        self.kind = kind
        self.value = value
        self.name = name
        self.next = None

    def bump(self, amount):
        self.value = (self.value + amount) % 65521
        return self.value


def checksum(text):
    total = 0
    for ch in text:
        total = (total * 31 + ord(ch)) % 65521
    return total


def step(record, table, k):
    if record.kind == 0:
        record.value = (record.value * 3 + k) % 10007
    elif record.kind == 1:
        record.value = table[k % len(table)] + record.value // 2
    else:
        record.value -= k & 7
    return record.value


def records(n=5000):
    """The pystone-like loop: returns a checksum of everything it computed."""
    items = [Record(i, i % 3, i * 7, "rec%d" % i) for i in range(16)]
    for a, b in zip(items, items[1:]):
        a.next = b
    table = [i * i for i in range(32)]
    acc = 0
    names = []
    for k in range(n):
        record = items[k % 16]
        acc += step(record, table, k)
        if record.next is not None and record.next.value > record.value:
            acc ^= record.next.ident
        else:
            acc += record.bump(k)
        if k % 8 == 0:
            names.append(record.name.upper() + str(acc % 100))
        table[k % 32] = (table[k % 32] + acc) & 0xFFFF
    return acc + checksum("".join(names[-20:])) + len(names)


# ---------------------------------------------------------------------------------------------
# The torch workload


def transformer_workload():
    """(forward, args) of a small transformer, or None without torch."""
    try:
        import torch
        from torch import nn
    except ImportError:
        return None

    class Attention(nn.Module):
        def __init__(self, dim, heads):
            super().__init__()
            self.heads = heads
            self.qkv = nn.Linear(dim, 3 * dim)
            self.out = nn.Linear(dim, dim)

        def forward(self, x):
            batch, length, dim = x.shape
            q, k, v = self.qkv(x).chunk(3, dim=-1)
            q, k, v = (t.view(batch, length, self.heads, dim // self.heads).transpose(1, 2)
                       for t in (q, k, v))
            scores = q @ k.transpose(-2, -1) / (dim // self.heads) ** 0.5
            mask = torch.ones(length, length, dtype=torch.bool).tril()
            weights = scores.masked_fill(~mask, float("-inf")).softmax(dim=-1)
            mixed = (weights @ v).transpose(1, 2).reshape(batch, length, dim)
            return self.out(mixed)

    class Block(nn.Module):
        def __init__(self, dim, heads):
            super().__init__()
            self.norm1 = nn.LayerNorm(dim)
            self.attention = Attention(dim, heads)
            self.norm2 = nn.LayerNorm(dim)
            self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))

        def forward(self, x):
            x = x + self.attention(self.norm1(x))
            return x + self.mlp(self.norm2(x))

    class Transformer(nn.Module):
        def __init__(self, vocab=64, dim=32, heads=4, layers=2):
            super().__init__()
            self.embed = nn.Embedding(vocab, dim)
            self.blocks = nn.ModuleList(Block(dim, heads) for _ in range(layers))
            self.norm = nn.LayerNorm(dim)
            self.head = nn.Linear(dim, vocab)

        def forward(self, tokens):
            x = self.embed(tokens)
            for block in self.blocks:
                x = block(x)
            return self.head(self.norm(x))

    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = Transformer().eval()
    tokens = torch.randint(0, 64, (2, 8))

    def forward(tokens):
        with torch.no_grad():
            return model(tokens)

    return forward, (tokens,)


# ---------------------------------------------------------------------------------------------
# Observation


def recording_observer(interp):
    """An Observer that gives every value read or computed a provenance (a small path tuple, as
    capture's sources are) and logs every event, as a capture recording provenance would.

    Events take ``*rest`` where the interface documents more arguments than this benchmark uses,
    so that an argument added to an event later does not break the benchmark."""

    class RecordingObserver(interp.Observer):
        def __init__(self):
            self.events = []

        def enter_frame(self, frame):
            self.events.append(("enter",))

        def argument(self, frame, index, name, value):
            return ("arg", name)

        def leave_frame(self, frame, value, exc):
            self.events.append(("leave", exc is None))

        def read_global(self, frame, name, value):
            self.events.append(("global", name))
            return ("global", name)

        def read_cell(self, frame, *rest):
            return ("cell", rest[-2])

        def read_attr(self, obj, obj_prov, name, value, computed=None):
            self.events.append(("attr", obj_prov, name))
            return ("attr", obj_prov, name)

        def read_item(self, obj, obj_prov, key, key_prov, value, computed=None):
            self.events.append(("item", obj_prov, key_prov))
            return ("item", obj_prov, key_prov)

        def write_global(self, frame, name, value, prov):
            self.events.append(("set_global", name, prov))

        def write_cell(self, frame, *rest):
            self.events.append(("set_cell", rest[-3], rest[-1]))      # name, prov

        def write_attr(self, obj, obj_prov, name, value, prov):
            self.events.append(("set_attr", obj_prov, name, prov))

        def write_item(self, obj, obj_prov, key, key_prov, value, prov):
            self.events.append(("set_item", obj_prov, key_prov, prov))

        def native_call(self, fn, args, kwargs, result):
            self.events.append(("native", fn))

        def call_result(self, frame, fn, fn_prov, args, arg_provs, *rest):
            return ("call", fn_prov, arg_provs)

        def operation(self, frame, opname, *rest):
            inputs_provs, outputs = rest[-2], rest[-1]
            prov = (opname, inputs_provs)
            return [prov] * len(outputs)

        def branch(self, frame, *rest):
            self.events.append(("branch", rest[-2], rest[-1]))

        def return_value(self, frame, value, prov):
            self.events.append(("return", prov))

    return RecordingObserver()


# ---------------------------------------------------------------------------------------------
# Timing


def _timed(call, times=1):
    started = time.perf_counter()
    for _ in range(times):
        call()
    return (time.perf_counter() - started) / times


def measure_pair(native, vm, repeats, budget=4.0):
    """Times ``native`` and ``vm`` alternately, each VM run paired with as many native runs as
    fill the same wall time, so that both see the same machine load. Returns (native per-call
    times, VM times, per-pair ratios) of ``repeats`` pairs, fewer (at least 3) when they take
    more than ``budget`` seconds in all."""
    # Both were called once already (the result check): decode caches and lazy imports are warm.
    batch = max(1, round(_timed(vm) / max(_timed(native, 5), 1e-9)))
    natives, vms = [], []
    deadline = time.perf_counter() + budget
    while len(vms) < repeats and (len(vms) < 3 or time.perf_counter() < deadline):
        natives.append(_timed(native, batch))
        vms.append(_timed(vm))
    return natives, vms, [v / n for n, v in zip(natives, vms)]


def same(a, b):
    try:
        import torch
        if isinstance(a, torch.Tensor):
            return torch.equal(a, b)
    except ImportError:
        pass
    return a == b


def rows(repeats):
    interp = _interp()
    workloads = [("records", records, ())]
    torch_workload = transformer_workload()
    if torch_workload is None:
        print("transformer: skipped (no torch)")
    else:
        workloads.append(("transformer",) + torch_workload)
    for name, fn, args in workloads:
        expected = fn(*args)
        for observed in OBSERVERS:
            observer, through_vm = runner(interp, observed, fn, args)
            if through_vm is None:
                print(f"{name} under {observed}: skipped (no torch)")
                continue
            result = through_vm()
            assert same(result, expected), f"{name}: the VM computed {result!r}, not {expected!r}"
            natives, vms, ratios = measure_pair(lambda: fn(*args), through_vm, repeats)
            events = len(observer.events) if hasattr(observer, "events") else None
            yield name, observed, natives, vms, ratios, events


def observer_alone(interp, fn, args):
    """(observer, a function making the recording observer's calls of one VM run of ``fn(*args)`` —
    same methods, same arguments — without the VM), and ``fn``'s result for the check."""
    calls = []
    observer = recording_observer(interp)
    logged = type(observer)
    for name, method in list(vars(logged).items()):
        if callable(method) and not name.startswith("__"):
            def log(self, *a, _method=method):
                calls.append((_method, a))
                return _method(self, *a)
            setattr(logged, name, log)
    result = interp.VM(observer=observer).call(fn, *args)
    replayed = recording_observer(interp)

    def replay():
        replayed.events.clear()
        for method, a in calls:
            method(replayed, *a)
        return result
    return replayed, replay


def runner(interp, observed, fn, args):
    """(observer, a function running ``fn(*args)`` under it), or (None, None) when it needs torch."""
    if observed == "rec.alone":
        return observer_alone(interp, fn, args)
    if observed == "capture":
        try:
            from magpy.capture.observer import capture
        except ImportError:
            return None, None

        def captured():
            result, exc, cap = capture(fn, args, {})
            assert exc is None and cap.unsupported is None, cap.unsupported
            return result
        return None, captured
    observer = {"none": lambda: None, "no-op": interp.Observer,
                "recording": lambda: recording_observer(interp)}[observed]()
    vm = interp.VM(observer=observer)

    def through_vm():
        if hasattr(observer, "events"):
            observer.events.clear()
        return vm.call(fn, *args)
    return observer, through_vm


def table(repeats):
    print(f"Python {sys.version.split()[0]}; {repeats} paired runs (fewer, at least 3, past 4 s); "
          "ratio: median of the pairs' ratios; best: best VM run over best native run")
    header = (f"{'workload':12} {'observer':9} {'CPython ms':>11} {'VM ms':>9} {'ratio':>7} "
              f"{'best':>7} {'target':>10} {'events':>8}")
    print(header)
    print("-" * len(header))
    met = True
    for name, observed, natives, vms, ratios, events in rows(repeats):
        target = TARGETS.get((name, observed))
        ratio = statistics.median(ratios)
        verdict = ""
        if target is not None:
            verdict = f"<={target:.0f}x" + (" ok" if ratio <= target else " MISS")
            met = met and ratio <= target
        print(f"{name:12} {observed:9} {statistics.median(natives) * 1e3:11.2f} "
              f"{statistics.median(vms) * 1e3:9.1f} {ratio:6.1f}x {min(vms) / min(natives):6.1f}x "
              f"{verdict:>10} {events if events is not None else '':>8}")
    return met


def profile_handlers(observed, top=25):
    """Time per function of magpy.interp (and magpy.capture) while the VM runs the records workload."""
    interp = _interp()
    _, through_vm = runner(interp, observed, records, ())
    through_vm()
    profiler = cProfile.Profile()
    profiler.enable()
    through_vm()
    profiler.disable()
    stats = pstats.Stats(profiler)
    package = str(Path(interp.__file__).parent.parent)
    per_function = [(tottime, calls, f"{Path(file).name}:{func}")
                    for (file, line, func), (_, calls, tottime, _, _) in stats.stats.items()
                    if file.startswith(package)]
    total = sum(t for (_, _, _), (_, _, t, _, _) in stats.stats.items())
    print(f"\nVM time per function on 'records', observer {observed}, under cProfile "
          f"(total {total * 1e3:.0f} ms, profiler overhead included)")
    print(f"{'function':48} {'calls':>9} {'ms':>8} {'ns/call':>8} {'share':>6}")
    for tottime, calls, name in sorted(per_function, reverse=True)[:top]:
        print(f"{name:48} {calls:9} {tottime * 1e3:8.1f} {tottime / calls * 1e9:8.0f} "
              f"{tottime / total:6.1%}")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--profile", nargs="?", const="none", choices=OBSERVERS[:3] + OBSERVERS[4:],
                        help="also print time per VM function (with this observer)")
    parser.add_argument("--quick", action="store_true", help="fewer repeats")
    args = parser.parse_args(argv)
    met = table(3 if args.quick else 5)
    if args.profile:
        profile_handlers(args.profile)
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
