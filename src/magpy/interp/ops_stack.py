"""Handlers: constants, locals, cells, globals, names, attributes, stack shuffles."""
from .calls import call
from .decode import handler
from .frame import NULL
from . import protocols
from .protocols import _HEAPTYPE

_CellType = type((lambda x: lambda: x)(0).__closure__[0])


def _unbound_local(frame, idx):
    name = frame.decoded.localsplus_names[idx]
    return UnboundLocalError(f"cannot access local variable '{name}' where it is not associated with a value")


@handler("NOP")
def nop(f, arg, i):
    return i + 1


@handler("LOAD_CONST")
def load_const(f, arg, i):
    f.stack.append(arg)
    return i + 1


@handler("LOAD_FAST_CHECK")
def load_fast_check(f, arg, i):
    v = f.locals[arg]
    if v is NULL:
        raise _unbound_local(f, arg)
    f.stack.append(v)
    return i + 1


@handler("LOAD_FAST")
def load_fast(f, arg, i):
    """3.12+: the compiler proved the local bound (3.11 decodes LOAD_FAST as LOAD_FAST_CHECK)."""
    f.stack.append(f.locals[arg])
    return i + 1


@handler("LOAD_FAST_AND_CLEAR")
def load_fast_and_clear(f, arg, i):
    loc = f.locals
    f.stack.append(loc[arg])
    loc[arg] = NULL
    return i + 1


@handler("LOAD_FAST_LOAD_FAST")
def load_fast_load_fast(f, arg, i):
    a, b = arg
    loc = f.locals
    va, vb = loc[a], loc[b]
    if va is NULL:
        raise _unbound_local(f, a)
    if vb is NULL:
        raise _unbound_local(f, b)
    f.stack.append(va)
    f.stack.append(vb)
    return i + 1


@handler("STORE_FAST")
def store_fast(f, arg, i):
    f.locals[arg] = f.stack.pop()
    return i + 1


@handler("STORE_FAST_LOAD_FAST")
def store_fast_load_fast(f, arg, i):
    a, b = arg
    loc = f.locals
    loc[a] = f.stack.pop()
    v = loc[b]
    if v is NULL:
        raise _unbound_local(f, b)
    f.stack.append(v)
    return i + 1


@handler("STORE_FAST_STORE_FAST")
def store_fast_store_fast(f, arg, i):
    a, b = arg
    stack = f.stack
    f.locals[a] = stack.pop()
    f.locals[b] = stack.pop()
    return i + 1


@handler("DELETE_FAST")
def delete_fast(f, arg, i):
    if f.locals[arg] is NULL:
        raise _unbound_local(f, arg)
    f.locals[arg] = NULL
    return i + 1


# ---- cells ----------------------------------------------------------------------------------------

@handler("MAKE_CELL")
def make_cell(f, arg, i):
    v = f.locals[arg]
    f.locals[arg] = _CellType() if v is NULL else _CellType(v)
    return i + 1


@handler("COPY_FREE_VARS")
def copy_free_vars(f, arg, i):
    closure = f.func.__closure__
    start = f.decoded.free_start
    f.locals[start:start + arg] = closure[:arg]
    return i + 1


@handler("LOAD_CLOSURE")
def load_closure(f, arg, i):
    f.stack.append(f.locals[arg])
    return i + 1


def _empty_cell_error(f, idx):
    name = f.decoded.localsplus_names[idx]
    if idx >= f.decoded.free_start:
        return NameError(f"cannot access free variable '{name}' where it is not associated with a value"
                         " in enclosing scope")
    return _unbound_local(f, idx)


@handler("LOAD_DEREF")
def load_deref(f, arg, i):
    cell = f.locals[arg]
    try:
        v = cell.cell_contents
    except ValueError:
        v = _MISSING
    if v is _MISSING:
        raise _empty_cell_error(f, arg)
    f.stack.append(v)
    return i + 1


@handler("STORE_DEREF")
def store_deref(f, arg, i):
    f.locals[arg].cell_contents = f.stack.pop()
    return i + 1


@handler("DELETE_DEREF")
def delete_deref(f, arg, i):
    cell = f.locals[arg]
    try:
        del cell.cell_contents
        return i + 1
    except ValueError:
        pass
    raise _empty_cell_error(f, arg)


@handler("LOAD_FROM_DICT_OR_DEREF")
def load_from_dict_or_deref(f, arg, i):
    v = _mapping_get(f.stack.pop(), f.decoded.localsplus_names[arg])
    if v is _MISSING:
        return load_deref(f, arg, i)
    f.stack.append(v)
    return i + 1


@handler("LOAD_FROM_DICT_OR_DEREF_311")
def load_classderef(f, arg, i):
    f.stack.append(f.names)
    return load_from_dict_or_deref(f, arg, i)


# ---- globals and names ----------------------------------------------------------------------------

_MISSING = object()


def _global(f, name):
    # no try/except: a NameError raised inside an except block would carry the KeyError as context
    v = f.globals.get(name, _MISSING)
    if v is _MISSING:
        v = f.builtins.get(name, _MISSING)
        if v is _MISSING:
            raise NameError(f"name '{name}' is not defined", name=name)
    return v


@handler("LOAD_GLOBAL")
def load_global(f, name, i):
    g = f.globals
    f.stack.append(g[name] if name in g else _global(f, name))
    return i + 1


@handler("LOAD_GLOBAL_NULL_BEFORE")
def load_global_null_before(f, name, i):
    g = f.globals
    v = g[name] if name in g else _global(f, name)
    f.stack.append(NULL)
    f.stack.append(v)
    return i + 1


@handler("LOAD_GLOBAL_NULL_AFTER")
def load_global_null_after(f, name, i):
    g = f.globals
    f.stack.append(g[name] if name in g else _global(f, name))
    f.stack.append(NULL)
    return i + 1


@handler("STORE_GLOBAL")
def store_global(f, name, i):
    f.globals[name] = f.stack.pop()
    return i + 1


@handler("DELETE_GLOBAL")
def delete_global(f, name, i):
    if f.globals.pop(name, _MISSING) is _MISSING:
        raise NameError(f"name '{name}' is not defined", name=name)
    return i + 1


@handler("LOAD_NAME")
def load_name(f, name, i):
    names = f.names
    if names is None:
        raise SystemError(f"no locals when loading {name!r}")
    v = _mapping_get(names, name)
    f.stack.append(_global(f, name) if v is _MISSING else v)
    return i + 1


def _mapping_get(mapping, name):
    if type(mapping) is dict:
        return mapping.get(name, _MISSING)
    try:
        return mapping[name]
    except KeyError:
        return _MISSING


@handler("LOAD_FROM_DICT_OR_GLOBALS")
def load_from_dict_or_globals(f, name, i):
    v = _mapping_get(f.stack.pop(), name)
    f.stack.append(_global(f, name) if v is _MISSING else v)
    return i + 1


@handler("LOAD_LOCALS")
def load_locals(f, arg, i):
    if f.names is None:
        raise SystemError("no locals found")
    f.stack.append(f.names)
    return i + 1


@handler("STORE_NAME")
def store_name(f, name, i):
    f.names[name] = f.stack.pop()
    return i + 1


@handler("DELETE_NAME")
def delete_name(f, name, i):
    names = f.names
    if (names.pop(name, _MISSING) if type(names) is dict else _mapping_pop(names, name)) is _MISSING:
        raise NameError(f"name '{name}' is not defined", name=name)
    return i + 1


def _mapping_pop(mapping, name):
    try:
        del mapping[name]
    except KeyError:
        return _MISSING
    return None


# ---- attributes ---------------------------------------------------------------------------------

@handler("LOAD_ATTR")
def load_attr(f, name, i):
    stack = f.stack
    obj = stack[-1]
    if type(obj).__flags__ & _HEAPTYPE:
        f.index = i  # a property may ask for this frame's line (f_lineno)
        stack[-1] = protocols.load_attr(f.vm, obj, name)
    else:
        stack[-1] = getattr(obj, name)
    return i + 1


@handler("LOAD_METHOD")
def load_method(f, name, i):
    stack = f.stack
    meth, obj = protocols.load_method(f.vm, stack.pop(), name)
    if meth is None:
        stack.append(NULL)
        stack.append(obj)
    else:
        stack.append(meth)
        stack.append(obj)
    return i + 1


@handler("LOAD_METHOD_313")
def load_method_313(f, name, i):
    stack = f.stack
    meth, obj = protocols.load_method(f.vm, stack.pop(), name)
    if meth is None:
        stack.append(obj)
        stack.append(NULL)
    else:
        stack.append(meth)
        stack.append(obj)
    return i + 1


@handler("STORE_ATTR")
def store_attr(f, name, i):
    stack = f.stack
    obj = stack.pop()
    value = stack.pop()
    protocols.store_attr(f.vm, obj, name, value)
    return i + 1


@handler("DELETE_ATTR")
def delete_attr(f, name, i):
    protocols.delete_attr(f.vm, f.stack.pop(), name)
    return i + 1


def _super_object(f, two_args):
    stack = f.stack
    self_ = stack.pop()
    cls = stack.pop()
    sup = stack.pop()
    if sup is super:
        return super(cls, self_)
    return call(f.vm, sup, (cls, self_) if two_args else (), None)


@handler("LOAD_SUPER_ATTR")
def load_super_attr(f, arg, i):
    name, two_args = arg
    f.stack.append(getattr(_super_object(f, two_args), name))
    return i + 1


@handler("LOAD_SUPER_METHOD")
def load_super_method(f, arg, i):
    name, two_args = arg
    obj = _super_object(f, two_args)
    f.stack.append(NULL)
    f.stack.append(getattr(obj, name))
    return i + 1


@handler("LOAD_SUPER_METHOD_313")
def load_super_method_313(f, arg, i):
    name, two_args = arg
    obj = _super_object(f, two_args)
    f.stack.append(getattr(obj, name))
    f.stack.append(NULL)
    return i + 1


# ---- stack shuffles -----------------------------------------------------------------------------

@handler("POP_TOP")
def pop_top(f, arg, i):
    f.stack.pop()
    return i + 1


@handler("PUSH_NULL")
def push_null(f, arg, i):
    f.stack.append(NULL)
    return i + 1


@handler("COPY")
def copy(f, arg, i):
    f.stack.append(f.stack[-arg])
    return i + 1


@handler("SWAP")
def swap(f, arg, i):
    s = f.stack
    s[-1], s[-arg] = s[-arg], s[-1]
    return i + 1


@handler("END_FOR")
def end_for(f, arg, i):
    del f.stack[-2:]
    return i + 1


@handler("END_FOR_313")
def end_for_313(f, arg, i):
    f.stack.pop()
    return i + 1


@handler("END_SEND")
def end_send(f, arg, i):
    s = f.stack
    v = s.pop()
    s[-1] = v
    return i + 1
