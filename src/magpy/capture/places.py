"""Places in the user's source: an instruction of a code object, shown as the expression the user wrote there
and its file and line. A branch on tensor data reads as ``x.sum() > 0 is False  (model.py:12)``, the
instruction a graph break runs natively as ``print("mid", x.sum())``.

A place keeps only the code object and the instruction's offset: the text is looked up (``linecache``) when
it is shown, so capture pays nothing for it.
"""
import dis
import functools
import linecache
import os


class Place:
    """Instruction ``offset`` of ``code``. ``form`` says what the program found there, over ``{text}``
    (the expression) and ``{truth}`` (what it came out as)."""

    __slots__ = ("code", "offset", "form")

    def __init__(self, code, offset, form="{text} is {truth}"):
        self.code = code
        self.offset = offset
        self.form = form

    @classmethod
    def of_frame(cls, frame, form="{text} is {truth}"):
        """Where interpreted ``frame`` stands now (None without one)."""
        if frame is None:
            return None
        decoded = frame.decoded
        return cls(decoded.code, decoded.offsets[min(frame.index, len(decoded.offsets) - 1)], form)

    @property
    def filename(self):
        return self.code.co_filename

    @property
    def lineno(self):
        return _position(self.code, _operand(self.code, self.offset))[0] or self.code.co_firstlineno

    def where(self):
        """``file:line``, the file relative to the working folder when it lies inside it."""
        return f"{short_path(self.filename)}:{self.lineno}"

    def text(self):
        """The expression the user wrote at this place (for a conditional jump, the value it tests), or
        None when the source cannot be read (code made from a string)."""
        return _source(self.code.co_filename, *_position(self.code, _operand(self.code, self.offset))) or None

    def describe(self, truth=None):
        """What the program found here, in the user's words: ``x.sum() > 0 is False  (model.py:12)``."""
        return f"{self.form.format(text=self.text() or 'the condition', truth=truth)}  ({self.where()})"


def short_path(filename):
    """``filename`` as the user names it: relative to the working folder when it lies inside it; an
    installed library's from its package (``torch/nn/modules/module.py``)."""
    try:
        relative = os.path.relpath(filename)
    except ValueError:  # (another drive)
        relative = filename
    if not relative.startswith(".."):
        return relative
    for folder in _INSTALLED:
        if folder in filename:
            return filename.rsplit(folder, 1)[1]
    return filename


_INSTALLED = (f"{os.sep}site-packages{os.sep}", f"{os.sep}dist-packages{os.sep}")


#: instructions between a tested value and the jump that tests it (they keep its truth)
_PASSING = frozenset({"TO_BOOL", "NOT_TAKEN", "CACHE", "EXTENDED_ARG", "NOP"})


@functools.lru_cache(maxsize=256)
def _instructions(code):
    found = list(dis.get_instructions(code))
    return found, {ins.offset: k for k, ins in enumerate(found)}


def _instruction(code, offset):
    found, at = _instructions(code)
    return found[at.get(offset, 0)]


def _operand(code, offset):
    """The offset of what a place stands for: for a conditional jump, the instruction that made the value
    it tests (``x.sum() > 0``, not the whole ``if`` statement the jump is placed at); else itself."""
    found, at = _instructions(code)
    k = at.get(offset)
    if k is None or "JUMP" not in found[k].opname or "IF" not in found[k].opname:
        return offset
    k -= 1
    while k > 0 and found[k].opname in _PASSING:
        k -= 1
    return found[k].offset if k >= 0 else offset


def _position(code, offset):
    """(line, end line, column, end column) of the instruction at ``offset`` (Nones where unknown)."""
    p = _instruction(code, offset).positions
    return p.lineno, p.end_lineno, p.col_offset, p.end_col_offset


#: statement keywords before a condition written on its own line (``while x.any():``)
_KEYWORDS = ("if ", "elif ", "while ", "assert ")


def _source(filename, line, end_line, column, end_column):
    """The source text between those positions when they lie on one line, else the first line without
    its statement keyword and colon."""
    if not line:
        return None
    text = linecache.getline(filename, line)
    if not text:
        return None
    if end_line == line and column is not None and end_column is not None:
        return text.encode()[column:end_column].decode(errors="replace").strip()  # (columns count bytes)
    text = text.strip()
    for keyword in _KEYWORDS:
        if text.startswith(keyword):
            text = text[len(keyword):]
            break
    return text[:-1].rstrip() if text.endswith(":") else text
