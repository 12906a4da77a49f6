"""What a benchmark run does: models, backends, size, device, repeats and time limits, with the defaults of a
quick and of a full run."""
from __future__ import annotations

from dataclasses import dataclass, field

from .. import zoo
from .runners import RUNNERS
from .timing import Repeats

DEFAULT_BACKENDS = ("eager", "magpy", "inductor")
# Inductor's first compile costs 10-60 s per model on a 2-core CPU (plus ~25 s of one-time start-up), so
# --quick with the default backends runs it on these models only.
QUICK_INDUCTOR_MODELS = ("gpt",)
QUICK_REPEATS = Repeats(warmup=1, repeat=7, min_repeat=3, budget_s=0.5)
QUICK_BUDGET_S = 100.0           # --quick must finish within two minutes on a 2-core machine, imports included
QUICK_STEP_TIMEOUT_S = 90.0      # Inductor's first compile in a process can take a minute here
FULL_STEP_TIMEOUT_S = 1800.0


class BenchError(Exception):
    """Bad options (unknown model or backend, missing device); the message is for the user."""


@dataclass
class BenchOptions:
    models: list[str] = field(default_factory=zoo.names)
    backends: list[str] = field(default_factory=lambda: list(DEFAULT_BACKENDS))
    size: str = "small"
    device: str = "cpu"
    quick: bool = False
    repeats: Repeats = field(default_factory=Repeats)
    step_timeout_s: float | None = FULL_STEP_TIMEOUT_S    # per model and backend
    budget_s: float | None = None                         # for the whole run
    inductor_models: list[str] | None = None              # None: every selected model
    json_path: str | None = None
    plot_path: str | None = None
    threads: int | None = None
    fresh_cache: bool = False                             # empty on-disk compiler caches for the run
    progress: bool = True
    verbose: bool = False

    @classmethod
    def build(cls, *, models=None, backends=None, quick=False, repeat=None, warmup=None, timeout=None,
              budget=None, **rest) -> "BenchOptions":
        """Options with the defaults of a quick or a full run filled in for everything left as None.

        ``timeout`` / ``budget`` of 0 mean no limit. Eager is always added: it is the baseline every other
        backend is checked against and divided by. Raises BenchError for unknown models or backends.
        """
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
            subset = None if backends else [m for m in QUICK_INDUCTOR_MODELS if m in models] or models[:1]
            limits = dict(step_timeout_s=QUICK_STEP_TIMEOUT_S, budget_s=QUICK_BUDGET_S, inductor_models=subset)
        else:
            repeats = Repeats()
            limits = dict(step_timeout_s=FULL_STEP_TIMEOUT_S, budget_s=None, inductor_models=None)
        if repeat is not None:
            repeats = Repeats(repeats.warmup, repeat, min(repeats.min_repeat, repeat), repeats.budget_s)
        if warmup is not None:
            repeats = Repeats(warmup, repeats.repeat, repeats.min_repeat, repeats.budget_s)
        if timeout is not None:
            limits["step_timeout_s"] = timeout or None
        if budget is not None:
            limits["budget_s"] = budget or None
        return cls(models=models, backends=chosen, quick=quick, repeats=repeats, **limits, **rest)
