"""``breakpoint()`` and ``pdb.set_trace()`` in interpreted code open pdb at the user's line, with the user's
variables, as a native run would (pdb is driven through a replaced ``sys.stdin``)."""
import bdb
import inspect
import io
import os
import pdb
import subprocess
import sys
import textwrap

import pytest

from magpy import interp


def helper(y):
    z = y + 1
    breakpoint()
    return z * 2


def outer(x):
    w = [x, x]
    return helper(x) + len(w)


def with_debugger_object(x):
    tripled = x * 3
    pdb.Pdb(nosigint=True).set_trace()
    return tripled


def line_of(fn, text):
    lines, start = inspect.getsourcelines(fn)
    return start + next(k for k, line in enumerate(lines) if text in line)


def debug(fn, *args, commands, monkeypatch, capsys):
    """Run ``fn(*args)`` in the VM with pdb reading ``commands``; returns (result, what pdb printed)."""
    monkeypatch.setattr(sys, "stdin", io.StringIO(commands))
    result = interp.run(fn, *args)
    return result, capsys.readouterr().out


BREAK_LINE = line_of(helper, "breakpoint()")

#: command typed at the prompt -> what pdb shows (the prompt then continues)
PROMPT = {
    "p": ("p z\np y * 10", ["(Pdb) 4\n", "(Pdb) 30\n"]),
    "pp": ("pp locals()", ["{'y': 3, 'z': 4}"]),
    "list": ("l", [f"{BREAK_LINE}  ->\t    breakpoint()", "z = y + 1"]),
    "longlist": ("ll", ["def helper(y):", "return z * 2"]),
    "where, up": ("w\nu\np w", [f"{__file__}({line_of(outer, 'return helper(x)')})outer()", "[3, 3]"]),
}


def test_breakpoint_stops_at_the_users_line(monkeypatch, capsys):
    result, out = debug(outer, 3, commands="c\n", monkeypatch=monkeypatch, capsys=capsys)
    assert result == 10
    assert f"> {__file__}({BREAK_LINE})helper()" in out
    assert "-> breakpoint()" in out


@pytest.mark.parametrize("command", PROMPT)
def test_prompt_command_shows_the_users_frame(command, monkeypatch, capsys):
    typed, expected = PROMPT[command]
    _, out = debug(outer, 3, commands=typed + "\nc\n", monkeypatch=monkeypatch, capsys=capsys)
    for text in expected:
        assert text in out


def test_an_assignment_at_the_prompt_reaches_the_frame(monkeypatch, capsys):
    result, _ = debug(outer, 3, commands="!z = 100\nc\n", monkeypatch=monkeypatch, capsys=capsys)
    assert result == 202


def test_pdb_set_trace_stops_at_the_users_line(tmp_path):
    # (in a process of its own: pytest puts its own ``pdb.set_trace`` in place while it runs)
    script = tmp_path / "prog.py"
    script.write_text(textwrap.dedent("""
        import pdb
        from magpy import interp

        def with_set_trace(x):
            doubled = x * 2
            pdb.set_trace()
            return doubled

        print("result", interp.run(with_set_trace, 5))
    """))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    done = subprocess.run([sys.executable, str(script)], input="p doubled\nc\n", capture_output=True,
                          text=True, env=env, timeout=60)
    assert f"> {script}(7)with_set_trace()" in done.stdout, done.stdout + done.stderr
    assert "(Pdb) 10\n" in done.stdout and "result 10" in done.stdout


def test_a_debugger_objects_set_trace_stops_at_the_users_line(monkeypatch, capsys):
    result, out = debug(with_debugger_object, 5, commands="p tripled\nc\n", monkeypatch=monkeypatch,
                        capsys=capsys)
    assert result == 15
    assert f"({line_of(with_debugger_object, '.set_trace()')})with_debugger_object()" in out
    assert "(Pdb) 15\n" in out


def test_quit_stops_the_program_as_pdb_does(monkeypatch, capsys):
    with pytest.raises(bdb.BdbQuit):
        debug(outer, 3, commands="q\n", monkeypatch=monkeypatch, capsys=capsys)


def test_stepping_continues_with_a_note(monkeypatch, capsys):
    result, out = debug(outer, 3, commands="n\n", monkeypatch=monkeypatch, capsys=capsys)
    assert result == 10
    assert "cannot stop at the next line" in out


def test_pythonbreakpoint_0_turns_breakpoints_off(monkeypatch, capsys):
    monkeypatch.setenv("PYTHONBREAKPOINT", "0")
    result, out = debug(outer, 3, commands="", monkeypatch=monkeypatch, capsys=capsys)
    assert result == 10 and "(Pdb)" not in out


def test_a_programs_own_breakpointhook_is_called(monkeypatch, capsys):
    seen = []
    monkeypatch.setattr(sys, "breakpointhook", lambda *a, **k: seen.append(sys._getframe(1).f_code.co_name))
    result, out = debug(outer, 3, commands="", monkeypatch=monkeypatch, capsys=capsys)
    assert result == 10 and "(Pdb)" not in out
    assert seen == ["helper"]  # (the hook runs in the VM: its caller is the user's frame)
