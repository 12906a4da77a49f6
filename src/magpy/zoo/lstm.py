"""A hand-written multi-layer LSTM: the cell is a Python function, time steps a Python loop.

Exercises: a ``for`` loop over ``range(x.size(0))`` that unrolls into one graph per sequence length,
indexing ``x[t]``, tuple state ``(h, c)`` passed through calls and unpacked, ``chunk(4, 1)`` into four
gates, Python lists of per-step outputs fed to ``torch.stack``, and a ``nn.ParameterList`` read by index.
"""
from __future__ import annotations

import math

import torch
from torch import nn

from .spec import ModelSpec


def lstm_cell(x: torch.Tensor, hidden: tuple[torch.Tensor, torch.Tensor], w_ih: torch.Tensor,
              w_hh: torch.Tensor, b_ih: torch.Tensor, b_hh: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    hx, cx = hidden
    gates = torch.mm(x, w_ih.t()) + torch.mm(hx, w_hh.t()) + b_ih + b_hh
    ingate, forgetgate, cellgate, outgate = gates.chunk(4, 1)
    ingate = torch.sigmoid(ingate)
    forgetgate = torch.sigmoid(forgetgate)
    cellgate = torch.tanh(cellgate)
    outgate = torch.sigmoid(outgate)
    cy = (forgetgate * cx) + (ingate * cellgate)
    hy = outgate * torch.tanh(cy)
    return hy, cy


class LSTMLayer(nn.Module):
    def __init__(self, input_size: int, hidden_size: int):
        super().__init__()
        self.hidden_size = hidden_size
        self.weights = nn.ParameterList([
            nn.Parameter(torch.empty(4 * hidden_size, input_size)),
            nn.Parameter(torch.empty(4 * hidden_size, hidden_size)),
            nn.Parameter(torch.empty(4 * hidden_size)),
            nn.Parameter(torch.empty(4 * hidden_size)),
        ])
        bound = 1.0 / math.sqrt(hidden_size)
        for w in self.weights:
            nn.init.uniform_(w, -bound, bound)

    def forward(self, x: torch.Tensor, state: tuple[torch.Tensor, torch.Tensor]):
        w_ih, w_hh, b_ih, b_hh = self.weights[0], self.weights[1], self.weights[2], self.weights[3]
        outputs = []
        for t in range(x.size(0)):
            state = lstm_cell(x[t], state, w_ih, w_hh, b_ih, b_hh)
            outputs.append(state[0])
        return torch.stack(outputs), state


class LSTM(nn.Module):
    """Sequence-first LSTM: input (seq, batch, input_size) -> output (seq, batch, hidden), final (h, c) per layer."""

    def __init__(self, input_size: int, hidden_size: int, num_layers: int):
        super().__init__()
        self.hidden_size = hidden_size
        sizes = [input_size] + [hidden_size] * (num_layers - 1)
        self.layers = nn.ModuleList([LSTMLayer(n, hidden_size) for n in sizes])

    def forward(self, x: torch.Tensor):
        batch = x.size(1)
        h_n, c_n = [], []
        for layer in self.layers:
            zeros = x.new_zeros(batch, self.hidden_size)
            x, (h, c) = layer(x, (zeros, zeros))
            h_n.append(h)
            c_n.append(c)
        return x, (torch.stack(h_n), torch.stack(c_n))


# size -> (input_size, hidden_size, num_layers, sequence length, batch)
CONFIGS = {
    "small": (32, 64, 2, 16, 4),
    "medium": (256, 512, 2, 64, 16),
    "large": (512, 1024, 4, 100, 64),
}


def build(size: str):
    input_size, hidden, layers, seq, batch = CONFIGS[size]
    return LSTM(input_size, hidden, layers), (torch.randn(seq, batch, input_size),)


MODEL = ModelSpec(
    name="lstm",
    summary="hand-written LSTM (cell function in a Python loop over time steps)",
    build=build,
    exercises=("Python loop over time steps (unrolled)", "tuple state through calls", "chunk into gates",
               "list of outputs + torch.stack", "nn.ParameterList indexing"),
)
