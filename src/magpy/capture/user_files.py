"""Which files are the user's: not torch's, MagPy's or the standard library's. What ``magpy.trace`` keeps
with ``only="user"``, what ``magpy.explain`` shows of a call by default, and the line an error is told
at all draw this line."""
import os
import sysconfig

import torch


def _folders(*paths):
    return tuple(os.path.join(os.path.realpath(p), "") for p in paths)


#: folders whose code is never the user's (torch's, MagPy's), and the standard library's (packages
#: installed inside it are the user's)
_MAGPY_FOLDER = _folders(os.path.dirname(os.path.dirname(__file__)))[0]
_TOOL_FOLDERS = _folders(os.path.dirname(torch.__file__)) + (_MAGPY_FOLDER,)
_STDLIB_FOLDERS = _folders(*{sysconfig.get_paths()["stdlib"], sysconfig.get_paths()["platstdlib"]})
_INSTALLED = ("site-packages", "dist-packages")
_USER_FILES = {}


def _library_file(path):
    if path.startswith("<frozen") or path.startswith(_TOOL_FOLDERS):
        return True
    return any(path.startswith(d) and not any(s in path[len(d):] for s in _INSTALLED) for d in _STDLIB_FOLDERS)


def is_user_file(filename):
    """Is ``filename`` the user's code, not torch's, MagPy's or the standard library's? (Packages
    installed besides torch count as the user's.)"""
    known = _USER_FILES.get(filename)
    if known is None:
        path = os.path.realpath(filename) if filename and not filename.startswith("<") else filename or ""
        known = _USER_FILES[filename] = not _library_file(path)
    return known


def raised_at(exc):
    """(filename, line) where ``exc`` was raised in the user's terms: the innermost entry of its traceback
    in the user's files, else the innermost one outside MagPy's (torch's, for an error of torch's called
    from nowhere in the user's files); None without one."""
    found = outside = None
    tb = exc.__traceback__
    while tb is not None:
        filename = tb.tb_frame.f_code.co_filename
        if is_user_file(filename):
            found = (filename, tb.tb_lineno)
        if not os.path.realpath(filename).startswith(_MAGPY_FOLDER):
            outside = (filename, tb.tb_lineno)
        tb = tb.tb_next
    return found or outside

