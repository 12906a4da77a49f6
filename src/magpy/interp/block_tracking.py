"""Templates of tracked blocks (observer on) for the instructions that report events most often.

Each one does what its tracked handler in ``tracking.py`` does, in the same order: the operation
first (through the plain template where there is one, so the fast paths are shared), then the event,
whose result is the provenance of what the instruction pushed. An instruction without a template here
runs through its tracked handler. Moves (locals, constants, stack shuffles) are shared with plain
blocks (``block_ops``): the tracked emitter carries the provenance along.
"""
from .block_templates import TRACKED_TEMPLATES, TEMPLATES
from .block_ops import _attr, _BRANCH_TESTS


def tracked(*names):
    def register(fn):
        for name in names:
            TRACKED_TEMPLATES[name] = fn
        return fn
    return register


def _operation(name, inputs):
    """An instruction of ``inputs`` operands and one result, reported by ``operation`` (what
    ``tracking.generic`` does around the plain handler)."""
    plain = TEMPLATES[name]

    def run(e, arg, k):
        entries = [e.pop() for _ in range(inputs)]
        entries.reverse()
        if inputs == 2:  # (a Python operator dunder receives its operands' provenance)
            e.operand_provs = f"({entries[0][1]}, {entries[1][1]})"
        with e.values_only([v for v, _ in entries]):
            plain(e, arg, k)
            out = e.virtual[-1]
        e.operand_provs = None
        provs = ", ".join(p for _, p in entries)
        values = ", ".join(v for v, _ in entries)
        ps = e.fresh()
        quiet = " and ".join(f"{p} is None and type({v}) in CONSTANT_SCALARS" for v, p in entries)
        e.emit(f"if {quiet}: {ps} = None")
        e.emit("else:")
        e.emit(f"    {ps} = obs.operation(f, {name!r}, {e.arg(k)}, [{values}], [{provs}], [{out}])")
        e.emit(f"    if {ps} is not None: {ps} = {ps}[0]")
        e.push(out, ps)
        return True
    return run


for _name, _inputs in [("BINARY_OP", 2), ("COMPARE_OP", 2), ("COMPARE_OP_BOOL", 2), ("IS_OP", 2),
                       ("CONTAINS_OP", 2), ("UNARY_NEGATIVE", 1), ("UNARY_INVERT", 1),
                       ("UNARY_POSITIVE", 1), ("UNARY_NOT", 1), ("TO_BOOL", 1)]:
    TRACKED_TEMPLATES[_name] = _operation(_name, _inputs)


@tracked("LOAD_GLOBAL", "LOAD_GLOBAL_NULL_BEFORE", "LOAD_GLOBAL_NULL_AFTER")
def _load_global(e, name, k):
    e.at(k)
    kind = e.decoded.names[k]
    if kind == "LOAD_GLOBAL_NULL_BEFORE":
        e.push("NULL")
    value = e.fresh()
    e.emit(f"{value} = g[{name!r}] if {name!r} in g else global_(f, {name!r})")
    e.push(value, e.fresh_code(f"obs.read_global(f, {name!r}, {value})"))
    if kind == "LOAD_GLOBAL_NULL_AFTER":
        e.push("NULL")
    return True


@tracked("LOAD_ATTR")
def _load_attr(e, name, k):
    obj, oprov = e.pop()
    e.at(k)
    site = e.cache()
    value = e.fresh()
    e.emit(f"{e.vm}.returned = None")
    e.emit(f"f.index = {k}")
    e.emit(f"tp = type({obj})")
    # a type whose attribute involves no Python code: nothing interpreted returns it
    e.emit(f"if tp is {site}: {value} = {_attr(obj, name)}; computed = NOT_RETURNED")
    e.emit("else:")
    e.emit(f"    {value} = load_attr(vm, {obj}, {name!r}, {oprov})")
    e.emit(f"    if (tp, {name!r}) in NATIVE_ATTR: {site} = tp")
    e.emit(f"    computed = computed_by(vm, f, {value})")
    e.emit("vm.returned = None")
    e.push(value, e.fresh_code(f"obs.read_attr({obj}, {oprov}, {name!r}, {value}, computed)"))
    return True


@tracked("STORE_ATTR")
def _store_attr(e, name, k):
    obj, oprov = e.pop()
    value, prov = e.pop()
    e.at(k)
    site = e.cache()
    e.emit(f"tp = type({obj})")
    e.emit(f"if tp is {site}: {_attr(obj, name)} = {value}")
    e.emit("else:")
    e.emit(f"    store_attr({e.vm}, {obj}, {name!r}, {value}, ({oprov}, {prov}))")
    e.emit(f"    if (tp, {name!r}) in NATIVE_SETATTR: {site} = tp")
    e.emit(f"obs.write_attr({obj}, {oprov}, {name!r}, {value}, {prov})")
    return True


@tracked("BINARY_SUBSCR")
def _binary_subscr(e, arg, k):
    key, kprov = e.pop()
    obj, oprov = e.pop()
    e.at(k)
    value = e.fresh()
    e.emit("computed = NOT_RETURNED")
    e.emit("try:")
    e.emit(f"    if type({obj}) in PLAIN: {value} = {obj}[{key}]")
    e.emit("    else:")
    e.emit(f"        {e.vm}.returned = None")
    e.emit(f"        {value} = get_item({e.vm}, {obj}, {key}, ({oprov}, {kprov}))")
    e.emit(f"        computed = computed_by({e.vm}, f, {value})")
    e.emit("except Exception as exc:")
    e.emit(f"    obs.item_raised({obj}, {oprov}, {key}, {kprov}, exc)")
    e.emit("    raise")
    e.push(value, e.fresh_code(f"obs.read_item({obj}, {oprov}, {key}, {kprov}, {value}, computed)"))
    return True


@tracked("STORE_SUBSCR")
def _store_subscr(e, arg, k):
    key, kprov = e.pop()
    obj, oprov = e.pop()
    value, prov = e.pop()
    e.at(k)
    e.emit(f"if type({obj}) in PLAIN: {obj}[{key}] = {value}")
    e.emit(f"else: set_item({e.vm}, {obj}, {key}, {value}, ({oprov}, {kprov}, {prov}))")
    e.emit(f"obs.write_item({obj}, {oprov}, {key}, {kprov}, {value}, {prov})")
    return True


def _branch(name):
    def run(e, target, k):
        value, prov = e.pop()
        e.at(k)
        taken = e.fresh()
        e.emit(f"{taken} = {_BRANCH_TESTS[name].format(x=value)}")
        e.emit(f"if {prov} is not None or type({value}) not in CONSTANT_SCALARS:")
        e.emit(f"    obs.branch(f, {name!r}, {value}, {prov}, {taken})")
        e.emit(f"if {taken}:")
        e.leave(target, "    ")
        return True
    return run


for _name in _BRANCH_TESTS:
    TRACKED_TEMPLATES[_name] = _branch(_name)


@tracked("FOR_ITER")
def _for_iter(e, exit_index, k):
    it, iprov = e.peek(1)
    e.at(k)
    value = e.next_or_leave(it, exit_index, f"if {iprov} is not None: "
                                             f"obs.operation(f, 'FOR_ITER_END', None, [{it}], [{iprov}], [])")
    ps = e.fresh()
    e.emit(f"if {iprov} is None and type({it}) in CONSTANT_ITERATORS: {ps} = None")
    e.emit("else:")
    e.emit(f"    {ps} = obs.operation(f, 'FOR_ITER', None, [{it}], [{iprov}], [{value}])")
    e.emit(f"    {ps} = {ps}[0] if {ps} else None")
    e.push(value, ps)
    return True


@tracked("RETURN_VALUE")
def _return_value(e, arg, k):
    value, prov = e.pop()
    e.at(k)
    e.emit(f"obs.return_value(f, {value}, {prov})")
    e.emit(f"f.vm.returned = (f, {value}, {prov})")
    e.emit(f"f.result = {value}")
    e.emit("return -1")
    return False


@tracked("RETURN_CONST")
def _return_const(e, constant, k):
    value = e.const(constant)
    e.at(k)
    e.emit(f"obs.return_value(f, {value}, None)")
    e.emit(f"f.vm.returned = (f, {value}, None)")
    e.emit(f"f.result = {value}")
    e.emit("return -1")
    return False
