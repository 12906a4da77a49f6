"""View, indexing, cat and padding lowerings against eager."""
import pytest
import torch
import torch.nn.functional as F

from codegen_check import check

VIEWS = {
    "view": lambda x: x.view(6, 20) + 1,
    "view_merge_split": lambda x: x.reshape(2, 3, 4, 5).reshape(3, 2, 20) * 2,
    "reshape_flat": lambda x: x.reshape(-1) + 1,
    "permute": lambda x: x.permute(2, 0, 1) + 1,
    "transpose": lambda x: x.transpose(0, 2) * 3,
    "t_of_slice": lambda x: x[0].t() + 1,
    "expand": lambda x: x[:, :1, :].expand(2, 3, 20) + x,
    "unsqueeze": lambda x: x.unsqueeze(1) + x.unsqueeze(0)[:, :1],
    "squeeze": lambda x: x[:, :1].squeeze(1) + 1,
    "slice": lambda x: x[:, 1:, ::3] + 1,
    "slice_negative": lambda x: x[..., -5:-1] * 2,
    "select": lambda x: x[1, :, 4] + 1,
    "split": lambda x: x.split([7, 13], dim=-1)[1] + 1,
    "chunk": lambda x: torch.stack(x.chunk(4, -1)).sum(0),
    "unbind": lambda x: x.unbind(0)[1] * 2,
    "flip": lambda x: x.flip(-1) + 1,
    "roll": lambda x: x.roll(3, -1) + 1,
    "cat": lambda x: torch.cat([x, x * 2, x[:, :, :3]], -1),
    "cat0": lambda x: torch.cat([x[:1], x.sin()], 0),
    "stack": lambda x: torch.stack([x, x + 1], 1),
    "pad": lambda x: F.pad(x, (1, 2, 0, 3), value=0.5),
    "pad_negative": lambda x: F.pad(x, (-1, 2)),
    "tril": lambda x: torch.tril(x[0]),
    "diagonal": lambda x: torch.diagonal(x[0, :, :3]) + 1,
    "repeat": lambda x: x[:, :, :2].repeat(1, 2, 3) + 1,
    "view_of_output": lambda x: x.sin().view(-1),
    "split_outputs": lambda x: x.cos().split(7, -1),
}


def _input():
    torch.manual_seed(5)
    return torch.randn(2, 3, 20)


def _check_all(family, inputs, mode):
    if mode == "reference":
        for name, fn in family.items():
            def one(*a, fn=fn):
                return fn(*a)
            one.__name__ = name
            check(one, *inputs, mode=mode)
        return

    def all_ops(*a):
        return tuple(fn(*a) for fn in family.values())
    all_ops.__name__ = "views " + ",".join(family)
    check(all_ops, *inputs, mode=mode)


def test_views_match_eager(mode):
    _check_all(VIEWS, [_input()], mode)


def test_views_of_transposed_input(mode):
    family = {k: VIEWS[k] for k in ("view_merge_split", "permute", "slice", "cat", "pad", "reshape_flat")}
    _check_all(family, [_input().transpose(0, 2).contiguous().transpose(0, 2)], mode)


def test_gather_index_embedding_match_eager(mode):
    torch.manual_seed(6)
    x = torch.randn(5, 7)
    idx = torch.randint(0, 7, (5, 3))
    rows = torch.tensor([4, 0, -1, 2])
    weight = torch.randn(10, 4)
    tokens = torch.randint(0, 10, (2, 3))

    def fn(x, idx, rows, weight, tokens):
        return (torch.gather(x, 1, idx), x[rows], x[:, rows[:2]], x[rows[:2], rows[1:3]],
                F.embedding(tokens, weight), torch.index_select(x, 1, idx[0]), x[rows] * 2 + 1)
    check(fn, x, idx, rows, weight, tokens, mode=mode)


def test_outputs_that_are_views_alias_like_eager():
    x = _input()

    def fn(x):
        y = x.exp()
        return y.t() if y.dim() == 2 else y.transpose(0, 2), y[0]
    check(fn, x, mode="cpp")


@pytest.mark.parametrize("dtype", [torch.float16, torch.int64, torch.bool], ids=str)
def test_views_of_other_dtypes(dtype, mode):
    x = (_input() * 4).to(dtype)
    family = {"permute": lambda x: x.permute(2, 0, 1).contiguous(), "cat": lambda x: torch.cat([x, x], 1),
              "pad": lambda x: F.pad(x, (1, 1)), "slice": lambda x: x[:, ::2].clone()}
    _check_all(family, [x], mode)
