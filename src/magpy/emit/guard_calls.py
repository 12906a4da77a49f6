"""Functions the entry's guards call: exact comparisons, and faster stand-ins for library functions a
guard re-reads on every call (the same result)."""
import inspect
import math
import types
import weakref

from ..interp.identity import IdentityDict


def same_float(x, value):
    """Bit-exact float equality: -0.0 is not 0.0, and NaN equals NaN."""
    if type(x) is not float:
        return False
    if x != x:
        return value != value
    return x == value and math.copysign(1.0, x) == math.copysign(1.0, value)


_SIGNATURES = weakref.WeakKeyDictionary()  # function -> (what its signature is made from, the signature)


def signature_of(obj):
    """``inspect.signature(obj)``; for a function or bound method, the one computed before while what it
    is made from is the same (the code, defaults, annotations and whether the function says its own
    signature or wraps another): a guard re-reads a signature on every call (transformers'
    ``apply_chunking_to_forward`` counts a method's parameters), and computing one costs microseconds."""
    func = obj.__func__ if type(obj) is types.MethodType else obj
    if type(func) is not types.FunctionType or "__signature__" in func.__dict__ or "__wrapped__" in func.__dict__:
        return inspect.signature(obj)
    made_from = (func.__code__, func.__defaults__, func.__kwdefaults__, dict(func.__annotations__),
                 type(obj) is types.MethodType)
    known = _SIGNATURES.get(func)
    if known is not None and known[0] == made_from:
        return known[1]
    signature = inspect.signature(obj)
    _SIGNATURES[func] = (made_from, signature)
    return signature


#: functions a guard calls, and what it calls in their place (the same result, sooner)
GUARD_CALLS = IdentityDict({inspect.signature: signature_of}.items())
