"""One CPU training step of a zoo model, shared by the scratch scripts: forward, MSE of the outputs against fixed
random targets, backward, AdamW."""
import copy

import torch
import torch.nn.functional as F

from magpy.measure.bench.runners import tensors_of


def training_step(model, inp, call=None):
    """A function running one step of ``model`` (in train mode) through ``call`` (the model itself by default:
    eager; ``magpy.compile(model)`` or ``torch.compile(model)``)."""
    model.train()
    outs = [t for t in tensors_of(copy.deepcopy(model)(*inp)) if t.requires_grad]
    targets = [torch.randn_like(t) for t in outs]
    call = call or model
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)

    def step():
        opt.zero_grad(set_to_none=True)
        out = [t for t in tensors_of(call(*inp)) if t.requires_grad]
        loss = sum(F.mse_loss(o, t) for o, t in zip(out, targets))
        loss.backward()
        opt.step()

    return step
