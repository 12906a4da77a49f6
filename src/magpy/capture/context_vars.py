"""Context variables the call sets and resets itself (``token = var.set(v)`` … ``var.reset(token)``).

A library activates something for the length of a call (an output collector its hooks read) with a context
variable: set before, read inside, reset after. Between the set and the reset, ``var.get()`` is the value
the program set, with that value's provenance; after the reset it is what it was before, so at the end of the
call the variable holds its entry value again and nothing needs replaying. A ``get()`` of a variable the
call has not set reads outside state (``rules.STATE_READS``: the guard reads it again). A variable still set
when the call ends, or reset with a token capture did not see made, is unsupported.
"""
import contextvars

from .values import _NOT_WRITTEN, _bound_self


class ContextVars:

    """``ContextVar.set/get/reset`` followed as writes and reads of a variable the call owns meanwhile."""

    def context_var_call(self, fn, args, arg_provs, kwargs, result):
        """The provenance of ``var.get/set/reset(...)``'s result, or ``_NOT_WRITTEN`` when the call is no
        such thing, or a ``get`` of a variable the call has not set (the state-read rule applies)."""
        var = _bound_self(fn)
        if getattr(fn, "__objclass__", None) is contextvars.ContextVar and args:
            var, args, arg_provs = args[0], args[1:], arg_provs[1:]  # (called unbound: ``ContextVar.set(v, x)``)
        if type(var) is not contextvars.ContextVar or kwargs:
            return _NOT_WRITTEN
        name = getattr(fn, "__name__", "")
        if name == "set" and len(args) == 1:
            previous = self.context_values.get(id(var), _NOT_WRITTEN)
            self.context_values[id(var)] = (var, arg_provs[0])
            self.context_tokens[id(result)] = (result, var, previous)
            return None  # the token: a new object
        if name == "get" and id(var) in self.context_values:
            return self.context_values[id(var)][1]
        if name == "reset" and len(args) == 1:
            entry = self.context_tokens.pop(id(args[0]), None)
            if entry is None or entry[0] is not args[0] or entry[1] is not var:
                self.unsupported(f"{var.name!r}.reset() with a token from outside the call")
            if entry[2] is _NOT_WRITTEN:
                del self.context_values[id(var)]
            else:
                self.context_values[id(var)] = entry[2]
            return None
        return _NOT_WRITTEN

    def finish_context_vars(self):
        """The call must leave every context variable as it found it."""
        if self.context_values:
            var = next(iter(self.context_values.values()))[0]
            self.unsupported(f"the context variable {var.name!r} is still set when the call returns")
