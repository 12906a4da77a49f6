"""Writes and deletions: to outside objects they become side effects the mock replays; to objects
made here they change what those objects hold.
"""
import collections
import operator

import torch
import numpy as np

from . import rules
from ..errors import Unsupported
from .entry_state import autocast_state
from ..interp.protocols import MISSING, lookup
from .mutations import clear_cell
from .sources import AttrSource, Expr, ItemSource, Source
from .values import (Traced, UNKNOWN, _DELETED, _NOT_WRITTEN, _MUTABLE_CONTAINERS, _copy_data, _event, _hkey, _holds_tensor, _is_tensor)
from .iteration import _elements


class Writes:

    """Writes and deletions: to outside objects (replayed by the mock) and to objects made here."""



    @_event(None)
    def provenance_of(self, obj):
        """The path of an outside object seen before, None for an object made by this call, else
        UNKNOWN."""
        known = self.sources_of.get(id(obj))
        if known is not None and known[0] is obj:
            return known[1]
        made = self.made.get(id(obj))
        if made is not None and made is obj:
            return None
        return UNKNOWN

    @_event(None)
    def created(self, obj):
        """A new instance of a Python class, before its ``__init__`` runs."""
        self.refuse_finalizer(obj)
        self.made[id(obj)] = obj

    @_event(None)
    def write_attr(self, obj, obj_prov, name, value, prov):
        if name == "data" and _is_tensor(obj) and (value is obj or self._own_data(obj, value)):
            # ``p.data *= mask``: the in-place op changed p; storing its own data back changes nothing (nor
            # does ``p.data = p``: ``Module.to`` storing a tensor its conversion left as it was)
            return
        self.written[(id(obj), name)] = prov
        if type(value) in (int, float) and isinstance(obj_prov, Source):
            self.cap.written_numbers.add(AttrSource(obj_prov, name))
        self.table_changed(obj, name, prov)
        if not _is_tensor(obj):
            self._attribute_storage_written(obj, name, value, prov)
        if name == "requires_grad" and _is_tensor(obj) and type(value) is bool and id(obj) not in self.input_paths:
            entry = self.nodes.get(id(obj))
            if entry is not None and entry[0] is obj:
                # ``t.requires_grad = False`` on a tensor the graph made: the graph does it too (on
                # each run's tensor, raising where eager would: only a leaf's flag can change)
                self.need(value, prov)
                node = self.cap.graph.call_method("requires_grad_", (entry[1], value))
                self.nodes[id(obj)] = (obj, node)
                self.cap.autograd_nodes = True
                return
        if name == "data" and _is_tensor(obj) and _is_tensor(value) and self._set_data(obj, obj_prov, value):
            return
        if _is_tensor(obj) and not isinstance(obj_prov, Source) and self._graph_tensor_attr(obj, name, value, prov):
            return
        if _is_tensor(obj) and (name in rules.TENSOR_STATE_ATTRS or not isinstance(obj_prov, Source)):
            # (``p.data = …`` would change what the graph reads; a tensor the graph makes has no path)
            self.unsupported(f"setting attribute {name!r} of a tensor")
        if _is_tensor(obj):
            self.tensor_input(obj, obj_prov)  # ``p.grad = None``: replayed on the entry's tensor
        if isinstance(obj_prov, (Source, Expr)):
            effect = ("setattr", obj_prov, name, self.template(value, prov))
            effects = self.cap.side_effects
            if not (effects and effects[-1][:3] == effect[:3] and effects[-1][3] is effect[3]):
                effects.append(effect)  # (a Python __setattr__ reaching object.__setattr__ reports it twice)
        elif obj_prov is UNKNOWN:
            self.unsupported(f"attribute {name!r} set on an object of unknown origin")

    def tensor_setitem(self, obj, obj_prov, key, key_prov, value, prov):
        """``obj[key] = value`` into a tensor, however it was spelled: a graph op."""
        if not _is_tensor(key) and type(key_prov) is not Traced and not self.holds_traced(key):
            self.need(key, key_prov)  # (bounds the graph computes go in as its nodes)
        self.record(operator.setitem, (obj, key, value), (obj_prov, key_prov, prov), None, None, None)

    @_event(None)
    def write_item(self, obj, obj_prov, key, key_prov, value, prov):
        if self.dispatched is not None and _is_tensor(obj):
            self.dispatched = None
            return  # (a torch-function mode ran ``Tensor.__setitem__``: what it ran is recorded)
        if type(value) in (int, float) and isinstance(obj_prov, Source) and type(key) in (str, int):
            self.cap.written_numbers.add(ItemSource(obj_prov, key))
        owner = self.table_owner(obj)
        if owner is not None:
            self.need(key, key_prov)  # ``obj.__dict__[name] = v`` of a new object: an attribute set
            return self.write_attr(owner, None, key, value, prov)
        if _is_tensor(obj):
            return self.tensor_setitem(obj, obj_prov, key, key_prov, value, prov)
        if isinstance(obj, np.ndarray):
            if type(obj_prov) is Traced:
                self.unsupported("writing into an array of tensor data (graph break)")
            if _holds_tensor(value) or _holds_tensor(key):
                # numpy reads the tensor's numbers (``a[0] = x.sum()``): data leaves the graph
                self.unsupported("tensor data written into a numpy array (graph break)")
            if self._write_made_array(obj, obj_prov, key, key_prov, value, prov):
                return
        if isinstance(obj_prov, (Source, Expr)) and isinstance(obj, _MUTABLE_CONTAINERS) and (
                self.contents.changed_outside(obj) or (isinstance(obj_prov, Source) and not isinstance(obj, dict))):
            # (``d[k] = v`` on a dict whose other items are not followed needs no shadow: ``written``)
            self.need(key, key_prov)
            self.outside_state.store_item(obj, obj_prov, key, value, prov)
            return
        entry = self.contents.get(id(obj))
        if type(obj) is list and type(key) is slice and (entry is None or entry[0] is not obj) and \
                obj_prov is None:
            # ``xs[1:] = [n]`` into a list made here of constants: what went in, where (else unknown)
            self.need(key, key_prov)
            added = _elements(self, value, prov) if type(value) in (list, tuple) else None
            if added is None or any(p is not None for p in added):
                self.contents[id(obj)] = (obj, [UNKNOWN] * len(obj))
            return
        if entry is not None and entry[0] is obj:
            if type(obj) is list and type(key) is slice and type(entry[1]) is list and \
                    type(value) in (list, tuple):
                self.need(key, key_prov)
                provs = list(entry[1])
                provs[key] = _elements(self, value, prov)
                self.contents[id(obj)] = (obj, provs if len(provs) == len(obj) else [UNKNOWN] * len(obj))
            elif type(obj) is list and type(key) is int and -len(entry[1]) <= key < len(entry[1]):
                self.need(key, key_prov)  # (which element it replaced)
                entry[1][key] = prov
            elif type(entry[1]) is dict:
                self.need(key, key_prov)
                entry[1][key] = prov
            else:
                self.contents[id(obj)] = (obj, None)  # (what it holds is unknown from here)
            return
        if obj_prov is None and (prov is not None or key_prov is not None) and \
                (type(obj) in (list, dict, collections.OrderedDict) or isinstance(obj, dict)):
            # a constant container made inside now holds a value from outside (or where outside values
            # said: ``shape[bd] = 1``)
            self.need(key, key_prov)
            if type(obj) is not list:
                self.contents[id(obj)] = (obj, {**dict.fromkeys(obj), key: prov})
            else:
                provs = [None] * len(obj)
                if type(key) is int and -len(obj) <= key < len(obj):
                    provs[key] = prov
                else:
                    provs = [UNKNOWN] * len(obj)
                self.contents[id(obj)] = (obj, provs)
            return
        self.written[(id(obj), ("item", _hkey(key)))] = prov
        self.items_written[id(obj)] = self.objects_written[id(obj)] = obj
        owner = self.dict_owners.get(id(obj)) if type(key) is str else None
        if owner is not None and owner[0] is obj:  # ``vars(o)["n"] = v`` is ``o.n = v``
            self.written[(id(owner[1]), key)] = prov
            self.objects_written[id(owner[1])] = owner[1]
        if isinstance(obj_prov, (Source, Expr)):
            self.need(key, key_prov)
            self.cap.side_effects.append(("setitem", obj_prov, key, self.template(value, prov)))
        elif obj_prov is UNKNOWN:
            self.unsupported("an item set on a container of unknown origin")
        elif prov is not None or (key_prov is not None and self.effective(key, key_prov) is not None):
            # (an array made here now holds a value from outside: it is no longer a constant)
            dict.__setitem__(self.contents, id(obj), (obj, None))

    def _attribute_storage_written(self, obj, name, value, prov):
        """An attribute lives in its object's ``__dict__``, or for a class, is seen through every instance
        that does not hold its own: a read by either of those other ways after this write must see it."""
        self.objects_written[id(obj)] = obj
        if isinstance(obj, type):
            self.class_attrs_written.add(name)
            return
        try:
            table = object.__getattribute__(obj, "__dict__")
        except Exception:  # noqa: BLE001 - no instance dict (slots), or one that cannot be read
            return
        if type(table) is dict and name in table and table[name] is value:
            self.written[(id(table), ("item", name))] = prov
            self.items_written[id(table)] = self.objects_written[id(table)] = table

    def _graph_tensor_attr(self, tensor, name, value, prov):
        """``t._static_kind = "unguarded"`` on a tensor the graph makes (a cache buffer marked for
        cudagraphs): a plain attribute, kept in the tensor's own ``__dict__``, so the mock sets it again on
        the tensor each run makes (a graph output). False for anything a tensor's class defines (its
        data, autograd state, metadata: descriptors with effects of their own)."""
        entry = self.nodes.get(id(tensor))
        if entry is None or entry[0] is not tensor or name in rules.TENSOR_STATE_ATTRS or \
                lookup(type(tensor), name) is not MISSING or type(tensor).__setattr__ is not object.__setattr__:
            return False
        self.cap.side_effects.append(("call", setattr, [self.template(tensor, None), ("const", name),
                                                        self.template(value, prov)], {}))
        return True

    def _set_data(self, tensor, prov, value):
        """``p.data = torch.clamp(p.data, lo, hi)`` on a tensor from outside: the graph copies the new
        values into it (without autograd, as ``.data`` is written). Eager then has ``p`` share ``value``'s
        storage and drops its old one: that differs from a copy only through other tensors on either
        storage, so those (and ``value``) cannot be used afterwards. False when shape, dtype or device
        would change, or when an op already read the tensor."""
        if not isinstance(prov, Source) or value.shape != tensor.shape or value.dtype != tensor.dtype or \
                value.device != tensor.device or value.layout is not torch.strided:
            return False
        node = self.node_of(tensor, prov)
        if any(not (u.target is getattr and u.args[1:] == ("data",)) for u in node.users):
            return False  # (an op that read it before may have saved it for backward: a copy would
            #              change what it saved, eager's new storage does not)
        self.record(_copy_data, (tensor, value), (prov, None), None, None, None)
        self.nodes[id(tensor)] = (tensor, node)  # (the same input: its values are the new ones)
        self.nodes.forget_sharing(tensor, value)
        return True

    def _write_made_array(self, array, prov, key, key_prov, value, value_prov):
        """A write into a numpy array the call made (``anchors[:, 2:] = size * np.tile(scales, …)``): the
        array becomes a constant — what it held before (when computed from outside values) and what is
        written are guarded — so that what the program computes from it is too. False when the array
        (or the one it is a view of) is not one the call made."""
        root = array
        while type(root.base) is np.ndarray:
            root = root.base
        made = self.made_arrays.get(id(root))
        if made is None or made[0] is not root:
            return False
        if made[1] is not None:
            self.need(made[2], made[1])  # (what it held, as the call computed it)
            self.made_arrays[id(root)] = (root, None, None)
            self._forget_provenance(root)
        self.need(key, key_prov)
        self.need(value, value_prov)
        return True

    def _forget_provenance(self, root):
        """The frames' variables and stack slots holding ``root`` (or a view of it) now hold a constant."""
        def holds(v):
            while type(v) is np.ndarray:
                if v is root:
                    return True
                v = v.base
            return False
        frame = self.frame
        while frame is not None:
            for values, provs in ((frame.locals, frame.plocals), (frame.stack, frame.pstack)):
                if provs is not None:
                    for k, v in enumerate(values[:len(provs)]):
                        if provs[k] is not None and holds(v):
                            provs[k] = None
            frame = frame.back

    @_event(None)
    def write_global(self, frame, name, value, prov):
        self.written[(id(frame.globals), name)] = prov
        if frame.names is not None and frame.names is not frame.globals:
            return  # a class body or exec namespace made inside the call
        self.cap.side_effects.append(("setglobal", frame.globals, name, self.template(value, prov)))

    @_event(None)
    def write_cell(self, frame, cell, name, value, prov):
        known = self.cells.get(id(cell))
        made_inside = known is not None and known[0] is cell and known[2:] == ("inside",)
        self.cells[id(cell)] = (cell, prov) + (("inside",) if made_inside else ())
        if not made_inside:
            self.cap.side_effects.append(("setcell", cell, name, self.template(value, prov)))

    @_event(None)
    def delete_global(self, frame, namespace, name):
        if namespace is not frame.globals:
            if namespace is not None and namespace is not frame.names:
                self.unsupported(f"del {name} in a namespace MagPy does not follow")
            return  # a class body or exec namespace made inside the call
        self.written[(id(namespace), name)] = _DELETED
        self.cap.side_effects.append(("call", operator.delitem, [("const", namespace), ("const", name)], {}))

    @_event(None)
    def delete_cell(self, frame, cell, name):
        known = self.cells.get(id(cell))
        made_inside = known is not None and known[0] is cell and known[2:] == ("inside",)
        self.cells[id(cell)] = (cell, _DELETED) + (("inside",) if made_inside else ())
        if not made_inside:
            self.cap.side_effects.append(("call", clear_cell, [("const", cell)], {}))

    @_event(None)
    def delete_attr(self, obj, obj_prov, name):
        if obj_prov is None:
            self.table_changed(obj, name, _DELETED)
            return
        if not isinstance(obj_prov, (Source, Expr)) or _is_tensor(obj):
            self.unsupported(f"deleting attribute {name!r} of an outside object")
        self.written[(id(obj), name)] = _DELETED
        self.cap.side_effects.append(("call", delattr, [("source", obj_prov), ("const", name)], {}))

    @_event(None)
    def delete_item(self, obj, obj_prov, key, key_prov):
        if obj_prov is None and not _is_tensor(obj):
            return
        if _is_tensor(obj) or not isinstance(obj_prov, Source):
            self.unsupported("deleting an item of an outside container")
        self.outside_state.delete_item(obj, obj_prov, key, key_prov)

    def finish_autocast(self):
        """The graph sets autocast where the program did (``rules.AUTOCAST_STATE``: a backend tracing it
        computes the region as eager did), but a compiled graph changes nothing of the process's state:
        a call that leaves autocast otherwise than it found it, or stops at a graph break inside an
        autocast region, runs eagerly."""
        if autocast_state() != self.entry_autocast:
            self.cap.unsupported = self.cap.unsupported or Unsupported(
                "the call leaves autocast changed, or breaks inside an autocast region (runs eagerly)")

    def finish_grad_mode(self):
        """A call that leaves the grad mode other than it found it (``torch.set_grad_enabled(False)``
        left set, a graph break inside a ``with torch.no_grad()`` block): the mock sets it after the
        graph, as the program left it (a compiled graph does not change the process's mode)."""
        if self.grad_mode is not _NOT_WRITTEN and torch.is_grad_enabled() is not self.entry_grad_mode:
            mode = self.template(torch.is_grad_enabled(), self.grad_mode)
            self.cap.side_effects.append(("call", torch._C._set_grad_enabled, [mode], {}))
