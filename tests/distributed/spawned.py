"""Running a function on every rank of a fresh gloo process group: 2 CPU processes, spawned."""
import gc
import os
import socket
import tempfile

import pytest
import torch
import torch.multiprocessing as mp

WORLD = 2


def gloo_or_skip():
    """Skip the test where torch has no torch.distributed or no gloo backend."""
    import torch.distributed as dist

    if not dist.is_available() or not dist.is_gloo_available():
        pytest.skip("torch.distributed with gloo is not available")


def on_ranks(fn, *args, world=WORLD):
    """``fn(rank, *args)`` on each of ``world`` spawned processes joined in a gloo process group; the list
    of what each rank returned (saved with torch.save: tensors, numbers, containers of them). A rank's
    exception fails the caller with its traceback."""
    gloo_or_skip()
    with tempfile.TemporaryDirectory() as folder:
        mp.spawn(_rank, args=(world, _free_port(), folder, fn, args), nprocs=world)
        return [torch.load(os.path.join(folder, f"{rank}.pt"), weights_only=False) for rank in range(world)]


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _rank(rank, world, port, folder, fn, args):
    import torch.distributed as dist

    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    torch.set_num_threads(1)  # (two processes on a shared machine)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    try:
        result = fn(rank, *args)
    finally:
        # (what the run left in cycles, a DDP reducer among them, goes while its process group is alive: at
        # interpreter exit, after the group, a gloo thread still joinable aborts the process)
        gc.collect()
        dist.destroy_process_group()
    torch.save(result, os.path.join(folder, f"{rank}.pt"))
