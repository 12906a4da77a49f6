"""ResNet-18/50-style image classifier: the plain CNN baseline of the zoo.

Exercises: nn.Sequential stacks, residual adds, an optional downsample submodule (``None`` or a module),
two block classes sharing one ``_make_stage`` builder, adaptive pooling and ``torch.flatten``.
"""
from __future__ import annotations

import torch
from torch import nn

from .spec import ModelSpec


def conv3x3(in_planes: int, out_planes: int, stride: int = 1, dilation: int = 1) -> nn.Conv2d:
    return nn.Conv2d(in_planes, out_planes, 3, stride=stride, padding=dilation, dilation=dilation, bias=False)


def conv1x1(in_planes: int, out_planes: int, stride: int = 1) -> nn.Conv2d:
    return nn.Conv2d(in_planes, out_planes, 1, stride=stride, bias=False)


class BasicBlock(nn.Module):
    expansion = 1

    def __init__(self, in_planes: int, planes: int, stride: int = 1, downsample: nn.Module | None = None):
        super().__init__()
        self.conv1 = conv3x3(in_planes, planes, stride)
        self.bn1 = nn.BatchNorm2d(planes)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = conv3x3(planes, planes)
        self.bn2 = nn.BatchNorm2d(planes)
        self.downsample = downsample

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        identity = x
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        if self.downsample is not None:
            identity = self.downsample(x)
        out += identity
        return self.relu(out)


class Bottleneck(nn.Module):
    expansion = 4

    def __init__(self, in_planes: int, planes: int, stride: int = 1, downsample: nn.Module | None = None):
        super().__init__()
        self.conv1 = conv1x1(in_planes, planes)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = conv3x3(planes, planes, stride)
        self.bn2 = nn.BatchNorm2d(planes)
        self.conv3 = conv1x1(planes, planes * self.expansion)
        self.bn3 = nn.BatchNorm2d(planes * self.expansion)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = downsample

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        identity = x
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        if self.downsample is not None:
            identity = self.downsample(x)
        out += identity
        return self.relu(out)


class ResNet(nn.Module):
    def __init__(self, block: type[BasicBlock | Bottleneck], layers: list[int], width: int = 64,
                 num_classes: int = 1000):
        super().__init__()
        self.in_planes = width
        self.conv1 = nn.Conv2d(3, width, kernel_size=7, stride=2, padding=3, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)
        self.layer1 = self._make_stage(block, width, layers[0])
        self.layer2 = self._make_stage(block, width * 2, layers[1], stride=2)
        self.layer3 = self._make_stage(block, width * 4, layers[2], stride=2)
        self.layer4 = self._make_stage(block, width * 8, layers[3], stride=2)
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(width * 8 * block.expansion, num_classes)
        init_weights(self)

    def _make_stage(self, block, planes: int, blocks: int, stride: int = 1) -> nn.Sequential:
        downsample = None
        if stride != 1 or self.in_planes != planes * block.expansion:
            downsample = nn.Sequential(
                conv1x1(self.in_planes, planes * block.expansion, stride),
                nn.BatchNorm2d(planes * block.expansion),
            )
        stage = [block(self.in_planes, planes, stride, downsample)]
        self.in_planes = planes * block.expansion
        stage += [block(self.in_planes, planes) for _ in range(1, blocks)]
        return nn.Sequential(*stage)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer1(x)
        x = self.layer2(x)
        x = self.layer3(x)
        x = self.layer4(x)
        x = torch.flatten(self.avgpool(x), 1)
        return self.fc(x)


def init_weights(model: nn.Module) -> None:
    """Kaiming convolutions and non-trivial BatchNorm statistics, so eval-mode BN is not an identity."""
    for m in model.modules():
        if isinstance(m, nn.Conv2d):
            nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
        elif isinstance(m, nn.BatchNorm2d):
            nn.init.uniform_(m.weight, 0.5, 1.5)
            nn.init.normal_(m.bias, std=0.1)
            m.running_mean.normal_(std=0.1)
            m.running_var.uniform_(0.5, 1.5)


# size -> (block, layers, width, batch, image side)
CONFIGS = {
    "small": (BasicBlock, [1, 1, 1, 1], 16, 2, 64),
    "medium": (BasicBlock, [2, 2, 2, 2], 64, 1, 224),   # ResNet-18
    "large": (Bottleneck, [3, 4, 6, 3], 64, 4, 224),    # ResNet-50
}


def build(size: str):
    block, layers, width, batch, side = CONFIGS[size]
    model = ResNet(block, layers, width, num_classes=1000 if size != "small" else 10)
    return model, (torch.randn(batch, 3, side, side),)


MODEL = ModelSpec(
    name="resnet",
    summary="ResNet-18/50-style CNN (BasicBlock / Bottleneck stages)",
    build=build,
    exercises=("nn.Sequential stages", "optional downsample submodule (None check)", "in-place residual add"),
)
