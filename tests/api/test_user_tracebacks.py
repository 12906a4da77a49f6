"""An exception raised by the user's code reaches the user as eager's does: the same type and message,
a traceback through the user's own frames (at their lines, with their variables for a post-mortem),
and at most two of ours — on the first call (run by the interpreter), on later calls, at a graph break
and for arguments that do not fit.
"""
import os
import sys
import traceback

import pytest
import torch
from torch import nn

import magpy

MAGPY = os.path.dirname(magpy.__file__) + os.sep


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x, check=True):
        h = self.lin(x)
        return self.helper(h, check)

    def helper(self, h, check):
        scale = h.shape[0]
        if check and scale == 3:
            raise ValueError(f"batch of {scale} not allowed")
        return h.relu() * scale


def add(x, y):
    return x + y


def reraises(x):
    try:
        return {"a": x}["b"]
    except KeyError:
        raise ValueError("no b") from None


def chained(x):
    try:
        return {"a": x}["b"]
    except KeyError:
        raise ValueError("no b")


def with_break(x, fail):
    y = x + 1
    magpy.graph_break()
    if fail:
        raise RuntimeError("after the break")
    return y


def _raised(call):
    with pytest.raises(Exception) as info:
        call()
    return info.value


def _frames(exc):
    """The traceback's entries below this test's own frame, as (file, line, function, text)."""
    entries = traceback.extract_tb(exc.__traceback__)
    below = [e for e in entries if e.filename != __file__ or e.name not in ("_raised", "<lambda>")]
    return [(e.filename, e.lineno, e.name, e.line) for e in below]


def _users(exc):
    return [f for f in _frames(exc) if not f[0].startswith(MAGPY)]


def _ours(exc):
    return [f for f in _frames(exc) if f[0].startswith(MAGPY)]


def _formatted_users(exc):
    """The text of the traceback's user entries, as printed (lines, and any carets under them)."""
    summary = traceback.StackSummary.from_list(
        [e for e in traceback.extract_tb(exc.__traceback__) if not e.filename.startswith(MAGPY)
         and e.name not in ("_raised", "<lambda>")])
    return summary.format()


def _same_as_eager(eager_call, compiled_call, ours_at_most=2):
    want, got = _raised(eager_call), _raised(compiled_call)
    assert type(got) is type(want) and str(got) == str(want)
    assert _users(got) == _users(want)
    assert _formatted_users(got) == _formatted_users(want)
    assert len(_ours(got)) <= ours_at_most, _ours(got)
    return want, got


@pytest.mark.parametrize("backend", ["eager", "magpy"])
def test_an_error_of_the_users_forward_shows_the_users_frames_on_every_call(backend):
    torch.manual_seed(0)
    net = Net()
    compiled = magpy.compile(net, backend=backend)
    compiled(torch.randn(2, 4))
    compiled(torch.randn(2, 4))
    for _ in range(2):  # (the first raising call, then one like it)
        _, got = _same_as_eager(lambda: net(torch.randn(3, 4)), lambda: compiled(torch.randn(3, 4)))
        assert _users(got)[-1][2:] == ("helper", 'raise ValueError(f"batch of {scale} not allowed")')


def test_a_post_mortem_sees_the_users_variables():
    compiled = magpy.compile(Net())
    got = _raised(lambda: compiled(torch.randn(3, 4)))
    tb = got.__traceback__
    while tb.tb_next is not None:
        tb = tb.tb_next
    assert tb.tb_frame.f_code.co_name == "helper"
    assert tb.tb_frame.f_locals["scale"] == 3 and tb.tb_frame.f_locals["check"] is True
    assert "__magpy_called__" not in tb.tb_frame.f_locals


def test_arguments_that_do_not_fit_raise_eagers_error():
    compiled = magpy.compile(add)
    compiled(torch.ones(2), torch.ones(2))
    _same_as_eager(lambda: add(torch.ones(2)), lambda: compiled(torch.ones(2)), ours_at_most=1)
    net = Net()
    compiled_net = magpy.compile(net)
    _same_as_eager(lambda: net(torch.ones(2, 4), 1, 2), lambda: compiled_net(torch.ones(2, 4), 1, 2))


def test_a_native_error_on_a_cached_path_points_at_the_users_line():
    compiled = magpy.compile(add)
    compiled(torch.ones(2), torch.ones(2))
    _, got = _same_as_eager(lambda: add(torch.ones(2), torch.ones(3)),
                            lambda: compiled(torch.ones(2), torch.ones(3)), ours_at_most=1)
    assert _users(got)[-1][2:] == ("add", "return x + y")


@pytest.mark.parametrize("fn", [reraises, chained])
def test_chained_exceptions_keep_their_chain(fn):
    want, got = _same_as_eager(lambda: fn(torch.ones(1)), lambda: magpy.compile(fn)(torch.ones(1)))
    assert got.__suppress_context__ == want.__suppress_context__
    assert type(got.__context__) is type(want.__context__) is KeyError
    assert _users(got.__context__) == _users(want.__context__)


def test_an_error_after_a_graph_break_shows_the_users_line():
    compiled = magpy.compile(with_break)
    compiled(torch.ones(2), False)
    compiled(torch.ones(2), False)
    for _ in range(2):
        got = _raised(lambda: compiled(torch.ones(2), True))
        assert isinstance(got, RuntimeError) and str(got) == "after the break"
        assert _users(got)[-1][2:] == ("with_break", 'raise RuntimeError("after the break")')


def test_the_printed_traceback_names_the_users_line_once():
    compiled = magpy.compile(Net())
    got = _raised(lambda: compiled(torch.randn(3, 4)))
    text = "".join(traceback.format_exception(got))
    assert text.count('raise ValueError(f"batch of {scale} not allowed")') == 1
    assert "vm.py" not in text and "<block" not in text
    assert sys.modules["magpy"] is magpy


def test_a_reason_names_the_users_line_and_the_library_line_below_it(tmp_path, monkeypatch):
    from magpy.capture import observer

    library = tmp_path / "somelib.py"
    library.write_text("def helper(x):\n    return x + x.data_ptr() % 2\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(observer, "_LIBRARY_DIRS", observer._LIBRARY_DIRS + (str(tmp_path) + os.sep,))
    import somelib

    def uses_library(x):
        y = x * 2
        return somelib.helper(y)

    compiled = magpy.compile(uses_library)
    for _ in range(2):
        assert torch.equal(compiled(torch.ones(2)), uses_library(torch.ones(2)))
    line = uses_library.__code__.co_firstlineno + 2
    assert compiled.stats.reasons[0][1] == f"{__file__}:{line}, in {library}:2", compiled.stats.reasons
