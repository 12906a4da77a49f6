"""First, second and third bf16 training steps of zoo models under magpy.compile, cold caches, with Triton
kernels compiled ahead in worker processes (precompile) and without (MAGPY_COMPILE_WORKERS=0).

    PYTHONPATH=src python scratch/first_steps.py bert [gpt ...] [--inductor] [--skip-off] [--timeout S]

Each (model, setting) runs in a subprocess of its own with new empty MAGPY_CACHE_DIR, TRITON_CACHE_DIR and
TORCHINDUCTOR_CACHE_DIR (set before torch is imported). A step: AdamW (lr 1e-4) zero_grad, forward under
bf16 autocast, loss = mean square of the first output (tensor, tuple or dict), backward, step, synchronise.
Columns: each step's seconds; jobs: compiles sent to the workers; waited: seconds launchers spent waiting
for them; at launch: Triton compiles in the main process that missed / hit the on-disk cache (steps 1-3);
loss: the third step's (on and off should agree). --inductor adds torch.compile for comparison.
"""
import json
import os
import subprocess
import sys
import tempfile
import time

# (FIRST_STEPS_DEVICE=cpu FIRST_STEPS_SIZE=small: a smoke test of this script on a machine without a GPU)
DEVICE = os.environ.get("FIRST_STEPS_DEVICE", "cuda")
SIZE = os.environ.get("FIRST_STEPS_SIZE", "large")
SETTINGS = {"precompile": {}, "no workers": {"MAGPY_COMPILE_WORKERS": "0"}, "inductor": {}}


def child(name: str, setting: str) -> None:
    root = tempfile.mkdtemp(prefix="first_steps_")
    for var in ("MAGPY_CACHE_DIR", "TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR"):
        os.environ[var] = os.path.join(root, var.lower())
    import torch
    from triton import knobs

    import magpy
    from magpy import zoo
    from magpy.codegen.triton import precompile, runtime

    counts = {"jobs": 0, "waited": 0.0, "miss": 0, "hit": 0}
    jobs, settle = precompile.jobs, runtime.settle

    def counting_jobs(*args):
        found = jobs(*args)
        counts["jobs"] += len(found)
        return found

    def timed_settle(futures):
        start = time.perf_counter()
        settle(futures)
        counts["waited"] += time.perf_counter() - start

    def listener(**event):
        counts["hit" if event["cache_hit"] else "miss"] += 1

    precompile.jobs, runtime.settle = counting_jobs, timed_settle
    knobs.compilation.listener = listener
    torch.manual_seed(0)
    model, inputs = zoo.get(name).make(SIZE, DEVICE)
    model.train()
    forward = torch.compile(model) if setting == "inductor" else magpy.compile(model)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)

    def step():
        optimizer.zero_grad(set_to_none=True)
        with torch.autocast(DEVICE, dtype=torch.bfloat16):
            out = forward(*inputs)
            if isinstance(out, dict):
                out = next(iter(out.values()))
            elif not isinstance(out, torch.Tensor):
                out = out[0]
            loss = out.float().pow(2).mean()
        loss.backward()
        optimizer.step()
        if DEVICE == "cuda":
            torch.cuda.synchronize()
        return loss.item()

    times = []
    for _ in range(3):
        start = time.perf_counter()
        loss = step()
        times.append(time.perf_counter() - start)
    print("RESULT " + json.dumps({"times": times, "loss": loss, **counts,
                                  "workers": precompile.worker_count()}), flush=True)


def main(argv) -> None:
    timeout = 400.0
    if "--timeout" in argv:
        i = argv.index("--timeout")
        timeout = float(argv[i + 1])
        del argv[i:i + 2]
    settings = ["precompile"] + ([] if "--skip-off" in argv else ["no workers"]) + \
        (["inductor"] if "--inductor" in argv else [])
    models = [a for a in argv if not a.startswith("--")] or ["bert"]
    import torch
    import triton

    print(f"{torch.cuda.get_device_name(0) if torch.cuda.is_available() else 'no GPU'} · {os.cpu_count()} CPUs · "
          f"torch {torch.__version__} · triton {triton.__version__} · Python {sys.version.split()[0]}")
    header = f"{'model':12s} {'setting':11s} {'step1 s':>8s} {'step2 s':>8s} {'step3 s':>8s} {'1+2 s':>7s} " \
             f"{'jobs':>5s} {'waited':>7s} {'at launch miss/hit':>19s} {'loss':>10s}"
    print(header)
    print("-" * len(header))
    for name in models:
        for setting in settings:
            env = dict(os.environ, **SETTINGS[setting])
            if setting != "no workers":
                env.pop("MAGPY_COMPILE_WORKERS", None)
            started = time.perf_counter()
            try:
                done = subprocess.run([sys.executable, __file__, "--child", name, setting], env=env,
                                      capture_output=True, text=True, timeout=timeout)
            except subprocess.TimeoutExpired:
                print(f"{name:12s} {setting:11s} timed out after {timeout:.0f} s", flush=True)
                continue
            lines = [l for l in done.stdout.splitlines() if l.startswith("RESULT ")]
            if done.returncode or not lines:
                error = (done.stderr.strip().splitlines() or ["no output"])[-1]
                print(f"{name:12s} {setting:11s} failed (rc {done.returncode}, "
                      f"{time.perf_counter() - started:.0f} s): {error[:150]}", flush=True)
                continue
            r = json.loads(lines[-1][len("RESULT "):])
            t = r["times"]
            print(f"{name:12s} {setting:11s} {t[0]:8.2f} {t[1]:8.2f} {t[2]:8.3f} {t[0] + t[1]:7.1f} "
                  f"{r['jobs']:5d} {r['waited']:7.2f} {str(r['miss']) + ' / ' + str(r['hit']):>19s} "
                  f"{r['loss']:10.4g}", flush=True)
    print("precompile: default workers (min(CPUs, 16)); no workers: MAGPY_COMPILE_WORKERS=0. at launch: "
          "Triton compiles in the main process, steps 1-3 (a miss compiles there; a hit loads the binary).")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        child(sys.argv[2], sys.argv[3])
    else:
        main(sys.argv[1:])
