"""Calls the mock makes again on every run, as the program made them: ``warnings.warn`` and log records.

Both name a place in the program (the line a warning points at, the caller a log record names): the mock
passes the place the first call found, so each run warns and logs from where the program did. Their arguments
are rebuilt as they were at the call (``frozen_template``).
"""
import functools
import logging
import warnings

from ..interp.builtin_lookasides import WARN_SIGNATURE, warning_location
from ..interp.logs import LEVELS, caller_location, log_at, reproducible
from .sources import AttrSource
from .values import UNKNOWN, _NOT_WRITTEN, _bound_self


class Replays:

    """``warnings.warn`` and ``Logger`` calls replayed (a mixin of ``CaptureObserver``)."""

    def warning_call(self, args, arg_provs, kwargs, kw_provs):
        """``warnings.warn`` is replayed as ``warn_explicit`` at the line the first call warned from."""
        bound = WARN_SIGNATURE.bind(*args, **kwargs)
        message = bound.arguments.get("message")
        category = bound.arguments.get("category")
        level = bound.arguments.get("stacklevel", 1)
        for name in ("category", "stacklevel"):
            if name in bound.arguments:
                position = list(bound.signature.parameters).index(name)
                p = arg_provs[position] if position < len(arg_provs) else kw_provs.get(name)
                self.need(bound.arguments[name], p)
        mprov = arg_provs[0] if arg_provs else kw_provs.get("message")
        if isinstance(message, Warning):
            category = type(message)
        where = warning_location(self.vm, level)
        call = functools.partial(warnings.warn_explicit, category=category or UserWarning, **where)
        self.cap.side_effects.append(("call", call, [self.frozen_template(message, mprov)], {}))
        return None

    def log_call(self, fn, args, arg_provs, kwargs, kw_provs):
        """``logger.warning(msg, *args)`` (a level method or ``log``, bound to a logger from outside): the mock
        logs again from the line the program logged from (``interp.logs``). ``_NOT_WRITTEN`` for any other
        call."""
        method = getattr(fn, "__func__", fn)
        if method not in LEVELS and method is not logging.Logger.log:
            return _NOT_WRITTEN
        if _bound_self(fn) is not None:  # (``f = logger.warning; f(msg)``)
            logger = _bound_self(fn)
            prov = self.call_fn_prov.base if type(self.call_fn_prov) is AttrSource else self.provenance_of(logger)
        elif args:  # (``logger.warning(msg)``: the function, called with the logger first)
            logger, prov, args, arg_provs = args[0], arg_provs[0], args[1:], arg_provs[1:]
        else:
            return _NOT_WRITTEN
        if not reproducible(logger, kwargs) or len(args) < (1 if method in LEVELS else 2):
            self.unsupported(f"{method.__qualname__}() with a traceback, a stack or a logger class of its own")
        if prov is UNKNOWN:
            self.unsupported(f"{method.__qualname__}() on a logger of unknown origin")
        level = [("const", LEVELS[method])] if method in LEVELS else []
        parts = [self.frozen_template(a, p) for a, p in zip(args, arg_provs)]
        extra = {k: self.frozen_template(v, kw_provs.get(k)) for k, v in kwargs.items()}
        self.cap.side_effects.append(("call", functools.partial(log_at, caller_location(self.vm)),
                                      [self.template(logger, prov), *level, *parts], extra))
        return None
