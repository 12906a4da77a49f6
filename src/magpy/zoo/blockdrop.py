"""BlockDrop-style dynamic ResNet: a small policy network decides, per image, which residual blocks run.

At inference BlockDrop thresholds the policy's probabilities instead of sampling them, so the decision is a
deterministic function of the input. Which blocks run is only known from tensor values: the forward branches
on ``action.sum() == 0`` to skip a block for the whole batch, so a compiler must either break the graph there
or specialise on the decision and guard on it. Blocks skipped for only part of the batch are masked instead.

Exercises: a data-dependent Python branch on a tensor, ``continue`` inside nested loops with a running index
``t``, the list-replication idiom ``[x] + [x.mul(0)] * k`` in the shortcut, and a tuple return.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from .resnet import conv3x3, init_weights
from .spec import ModelSpec


class DownsampleB(nn.Module):
    """Parameter-free shortcut: average-pool, then pad the channels with zeros."""

    def __init__(self, in_planes: int, out_planes: int, stride: int):
        super().__init__()
        self.avg = nn.AvgPool2d(stride)
        self.expand_ratio = out_planes // in_planes

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.avg(x)
        return torch.cat([x] + [x.mul(0)] * (self.expand_ratio - 1), 1)


class ResidualBranch(nn.Module):
    """The residual function f(x) of a basic block; the sum with the shortcut happens in the caller."""

    def __init__(self, in_planes: int, planes: int, stride: int = 1):
        super().__init__()
        self.conv1 = conv3x3(in_planes, planes, stride)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = conv3x3(planes, planes)
        self.bn2 = nn.BatchNorm2d(planes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.bn2(self.conv2(F.relu(self.bn1(self.conv1(x)))))


class PolicyNet(nn.Module):
    """Looks at a downsampled image and gives each residual block a probability of running."""

    def __init__(self, num_blocks: int):
        super().__init__()
        self.conv1 = conv3x3(3, 16)
        self.bn1 = nn.BatchNorm2d(16)
        self.conv2 = conv3x3(16, 32, stride=2)
        self.bn2 = nn.BatchNorm2d(32)
        self.logit = nn.Linear(32, num_blocks)

    def features(self, x: torch.Tensor) -> torch.Tensor:
        x = F.avg_pool2d(x, 2)
        x = F.relu(self.bn1(self.conv1(x)))
        x = F.relu(self.bn2(self.conv2(x)))
        return F.adaptive_avg_pool2d(x, 1).flatten(1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.sigmoid(self.logit(self.features(x)))


class BlockDrop(nn.Module):
    def __init__(self, layer_config: list[int], width: int = 16, num_classes: int = 10, threshold: float = 0.5):
        super().__init__()
        self.layer_config = layer_config
        self.threshold = threshold
        self.seed = nn.Sequential(conv3x3(3, width), nn.BatchNorm2d(width), nn.ReLU(inplace=True))
        self.ds = nn.ModuleList()
        self.blocks = nn.ModuleList()
        in_planes = width
        for segment, num_blocks in enumerate(layer_config):
            planes = width * 2 ** segment
            stride = 1 if segment == 0 else 2
            self.ds.append(nn.Identity() if stride == 1 else DownsampleB(in_planes, planes, stride))
            branches = [ResidualBranch(in_planes, planes, stride)]
            branches += [ResidualBranch(planes, planes) for _ in range(1, num_blocks)]
            self.blocks.append(nn.ModuleList(branches))
            in_planes = planes
        self.fc = nn.Linear(in_planes, num_classes)
        self.agent = PolicyNet(sum(layer_config))
        init_weights(self)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        probs = self.agent(x)
        policy = (probs > self.threshold).float()
        x = self.seed(x)
        t = 0
        for segment, num_blocks in enumerate(self.layer_config):
            for b in range(num_blocks):
                action = policy[:, t].contiguous()
                residual = self.ds[segment](x) if b == 0 else x
                if action.sum() == 0:        # the whole batch drops this block
                    x = residual
                    t += 1
                    continue
                action_mask = action.view(-1, 1, 1, 1)
                fx = F.relu(residual + self.blocks[segment][b](x))
                x = fx * action_mask + residual * (1 - action_mask)
                t += 1
        x = F.adaptive_avg_pool2d(x, 1)
        x = x.view(x.size(0), -1)
        return self.fc(x), policy


@torch.no_grad()
def teach_policy(model: BlockDrop, images: torch.Tensor, contrasty: torch.Tensor) -> None:
    """Stand-in for training the policy: every third block always runs, the next one is always dropped, and
    the one after runs only for high-contrast images. Logits sit near +-4, far from the threshold, so
    rounding differences between compilers cannot flip a decision for these images.
    """
    model.eval()
    features = model.agent.features(images)
    direction = features[contrasty].mean(0) - features[~contrasty].mean(0)
    midpoint = (features[contrasty].mean(0) + features[~contrasty].mean(0)) / 2
    logit = model.agent.logit
    logit.weight.zero_()
    for block in range(logit.out_features):
        kind = block % 3
        if kind == 0:
            logit.bias[block] = 4.0
        elif kind == 1:
            logit.bias[block] = -4.0
        else:
            logit.weight[block] = direction * (8.0 / direction.dot(direction))
            logit.bias[block] = -logit.weight[block].dot(midpoint)


# size -> (layer_config, width, batch, image side)
CONFIGS = {
    "small": ([2, 2, 2], 16, 4, 32),
    "medium": ([18, 18, 18], 16, 16, 32),     # ResNet-110 on CIFAR
    "large": ([18, 18, 18], 32, 64, 32),
}


def build(size: str):
    layer_config, width, batch, side = CONFIGS[size]
    model = BlockDrop(layer_config, width)
    images = torch.randn(batch, 3, side, side)
    contrasty = torch.arange(batch) % 2 == 0
    images[~contrasty] *= 0.1                  # every other image is a low-contrast one
    teach_policy(model, images, contrasty)
    return model, (images,)


MODEL = ModelSpec(
    name="blockdrop",
    summary="BlockDrop-style ResNet (thresholded policy picks the residual blocks to run)",
    build=build,
    exercises=("branch on a tensor value (action.sum() == 0)", "continue in nested loops with a counter",
               "list replication in the shortcut", "per-sample masking", "tuple return"),
)
