#!/usr/bin/env python
"""Data-parallel training of a GPT-sized model: eager DDP vs ``magpy.compile(DDP(model))`` vs
``torch.compile(DDP(model))``, side by side in one run.

Each mode trains the same initial weights on the same batches (each rank its own) with AdamW for
``--steps`` steps after ``--warmup`` steps (the first compiles). Rank 0 prints a markdown table: median
step time (CUDA events on a GPU, the wall clock on a CPU), its ratio to eager's, the first step (compiles
included), and the largest difference of the final weights from eager DDP's.

    python -m torch.distributed.run --nproc_per_node 2 benchmarks/ddp_train.py        # 2 GPUs, NCCL
    python benchmarks/ddp_train.py --nproc 2                                         # the same, spawned
    python benchmarks/ddp_train.py --small --device cpu                              # 2 CPU processes, gloo
"""
import argparse
import math
import os
import socket
import statistics
import sys
import time
import warnings
from pathlib import Path

try:
    import magpy
except ImportError:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
    import magpy

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn.functional as F
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP

#: GPT-2 small (12 layers, 768 wide, 12 heads) on 512 tokens, batches of 8 per rank; ``--small`` a toy
SIZES = {"gpt": dict(layers=12, width=768, heads=12, seq=512, batch=8, vocab=50304),
         "small": dict(layers=2, width=64, heads=4, seq=32, batch=4, vocab=512)}
MODES = ("eager", "magpy", "torch")


class Block(nn.Module):
    def __init__(self, width, heads):
        super().__init__()
        self.heads = heads
        self.norm1 = nn.LayerNorm(width)
        self.qkv = nn.Linear(width, 3 * width)
        self.proj = nn.Linear(width, width)
        self.norm2 = nn.LayerNorm(width)
        self.up = nn.Linear(width, 4 * width)
        self.down = nn.Linear(4 * width, width)

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.qkv(self.norm1(x)).split(c, dim=-1)
        q, k, v = (y.view(b, t, self.heads, c // self.heads).transpose(1, 2) for y in (q, k, v))
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(a.transpose(1, 2).reshape(b, t, c))
        return x + self.down(F.gelu(self.up(self.norm2(x))))


class GPT(nn.Module):
    def __init__(self, layers, width, heads, seq, vocab, **_):
        super().__init__()
        self.tokens = nn.Embedding(vocab, width)
        self.positions = nn.Embedding(seq, width)
        self.blocks = nn.ModuleList(Block(width, heads) for _ in range(layers))
        self.norm = nn.LayerNorm(width)
        self.head = nn.Linear(width, vocab, bias=False)

    def forward(self, idx, targets):
        x = self.tokens(idx) + self.positions(torch.arange(idx.shape[1], device=idx.device))
        for block in self.blocks:
            x = block(x)
        logits = self.head(self.norm(x))
        return F.cross_entropy(logits.flatten(0, 1), targets.flatten())


def batches(size, rank, steps, device):
    """Each rank's batches: (tokens, next tokens), the same for every mode."""
    g = torch.Generator().manual_seed(1234 + rank)
    out = []
    for _ in range(steps):
        data = torch.randint(size["vocab"], (size["batch"], size["seq"] + 1), generator=g)
        out.append((data[:, :-1].to(device), data[:, 1:].to(device)))
    return out


def wrapped(model, mode, bucket_cap_mb, device):
    ids = [device.index] if device.type == "cuda" else None
    ddp = DDP(model, device_ids=ids, bucket_cap_mb=bucket_cap_mb)
    if mode == "magpy":
        return magpy.compile(ddp)
    if mode == "torch":
        return torch.compile(ddp)
    return ddp


def train(mode, args, size, device, data):
    torch.manual_seed(0)
    model = GPT(**size).to(device)
    step_fn = wrapped(model, mode, args.bucket_cap_mb, device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    cuda = device.type == "cuda"
    times = []
    for idx, targets in data:
        if cuda:
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
        else:
            began = time.perf_counter()
        with torch.autocast(device.type, torch.bfloat16, enabled=args.bf16):
            loss = step_fn(idx, targets)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        if cuda:
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end) / 1e3)
        else:
            times.append(time.perf_counter() - began)
    stats = getattr(step_fn, "stats", None)
    weights = [p.detach().float().cpu() for p in model.parameters()]
    return times, loss.item(), weights, stats


def run(rank, world, args):
    local = int(os.environ.get("LOCAL_RANK", rank))
    device = torch.device(args.device, local if args.device == "cuda" else None)
    if device.type == "cuda":
        torch.cuda.set_device(device)
    else:
        torch.set_num_threads(max(1, (os.cpu_count() or 2) // world))
    dist.init_process_group(args.dist_backend or ("nccl" if device.type == "cuda" else "gloo"),
                            rank=rank, world_size=world)
    size = SIZES["small" if args.small else "gpt"]
    data = batches(size, rank, args.warmup + args.steps, device)
    results = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for mode in args.modes:
            results[mode] = train(mode, args, size, device, data)
            if device.type == "cuda":
                torch.cuda.empty_cache()
    if rank == 0:
        print(report(results, args, size, world, device))
    dist.destroy_process_group()


def report(results, args, size, world, device):
    eager = statistics.median(results["eager"][0][args.warmup:]) if "eager" in results else None
    reference = results["eager"][2] if "eager" in results else None
    lines = [f"{size['layers']} layers, width {size['width']}, {size['seq']} tokens x {size['batch']} per rank, "
             f"{world} ranks on {device.type}{' (bf16 autocast)' if args.bf16 else ''}, bucket_cap_mb "
             f"{args.bucket_cap_mb}, median of {args.steps} steps after {args.warmup}",
             "",
             "| mode | step (ms) | × eager | first step (s) | final loss | max weight diff vs eager | compiled |",
             "|---|---|---|---|---|---|---|"]
    for mode, (times, loss, weights, stats) in results.items():
        median = statistics.median(times[args.warmup:])
        ratio = f"{eager / median:.2f}" if eager else "-"
        diff = max((a - b).abs().max().item() for a, b in zip(weights, reference)) if reference else math.nan
        said = f"{stats.graphs} graphs, {stats.bucket_pieces} bucket pieces" if stats is not None else ""
        lines.append(f"| {mode} | {median * 1e3:.1f} | {ratio} | {times[0]:.2f} | {loss:.4f} | {diff:.2e} | {said} |")
    lines.append("")
    lines.append("(× eager: eager's step time over the mode's; higher is faster)")
    return "\n".join(lines)


def _spawned(rank, world, port, args):
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ["MASTER_PORT"] = str(port)
    run(rank, world, args)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", action="store_true", help="a toy model (2 layers, width 64): a quick check")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu", choices=("cuda", "cpu"))
    parser.add_argument("--dist-backend", default=None, help="nccl on GPUs, gloo on CPUs by default")
    parser.add_argument("--nproc", type=int, default=2, help="processes to spawn when not launched by torchrun")
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--bf16", action="store_true", help="bf16 autocast around the forward")
    parser.add_argument("--bucket-cap-mb", type=float, default=None,
                        help="DDP's bucket size (default: DDP's own 25; 0.05 with --small, for several buckets)")
    parser.add_argument("--modes", default=",".join(MODES), help=f"comma-separated, of {', '.join(MODES)}")
    args = parser.parse_args(argv)
    args.modes = [m for m in args.modes.split(",") if m]
    if args.bucket_cap_mb is None:
        args.bucket_cap_mb = 0.05 if args.small else 25.0
    if "RANK" in os.environ:  # (launched by torch.distributed.run)
        run(int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]), args)
        return
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    mp.spawn(_spawned, args=(args.nproc, port, args), nprocs=args.nproc)


if __name__ == "__main__":
    main()
