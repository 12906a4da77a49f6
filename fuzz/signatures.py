"""Hypothesis strategies for function signatures, functions renamed after creation, and calls of them.

``bindings()`` draws one case as source text: the definition of a function ``f`` (a ``def`` or, as
``collections.namedtuple`` makes its ``__new__``, an ``eval``-ed lambda) with positional-only,
ordinary and keyword-only parameters, defaults, ``*args`` and ``**kwargs``; statements that change
its ``__name__``, ``__qualname__``, ``__module__``, ``__defaults__`` or ``__kwdefaults__`` after
creation; and ``def caller():`` calling it with positional arguments, ``*`` splats, keyword
arguments and ``**`` mappings. The calls are drawn to go wrong often: too few or too many
positional arguments, a keyword for a positional-only parameter, an unknown keyword, a keyword
given twice (by position and by name, or in two ``**`` mappings).
"""
from hypothesis import strategies as st

NAMES = ("a", "b", "c", "d", "e", "g", "h")
UNKNOWN = ("zz", "self", "kw")
QUALNAMES = ("P.__new__", "Outer.<locals>.inner", "K.method", "renamed", "<lambda>", "A.B.C")
MODULES = ("fuzzed", "pkg.mod", "builtins", "__main__")


@st.composite
def signatures(draw):
    """(posonly, ordinary, keyword-only, number of positional defaults, keyword-only defaults,
    varargs name or None, varkw name or None)."""
    names = list(draw(st.permutations(NAMES)))
    posonly = names[:draw(st.integers(0, 2))]
    del names[:len(posonly)]
    ordinary = names[:draw(st.integers(0, 3))]
    del names[:len(ordinary)]
    kwonly = names[:draw(st.integers(0, 2))]
    del names[:len(kwonly)]
    defaults = draw(st.integers(0, len(posonly) + len(ordinary)))
    kwdefaults = [n for n in kwonly if draw(st.booleans())]
    varargs = "args" if draw(st.booleans()) else None
    varkw = "kwargs" if draw(st.booleans()) else None
    return posonly, ordinary, kwonly, defaults, kwdefaults, varargs, varkw


def parameter_list(signature):
    posonly, ordinary, kwonly, defaults, kwdefaults, varargs, varkw = signature
    positional = posonly + ordinary
    params = [f"{n}={100 + k}" if k >= len(positional) - defaults else n
              for k, n in enumerate(positional)]
    if posonly:
        params.insert(len(posonly), "/")
    if varargs:
        params.append("*" + varargs)
    elif kwonly:
        params.append("*")
    params += [f"{n}={200 + k}" if n in kwdefaults else n for k, n in enumerate(kwonly)]
    if varkw:
        params.append("**" + varkw)
    every = positional + kwonly + [x for x in (varargs, varkw) if x]
    return ", ".join(params), every


@st.composite
def definitions(draw, signature):
    """Source lines defining ``f`` and renaming it after creation."""
    params, every = parameter_list(signature)
    body = "(" + "".join(f"{n}, " for n in every) + ")"
    if draw(st.booleans()):
        lines = [f"def f({params}):", f"    return {body}"]
    else:
        lines = [f"f = eval({f'lambda {params}: {body}'!r})"]
    if draw(st.booleans()):
        lines.append(f"f.__qualname__ = {draw(st.sampled_from(QUALNAMES))!r}")
    if draw(st.booleans()):
        lines.append(f"f.__name__ = {draw(st.sampled_from(QUALNAMES)).rsplit('.', 1)[-1]!r}")
    if draw(st.booleans()):
        lines.append(f"f.__module__ = {draw(st.sampled_from(MODULES))!r}")
    posonly, ordinary, kwonly = signature[:3]
    if draw(st.integers(0, 3)) == 0:
        count = draw(st.integers(0, len(posonly) + len(ordinary)))
        lines.append(f"f.__defaults__ = {tuple(range(300, 300 + count)) if count else None!r}")
    if kwonly and draw(st.integers(0, 3)) == 0:
        kept = [n for n in kwonly if draw(st.booleans())]
        lines.append(f"f.__kwdefaults__ = {({n: 400 + k for k, n in enumerate(kept)} or None)!r}")
    return lines


@st.composite
def calls(draw, signature):
    """The source of one call of ``f``, often a wrong one."""
    posonly, ordinary, kwonly = signature[:3]
    positional = len(posonly) + len(ordinary)
    count = draw(st.integers(0, positional + 2))
    values = [str(k + 1) for k in range(count)]
    parts = []
    if values and draw(st.booleans()):  # the tail as a splat
        cut = draw(st.integers(0, len(values)))
        parts += values[:cut] + [f"*[{', '.join(values[cut:])}]"]
    else:
        parts += values
    known = posonly + ordinary + kwonly
    keywords = draw(st.lists(st.sampled_from(known + list(UNKNOWN)), max_size=4, unique=True))
    spread = {}
    for k, name in enumerate(keywords):
        if draw(st.integers(0, 2)) == 0:
            spread[name] = 10 + k
        else:
            parts.append(f"{name}={10 + k}")
    if spread:
        parts.append(f"**{spread!r}")
    if keywords and draw(st.integers(0, 3)) == 0:  # a keyword given again in a second mapping
        parts.append(f"**{ {draw(st.sampled_from(keywords)): 99}!r}")
    return f"f({', '.join(parts)})"


@st.composite
def bindings(draw):
    """The source of a module defining ``f`` (renamed) and ``caller()``, which calls it."""
    signature = draw(signatures())
    lines = draw(definitions(signature))
    lines += ["def caller():", f"    return {draw(calls(signature))}"]
    return "\n".join(lines) + "\n"
