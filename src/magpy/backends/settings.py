"""The settings ``magpy.compile`` takes — backend, mode, options, fullgraph, dynamic — as tables, and the
check that refuses any other when ``magpy.compile`` is called (not at the first call, after a capture).

A mode names a set of options of the "magpy" backend (``MODES``); options given explicitly win over the
mode's, and an option set to None is as if unset (``options_for``). Each built-in backend declares the
options it understands (``BACKEND_OPTIONS``); a backend the user registered or passed as a callable
gets its options unchecked when it takes an ``options`` argument, and none otherwise.

``torch.compile(m, backend="magpy", mode=..., options=...)`` hands the mode and options to the backend
itself, which checks them with the same tables on its first compile (torch refuses ``mode`` and
``options`` together, for every backend).
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Callable, Optional

# mode -> the "magpy" backend options it stands for. "reduce-overhead": every compiled graph replayed
# as a CUDA graph where it can be (on CPU tensors there is nothing to replay: as "default").
# "max-autotune": Triton kernels time a wider set of block configs, every kernel whatever its size
# (``codegen/triton/plan.py``), and graphs replay as CUDA graphs; "…-no-cudagraphs": never replayed.
MODES: dict[str, dict] = {
    "default": {},
    "reduce-overhead": {"cudagraphs": True},
    "max-autotune": {"cudagraphs": True, "autotune": True},
    "max-autotune-no-cudagraphs": {"cudagraphs": False, "autotune": True},
}

# option -> its valid values, for the "magpy" backend (an option left out: chosen by the graph's device)
MAGPY_OPTIONS: dict[str, tuple] = {
    "codegen": ("cpp", "triton"),   # force a code generator
    "cudagraphs": (True, False),    # replay as CUDA graphs always / never (unset: when timed faster)
    "autotune": (True, False),      # time more Triton block configs, for every kernel
}


def _inductor_options() -> dict:
    """Inductor's own config names, any value (``torch._inductor.list_options()``)."""
    import torch._inductor

    return dict.fromkeys(torch._inductor.list_options())


# backend -> its options (option -> valid values, None: any), or a function giving them when asked
BACKEND_OPTIONS: dict[str, object] = {
    "magpy": MAGPY_OPTIONS,
    "eager": {},
    "inductor": _inductor_options,
}

# backend -> where its options are listed, when they are another compiler's (too many to list here)
LISTED_ELSEWHERE = {"inductor": "torch._inductor.list_options()"}

# argument of ``magpy.compile`` -> (the values it takes, how to say them)
FLAGS = {
    "fullgraph": ((True, False), "True or False"),
    "dynamic": ((None, True, False), "None, True or False"),
}


def options_for(mode: Optional[str], options: Optional[Mapping]) -> dict:
    """The options that ``mode`` and the explicit ``options`` make, the explicit ones winning; an
    option set to None is left out (it undoes the mode's)."""
    merged = {**MODES[mode or "default"], **(options or {})}
    return {name: value for name, value in merged.items() if value is not None}


def check_settings(backend, mode=None, options=None, fullgraph=False, dynamic=None,
                   backends: Mapping = None, caller: str = "magpy.compile") -> None:
    """Raise ``SettingError`` (a ValueError and a TypeError) naming the valid values, for a setting
    ``caller`` cannot use. ``backends``: the registry, name -> backend (for a backend given by name)."""
    for name, value in (("fullgraph", fullgraph), ("dynamic", dynamic)):
        valid, said = FLAGS[name]
        if not any(value is v for v in valid):
            _refuse(caller, f"{name} must be {said}, not {value!r} ({type(value).__name__})")
    check_mode(mode, caller)
    if options is not None and not isinstance(options, Mapping):
        _refuse(caller, f"options must be a dict, not {type(options).__name__}")
    if isinstance(backend, str):
        if backends is not None and backend not in backends:
            known = ", ".join(sorted(backends))
            _refuse(caller, f"unknown backend {backend!r}{_near(backend, backends)}; known backends: {known} "
                            f"(or any callable(gm, example_inputs))")
        fn = backends[backend] if backends is not None else None
    elif callable(backend):
        fn = backend
    else:
        _refuse(caller, f"backend must be a backend's name or a callable(gm, example_inputs), "
                        f"not {type(backend).__name__}")
    if options:
        check_options(backend, options, fn, caller)


def check_mode(mode, caller: str) -> None:
    if mode is not None and mode not in MODES:
        said = f"{mode!r}{_near(mode, MODES) if isinstance(mode, str) else ''}"
        _refuse(caller, f"unknown mode {said}; modes: {', '.join(MODES)}")


def check_options(backend, options: Mapping, fn: Optional[Callable], caller: str = "magpy.compile") -> None:
    """Refuse an option ``backend`` does not understand, or a value it does not take."""
    known = BACKEND_OPTIONS.get(backend) if isinstance(backend, str) else None
    if known is None:  # (a backend of the user's: its options are its own business, if it takes any)
        if fn is not None and not takes(fn, "options"):
            _refuse(caller, f"backend {_name(backend)} takes no options (it has no `options` argument), "
                            f"but was given {', '.join(map(repr, options))}")
        return
    if callable(known):
        known = known()
    for name, value in options.items():
        if name not in known:
            listed = LISTED_ELSEWHERE.get(backend) or ", ".join(f"{n} {_values(v)}" for n, v in sorted(known.items()))
            _refuse(caller, f"backend {_name(backend)} has no option {name!r}{_near(name, known)}; "
                            f"{'its options: ' + listed if known else 'it takes no options'}")
        valid = known[name]
        if value is not None and valid is not None and not any(value is v or type(value) is type(v) and
                                                               value == v for v in valid):
            _refuse(caller, f"option {name!r} of backend {_name(backend)} cannot be {value!r}; "
                            f"valid: {_values(valid)[1:-1]} (or None: unset)")


def takes(fn: Callable, parameter: str) -> bool:
    """Does ``fn`` take a keyword argument ``parameter`` (by name, or through ``**kwargs``)?"""
    import inspect

    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(p.name == parameter and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) or
               p.kind is p.VAR_KEYWORD for p in params)


def _refuse(caller: str, message: str):
    from ..errors import SettingError

    raise SettingError(f"{caller}: {message}")


def _near(word: str, choices) -> str:
    import difflib  # (only for a message)

    close = difflib.get_close_matches(word, [c for c in choices if isinstance(c, str)], n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _name(backend) -> str:
    return repr(backend) if isinstance(backend, str) else getattr(backend, "__name__", repr(backend))


def _values(valid: tuple) -> str:
    return "(" + ", ".join(map(repr, valid)) + ")"
