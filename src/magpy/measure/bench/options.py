"""What a benchmark run does: models, backends, size, device, repeats and time limits, with the defaults of a
quick and of a full run."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from ... import zoo
from .runners import RUNNERS
from .timing import Repeats

DEFAULT_BACKENDS = ("eager", "magpy", "inductor")

# --quick: every model under eager and magpy; torch.compile (Inductor) only on the QUICK_INDUCTOR_COUNT models
# of the run that come first here. Its first compile of each model, small size, cold caches, on this 2-core
# CPU (1 thread, machine shared; the first model also pays ~10 s of one-time start-up), in seconds:
# hf_bert 9, lstm 11, hf_gpt2 11, gpt 15, tridentnet 17, bert 21, resnet 21, blockdrop 22, densenet 23,
# hf_llama 25, monodepth 59, quant_resnet 64. (Without transformers installed: lstm, gpt, tridentnet.)
QUICK_INDUCTOR_BY_COST = ("hf_bert", "lstm", "hf_gpt2", "gpt", "tridentnet", "bert", "resnet", "blockdrop",
                          "densenet", "hf_llama", "monodepth", "quant_resnet")
QUICK_INDUCTOR_COUNT = 3
# Small models take 1-10 ms a call, so 25 rounds cost well under a second each; the limit keeps a machine
# that stalls every call (OpenMP threads waiting on a busy core) from eating the run: then rows have few
# rounds, and the table marks them noisy.
QUICK_REPEATS = Repeats(warmup=2, repeat=25, min_repeat=9, budget_s=0.3, limit_s=4.0)
# One torch thread: on a 2-core machine shared with anything else, every parallel region of a 2-thread run
# waits for a core, and a 5 ms model takes 200 ms to 1.2 s a call, by turns (--threads 2 overrides).
QUICK_THREADS = 1
QUICK_BUDGET_S = None            # --quick times every model: no run budget skips one (--budget sets one)
QUICK_STEP_TIMEOUT_S = 90.0      # a hang guard: the slowest first compile in --quick takes ~20 s here
# --train --quick: a first step compiles the forward and the backward, and checks a few steps (densenet's
# took 37 s here for magpy, machine loaded)
QUICK_TRAIN_STEP_TIMEOUT_S = 240.0
FULL_STEP_TIMEOUT_S = 1800.0


def quick_inductor_models(models: list[str]) -> list[str]:
    """The models of ``models`` that --quick runs torch.compile on: the cheapest to compile (models missing
    from QUICK_INDUCTOR_BY_COST count as the dearest), in table order."""
    ranked = [m for m in QUICK_INDUCTOR_BY_COST if m in models] + [m for m in models
                                                                   if m not in QUICK_INDUCTOR_BY_COST]
    chosen = set(ranked[:QUICK_INDUCTOR_COUNT])
    return [m for m in models if m in chosen]


class BenchError(Exception):
    """Bad options (unknown model or backend, missing device); the message is for the user."""


@dataclass
class BenchOptions:
    models: list[str] = field(default_factory=zoo.names)
    backends: list[str] = field(default_factory=lambda: list(DEFAULT_BACKENDS))
    size: str = "small"
    device: str = "cpu"
    quick: bool = False
    train: bool = False                                   # time training steps instead of inference calls
    amp: bool = False                                     # --train: forward and loss under bf16 autocast
    compile_opt: bool = False                             # --train: the optimizer's step compiled too
    mode: str | None = None                               # --mode: both compilers' mode (None: their default)
    repeats: Repeats = field(default_factory=Repeats)
    step_timeout_s: float | None = FULL_STEP_TIMEOUT_S    # per model and backend
    budget_s: float | None = None                         # for the whole run
    inductor_models: list[str] | None = None              # None: every selected model
    json_path: str | None = None
    log_path: str | None = None                           # details: tracebacks, warnings, every round's times
    plot_path: str | None = None
    threads: int | None = None
    fresh_cache: bool = False                             # empty on-disk compiler caches for the run
    progress: bool = True
    verbose: bool = False

    @classmethod
    def build(cls, *, models=None, backends=None, quick=False, repeat=None, warmup=None, timeout=None,
              budget=None, threads=None, train=False, amp=False, compile_opt=False, **rest) -> "BenchOptions":
        """Options with the defaults of a quick or a full run filled in for everything left as None.

        ``timeout`` / ``budget`` of 0 mean no limit. Eager is always added: it is the baseline every other
        backend is checked against and divided by. Raises BenchError for unknown models or backends, or for
        ``amp`` or ``compile_opt`` without ``train``.
        """
        if amp and not train:
            raise BenchError("--amp applies to training steps: add --train")
        if compile_opt and not train:
            raise BenchError("--compile-opt applies to training steps: add --train")
        models = list(models) if models else zoo.names()
        unknown = [m for m in models if m not in zoo.REGISTRY]
        if unknown:
            raise BenchError(f"unknown model(s) {', '.join(unknown)}; known: {', '.join(zoo.names())}")
        chosen = list(backends) if backends else list(DEFAULT_BACKENDS)
        unknown = [b for b in chosen if b not in RUNNERS]
        if unknown:
            raise BenchError(f"unknown backend(s) {', '.join(unknown)}; known: {', '.join(RUNNERS)}")
        chosen = [b for b in RUNNERS if b in chosen or b == "eager"]

        if quick:
            repeats = QUICK_REPEATS
            subset = None if backends else quick_inductor_models(models)
            limits = dict(step_timeout_s=QUICK_TRAIN_STEP_TIMEOUT_S if train else QUICK_STEP_TIMEOUT_S,
                          budget_s=QUICK_BUDGET_S, inductor_models=subset)
            threads = threads or QUICK_THREADS
        else:
            repeats = Repeats()
            limits = dict(step_timeout_s=FULL_STEP_TIMEOUT_S, budget_s=None, inductor_models=None)
        if repeat is not None:
            repeats = dataclasses.replace(repeats, repeat=repeat, min_repeat=min(repeats.min_repeat, repeat))
        if warmup is not None:
            repeats = dataclasses.replace(repeats, warmup=warmup)
        if timeout is not None:
            limits["step_timeout_s"] = timeout or None
        if budget is not None:
            limits["budget_s"] = budget or None
        return cls(models=models, backends=chosen, quick=quick, train=train, amp=amp, compile_opt=compile_opt,
                   repeats=repeats,
                   threads=threads, **limits, **rest)
