"""Quantization-aware ResNet: fake-quantized weights and activations, calibrated once at build time.

Exercises: a custom ``torch.autograd.Function`` (``FakeQuantize``) whose forward stores tensors and Python
values on ``ctx`` and computes with an in-place chain (``round(...).add_().clamp_()`` then ``sub_().mul_()``),
``float(tensor)`` / ``int(tensor)`` of scale and zero-point buffers inside forward, ``2 ** (bits - 1)`` on
module attributes, a Python flag (``observing``) that switches a module between calibration and inference,
and in-place ``relu_()`` / ``+=`` on activations.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from .resnet import conv1x1, init_weights
from .spec import ModelSpec, Tolerance


class FakeQuantize(torch.autograd.Function):
    """Round to the integer grid ``scale * (q - zero_point)``, q in [qmin, qmax]; straight-through gradient."""

    @staticmethod
    def forward(ctx, x: torch.Tensor, scale: float, zero_point: int, qmin: int, qmax: int) -> torch.Tensor:
        ctx.save_for_backward(x)
        ctx.bounds = ((qmin - zero_point) * scale, (qmax - zero_point) * scale)
        q = torch.round(x / scale).add_(zero_point).clamp_(qmin, qmax)
        return q.sub_(zero_point).mul_(scale)

    @staticmethod
    def backward(ctx, grad_output: torch.Tensor):
        (x,) = ctx.saved_tensors
        low, high = ctx.bounds
        inside = (x >= low) & (x <= high)
        return grad_output * inside, None, None, None, None


class QuantConv2d(nn.Conv2d):
    """Conv2d with symmetric per-tensor fake-quantized weights."""

    def __init__(self, *args, num_bits: int = 8, **kwargs):
        super().__init__(*args, **kwargs)
        self.num_bits = num_bits
        self.register_buffer("weight_scale", torch.tensor(1.0))

    def calibrate(self) -> None:
        qmax = 2 ** (self.num_bits - 1) - 1
        self.weight_scale.fill_(float(self.weight.detach().abs().max()) / qmax)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        qmax = 2 ** (self.num_bits - 1) - 1
        weight = FakeQuantize.apply(self.weight, float(self.weight_scale), 0, -qmax, qmax)
        return F.conv2d(x, weight, self.bias, self.stride, self.padding, self.dilation, self.groups)


class QuantLinear(nn.Linear):
    def __init__(self, *args, num_bits: int = 8, **kwargs):
        super().__init__(*args, **kwargs)
        self.num_bits = num_bits
        self.register_buffer("weight_scale", torch.tensor(1.0))

    def calibrate(self) -> None:
        qmax = 2 ** (self.num_bits - 1) - 1
        self.weight_scale.fill_(float(self.weight.detach().abs().max()) / qmax)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        qmax = 2 ** (self.num_bits - 1) - 1
        weight = FakeQuantize.apply(self.weight, float(self.weight_scale), 0, -qmax, qmax)
        return F.linear(x, weight, self.bias)


class QuantAct(nn.Module):
    """Asymmetric activation fake-quantizer; while ``observing`` it records the range instead."""

    def __init__(self, num_bits: int = 8):
        super().__init__()
        self.num_bits = num_bits
        self.observing = False
        self.register_buffer("min_val", torch.tensor(float("inf")))
        self.register_buffer("max_val", torch.tensor(float("-inf")))
        self.register_buffer("scale", torch.tensor(1.0))
        self.register_buffer("zero_point", torch.tensor(0))

    def calibrate(self) -> None:
        qmax = 2 ** self.num_bits - 1
        low, high = min(float(self.min_val), 0.0), max(float(self.max_val), 0.0)
        scale = max((high - low) / qmax, 1e-8)
        self.scale.fill_(scale)
        self.zero_point.fill_(int(round(-low / scale)))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.observing:
            self.min_val = torch.minimum(self.min_val, x.detach().min())
            self.max_val = torch.maximum(self.max_val, x.detach().max())
            return x
        return FakeQuantize.apply(x, float(self.scale), int(self.zero_point), 0, 2 ** self.num_bits - 1)


class QuantBasicBlock(nn.Module):
    expansion = 1

    def __init__(self, in_planes: int, planes: int, stride: int = 1, downsample: nn.Module | None = None):
        super().__init__()
        self.conv1 = QuantConv2d(in_planes, planes, 3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.act1 = QuantAct()
        self.conv2 = QuantConv2d(planes, planes, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.act2 = QuantAct()
        self.downsample = downsample

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        identity = x
        out = self.bn1(self.conv1(x))
        out.relu_()
        out = self.act1(out)
        out = self.bn2(self.conv2(out))
        if self.downsample is not None:
            identity = self.downsample(x)
        out += identity
        out.relu_()
        return self.act2(out)


class QuantResNet(nn.Module):
    def __init__(self, layers: list[int], width: int = 64, num_classes: int = 1000):
        super().__init__()
        self.in_planes = width
        self.quant_input = QuantAct()
        self.conv1 = QuantConv2d(3, width, 7, stride=2, padding=3, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.act1 = QuantAct()
        self.maxpool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)
        self.layer1 = self._make_stage(width, layers[0])
        self.layer2 = self._make_stage(width * 2, layers[1], stride=2)
        self.layer3 = self._make_stage(width * 4, layers[2], stride=2)
        self.layer4 = self._make_stage(width * 8, layers[3], stride=2)
        self.fc = QuantLinear(width * 8, num_classes)
        init_weights(self)

    def _make_stage(self, planes: int, blocks: int, stride: int = 1) -> nn.Sequential:
        downsample = None
        if stride != 1 or self.in_planes != planes:
            downsample = nn.Sequential(conv1x1(self.in_planes, planes, stride), nn.BatchNorm2d(planes))
        stage = [QuantBasicBlock(self.in_planes, planes, stride, downsample)]
        self.in_planes = planes
        stage += [QuantBasicBlock(planes, planes) for _ in range(1, blocks)]
        return nn.Sequential(*stage)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.quant_input(x)
        x = self.bn1(self.conv1(x))
        x = self.act1(x.relu_())
        x = self.maxpool(x)
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        x = torch.flatten(F.adaptive_avg_pool2d(x, 1), 1)
        return self.fc(x)


@torch.no_grad()
def calibrate(model: nn.Module, example: torch.Tensor) -> None:
    """Set every weight scale from its weights and every activation range from one observed forward pass."""
    acts = [m for m in model.modules() if isinstance(m, QuantAct)]
    for m in acts:
        m.observing = True
    model.eval()(example)
    for m in model.modules():
        if isinstance(m, (QuantAct, QuantConv2d, QuantLinear)):
            m.calibrate()
    for m in acts:
        m.observing = False


# size -> (layers, width, batch, image side, classes)
CONFIGS = {
    "small": ([1, 1, 1, 1], 16, 2, 64, 10),
    "medium": ([2, 2, 2, 2], 64, 1, 224, 1000),   # ResNet-18
    "large": ([3, 4, 6, 3], 64, 4, 224, 1000),    # ResNet-34
}


def build(size: str):
    layers, width, batch, side, classes = CONFIGS[size]
    model = QuantResNet(layers, width, classes)
    example = torch.randn(batch, 3, side, side)
    calibrate(model, example)
    return model, (example,)


MODEL = ModelSpec(
    name="quant_resnet",
    summary="quantization-aware ResNet (autograd.Function fake-quant, float(tensor) scales)",
    build=build,
    exercises=("custom autograd.Function with ctx", "float(tensor) / int(tensor) of buffers",
               "in-place chains (add_().clamp_(), sub_().mul_(), relu_(), +=)", "Python mode flag on modules"),
    # A compiler may reorder the float arithmetic in front of round(): a value on a rounding boundary then
    # moves by one quantization step, which the following layers carry on.
    tolerance=Tolerance(rtol=1e-2, atol=1e-2),
)
