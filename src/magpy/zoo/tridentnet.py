"""TridentNet-style backbone: parallel branches with shared weights and different dilations.

Exercises: ``isinstance(x, list)`` polymorphism (a block accepts one tensor or a list of branch tensors),
``[x] * num_branch`` replication, list comprehensions and ``zip`` over branches, one ``nn.Parameter`` used by
three ``F.conv2d`` calls with per-branch dilation and padding, a ``training`` / ``test_branch_idx`` switch that
changes the number of branches, ``F.relu_`` on list elements, and ``torch.cat`` of the branches at the end.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from .resnet import Bottleneck, conv1x1, init_weights
from .spec import ModelSpec


class TridentConv(nn.Module):
    """One 3x3 kernel applied to every branch with that branch's dilation (padding = dilation)."""

    def __init__(self, in_channels: int, out_channels: int, stride: int = 1, dilations=(1, 2, 3),
                 test_branch_idx: int = -1):
        super().__init__()
        self.num_branch = len(dilations)
        self.stride = stride
        self.dilations = list(dilations)
        self.paddings = list(dilations)
        self.test_branch_idx = test_branch_idx
        self.weight = nn.Parameter(torch.empty(out_channels, in_channels, 3, 3))
        self.bias = None
        self.norm = nn.BatchNorm2d(out_channels)
        nn.init.kaiming_normal_(self.weight, mode="fan_out", nonlinearity="relu")

    def forward(self, inputs: list[torch.Tensor]) -> list[torch.Tensor]:
        num_branch = self.num_branch if self.training or self.test_branch_idx == -1 else 1
        assert len(inputs) == num_branch
        if self.training or self.test_branch_idx == -1:
            outputs = [
                F.conv2d(x, self.weight, self.bias, self.stride, padding, dilation)
                for x, dilation, padding in zip(inputs, self.dilations, self.paddings)
            ]
        else:
            outputs = [F.conv2d(inputs[0], self.weight, self.bias, self.stride,
                                self.paddings[self.test_branch_idx], self.dilations[self.test_branch_idx])]
        return [self.norm(x) for x in outputs]


class TridentBottleneck(nn.Module):
    expansion = 4

    def __init__(self, in_planes: int, planes: int, stride: int = 1, dilations=(1, 2, 3),
                 concat_output: bool = False, test_branch_idx: int = -1):
        super().__init__()
        out_planes = planes * self.expansion
        self.num_branch = len(dilations)
        self.test_branch_idx = test_branch_idx
        self.concat_output = concat_output
        self.shortcut = None
        if stride != 1 or in_planes != out_planes:
            self.shortcut = nn.Sequential(conv1x1(in_planes, out_planes, stride), nn.BatchNorm2d(out_planes))
        self.conv1 = nn.Sequential(conv1x1(in_planes, planes), nn.BatchNorm2d(planes))
        self.conv2 = TridentConv(planes, planes, stride, dilations, test_branch_idx)
        self.conv3 = nn.Sequential(conv1x1(planes, out_planes), nn.BatchNorm2d(out_planes))

    def forward(self, x):
        num_branch = self.num_branch if self.training or self.test_branch_idx == -1 else 1
        if not isinstance(x, list):
            x = [x] * num_branch
        out = [F.relu_(self.conv1(b)) for b in x]
        out = [F.relu_(b) for b in self.conv2(out)]
        out = [self.conv3(b) for b in out]
        if self.shortcut is not None:
            shortcut = [self.shortcut(b) for b in x]
        else:
            shortcut = x
        out = [F.relu_(out_b + shortcut_b) for out_b, shortcut_b in zip(out, shortcut)]
        if self.concat_output:
            out = torch.cat(out)
        return out


class TridentNet(nn.Module):
    def __init__(self, layers: list[int], width: int = 64, num_classes: int = 1000, dilations=(1, 2, 3)):
        super().__init__()
        self.stem = nn.Sequential(
            nn.Conv2d(3, width, 7, stride=2, padding=3, bias=False), nn.BatchNorm2d(width), nn.ReLU(inplace=True),
            nn.MaxPool2d(kernel_size=3, stride=2, padding=1),
        )
        in_planes = width
        stages = []
        for i, num_blocks in enumerate(layers[:-1]):
            planes, stride = width * 2 ** i, 1 if i == 0 else 2
            downsample = nn.Sequential(conv1x1(in_planes, planes * 4, stride), nn.BatchNorm2d(planes * 4))
            blocks = [Bottleneck(in_planes, planes, stride, downsample)]
            blocks += [Bottleneck(planes * 4, planes) for _ in range(1, num_blocks)]
            stages.append(nn.Sequential(*blocks))
            in_planes = planes * 4
        self.stages = nn.Sequential(*stages)
        planes = width * 2 ** (len(layers) - 1)
        trident = []
        for i in range(layers[-1]):
            trident.append(TridentBottleneck(in_planes, planes, stride=2 if i == 0 else 1, dilations=dilations,
                                             concat_output=i == layers[-1] - 1))
            in_planes = planes * 4
        self.trident = nn.Sequential(*trident)
        self.fc = nn.Linear(in_planes, num_classes)
        init_weights(self)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.stages(self.stem(x))
        x = self.trident(x)                 # (num_branch * batch, C, H, W): branches stacked along the batch
        if isinstance(x, (list, tuple)):
            x = torch.cat(x)
        x = F.adaptive_avg_pool2d(x, 1).flatten(1)
        return self.fc(x)


# size -> (layers (last = trident stage), width, batch, image side, classes)
CONFIGS = {
    "small": ([1, 1, 2], 16, 2, 64, 10),
    "medium": ([2, 2, 3], 64, 1, 224, 1000),
    "large": ([3, 4, 6], 64, 2, 320, 1000),
}


def build(size: str):
    layers, width, batch, side, classes = CONFIGS[size]
    return TridentNet(layers, width, classes), (torch.randn(batch, 3, side, side),)


MODEL = ModelSpec(
    name="tridentnet",
    summary="TridentNet-style backbone (3 branches, shared weights, dilations 1/2/3)",
    build=build,
    exercises=("isinstance(x, list) polymorphism", "[x] * n replication + list comprehensions over zip",
               "one Parameter in three convs with different dilations", "training/test_branch_idx switch",
               "F.relu_ on list elements"),
)
