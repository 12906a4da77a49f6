"""Training steps for ``python -m magpy bench --train``: forward, loss, backward and an AdamW step.

Every backend trains its own deep copy of one initial model, in train mode, on the same inputs, with its own
optimizer; only the forward goes through the compiler (the backward comes from it too, through autograd),
while ``optimizer.step()`` runs eagerly for all. A backend passes when its first loss and its weights after
``CHECK_STEPS`` steps match eager's.

AdamW turns every gradient element into an update of about ``lr`` whatever its size, so the rounding noise of
a small gradient element shows in the weights at full size. The same steps run in float64 measure that noise:
a tensor matches when its distance from eager's is under ``WEIGHT_RTOL`` of eager's change, or within
``NOISE_FACTOR`` times eager's own distance from float64; a parameter whose gradient is zero but for rounding
(float32 and float64 disagree on all of it) is not compared, its update being AdamW's reading of noise. Under
bf16 autocast the rule widens by itself, as eager moves away from float64.
"""
from __future__ import annotations

import contextlib
import copy
import math
from dataclasses import dataclass
from typing import Any, Callable

import torch
import torch.nn.functional as F
from torch import nn

from ... import zoo
from . import runners
from .runners import (WRONG, BackendResult, NotApplicable, Unavailable, compile_with_inductor, recording_warnings,
                      with_mode,
                      record_inductor_stats, record_magpy_stats, tensors_of)
from .timing import Repeats, synchronizer, timed_call

LEARNING_RATE = 1e-4
CHECK_STEPS = 3           # steps before the weights are compared: enough for AdamW's moments to matter
TARGET_SEED = 1
# A compiler's distance from eager may be this many times eager's own distance from float64 (two independent
# roundings of one size differ by about 1.4 times it; the largest of a few hundred tensors by more).
NOISE_FACTOR = 4.0
# A parameter whose float32 gradient differs from float64's by more than this fraction of it has a gradient
# that is zero but for rounding (a convolution's bias before a batch norm, an attention key's bias): the
# zoo's differ by 1e8 times, every other by 4e-2 at most (fake quantization), most by 1e-6.
NOISY_GRADIENT = 0.5
# Distances this small relative to how far eager moved a tensor always pass: a compiler that reorders a
# reduction rounds differently from eager and from float64 alike (Inductor on densenet's first convolution:
# 5e-3, where eager is 1e-3 from float64), while a wrong gradient moves weights by the order of the update
# itself, and one wrong in a hundredth of a tensor's elements by about 0.2.
WEIGHT_RTOL = 2e-2
AMP_DTYPE = torch.bfloat16
AMP_LOSS = zoo.Tolerance(rtol=2e-2, atol=2e-2)
# Under bf16 autocast a gradient element near zero takes its sign from the rounding, and AdamW moves the weight
# by the full update either way: Inductor's bias and layer-norm weights on gpt and bert (large, H200) differ
# from eager's by up to 1e-1 of eager's change after three steps, where eager is nearer float64 than a quarter
# of that. A wrong gradient still moves weights by the order of the update (about 1), and one wrong in a
# hundredth of a tensor's elements by about 0.2.
AMP_WEIGHT_RTOL = 0.15


@dataclass
class Run:
    """What eager steps gave: the first loss, the first step's gradients, the state after the last step."""

    loss: float
    gradients: dict[str, torch.Tensor]
    state: dict[str, torch.Tensor]


@dataclass
class Reference:
    """Eager's first loss and state after ``CHECK_STEPS`` steps, and the float64 run's (None when the model
    does not run in float64)."""

    loss: float
    state: dict[str, torch.Tensor]
    exact_loss: float | None = None
    exact_state: dict[str, torch.Tensor] | None = None
    noise: frozenset[str] = frozenset()      # parameters whose float32 gradient is mostly rounding noise

    @classmethod
    def of(cls, run: Run, exact: Run | None) -> "Reference":
        if exact is None:
            return cls(run.loss, run.state)
        noise = frozenset(name for name, gradient in run.gradients.items() if name in exact.gradients
                          and distance(gradient, exact.gradients[name])
                          > NOISY_GRADIENT * exact.gradients[name].double().norm().item())
        return cls(run.loss, run.state, exact.loss, exact.state, noise)


@dataclass
class TrainingWorkload:
    """One model at one size on one device, ready to train: the initial module (train mode, dropout off),
    its inputs, the loss's targets and eager's results every backend must reproduce."""

    spec: zoo.ModelSpec
    size: str
    device: torch.device
    repeats: Repeats
    sync: Callable[[], None]
    amp: bool
    initial: nn.Module
    inputs: tuple
    loss_outputs: list[int]         # the positions (in ``tensors_of`` order) of the outputs the loss reads
    targets: list[torch.Tensor]
    reference: Reference | None = None
    compile_opt: bool = False       # each compiler compiles the optimizer's step too
    mode: str | None = None         # both compilers' ``mode`` (None: their default)

    def fresh(self) -> nn.Module:
        return copy.deepcopy(self.initial)

    def autocast(self):
        if not self.amp:
            return contextlib.nullcontext()
        return torch.autocast(self.device.type, dtype=AMP_DTYPE)

    def loss(self, output: Any) -> torch.Tensor:
        """Mean squared error of the differentiable outputs against fixed random targets, in the targets'
        dtype (float32, or float64 for the exact run): a loss every model has, whose gradient reaches every
        weight (the mean of a layer norm's output has none with respect to its input)."""
        tensors = tensors_of(output)
        return sum(F.mse_loss(tensors[i].to(target.dtype), target)
                   for i, target in zip(self.loss_outputs, self.targets))

    def loss_tolerance(self) -> zoo.Tolerance:
        return AMP_LOSS if self.amp else self.spec.tolerance


def training_mode(module: nn.Module) -> nn.Module:
    """``module`` in train mode with every dropout off: compiled code draws its random numbers its own way,
    so only a model without them can be trained identically by every backend."""
    module.train()
    for sub in module.modules():
        if isinstance(sub, nn.modules.dropout._DropoutNd):
            sub.p = 0.0
        elif isinstance(getattr(sub, "drop_rate", None), float):      # (DenseNet's functional dropout)
            sub.drop_rate = 0.0
    return module


def training_step(model: Callable, optimizer: torch.optim.Optimizer, workload: TrainingWorkload,
                  optimizer_step: Callable | None = None):
    """One step as a call: gradients cleared, forward and loss (under autocast with ``--amp``), backward,
    the optimizer's step (``optimizer_step``, its compiled form, if given); returns the loss."""
    advance = optimizer_step or optimizer.step

    def step():
        optimizer.zero_grad(set_to_none=True)
        with workload.autocast():
            loss = workload.loss(model(*workload.inputs))
        loss.backward()
        advance()
        return loss.detach()
    return step


def optimizer_for(model: nn.Module) -> torch.optim.Optimizer:
    return torch.optim.AdamW(model.parameters(), lr=LEARNING_RATE)


def state_of(model: nn.Module) -> dict[str, torch.Tensor]:
    return {name: value.detach().clone() for name, value in model.state_dict().items()}


def train_eagerly(model: nn.Module, workload: TrainingWorkload, steps: int) -> Run:
    step = training_step(model, optimizer_for(model), workload)
    loss = step().item()
    gradients = {name: p.grad.detach().clone() for name, p in model.named_parameters() if p.grad is not None}
    for _ in range(steps - 1):
        step()
    return Run(loss, gradients, state_of(model))


def as_float64(workload: TrainingWorkload) -> TrainingWorkload:
    def widen(value):
        return value.double() if isinstance(value, torch.Tensor) and value.is_floating_point() else value
    return TrainingWorkload(workload.spec, workload.size, workload.device, workload.repeats, workload.sync,
                            False, workload.fresh().double(), tuple(widen(x) for x in workload.inputs),
                            workload.loss_outputs, [t.double() for t in workload.targets])


def reference_workload(name: str, options, device: torch.device) -> TrainingWorkload:
    """The model ready to train, with eager's (and float64's) first loss and weights after CHECK_STEPS.

    Raises NotApplicable for a model with nothing to train.
    """
    spec = zoo.get(name)
    model, inputs = spec.make(options.size, device)
    training_mode(model)
    if not any(p.requires_grad for p in model.parameters()):
        raise NotApplicable("no parameters requiring grad")
    probe = copy.deepcopy(model)
    with torch.autocast(device.type, dtype=AMP_DTYPE, enabled=options.amp):
        outputs = tensors_of(probe(*inputs))
    positions = [i for i, t in enumerate(outputs) if t.requires_grad and t.is_floating_point()]
    if not positions:
        raise NotApplicable("no output depends on a parameter")
    generator = torch.Generator().manual_seed(TARGET_SEED)
    targets = [torch.randn(outputs[i].shape, generator=generator).to(device) for i in positions]
    workload = TrainingWorkload(spec, options.size, device, options.repeats, synchronizer(device), options.amp,
                                model, inputs, positions, targets, compile_opt=options.compile_opt,
                                mode=options.mode)
    run = train_eagerly(workload.fresh(), workload, CHECK_STEPS)
    try:
        exact = as_float64(workload)
        exact_run = train_eagerly(exact.initial, exact, CHECK_STEPS)
    except Exception:       # (a model that builds float32 tensors of its own): fall back to the fixed floors
        exact_run = None
    workload.reference = Reference.of(run, exact_run)
    return workload


def distance(actual: torch.Tensor, expected: torch.Tensor) -> float:
    """The 2-norm of the difference, in float64; infinite for tensors that cannot be compared."""
    if actual.shape != expected.shape or actual.is_floating_point() != expected.is_floating_point():
        return math.inf
    if not expected.is_floating_point():
        return 0.0 if torch.equal(actual.cpu(), expected.cpu()) else math.inf
    return (actual.double() - expected.double()).norm().item()


def loss_matches(result: BackendResult, loss: float, workload: TrainingWorkload) -> bool:
    reference, tolerance = workload.reference, workload.loss_tolerance()
    allowed = tolerance.atol + tolerance.rtol * abs(reference.loss)
    if reference.exact_loss is not None:
        allowed = max(allowed, NOISE_FACTOR * abs(reference.loss - reference.exact_loss))
    result.loss_err = abs(loss - reference.loss)
    if result.loss_err <= allowed or (math.isnan(loss) and math.isnan(reference.loss)):
        return True
    result.status, result.reason = WRONG, f"loss {loss:.6g} vs {reference.loss:.6g}"
    result.detail = f"first loss {loss!r}, eager's {reference.loss!r} (allowed difference {allowed:.2e})"
    return False


def weights_match(result: BackendResult, state: dict[str, torch.Tensor], workload: TrainingWorkload) -> bool:
    """Compare every parameter and buffer with eager's after the same steps (but those whose gradient is
    rounding noise: AdamW moves them by up to ``lr`` a step in any direction); record the largest difference
    relative to how far eager's steps moved a tensor, and on a mismatch mark ``result`` wrong."""
    reference, initial = workload.reference, workload.initial.state_dict()
    # A model whose outputs are only good to a wider tolerance (fake quantization's rounding) gets a floor
    # as much wider.
    floor = (AMP_WEIGHT_RTOL if workload.amp else WEIGHT_RTOL) * max(1.0, workload.spec.tolerance.rtol /
                                                                      zoo.Tolerance().rtol)
    worst, failed = 0.0, []
    for name, expected in reference.state.items():
        if name in reference.noise:
            continue
        error = distance(state[name], expected) if name in state else math.inf
        moved = distance(expected, initial[name].detach())
        relative = error / moved if moved else (0.0 if error == 0 else math.inf)
        worst = max(worst, relative)
        allowed = floor * moved
        if reference.exact_state is not None and expected.is_floating_point():
            allowed = max(allowed, NOISE_FACTOR * distance(expected, reference.exact_state[name]))
        if error > allowed:
            failed.append(f"{name} {relative:.1e}")
    result.weights_rel_diff = worst
    if not failed:
        return True
    compared = len(reference.state) - len(reference.noise)
    result.status, result.reason = WRONG, f"weights {worst:.1e}"
    result.detail = (f"after {CHECK_STEPS} steps {len(failed)} of {compared} tensors differ from eager's by more "
                     f"than allowed (relative to eager's change): {', '.join(failed[:5])}")
    return False


def checked_training(result: BackendResult, model: nn.Module, call: Callable, workload: TrainingWorkload,
                     compile_step: Callable | None = None):
    """Train ``model`` through ``call`` (its compiled forward) for CHECK_STEPS steps, timing the first two
    (magpy compiles its Triton kernels in the second); the step to time if its loss and weights matched
    eager's, else None (``result`` says why). With ``--compile-opt``, ``compile_step`` compiles the
    optimizer's step."""
    optimizer = optimizer_for(model)
    compiled_step = compile_step(optimizer.step) if workload.compile_opt and compile_step else None
    step = training_step(call, optimizer, workload, compiled_step)
    loss, result.first_call_s = timed_call(step, workload.sync)
    if not loss_matches(result, loss.item(), workload):
        return None
    result.second_call_s = timed_call(step, workload.sync)[1]
    for _ in range(CHECK_STEPS - 2):
        step()
    if not weights_match(result, state_of(model), workload):
        return None
    return step


def prepare_eager(result: BackendResult, workload: TrainingWorkload):
    model = workload.fresh()
    return checked_training(result, model, model, workload)


def prepare_magpy(result: BackendResult, workload: TrainingWorkload):
    compile_fn = runners.magpy_api("compile")      # (looked up where tests can swap it)
    try:
        runners.magpy_api("reset")()
    except Unavailable:
        pass
    with recording_warnings(result):
        model = workload.fresh()
        compiled = with_mode(compile_fn, workload.mode)(model)
        step = checked_training(result, model, compiled, workload, compile_fn)
        record_magpy_stats(result, compiled)
        return step


def prepare_inductor(result: BackendResult, workload: TrainingWorkload):
    model = workload.fresh()
    compiled = compile_with_inductor(model, workload.mode)
    step = checked_training(result, model, compiled, workload, torch.compile)
    result.compile_s = result.first_calls_s
    record_inductor_stats(result)
    return step


# backend name -> preparer, as runners.RUNNERS for inference
RUNNERS: dict[str, Callable[[BackendResult, TrainingWorkload], Callable[[], Any] | None]] = {
    "eager": prepare_eager,
    "magpy": prepare_magpy,
    "inductor": prepare_inductor,
}


def measure_peak_memory(results: dict[str, BackendResult], steps: dict[str, Callable[[], Any]],
                        workload: TrainingWorkload) -> None:
    """On CUDA, each timed backend's peak memory during one warm step, above what was allocated before it
    (activations, gradients and temporaries; every backend's weights and optimizer state stay resident)."""
    if workload.device.type != "cuda":
        return
    for name, step in steps.items():
        if not results[name].ok:
            continue
        workload.sync()
        torch.cuda.reset_peak_memory_stats(workload.device)
        before = torch.cuda.memory_allocated(workload.device)
        step()
        workload.sync()
        results[name].peak_memory_mib = (torch.cuda.max_memory_allocated(workload.device) - before) / 2 ** 20
