"""DenseNet-style classifier in the memory-efficient layout of torchvision's DenseNet.

Exercises: a closure factory (``_bn_function_factory``) that builds the layer function on every call, a
``forward(*prev_features)`` taking a variable number of tensors, a block whose forward keeps a growing Python
list of features and calls ``layer(*features)``, iteration over ``nn.ModuleDict.items()``, and ``torch.cat``
of a list whose length changes per layer.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from .resnet import init_weights
from .spec import ModelSpec


def _bn_function_factory(norm: nn.Module, relu: nn.Module, conv: nn.Module):
    def bn_function(*inputs: torch.Tensor) -> torch.Tensor:
        concatenated = torch.cat(inputs, 1)
        return conv(relu(norm(concatenated)))

    return bn_function


class DenseLayer(nn.Module):
    def __init__(self, in_features: int, growth_rate: int, bn_size: int, drop_rate: float):
        super().__init__()
        self.norm1 = nn.BatchNorm2d(in_features)
        self.relu1 = nn.ReLU(inplace=True)
        self.conv1 = nn.Conv2d(in_features, bn_size * growth_rate, kernel_size=1, bias=False)
        self.norm2 = nn.BatchNorm2d(bn_size * growth_rate)
        self.relu2 = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(bn_size * growth_rate, growth_rate, kernel_size=3, padding=1, bias=False)
        self.drop_rate = drop_rate

    def forward(self, *prev_features: torch.Tensor) -> torch.Tensor:
        bn_function = _bn_function_factory(self.norm1, self.relu1, self.conv1)
        bottleneck = bn_function(*prev_features)
        new_features = self.conv2(self.relu2(self.norm2(bottleneck)))
        if self.drop_rate > 0:
            new_features = F.dropout(new_features, p=self.drop_rate, training=self.training)
        return new_features


class DenseBlock(nn.ModuleDict):
    def __init__(self, num_layers: int, in_features: int, bn_size: int, growth_rate: int, drop_rate: float):
        super().__init__()
        for i in range(num_layers):
            layer = DenseLayer(in_features + i * growth_rate, growth_rate, bn_size, drop_rate)
            self[f"denselayer{i + 1}"] = layer

    def forward(self, init_features: torch.Tensor) -> torch.Tensor:
        features = [init_features]
        for name, layer in self.items():
            new_features = layer(*features)
            features.append(new_features)
        return torch.cat(features, 1)


class Transition(nn.Sequential):
    def __init__(self, in_features: int, out_features: int):
        super().__init__(
            nn.BatchNorm2d(in_features),
            nn.ReLU(inplace=True),
            nn.Conv2d(in_features, out_features, kernel_size=1, bias=False),
            nn.AvgPool2d(kernel_size=2, stride=2),
        )


class DenseNet(nn.Module):
    def __init__(self, growth_rate: int, block_config: tuple[int, ...], init_features: int, bn_size: int = 4,
                 drop_rate: float = 0.0, num_classes: int = 1000):
        super().__init__()
        self.features = nn.Sequential()
        self.features.add_module("conv0", nn.Conv2d(3, init_features, 7, stride=2, padding=3, bias=False))
        self.features.add_module("norm0", nn.BatchNorm2d(init_features))
        self.features.add_module("relu0", nn.ReLU(inplace=True))
        self.features.add_module("pool0", nn.MaxPool2d(kernel_size=3, stride=2, padding=1))
        channels = init_features
        for i, num_layers in enumerate(block_config):
            block = DenseBlock(num_layers, channels, bn_size, growth_rate, drop_rate)
            self.features.add_module(f"denseblock{i + 1}", block)
            channels += num_layers * growth_rate
            if i != len(block_config) - 1:
                self.features.add_module(f"transition{i + 1}", Transition(channels, channels // 2))
                channels //= 2
        self.features.add_module("norm5", nn.BatchNorm2d(channels))
        self.classifier = nn.Linear(channels, num_classes)
        init_weights(self)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        features = self.features(x)
        out = F.relu(features, inplace=True)
        out = F.adaptive_avg_pool2d(out, (1, 1))
        return self.classifier(torch.flatten(out, 1))


# size -> (growth_rate, block_config, init_features, batch, image side, classes)
CONFIGS = {
    "small": (8, (2, 3, 2), 16, 2, 64, 10),
    "medium": (32, (6, 12, 24, 16), 64, 1, 224, 1000),   # DenseNet-121
    "large": (32, (6, 12, 24, 16), 64, 8, 224, 1000),
}


def build(size: str):
    growth, blocks, init_features, batch, side, classes = CONFIGS[size]
    model = DenseNet(growth, blocks, init_features, drop_rate=0.1, num_classes=classes)
    return model, (torch.randn(batch, 3, side, side),)


MODEL = ModelSpec(
    name="densenet",
    summary="DenseNet-style CNN (closure-built layer functions over a growing feature list)",
    build=build,
    exercises=("closure factory called every forward", "forward(*prev_features) with layer(*features)",
               "growing Python list + torch.cat", "nn.ModuleDict.items()", "eval-mode dropout branch"),
)
