"""Reads from outside the call: each value gets its access path, and the guards that make reusing it safe.
"""
import collections
import operator
import sys

import torch

from . import rules
from ..interp.protocols import lookup
from ..interp.tracking import NOT_RETURNED
from .guards import IdGuard, TruthGuard, ValueGuard
from .iteration import _unfold
from .sources import AttrSource, CellSource, Const, Expr, GlobalSource, ItemSource, Source
from .values import (Traced, UNKNOWN, _BOUND_METHODS, _Row, _DELETED, _MUTABLE_CONTAINERS, _NOT_WRITTEN, _SHAPE_TRACED, _event,
    _has_own, _hkey, _is_tensor, _item_of, _library_global, _replayable_path)


class Reads:

    """Values the program reads from outside: globals, cells, attributes, methods, items."""



    @_event(None)
    def read_global(self, frame, name, value):
        written = self.written.get((id(frame.globals), name), _NOT_WRITTEN)
        if written is _NOT_WRITTEN:
            # (``warnings.filters = …`` then ``filters.insert(…)`` inside the module: one variable)
            module = sys.modules.get(frame.globals.get("__name__"))
            if module is not None and getattr(module, "__dict__", None) is frame.globals:
                written = self.written.get((id(module), name), _NOT_WRITTEN)
        if written is _DELETED:
            self.unsupported(f"reading {name!r} after the call deleted the global")
        if written is not _NOT_WRITTEN:
            return written
        key = (id(frame.globals), name)
        seen = self.reads.get(key)
        if seen is not None and seen[0] is value:
            return seen[1]  # read before and unchanged: its guards are in place
        prov = GlobalSource(frame.globals, name)
        self.on_read(value, prov)
        self.reads[key] = (value, prov)
        return prov

    @_event(None)
    def read_cell(self, frame, cell, name, value):
        known = self.cells.get(id(cell))
        if known is not None and known[0] is cell:
            if known[1] is _DELETED:
                self.unsupported(f"reading {name!r} after the call deleted it")
            return known[1]
        # a cell that existed before the call: a closure of the function (or of one it calls)
        prov = CellSource(cell, name)
        self.on_read(value, prov)
        return prov

    @_event(None)
    def new_cell(self, frame, cell, name, prov):
        self.cells[id(cell)] = (cell, prov, "inside")

    @_event(None)
    def read_attr(self, obj, obj_prov, name, value, computed=NOT_RETURNED):
        if name == "__dict__" and type(value) is dict:
            self.dict_owners[id(value)] = (value, obj)  # (an item written there is an attribute written)
        written = self.written.get((id(obj), name), _NOT_WRITTEN)
        if written is _NOT_WRITTEN and name in self.class_attrs_written:
            written = self._class_attr_written(obj, name)
        if written is _DELETED:
            self.unsupported(f"reading attribute {name!r} after the call deleted it")
        if written is not _NOT_WRITTEN:
            return written
        if computed is not NOT_RETURNED:
            # Python code computed it (a property, __getattr__): its own reads were followed and
            # guarded; re-reading the attribute in a guard would run that code again
            if _is_tensor(value) and id(value) not in self.nodes and isinstance(computed, Source):
                self.tensor_input(value, computed)
            return computed
        if _is_tensor(obj):
            return self._tensor_attr(obj, obj_prov, name, value)
        if obj_prov is None:
            if name == "__dict__" and self.made.get(id(obj)) is obj:
                return self.attribute_table(obj, value)
            if self.grad_fns.get(id(obj), (None,))[0] is obj:
                if name not in rules.GRAD_FN_FIXED:
                    self.unsupported(f"grad_fn.{name} of a tensor the graph makes (MagPy replays only hook "
                                     "registration on autograd nodes)")
                for node, _ in value if name == "next_functions" else ():
                    if node is not None:  # the nodes of the op's inputs: as fixed, and no more usable
                        self.grad_fns.setdefault(id(node), (node, None, None))
            entry = self.contents.get(id(obj))
            if entry is not None and entry[0] is obj and not callable(value):
                # a container made here holding values from outside: a namedtuple's field is its item;
                # any other attribute may be computed from what it holds
                fields = getattr(type(obj), "_fields", ()) if isinstance(obj, tuple) else ()
                if name in fields and type(entry[1]) is list and len(entry[1]) == len(obj):
                    return entry[1][fields.index(name)]
                if name not in getattr(obj, "__dict__", {}):
                    held = lookup(type(obj), name)
                    if held is value and not hasattr(type(held), "__get__"):
                        # a plain attribute of its class (``__dataclass_fields__``): read there again
                        return Expr(getattr, (Const(type(obj)), Const(name)))
                return UNKNOWN
            return None
        if obj_prov is UNKNOWN or type(obj_prov) is Traced:
            return UNKNOWN
        path = isinstance(obj_prov, Source)
        if path:
            seen = self.reads.get((id(obj), name))
            if seen is not None and seen[0] is obj and seen[1] is value and seen[2] is obj_prov:
                return seen[3]  # the same read by the same path again: its guards are in place
            self.sources_of.setdefault(id(obj), (obj, obj_prov))  # (a method read here binds to obj)
        self.deref(obj, obj_prov)
        if type(value) in _BOUND_METHODS and value.__self__ is obj:
            self.bound_from[id(value)] = (value, obj_prov)  # (calls depend on obj: ``_pure``, ``bound_self``)
        prov = AttrSource(obj_prov, name) if path else Expr(getattr, (obj_prov, Const(name)))
        self.on_read(value, prov)
        if path:
            self.reads[(id(obj), name)] = (obj, value, obj_prov, prov)
        return prov

    def _class_attr_written(self, obj, name):
        """``self.count`` after ``type(self).count += 1``: the instance holds no ``count`` of its own, so the
        read finds the first class of its MRO that has one; if the call wrote it there, it is that value."""
        if isinstance(obj, type):
            return _NOT_WRITTEN
        try:
            if name in object.__getattribute__(obj, "__dict__"):
                return _NOT_WRITTEN
        except Exception:  # noqa: BLE001 - no instance dict: the class decides
            pass
        for cls in type(obj).__mro__:
            if name in cls.__dict__:
                return self.written.get((id(cls), name), _NOT_WRITTEN)
        return _NOT_WRITTEN

    def attribute_table(self, obj, table):
        """``obj.__dict__`` (or ``vars(obj)``) of an object the call made: a dict made here holding the
        object's attributes, with the provenance ``written`` keeps for each, kept in step with the object
        (attribute writes change it; its item reads and writes are attribute reads and writes)."""
        if table is not getattr(obj, "__dict__", None):
            return UNKNOWN
        if self.table_owner(table) is None:
            self.attribute_tables[id(table)] = (table, obj)
            self.contents[id(table)] = (table, {k: self.written.get((id(obj), k)) for k in table})
        return None

    def table_changed(self, obj, name, prov):
        """An attribute of an object the call made was set (or deleted: ``_DELETED``): its table follows."""
        table = getattr(obj, "__dict__", None) if self.made.get(id(obj)) is obj else None
        entry = self.contents.get(id(table)) if self.table_owner(table) is obj else None
        if entry is not None and type(entry[1]) is dict:
            if prov is _DELETED:
                entry[1].pop(name, None)
            else:
                entry[1][name] = prov

    def table_owner(self, table):
        """The object whose attribute table ``table`` is (see ``attribute_table``), or None."""
        entry = self.attribute_tables.get(id(table))
        return entry[1] if entry is not None and entry[0] is table else None

    def _tensor_attr(self, obj, obj_prov, name, value):
        if isinstance(obj_prov, Source):
            self.tensor_input(obj, obj_prov)  # first touch of an outside tensor: it is a graph input
        elif type(obj_prov) is _Row:
            self.node_of(obj, obj_prov)  # (a row ``zip`` or a loop took from a tensor: known by identity now)
        if _is_tensor(value):
            if name == "grad" and isinstance(obj_prov, Source):
                self.tensor_input(value, AttrSource(obj_prov, name))
                return AttrSource(obj_prov, name)
            self.record(getattr, (obj, name), (obj_prov, None), None, None, value)
            return None
        if name == "grad_fn" and value is None and type(obj) is torch.nn.Parameter:
            return None  # (a parameter is a leaf: its class is guarded)
        if name == "grad_fn" and id(obj) not in self.input_paths:
            # a tensor the graph made without history: so it is on every call the guards let through
            # (grad mode, the inputs' requires_grad); an input's history is its caller's (not guarded)
            if value is None:
                return None
            entry = self.nodes.get(id(obj))
            if entry is not None and entry[0] is obj:
                # the autograd node the graph's op makes again on each run: its kind, and which
                # tensors share it, are fixed by the graph and the guarded requires_grad. Calls on it
                # are replayed on the node the run makes (``_grad_fn_call``).
                self.grad_fns[id(value)] = (value, obj, obj_prov)
                return None
        if callable(value) and not isinstance(value, type):
            return None  # a bound method: recorded when called
        if name in rules.TENSOR_METADATA_ATTRS:
            if _replayable_path(obj_prov) and self.may_be_symbolic(obj):
                self.node_of(obj, obj_prov)  # (an input whose sizes may be symbolic: its shape is the graph's)
            traced = self.dynamic_metadata(obj, name, (), value)
            if traced is not None:
                return None if traced is _SHAPE_TRACED else traced
            return None  # static metadata (shape, dtype, device, requires_grad …): the tensor guard covers it
        if isinstance(obj_prov, Source):
            prov = AttrSource(obj_prov, name)  # e.g. ``p.grad is None``: guarded where it matters
            self.on_read(value, prov)
            return prov
        return UNKNOWN

    @_event(None)
    def read_method(self, obj, obj_prov, name, function):
        if obj_prov is UNKNOWN:
            self.unsupported(f"method {name!r} called on an object of unknown origin")
        if _is_tensor(obj):
            if _replayable_path(obj_prov) or type(obj_prov) is _Row:
                self.node_of(obj, obj_prov)  # (first touch of an outside tensor, or of a row ``zip`` yielded:
            return                           # its method, native or Python, finds it by identity)
        if obj_prov is None or type(obj_prov) is Traced or _library_global(obj_prov):
            return  # (a traced number's type is fixed by its tensor's dtype, which is guarded)
        self.deref(obj, obj_prov)
        if isinstance(obj, _MUTABLE_CONTAINERS) and isinstance(obj_prov, Source):
            self.outside_state.saw(obj, obj_prov)  # (reached by a path capture did not read it by: an element)
        self.guard(IdGuard(Expr(getattr, (Expr(type, (obj_prov,)), Const(name))), function))
        if hasattr(obj, "__dict__"):
            self.guard(TruthGuard(Expr(_has_own, (obj_prov, Const(name))), False))

    @_event(None)
    def read_item(self, obj, obj_prov, key, key_prov, value, computed=NOT_RETURNED):
        if self.dispatched is not None:
            prov = self.take_dispatched(value)
            if prov is not _NOT_WRITTEN:
                return prov  # (a torch-function mode computed it)
        owner = self.table_owner(obj)
        if owner is not None:
            self.need(key, key_prov)  # ``obj.__dict__[name]`` of a new object: its attribute
            return self.read_attr(owner, None, key, value)
        if computed is not NOT_RETURNED and computed is not UNKNOWN:
            # a Python __getitem__ computed it (``module_list[::-1]``): its own reads were followed.
            # (Where they lost track — ``Sequential[i]`` goes through ``islice`` — the item is read by
            # its path below, as for any container.)
            if _is_tensor(value) and id(value) not in self.nodes and isinstance(computed, Source):
                self.tensor_input(value, computed)
            return computed
        if _is_tensor(obj):
            self.record(operator.getitem, (obj, key), (obj_prov, key_prov), None, None, value)
            return None
        entry = self.contents.get(id(obj))
        if entry is not None and entry[0] is obj and type(key) is int and \
                type(obj) in (list, tuple, torch.Size, collections.deque) and entry[1] is not None:
            self.need(key, key_prov)  # which element it is depends on the index
            try:
                prov = entry[1][key]
            except IndexError:
                return UNKNOWN
            # (an element entry may list a tuple's contents: ``list(d.items())[-1]`` is a pair)
            prov = _unfold(self, value, prov)
            if isinstance(prov, Source):
                self.on_read(value, prov)  # (an element read by its path on entry, as below)
            return prov
        if entry is not None and entry[0] is obj and type(entry[1]) is dict and isinstance(obj, dict):
            self.need(key, key_prov)  # (a dict made here of values from outside: ``dict_of_pairs``)
            return entry[1].get(key, UNKNOWN)  # (the dict found the key: it hashes)
        if entry is not None and entry[0] is obj and type(key) is slice and type(obj) in (list, tuple, torch.Size) \
                and type(entry[1]) is list and len(entry[1]) == len(obj):
            self.need(key, key_prov)  # ``xs[:-1]`` of a list made here: those elements, as they came
            self.contents[id(value)] = (value, entry[1][key])
            return None
        if type(key) is slice and type(obj) in (list, tuple) and type(value) is type(obj) and \
                isinstance(obj_prov, Source) and len(obj) <= rules.COPIED_ELEMENTS_LIMIT:
            # ``filters[:]`` of an outside list: a new one (the program may change it) holding those
            # elements, each read by its path
            self.need(key, key_prov)
            self.guard(ValueGuard(Expr(len, (obj_prov,)), len(obj)))
            self.contents[id(value)] = (value, [ItemSource(obj_prov, k) for k in range(*key.indices(len(obj)))])
            return None
        if _is_tensor(key):
            if _replayable_path(obj_prov) and _replayable_path(key_prov):
                self.deref(obj, obj_prov)
                prov = Expr(operator.getitem, (obj_prov, key_prov))  # looked up by identity, on entry
                self.on_read(value, prov)
                return prov
            self.unsupported("a tensor used as a key of a Python container (looked up by identity)")
        if obj_prov is None and key_prov is None and self.effective(key, None) is None:
            # a container made here: what the call stored under this key, else a constant unless
            # something from outside went into it where capture lost track
            try:
                written = self.written.get((id(obj), ("item", _hkey(key))), _NOT_WRITTEN)
            except TypeError:
                written = _NOT_WRITTEN
            if written is not _NOT_WRITTEN:
                return written
            return UNKNOWN if entry is not None and entry[0] is obj and entry[1] is None else None
        if obj_prov is UNKNOWN or key_prov is UNKNOWN:
            return UNKNOWN
        if type(obj_prov) is Traced:
            if type(key_prov) is not Traced:
                self.need(key, key_prov)
            # (``a[:, 0]`` of an array the graph computes; ``divmod(n, 2)[1]`` of a size)
            return self.traced_op(operator.getitem, (obj, key), (obj_prov, key_prov))
        self.need(key, key_prov)
        try:
            hash(_hkey(key))  # (``a[:, None]``: a tuple of slices, unhashable before 3.12)
        except TypeError:
            return UNKNOWN
        self.deref(obj, obj_prov)
        written = self.written.get((id(obj), ("item", _hkey(key))), _NOT_WRITTEN)
        if written is not _NOT_WRITTEN:
            return written
        if obj_prov is None:
            obj_prov = self.effective(obj, None) or Const(obj)  # a container made from constants
            if obj_prov is UNKNOWN:
                return UNKNOWN
        prov = _item_of(obj_prov, key)
        self.on_read(value, prov)
        return prov
