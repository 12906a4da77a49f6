"""MonoDepth-style encoder/decoder predicting left/right disparities at four scales.

Exercises: numpy on Python values inside forward (``int(np.floor((k - 1) / 2))`` computes padding every call),
``F.pad`` with a tuple built from it, intermediate disparities stored on ``self`` (``self.disp4 = …``) and read
back later in the same forward, ``F.interpolate`` with ``scale_factor``, skip connections joined by ``torch.cat``,
and a tuple of attributes as the return value.
"""
from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from .resnet import init_weights
from .spec import ModelSpec


class Conv(nn.Module):
    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, stride: int):
        super().__init__()
        self.kernel_size = kernel_size
        self.conv_base = nn.Conv2d(in_channels, out_channels, kernel_size=kernel_size, stride=stride)
        self.normalize = nn.BatchNorm2d(out_channels)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        p = int(np.floor((self.kernel_size - 1) / 2))
        p2d = (p, p, p, p)
        x = self.conv_base(F.pad(x, p2d))
        x = self.normalize(x)
        return F.elu(x, inplace=True)


class ConvBlock(nn.Module):
    def __init__(self, in_channels: int, out_channels: int, kernel_size: int):
        super().__init__()
        self.conv1 = Conv(in_channels, out_channels, kernel_size, 1)
        self.conv2 = Conv(out_channels, out_channels, kernel_size, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv2(self.conv1(x))


class UpConv(nn.Module):
    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, scale: int):
        super().__init__()
        self.scale = scale
        self.conv1 = Conv(in_channels, out_channels, kernel_size, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = F.interpolate(x, scale_factor=self.scale, mode="bilinear", align_corners=True)
        return self.conv1(x)


class GetDisp(nn.Module):
    def __init__(self, in_channels: int):
        super().__init__()
        self.conv1 = nn.Conv2d(in_channels, 2, kernel_size=3, stride=1)
        self.normalize = nn.BatchNorm2d(2)
        self.sigmoid = nn.Sigmoid()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        p = 1
        p3d = (p, p, p, p)
        x = self.conv1(F.pad(x, p3d))
        x = self.normalize(x)
        return 0.3 * self.sigmoid(x)


class MonoDepth(nn.Module):
    def __init__(self, width: int = 32):
        super().__init__()
        c1, c2, c3, c4, c5 = (width * 2 ** i for i in range(5))
        self.conv1 = ConvBlock(3, c1, 7)
        self.conv2 = ConvBlock(c1, c2, 5)
        self.conv3 = ConvBlock(c2, c3, 3)
        self.conv4 = ConvBlock(c3, c4, 3)
        self.conv5 = ConvBlock(c4, c5, 3)
        self.upconv5 = UpConv(c5, c4, 3, 2)
        self.iconv5 = Conv(c4 + c4, c4, 3, 1)
        self.upconv4 = UpConv(c4, c3, 3, 2)
        self.iconv4 = Conv(c3 + c3, c3, 3, 1)
        self.disp4_layer = GetDisp(c3)
        self.upconv3 = UpConv(c3, c2, 3, 2)
        self.iconv3 = Conv(c2 + c2 + 2, c2, 3, 1)
        self.disp3_layer = GetDisp(c2)
        self.upconv2 = UpConv(c2, c1, 3, 2)
        self.iconv2 = Conv(c1 + c1 + 2, c1, 3, 1)
        self.disp2_layer = GetDisp(c1)
        self.upconv1 = UpConv(c1, c1 // 2, 3, 2)
        self.iconv1 = Conv(c1 // 2 + 2, c1 // 2, 3, 1)
        self.disp1_layer = GetDisp(c1 // 2)
        init_weights(self)

    def forward(self, x: torch.Tensor):
        # encoder
        x1 = self.conv1(x)
        x2 = self.conv2(x1)
        x3 = self.conv3(x2)
        x4 = self.conv4(x3)
        x5 = self.conv5(x4)
        # skips
        skip1, skip2, skip3, skip4 = x1, x2, x3, x4
        # decoder
        upconv5 = self.upconv5(x5)
        iconv5 = self.iconv5(torch.cat((upconv5, skip4), 1))

        upconv4 = self.upconv4(iconv5)
        iconv4 = self.iconv4(torch.cat((upconv4, skip3), 1))
        self.disp4 = self.disp4_layer(iconv4)
        self.udisp4 = F.interpolate(self.disp4, scale_factor=2, mode="bilinear", align_corners=True)

        upconv3 = self.upconv3(iconv4)
        iconv3 = self.iconv3(torch.cat((upconv3, skip2, self.udisp4), 1))
        self.disp3 = self.disp3_layer(iconv3)
        self.udisp3 = F.interpolate(self.disp3, scale_factor=2, mode="bilinear", align_corners=True)

        upconv2 = self.upconv2(iconv3)
        iconv2 = self.iconv2(torch.cat((upconv2, skip1, self.udisp3), 1))
        self.disp2 = self.disp2_layer(iconv2)
        self.udisp2 = F.interpolate(self.disp2, scale_factor=2, mode="bilinear", align_corners=True)

        upconv1 = self.upconv1(iconv2)
        iconv1 = self.iconv1(torch.cat((upconv1, self.udisp2), 1))
        self.disp1 = self.disp1_layer(iconv1)
        return self.disp1, self.disp2, self.disp3, self.disp4


# size -> (width, batch, height, width of the image)
CONFIGS = {
    "small": (8, 1, 64, 128),
    "medium": (32, 1, 128, 256),
    "large": (32, 4, 256, 512),
}


def build(size: str):
    width, batch, height, image_width = CONFIGS[size]
    return MonoDepth(width), (torch.randn(batch, 3, height, image_width),)


MODEL = ModelSpec(
    name="monodepth",
    summary="MonoDepth-style encoder/decoder (disparities stored on self, numpy padding in forward)",
    build=build,
    exercises=("numpy on Python values in forward", "attribute writes on self read back later",
               "F.pad with computed tuples", "bilinear interpolate + skip concatenation", "tuple return"),
)
