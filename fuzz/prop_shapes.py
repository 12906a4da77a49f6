"""Differential fuzzing of dynamic shapes: programs that read sizes, called on inputs whose sizes change.

Each program is a chain of statements over a tensor ``t`` (it starts as the argument ``x``, of shape
(b, 4) with b changing between calls) and an int ``n`` (it starts as the argument ``k``, changing too):
views and reshapes by sizes read back, slices by sizes and by ``n``, splits, concatenations,
reductions, new tensors of read sizes, Python arithmetic on sizes, branches on them. The program
returns its tensor, its int and the tensor's shape. Compiled (automatic dynamic shapes, and
``dynamic=True``) it must return what eager returns, or raise what eager raises, on every call.

``python -m fuzz shapes --minutes N`` runs longer; CI runs ``MAGPY_FUZZ_EXAMPLES`` (default 50).
"""
import os
import random
import warnings

import pytest

torch = pytest.importorskip("torch")

from hypothesis import HealthCheck, given, settings, strategies as st  # noqa: E402

#: (rank the statement needs, rank it leaves, the statement): ``t`` is the tensor, ``n`` the int
STATEMENTS = [
    (2, 2, "t = t.view(t.shape[0], -1) * 2"),
    (2, 1, "t = t.reshape(-1)"),
    (2, 1, "t = t.sum(0)"),
    (2, 1, "t = t.flatten()[: t.shape[0] * t.shape[1] // 2]"),
    (2, 2, "t = t[: max(1, t.shape[0] // 2)]"),
    (2, 2, "t = t[:, : max(1, min(n, t.shape[1]))]"),
    (2, 2, "t = torch.cat([t, t[:1]])"),
    (2, 2, "t = t.t().contiguous()"),
    (2, 2, "t = t.new_zeros(t.shape) + t.mean()"),
    (2, 2, "t = torch.cat(t.split(2, dim=0)[:2])"),
    (2, 2, "t = torch.stack(t.chunk(2, dim=1)[:1]).sum(0)"),
    (2, 3, "t = t.unsqueeze(0).expand(2, *t.shape)"),
    (2, 2, "t = t.repeat(1, 2)[:, : t.shape[1]]"),
    (2, 2, "t = t @ torch.ones(t.shape[1], 3)"),
    (2, 2, "t = torch.arange(t.shape[0]).float()[:, None] * t"),
    (2, 2, "t = t.reshape(t.size(0), 2, -1).sum(-1) if t.shape[1] % 2 == 0 else t"),
    (2, 2, "t = t * 2 if t.shape[0] > 4 else t - 1"),
    (2, 2, "t = t[n % t.shape[0]:]"),
    (2, 2, "t = torch.nn.functional.pad(t, (0, n % 3))"),
    (2, 2, "t = t.view(-1, t.shape[-1])"),
    (2, 2, "t = t.split(max(1, n % 3), dim=0)[0] * 3"),
    (2, 2, "t = t.narrow(0, 0, max(1, t.shape[0] - 1))"),
    (2, 2, "t = t.index_select(0, torch.arange(0, t.shape[0], 2))"),
    (2, 2, "t = t.new_full((n % 3 + 1, t.shape[-1]), 1.0) + t[:1]"),
    (2, 2, "t = torch.zeros(t.shape[0] + n, 2) + t[:1, :1]"),
    (2, 1, "t = t[t.shape[0] - 1]"),
    (2, 1, "t = t.unbind(0)[0] + len(t)"),
    (2, 2, "t = t.unsqueeze(-1).expand(*t.shape, 2).flatten(1)"),
    (2, 2, "t = t.view(t.shape[0] // 2 if t.shape[0] % 2 == 0 else t.shape[0], -1)"),
    (2, 2, "t = t.roll(n, 0) * t.shape[0]"),
    (2, 2, "t = t[torch.arange(t.shape[0]) % 2 == 0]"),
    (2, 2, "t = t.masked_fill(torch.ones(t.shape, dtype=torch.bool).triu(), 0.0)"),
    (1, 1, "t = t.sort()[0][: n % t.numel() + 1]"),
    (1, 2, "t = t.reshape(-1, 1) * torch.arange(n % 4 + 1)"),
    (3, 2, "t = t.reshape(t.shape[0] * t.shape[1], -1)"),
    (3, 2, "t = t.sum(0)"),
    (1, 2, "t = t.view(1, -1)"),
    (1, 1, "t = t[: t.numel() // 2 + 1] * len(t)"),
    (1, 2, "t = t.unsqueeze(1).expand(-1, 3) + torch.zeros(t.shape[0], 3)"),
    (1, 1, "t = torch.cat([t, t.new_ones(n % 4)])"),
    (None, None, "n = n + t.shape[0]"),
    (None, None, "n = n * 2 - t.numel() % 5"),
    (None, None, "n = max(n, t.shape[-1]) // 2"),
    (None, None, "n = n if t.dim() > 1 else -n"),
]

BATCHES = (3, 5, 7, 4, 6, 5, 3, 8)
KS = (2, 3, 5, 7, 2, 4, 6, 3)


def program(rng):
    """The source of a program drawn with ``rng``: its statements fit the tensor's rank as it goes."""
    rank, lines = 2, []
    for _ in range(rng.randint(1, 6)):
        fitting = [s for s in STATEMENTS if s[0] in (None, rank)]
        need, leaves, text = rng.choice(fitting)
        lines.append(text)
        rank = leaves if leaves is not None else rank
    body = "\n".join("    " + line for line in lines)
    return f"def fn(x, k):\n    t, n = x, k\n{body}\n    return t, n, tuple(t.shape)\n"


def _run(fn, x, k):
    try:
        return fn(x, k), None
    except Exception as exc:  # noqa: BLE001 - the program's own error is compared
        return None, exc


def check(source, **compile_kw):
    import magpy

    namespace = {"torch": torch}
    exec(compile(source, "<fuzzed shapes program>", "exec"), namespace)
    fn = namespace["fn"]
    compiled = magpy.compile(fn, backend="eager", **compile_kw)
    for call, (b, k) in enumerate(zip(BATCHES, KS), start=1):
        torch.manual_seed(call)
        x = torch.randn(b, 4)
        want, want_exc = _run(fn, x.clone(), k)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            got, got_exc = _run(compiled, x.clone(), k)
        where = f"call {call} (b={b}, k={k})"
        if want_exc is not None or got_exc is not None:
            assert type(got_exc) is type(want_exc), f"{where}: raised {got_exc!r}, eager {want_exc!r}"
            continue
        assert got[1:] == want[1:] and type(got[1]) is type(want[1]), f"{where}: {got[1:]} vs eager {want[1:]}"
        assert got[0].shape == want[0].shape and torch.allclose(got[0], want[0]), f"{where}: tensors differ"
    return compiled.stats


SETTINGS = settings(max_examples=int(os.environ.get("MAGPY_FUZZ_EXAMPLES", "50")), deadline=None,
                    suppress_health_check=list(HealthCheck), print_blob=True)


@SETTINGS
@given(st.integers(0, 2 ** 32 - 1))
def test_programs_reading_sizes_equal_eager_for_every_size(seed):
    source = program(random.Random(seed))
    check(source)
    check(source, dynamic=True)
