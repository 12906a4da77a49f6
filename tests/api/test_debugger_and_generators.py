"""``breakpoint()`` in a compiled function stops at the user's line with the user's variables on every
call (the first, captured, and later ones, replayed), and what is assigned at the prompt is what the rest
of the call sees; generator and async functions run eagerly with a reason that says why.
"""
import asyncio
import io
import sys
import warnings

import pytest
import torch

import magpy


def with_breakpoint(x):
    y = x * 2
    breakpoint()
    z = y + 1
    return z


def _session(monkeypatch, capsys, commands, call):
    monkeypatch.setattr(sys, "stdin", io.StringIO("".join(c + "\n" for c in commands)))
    monkeypatch.delenv("PYTHONBREAKPOINT", raising=False)
    result = call()
    return result, capsys.readouterr().out


def test_breakpoint_stops_at_the_users_line_with_the_users_variables_on_every_call(monkeypatch, capsys):
    compiled = magpy.compile(with_breakpoint)
    for k in range(3):
        result, out = _session(monkeypatch, capsys, ["p y", "w", "c"], lambda: compiled(torch.full((2,), float(k))))
        assert torch.equal(result, torch.full((2,), 2.0 * k + 1))
        assert f"{__file__}({with_breakpoint.__code__.co_firstlineno + 2})with_breakpoint()" in out, out
        assert f"tensor([{2 * k}., {2 * k}.])" in out, out
        stack = out.split("(Pdb)")[2]   # what ``w`` printed
        assert "magpy" not in stack and stack.count("with_breakpoint()") == 1, stack
    assert compiled.stats.cache_hits >= 1


def test_a_variable_assigned_at_the_prompt_is_what_the_call_goes_on_with(monkeypatch, capsys):
    compiled = magpy.compile(with_breakpoint)
    for _ in range(3):
        result, _ = _session(monkeypatch, capsys, ["y = y * 10", "c"], lambda: compiled(torch.ones(2)))
        assert torch.equal(result, torch.full((2,), 21.0))


def test_breakpoint_turned_off_runs_nothing(monkeypatch, capsys):
    compiled = magpy.compile(with_breakpoint)
    monkeypatch.setenv("PYTHONBREAKPOINT", "0")
    for _ in range(3):
        assert torch.equal(compiled(torch.ones(2)), torch.full((2,), 3.0))
    assert "(Pdb)" not in capsys.readouterr().out


def counting(x):
    for i in range(3):
        yield x * i


async def adding(x):
    await asyncio.sleep(0)
    return x + 1


async def counting_async(x):
    for i in range(2):
        yield x * i


async def _collect(agen):
    return [v async for v in agen]


@pytest.mark.parametrize("fn, run", [
    (counting, list),
    (adding, asyncio.run),
    (counting_async, lambda agen: asyncio.run(_collect(agen))),
])
def test_generator_and_async_functions_run_eagerly_saying_why(fn, run):
    compiled = magpy.compile(fn)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(3):
            got, want = run(compiled(torch.ones(2))), run(fn(torch.ones(2)))
            assert [t.tolist() for t in (got if isinstance(got, list) else [got])] == \
                [t.tolist() for t in (want if isinstance(want, list) else [want])]
    said = [str(w.message) for w in caught if str(w.message).startswith("magpy:")]
    assert len(said) == 1 and "a generator or async function" in said[0], said
    assert "NoneType" not in said[0] and compiled.stats.fallbacks == 1


def test_a_module_whose_forward_is_a_generator_runs_as_eager():
    class Steps(torch.nn.Module):
        def forward(self, x):
            for i in range(2):
                yield x + i

    compiled = magpy.compile(Steps())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(2):
            assert [t.tolist() for t in compiled(torch.ones(1))] == [[1.0], [2.0]]
