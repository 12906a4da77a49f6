"""Calls: an interpreted callee returns its own provenance; a native call is classified by the rules
(pure, mutation, graph op, random draw, replayed effect …) and anything else is unsupported.
"""
import builtins
import collections
import functools
import random as _random
import types
import warnings
import weakref

import torch
import numpy as np

from . import predicates, rules, vf
from ..interp.tracking import NOT_RETURNED
from .guards import TruthGuard, TypeGuard, ValueGuard
from .mutations import LIST_HELPERS, changes
from .names import callable_name
from .lifetimes import NOT_A_REFERENCE, makes_weak_reference
from .sources import AttrSource, Const, Expr, Source
from .values import (_has_user_protocols, Traced, UNKNOWN, _COMBINATORICS, _DICT_VIEWS, _FROM_ARRAY, _IDENTITY_TYPES, _NOT_WRITTEN,
    _PASSED_BY_IDENTITY, _RUN_ITERATORS, _SCALARS, _SHAPE_TRACED, _TYPE_QUERIES, _bound_self,
    _dereference, _event, _fixed_keyword, _holds_tensor, _is_python_code, _is_tensor,
    _is_torch_callable, _layout, _library_constant, _on_grad_fn, _pinned, _python_constructed,
    _replayable_path, _with_fixed, _with_keywords)
from .iteration import (_elements, _module_sequence, chain_contents, chains, combinatoric_contents, next_element,
                        reads_backwards, start_iteration, zip_steps)
from .builtin_methods import BuiltinMethods
from .lookasides import _BOOKKEEPING
from .function_modes import MODE_EDITS, STACK_QUERIES
from .vmap import _vmap_impl



class Calls(BuiltinMethods):

    """Calls: interpreted ones return their provenance; native ones go through the rules."""



    @_event(None)
    def call_result(self, frame, fn, fn_prov, args, arg_provs, kwargs, kw_provs, result, returned):
        self.frame = frame
        if self.dispatched is not None:
            prov = self.take_dispatched(result)
            if prov is not _NOT_WRITTEN:
                return prov  # (a torch-function mode computed it: what it ran is recorded)
        self.call_fn_prov = fn_prov
        if fn is rules.GRAPH_BREAK:
            self.unsupported(rules.MARKER_BREAK)
        interpreted = returned is not NOT_RETURNED
        if isinstance(fn, type) and not isinstance(result, _SCALARS) and fn is not type and \
                not any(result is a for a in args):
            if returned is NOT_RETURNED:
                self.refuse_finalizer(result)  # (made natively: no ``created`` event came before)
            self.made[id(result)] = result  # a new object of this call (``tuple(t)`` may hand back t)
        elif fn is object.__new__ and args and type(result) is args[0]:
            self.made[id(result)] = result  # ``cls.__new__(cls)`` (copyreg's ``__newobj__``): a new object too
        made = self.vm.made_iterator
        if made is not None and made.iterator is result:
            # a map/filter object whose steps the VM runs: its items are what the steps returned
            self.vm.made_iterator = None
            self.contents[id(result)] = (result, made.provs)
            self.yielded_values[id(result)] = made.values
            return None
        if type(result) is types.GeneratorType and returned is NOT_RETURNED and self.follow_generator(result):
            return None
        if fn_prov is not None:
            key = ("call", id(fn))
            seen = self.reads.get(key)
            if seen is None or seen[0] is not fn or seen[1] is not fn_prov:  # (else guarded already)
                self.on_read(fn, fn_prov)
                if fn_prov is UNKNOWN:
                    self.unsupported("calling an object of unknown origin")
                if not isinstance(fn, (types.FunctionType, types.MethodType)):
                    self.need(fn, fn_prov) if isinstance(fn, _IDENTITY_TYPES) else None
                self.reads[key] = (fn, fn_prov)
        if interpreted:
            if fn is next:
                self._mark_taken(args, kwargs)  # (``next(m)`` of a map whose step the VM ran)
            return returned
        if type(fn) is weakref.ref and not args and not kwargs and _replayable_path(fn_prov):
            return Expr(_dereference, (fn_prov,))  # ``ref()`` of a weak reference held outside (LSTM weights)
        prov = self.native_result(frame, fn, args, list(arg_provs), kwargs or {}, kw_provs or {}, result)
        self._mark_taken(args, kwargs)
        return prov

    def _grad_fn_call(self, fn, args, arg_provs, kwargs, kw_provs, grad_fn):
        """A call on the autograd node of a tensor the graph makes (a module's backward hook registers
        itself on its output's ``grad_fn``): replayed on the node each run of the graph makes."""
        name = getattr(fn, "__name__", "")
        if name in rules.GRAD_FN_FIXED:
            return None  # ``name()``: the kind of node, fixed by the graph
        if name not in rules.GRAD_FN_HOOKS or kwargs or len(args) != 1:
            self.unsupported(f"grad_fn.{name}() on a tensor the graph makes (MagPy replays only hook "
                             "registration on autograd nodes)")
        _, tensor, prov = self.grad_fns[id(grad_fn)]
        if tensor is None:
            self.unsupported(f"grad_fn.{name}() on the autograd node of an op's input")
        self.cap.autograd_nodes = True
        self.cap.side_effects.append(("call", _on_grad_fn, [self.template(tensor, prov), ("const", name),
                                                             self.frozen_template(args[0], arg_provs[0])], {}))
        return None  # the handle: a new object of this call (it may not leave it)

    def _own_data(self, tensor, value):
        """Is ``value`` the graph's ``tensor.data`` (after in-place ops on it)?"""
        entry, own = self.nodes.get(id(value)), self.nodes.get(id(tensor))
        if entry is None or entry[0] is not value or own is None or own[0] is not tensor:
            return False
        node = entry[1]
        while node.op in ("call_function", "call_method") and node.args and predicates.writes(node):
            node = node.args[0]  # (an in-place op returns the tensor it changed)
        return node.op == "call_function" and node.target is getattr and node.args == (own[1], "data")

    def _known_contents(self, obj):
        """A list, tuple or iterator made here whose elements' provenance is listed (snapshot as a
        list's own iteration is: ``start_iteration``)."""
        if type(obj) in (dict, set, *_RUN_ITERATORS):
            return False  # (a generator's entry lists what it yielded so far)
        entry = self.contents.get(id(obj))
        return entry is not None and entry[0] is obj and type(entry[1]) is list

    def native_result(self, frame, fn, args, arg_provs, kwargs, kw_provs, result):
        if _has_user_protocols(fn):
            self.unsupported(f"{type(fn).__qualname__} (a callable whose class defines __eq__, __hash__ or "
                             f"__getattr__) ran natively: MagPy has no rule for it")
        if getattr(fn, "__func__", fn) in _BOOKKEEPING or fn in rules.WHILE_COMPILING:
            return None
        if fn in MODE_EDITS or (fn in STACK_QUERIES and self.in_mode_region()):
            return self.stack_result(fn, result)
        if fn is _vmap_impl:
            return None  # (its lookaside recorded the node computing the result: ``vmap``)
        if getattr(fn, "__name__", "") == "__setitem__" and not kwargs and self.dispatched is None:
            # ``t.__setitem__(k, v)`` or ``Tensor.__setitem__(t, k, v)``: ``t[k] = v`` spelled as a call
            bound = _bound_self(fn)
            item = ((bound, None), *zip(args, arg_provs)) if bound is not None else tuple(zip(args, arg_provs))
            if len(item) == 3 and _is_tensor(item[0][0]) and (bound is not None or fn is torch.Tensor.__setitem__):
                (obj, obj_prov), (key, key_prov), (value, prov) = item
                return self.tensor_setitem(obj, obj_prov, key, key_prov, value, prov)
        prov = self.contract_call(fn, args, arg_provs, kwargs, kw_provs, result)
        if prov is not _NOT_WRITTEN:  # (a function marked for torch's compiler, a memoized one)
            return prov
        if fn is len and len(args) == 1 and not kwargs:
            length = self.unread_length(args[0])
            if length is not _NOT_WRITTEN:
                return length
        if isinstance(fn, type) and issubclass(fn, rules.TORCH_FUNCTION_SWITCHES):
            return None  # (a new switch of the call's own; entering it changes nothing for plain tensors)
        switch = _bound_self(fn)
        if isinstance(switch, rules.TORCH_FUNCTION_SWITCHES) and getattr(fn, "__name__", "") in ("__enter__", "__exit__"):
            self.torch_function_off += 1 if fn.__name__ == "__enter__" else -1
            return None
        if rules.is_profiler_annotation(fn):
            return None  # (its handle is a new object of the call, handed only to the matching exit)
        script = rules.torchscript_callee(fn, args)
        if script is not None:
            self.unsupported(f"TorchScript {callable_name(script)}() runs natively: MagPy cannot see inside "
                             "compiled TorchScript (graph break)")
        prov = self.context_var_call(fn, args, arg_provs, kwargs, result)
        if prov is _NOT_WRITTEN:
            prov = self.lock_call(fn, args, kwargs)
        if prov is _NOT_WRITTEN:
            prov = self.log_call(fn, args, arg_provs, kwargs, kw_provs)
        if prov is not _NOT_WRITTEN:
            return prov
        if type(fn) is functools.partial and _is_torch_callable(fn.func):
            # a partial of a torch function (``partial(F.conv2d, stride=2)``): the function, all arguments
            stored = self._element_provs(fn.args, None)
            stored_kw = self._dict_provs(fn.keywords, None)
            return self.native_result(frame, fn.func, (*fn.args, *args), [*stored, *arg_provs],
                                      {**fn.keywords, **kwargs}, {**stored_kw, **kw_provs}, result)
        if isinstance(fn, type) and _python_constructed(fn):
            return None  # a new object whose __new__/__init__ ran interpreted (their effects were seen)
        if fn is object.__new__ and len(args) == 1 and not kwargs and type(result) is args[0]:
            self.need(args[0], arg_provs[0])  # (which class)
            return None  # ``cls.__new__(cls)``: a new, empty object of the call
        if type(fn).__name__ == "method-wrapper" and fn.__name__ == "__init__" and not args and not kwargs \
                and type(fn.__self__).__init__ is not None:
            return None  # ``super().__init__()`` reaching object.__init__: nothing happens
        if fn is functools.partial and args and type(result) is functools.partial:
            # the arguments it stores keep their provenance (read back when the partial is called)
            if any(p is not None for p in arg_provs[1:]):
                self.contents[id(result.args)] = (result.args, list(arg_provs[1:]))
            if any(p is not None for p in kw_provs.values()):
                self.contents[id(result.keywords)] = (result.keywords, dict(kw_provs))
            return None  # a new object (the function it wraps was guarded where it was read)
        if fn in _FROM_ARRAY and args and type(args[0]).__module__ == "numpy" and _is_tensor(result):
            return self._tensor_of_array(fn, args, arg_provs, kwargs, kw_provs, result)
        if fn is builtins.__build_class__ or (fn is type and len(args) == 3):
            self.made_classes[id(result)] = result  # a class made by the call
            return None
        if fn is tuple.__new__ and len(args) == 2 and not kwargs and isinstance(result, tuple):
            # a namedtuple (or other tuple subclass) built from an iterable: the same elements
            if not self.holds(result, _elements(self, args[1], arg_provs[1])):
                self.unsupported(f"a {type(result).__name__} built from values of unknown origin")
            return None
        if isinstance(fn, type) and issubclass(fn, dict) and fn is not dict and type(result) is fn and len(args) <= 1 and \
                fn.__init__ is dict.__init__ and fn.__new__ is dict.__new__ and \
                (not args or type(args[0]) is dict):
            # ``ObjectDict(samples=x, rate=r)``: a dict of the program's own class, made as dict() makes one
            provs = dict(self._dict_provs(args[0], arg_provs[0])) if args else {}
            provs.update(kw_provs)
            self.contents[id(result)] = (result, provs)
            return None
        if fn in (dict, collections.OrderedDict) and len(args) == 1 and not kwargs and type(result) is fn \
                and type(args[0]) in (list, tuple) and self.dict_of_pairs(result, args[0], arg_provs[0]):
            return None
        if fn in (list, tuple) and len(args) == 1 and not kwargs and type(result) is fn:
            # a copy of an iterable: the same elements, with their provenance (pairs from zip/items too)
            elements = _elements(self, args[0], arg_provs[0])
            if elements is None and (arg_provs[0] is None or arg_provs[0] is UNKNOWN):
                elements = self.by_identity(result)  # (``map(f, xs)`` with f interpreted)
            if self.holds(result, elements):
                return None
        if fn is set and len(args) <= 1 and not kwargs and type(result) is set:
            self.sets[id(result)] = (result, [])  # tracked element by element from here on
            return self.set_added(result, args[0], arg_provs[0], many=True) if args else None
        if fn is iter and len(args) == 1 and not kwargs:
            return start_iteration(self, args[0], arg_provs[0], result)
        if fn is next and len(args) in (1, 2) and not kwargs:
            entry = self.iterators.get(id(args[0]))
            if len(args) == 2 and entry is not None and entry[0] is args[0] and entry[1] is not None \
                    and entry[2] >= len(entry[1]):
                return arg_provs[1]  # exhausted (its length is guarded): the default
            return next_element(self, args[0], arg_provs[0], result)
        if fn is zip and set(kwargs) <= {"strict"} and all(p is None for p in kw_provs.values()):
            kwargs, kw_provs = {}, {}  # strict= only decides whether mismatched lengths raise
        if fn is getattr and len(args) in (2, 3) and type(args[1]) is str and not kwargs:
            self.need(args[1], arg_provs[1])
            if hasattr(args[0], args[1]):
                return self.read_attr(args[0], arg_provs[0], args[1], result)
            if arg_provs[0] is not None:  # the default was used: the attribute must stay missing
                if arg_provs[0] is UNKNOWN:
                    self.unsupported("getattr() with a default on an object of unknown origin")
                self.guard(TruthGuard(Expr(hasattr, (arg_provs[0], Const(args[1]))), False))
            return arg_provs[2] if len(args) == 3 else None
        known = self.builtin_method(fn, args, arg_provs, kwargs, result)
        if known is not _NOT_WRITTEN:
            return known
        if fn in (map, filter) and len(args) >= 2 and not kwargs and _is_python_code(args[0]):
            # the callback runs later, natively driven: let it find the elements' paths by identity
            for a, p in zip(args[1:], arg_provs[1:]):
                for v, vp in zip(a, _elements(self, a, p) or []) if hasattr(a, "__len__") else ():
                    if _replayable_path(vp) and not isinstance(v, _SCALARS):
                        self.sources_of.setdefault(id(v), (v, vp))
            return UNKNOWN  # what it yields comes from interpreted code: tensors known by identity only
        if fn is zip and args and not set(kwargs) - {"strict"}:
            steps = zip_steps(self, args, arg_provs)
            if steps is not None:
                self.zips[id(result)] = (result, steps, 0)  # (items of a generator the VM runs: step by step)
                return None
        if fn in (enumerate, zip) and not kwargs and (fn is zip or len(args) == 1) and \
                any(_is_tensor(a) or self._known_contents(a) or (p is None and _module_sequence(a))
                    for a, p in zip(args, arg_provs)):
            # ``enumerate(t)`` / ``zip(t, xs)``: the rows of the tensor (or the tuples an iterator made
            # here yields: ``enumerate(combinations(ts, 2))``, the children of a Sequential made here),
            # paired as they will be yielded
            parts = [_elements(self, a, p) for a, p in zip(args, arg_provs)]
            if any(part is None for part in parts):
                self.unsupported(f"{fn.__name__}() over a tensor and values of unknown origin")
            rows = [[None, p] for p in parts[0]] if fn is enumerate else [list(r) for r in zip(*parts)]
            self.contents[id(result)] = (result, [("tuple", r) for r in rows])
            return None
        if not kwargs and chains(fn):
            return chain_contents(self, fn, args, arg_provs, result)
        if fn in _COMBINATORICS and args and set(kwargs) <= {"repeat"}:
            return combinatoric_contents(self, fn, args, arg_provs, kwargs, kw_provs, result)
        if fn in (enumerate, zip, reversed) and not kwargs and any(p is not None for p in arg_provs):
            for a, p in zip(args, arg_provs):
                if p is not None and p is not UNKNOWN:
                    self.iterables[p] = a
        if makes_weak_reference(fn) and not kwargs:
            prov = self.weak_reference(fn, args, arg_provs)
            if prov is not NOT_A_REFERENCE:
                return prov
        self_obj = _bound_self(fn)
        if self_obj is not None and self.grad_fns.get(id(self_obj), (None,))[0] is self_obj:
            return self._grad_fn_call(fn, args, arg_provs, kwargs, kw_provs, self_obj)
        if args and type(fn) is types.MethodDescriptorType and self.grad_fns.get(id(args[0]), (None,))[0] is args[0]:
            return self._grad_fn_call(fn, args[1:], arg_provs[1:], kwargs, kw_provs, args[0])
        if getattr(fn, "__name__", None) == "__getattribute__" and self_obj is not None and len(args) == 1 \
                and type(args[0]) is str and not kwargs and not _is_tensor(self_obj):
            # ``m.__getattribute__(name)`` (torch.backends' module proxies): reading the attribute
            self.need(args[0], arg_provs[0])
            method_prov = self.call_fn_prov
            obj_prov = method_prov.base if type(method_prov) is AttrSource else self.provenance_of(self_obj)
            if obj_prov is UNKNOWN and method_prov is None:
                obj_prov = None  # (a method read from a constant, as library globals are)
            if isinstance(obj_prov, (Source, Expr)) and type(getattr(type(self_obj), "__getattribute__", None)) \
                    is types.FunctionType and type(fn).__name__ == "method-wrapper":
                # ``super().__getattribute__(key)`` inside a class's own ``__getattribute__`` (a config mapping
                # names): the base class's read, which is what a guard reads again; an object read so is
                # known by that path (its methods bind to it)
                self.deref(self_obj, obj_prov)
                prov = Expr(getattr(fn.__objclass__, "__getattribute__"), (obj_prov, Const(args[0])))
                self.on_read(result, prov)
                if not isinstance(result, _SCALARS):
                    self.sources_of.setdefault(id(result), (result, prov))
                return prov
            return self.read_attr(self_obj, obj_prov, args[0], result)
        if isinstance(fn, types.BuiltinMethodType) and _is_tensor(self_obj):
            name = fn.__name__
            if result is self_obj and name in rules.TENSOR_CONVERSIONS and "memory_format" not in kwargs:
                return self._unconverted(self_obj, args, arg_provs, kwargs, kw_provs)
            if name in rules.TENSOR_TO_SCALAR and not kwargs:
                return self.scalar_of(None, (self_obj, *args), (None, *arg_provs), result, method=name)
            if name == "numpy" and not args and not kwargs:
                return self.numpy_of(self_obj)
            if name in rules.TENSOR_TO_PYTHON:
                self.unsupported(f"Tensor.{name}() turns tensor data into a Python value (graph break)")
            if name in rules.TENSOR_METADATA and not _is_tensor(result):
                self.node_of(self_obj)
                traced = self.dynamic_metadata(self_obj, name, args, result)
                if traced is not None:
                    return None if traced is _SHAPE_TRACED else traced
                self._offset_guard(name, self_obj, result)
                return None  # static metadata: the tensor's guard covers it
            if name in rules.TENSOR_AUTOGRAD_MARKS and not args and not kwargs:
                return self._autograd_mark(getattr(torch.Tensor, name), self_obj, self.input_paths.get(id(self_obj)))
            if name in rules.TENSOR_TEXT and type(result) is str:
                return self.traced_op(fn.__func__ if hasattr(fn, "__func__") else getattr(type(self_obj), name),
                                      (self_obj, *args), (None, *arg_provs))
            if not _holds_tensor(result) and result is not None:
                self.unsupported(f"Tensor.{name}() returns a Python value MagPy cannot replay")
            return self.record(None, (self_obj, *args), (None, *arg_provs), kwargs, kw_provs, result,
                               method=name) and None
        if fn in rules.SIZE_FUNCTIONS and args and _is_tensor(args[0]):
            fn = getattr(torch.Tensor, fn.__name__)  # ``torch.numel(t)`` is ``t.numel()``
        if type(fn).__name__ == "method_descriptor" and args and _is_tensor(args[0]):
            if result is args[0] and fn.__name__ in rules.TENSOR_CONVERSIONS and "memory_format" not in kwargs:
                return self._unconverted(args[0], args[1:], arg_provs[1:], kwargs, kw_provs)
            if fn.__name__ in rules.TENSOR_TO_SCALAR and not kwargs:
                return self.scalar_of(None, args, arg_provs, result, method=fn.__name__)
            if fn.__name__ in rules.TENSOR_METADATA and not _is_tensor(result):
                self.node_of(args[0], arg_provs[0])
                traced = self.dynamic_metadata(args[0], fn.__name__, args[1:], result)
                if traced is not None:
                    return None if traced is _SHAPE_TRACED else traced
                self._offset_guard(fn.__name__, args[0], result)
                return None
            if fn.__name__ in rules.TENSOR_AUTOGRAD_MARKS and len(args) == 1 and not kwargs:
                return self._autograd_mark(fn, args[0], arg_provs[0])
            if fn.__name__ in rules.TENSOR_TEXT and type(result) is str:
                return self.traced_op(fn, args, arg_provs)  # (the graph prints it again: an error message)
            if not _holds_tensor(result) and result is not None:
                self.unsupported(f"Tensor.{fn.__name__}() returns a Python value MagPy cannot replay")
            if fn.__name__ in rules.TENSOR_TO_PYTHON:
                self.unsupported(f"Tensor.{fn.__name__}() turns tensor data into a Python value (graph break)")
            self.record(None, args, arg_provs, kwargs, kw_provs, result, method=fn.__name__)
            return None
        if fn in rules.SCALAR_OF_TENSOR and len(args) == 1 and not kwargs and _is_tensor(args[0]):
            return self.scalar_of(fn, args, arg_provs, result)
        if fn is torch._C.TensorBase._make_subclass and len(args) >= 2 and isinstance(args[0], type) \
                and _is_tensor(args[1]):
            # ``nn.Parameter(t)`` made in ``forward``: a new leaf sharing t's data, made again each call
            self.need(args[0], arg_provs[0])
            make = vf.calling(functools.partial(fn, args[0]), f"make_{args[0].__name__}")
            return self.record(make, args[1:], arg_provs[1:], kwargs, kw_provs, result) and None
        if fn is len and len(args) == 1 and _is_tensor(args[0]) and not kwargs:
            traced = self.dynamic_metadata(args[0], "size", (0,), result)  # (else fixed by the guard)
            if traced is not None:
                return traced
        if fn in rules.TENSOR_PREDICATES and not kwargs and all(_is_tensor(a) for a in args):
            return self.scalar_of(fn, args, arg_provs, result)
        if fn in (float, int, bool, complex) and args and _is_tensor(args[0]):
            self.unsupported(f"{fn.__name__}(tensor) turns tensor data into a Python value (graph break)")
        makes_tensor = _is_tensor(result) or (isinstance(result, (tuple, list)) and
                                                any(_is_tensor(x) for x in result))
        module = getattr(fn, "__module__", None) or ""
        if fn in (object.__setattr__, setattr) and len(args) == 3 and not kwargs:
            self.need(args[1], arg_provs[1])
            self.write_attr(args[0], arg_provs[0], args[1], args[2], arg_provs[2])
            return None
        if fn in (object.__delattr__, delattr) and len(args) == 2 and not kwargs and type(args[1]) is str \
                and type(args[0]).__delattr__ is object.__delattr__:
            # ``delattr(obj, name)`` with no Python ``__delattr__`` on the way: ``del obj.name``
            self.need(args[1], arg_provs[1])
            self.delete_attr(args[0], arg_provs[0], args[1])
            return None
        if type(fn).__name__ == "method-wrapper" and fn.__name__ == "__setattr__" and len(args) == 2:
            # ``super().__setattr__(name, value)``: the object is found by identity
            self.need(args[0], arg_provs[0])
            self.write_attr(self_obj, self.provenance_of(self_obj), args[0], args[1], arg_provs[1])
            return None
        if fn in rules.PURE and not makes_tensor:
            return self._pure(fn, args, arg_provs, kwargs, kw_provs, result)
        if fn in rules.MUTATES or (self_obj is not None and not isinstance(self_obj, types.ModuleType)
                                   and getattr(type(self_obj), getattr(fn, "__name__", ""), None)
                                   in rules.MUTATES) or \
                changes(fn, None if isinstance(self_obj, types.ModuleType) else self_obj, args) is not None:
            return self._mutation(fn, args, arg_provs, kwargs, kw_provs, result)
        if fn in LIST_HELPERS:
            done = self.change_unread(fn, args[0], arg_provs[0], args[1:], arg_provs[1:], kwargs, result) \
                if args else _NOT_WRITTEN
            if done is not _NOT_WRITTEN:
                return done
            return self.outside_state.helper(fn, args, arg_provs, kwargs, kw_provs)
        if self_obj is torch.default_generator and getattr(fn, "__name__", "") == "get_state" and not args:
            # ``torch.get_rng_state()`` (saved to replay a forward, as checkpointing does): the graph
            # reads the generator where the program did, after the draws before it
            return self.record(torch.get_rng_state, (), (), None, None, result) and None
        # (after the mutations: ``xs.append(x)`` must not scan a long list each time)
        has_tensor = any(_is_tensor(a) or (type(a) in (list, tuple) and any(_is_tensor(x) for x in a))
                         for a in (*args, *kwargs.values()))
        if has_tensor and getattr(fn, "__name__", "") == "apply" and isinstance(self_obj, type) \
                and issubclass(self_obj, torch.autograd.Function):
            # a custom autograd.Function: one graph op (its forward and backward run as written); the
            # modules and functions it is handed are the same objects on every call (guarded)
            fixed = {k: a for k, a in enumerate(args) if isinstance(a, _PASSED_BY_IDENTITY)}
            for k, a in fixed.items():
                self.need(a, arg_provs[k])
            apply = _with_fixed(self_obj.apply, fixed, len(args)) if fixed else self_obj.apply
            rest = [k for k in range(len(args)) if k not in fixed]
            self.record(vf.calling(apply, f"apply_{self_obj.__name__}"), [args[k] for k in rest],
                        [arg_provs[k] for k in rest], kwargs, kw_provs, result)
            return None
        if has_tensor or makes_tensor or fn in rules.GRAPH:
            if _is_torch_callable(fn) and not makes_tensor and not _holds_tensor(result) \
                    and fn not in rules.GRAPH:
                name = getattr(fn, "__name__", "")
                if rules.is_type_predicate(fn) and isinstance(result, bool):
                    for a, p in zip(args, arg_provs):  # a predicate of tensor types: the guards fix it
                        if _is_tensor(a):
                            self.node_of(a, p)
                    return None
                if name in rules.TORCH_NOOPS:
                    return None
                self.unsupported(f"{callable_name(fn)}() returns a Python value computed "
                                 "from tensors")
            if _is_torch_callable(fn) or fn in rules.GRAPH or fn in rules.TENSOR_BUILTINS:
                self.record(fn, args, arg_provs, kwargs, kw_provs, result)
                if fn is torch._C._set_grad_enabled and len(args) == 1:
                    self.grad_mode = arg_provs[0]  # later ``is_grad_enabled()`` reads what was set
                return None
            if fn is print:
                self.unsupported(rules.PRINT_BREAK)
            if makes_tensor or fn not in rules.TENSOR_NEUTRAL:
                self.unsupported(f"{callable_name(fn)}() called on tensors: MagPy has no "
                                 "rule for it")
        if self_obj is _random._inst and getattr(fn, "__name__", "") in rules.RANDOM_DRAWS and not kwargs:
            return self.draw(fn, args, arg_provs)
        if self_obj is rules.NUMPY_RANDOM and getattr(fn, "__name__", "") in rules.NUMPY_DRAWS:
            return self.draw(fn, args, arg_provs, kwargs, kw_provs)
        if isinstance(self_obj, (np.random.RandomState, np.random.Generator)):
            self.unsupported(f"{callable_name(fn)}() draws from a numpy generator of the program's own")
        if module.split(".")[0] in rules.RANDOM_MODULES or (self_obj is not None and
                                                           type(self_obj).__module__ == "random"):
            self.unsupported(f"{callable_name(fn)}() draws Python random numbers")
        if fn is warnings.warn:
            return self.warning_call(args, arg_provs, kwargs, kw_provs)
        if fn in rules.REPLAY:
            self.cap.side_effects.append(("call", fn, [self.frozen_template(a, p) for a, p in zip(args, arg_provs)],
                                          {k: self.frozen_template(v, kw_provs.get(k)) for k, v in kwargs.items()}))
            return None
        if fn in rules.MUTATES or (self_obj is not None and getattr(type(self_obj), fn.__name__, None)
                                   in rules.MUTATES):
            return self._mutation(fn, args, arg_provs, kwargs, kw_provs, result)
        if rules.is_pure(fn):
            prov = self._pure(fn, args, arg_provs, kwargs, kw_provs, result)
            if type(result) is np.ndarray and result.base is None and result.size <= rules.PINNED_DATA_LIMIT \
                    and not any(a is result for a in args):
                # a new array (of constants, or computed from outside values): if the program writes
                # into it, what it held until then is guarded (``_write_made_array``)
                if prov is None:
                    self.made_arrays[id(result)] = (result, None, None)
                elif type(prov) is Expr and fn in rules.UNDEFINED_CONTENTS:
                    # (``np.empty``: what it holds is not the program's; its kind and shape are)
                    self.made_arrays[id(result)] = (result, Expr(_layout, (prov,)), _layout(result))
                elif type(prov) is Expr:
                    self.made_arrays[id(result)] = (result, prov, result.copy())
            return prov
        self.unsupported(f"{callable_name(fn)}() is a native call MagPy has no rule for "
                         "(it could have effects a replay would miss)")

    def _autograd_mark(self, method, tensor, prov):
        """``w.retain_grad()`` on a tensor the call was given: replayed by the mock on the tensor its path
        reads. On a tensor the call computes that requires grad, calls like this one run eagerly: a
        compiled graph takes the gradients of its ops inside itself, never through the tensors it hands
        back, and a graph break here would not help (ops before it may have used the tensor already)."""
        if not isinstance(prov, Source) and tensor.requires_grad:
            self.unsupported(f"Tensor.{method.__name__}() on a tensor the call computes: its gradient must "
                             "reach that very tensor (runs eagerly)", split=False)
        self.node_of(tensor, prov)
        self.cap.side_effects.append(("call", method, [self.template(tensor, prov)], {}))
        return None

    def _of_tensor_object(self, fn, args, arg_provs):
        """``str(t)``, ``format(t, ".2f")``: the graph formats the tensor again on every call (as f-strings
        do). ``id(t)``, ``hash(t)``: the tensor the call was given, by its path (the guard re-reads it);
        of a tensor the graph makes, a new object every call: unknown."""
        if fn in rules.TEXT_OF_VALUES:
            return self.traced_op(fn, args, arg_provs)
        tensor = args[0]
        source = self.input_paths.get(id(tensor)) if len(args) == 1 and _is_tensor(tensor) else None
        entry = self.nodes.get(id(tensor)) if source is not None else None
        if entry is not None and entry[0] is tensor:
            return Expr(fn, (source,))
        return UNKNOWN

    def _unconverted(self, tensor, args, arg_provs, kwargs, kw_provs):
        """``t.to(device=d, dtype=t.dtype)`` that returned ``t`` itself: it already was what it converts to
        (its dtype and device are guarded, the arguments are made so), so the call is a read of ``t``."""
        for a, p in [*zip(args, arg_provs), *((v, kw_provs.get(k)) for k, v in kwargs.items())]:
            if _is_tensor(a):
                self.node_of(a, p)  # (``t.to(other)``: other's dtype and device, guarded)
            else:
                self.need(a, p)
        prov = self.provenance_of(tensor)
        return prov if isinstance(prov, Source) else None  # (else the graph knows it by identity)

    def _tensor_of_array(self, fn, args, arg_provs, kwargs, kw_provs, result):
        """``torch.from_numpy(a)`` / ``as_tensor`` / ``tensor``: the entry program makes the tensor again from
        the array's provenance and hands it to the graph as an input."""
        prov = self.effective(args[0], arg_provs[0])
        if type(prov) is Traced:  # an array of tensor data (``t.numpy()``): made in the graph
            return self.record(fn, args, arg_provs, kwargs, kw_provs, result) and None
        if prov is None:  # an array of constants: copied each time, so the tensor's writes cannot reach it
            prov = Expr(np.copy, (Const(args[0].copy()),))
        elif not _replayable_path(prov):
            self.unsupported(f"{fn.__name__}() of an array of unknown origin")
        for a, p in zip(args[1:], arg_provs[1:]):
            self.need(a, p)
        for k, v in kwargs.items():
            self.need(v, kw_provs.get(k))
        make = _with_keywords(fn, kwargs) if kwargs else fn
        self.tensor_input(result, Expr(make, (prov, *map(Const, args[1:]))))
        return None

    def _offset_guard(self, name, tensor, value):
        """The tensor guard leaves out the storage offset; a program that asks for it depends on it."""
        if name != "storage_offset":
            return
        known = self.sources_of.get(id(tensor))
        if known is not None and known[0] is tensor:
            self.guard(ValueGuard(Expr(torch.Tensor.storage_offset, (known[1],)), value))

    def _pure(self, fn, args, arg_provs, kwargs, kw_provs, result):
        if args and not kwargs and (fn in rules.TEXT_OF_VALUES or fn in rules.IDENTITY_OF_VALUES) and \
                any(map(_holds_tensor, args)):
            return self._of_tensor_object(fn, args, arg_provs)
        if type(result) is bool and _is_torch_callable(fn) and any(map(_holds_tensor, args)) and \
                rules.is_type_predicate(fn):
            return None  # ``has_torch_function(ts)``: decided by tensor types, which the guards fix
        if fn is reversed and len(args) == 1 and not kwargs:
            entry = self.contents.get(id(args[0]))
            if entry is not None and entry[0] is args[0] and type(entry[1]) is list:
                self.contents[id(result)] = (result, entry[1][::-1])
                return None
            items = _elements(self, args[0], arg_provs[0]) if reads_backwards(args[0]) else None
            if items is not None:  # ``reversed(self.flows)``: the children, last first
                self.contents[id(result)] = (result, items[::-1])
                return None
        if fn is len and len(args) == 1 and not kwargs and (type(args[0]) in (list, dict) or
                                                            isinstance(args[0], tuple)) and arg_provs[0] is None:
            return None  # the length of a container made here is fixed by the guards of what filled it
        if fn in _TYPE_QUERIES and args and arg_provs[0] is None and not kwargs and \
                all(_pinned(a, p) for a, p in zip(args[1:], arg_provs[1:])):
            return None  # the type of a value the program made itself (whatever its contents came from)
        if fn is id and len(args) == 1 and not kwargs and arg_provs[0] is None:
            return None  # which object the program made (a deep copy's memo): not what it holds
        self_obj = _bound_self(fn)
        method_prov, self.call_fn_prov = self.call_fn_prov, None
        unbound = getattr(type(self_obj), getattr(fn, "__name__", ""), None) if self_obj is not None else None
        if unbound in rules.STATE_READS and not kwargs and method_prov is None \
                and all(p is None for p in arg_provs):
            return Expr(unbound, (Const(self_obj), *map(Const, args)))  # ``var.get()`` of a library's var
        if unbound is not None and method_prov is not None and not isinstance(self_obj, types.ModuleType):
            # a method bound to a value that has a provenance: the result depends on that value too.
            # The call is the class's function on the value's provenance (``m.group(1)`` of
            # ``m = PATTERN.search(s)`` is ``Match.group(PATTERN.search(s), 1)``). (A builtin whose
            # ``__self__`` has no such method — pybind's function records — is a plain function.)
            bound = self.bound_from.get(id(fn))
            base = bound[1] if bound is not None and bound[0] is fn else UNKNOWN
            if base is UNKNOWN or base is None or type(base) is Traced:
                return UNKNOWN
            self.guard(TypeGuard(base, type(self_obj)))
            return self._pure(unbound, (self_obj, *args), (base, *arg_provs), kwargs, kw_provs, result)
        if method_prov is None and unbound is not None and self.effective(self_obj, None) is not None:
            # a method of a container the call made that holds values from outside (``self.items()`` of
            # a model output): the result depends on what it holds, so it is that method on the container
            # rebuilt (``effective``), or unknown
            on_rebuilt = self._on_rebuilt(unbound, self_obj)
            if on_rebuilt is None:
                return UNKNOWN
            return self._pure(on_rebuilt, (self_obj, *args), (None, *arg_provs), kwargs, kw_provs, result)
        arg_provs = [None if _library_constant(a, p) else self.effective(a, p) for a, p in zip(args, arg_provs)]
        if self.reads_written_deeply(fn, args, arg_provs):
            return UNKNOWN
        provs = list(arg_provs) + list(kw_provs.values())
        if fn is torch.is_grad_enabled and self.grad_mode is not _NOT_WRITTEN:
            return self.grad_mode  # the program set it: as it set it
        if not kwargs and rules.is_pure(fn) and any(self.yields_traced(a) for a in args):
            return self.traced_op(fn, args, arg_provs)  # ``max(t.shape[0] for t in xs)`` of symbolic sizes
        if not args and not kwargs and _is_torch_callable(fn):
            return Expr(fn, ())  # torch's global state (grad mode, default dtype …): guarded where used
        if all(p is None for p in provs):
            return None
        if fn in _DICT_VIEWS and len(args) == 1 and type(args[0]) in (dict, collections.OrderedDict):
            if arg_provs[0] is UNKNOWN:
                return UNKNOWN  # (a view of a dict capture lost track of: nothing a guard can read again)
            return Expr(fn, (arg_provs[0] if arg_provs[0] is not None else Const(args[0]),))
        pure = rules.is_pure(fn)
        if not pure or any(p is UNKNOWN for p in provs):
            return UNKNOWN
        if kwargs:
            # (a class or function read by path is guarded by identity)
            fixed = {k: v for k, v in kwargs.items() if kw_provs.get(k) is None or
                     (isinstance(v, _IDENTITY_TYPES) and isinstance(kw_provs[k], Source))}
            if not all(map(_fixed_keyword, fixed.values())):
                return UNKNOWN
            # ``sorted(xs, reverse=True)``: constant keywords are part of the function; computed ones
            # (``np.arange(n, dtype=np.result_type(...))``) are operands after the positional ones
            computed = tuple(k for k in kwargs if k not in fixed)
            fn = _with_keywords(fn, fixed, computed)
            args = (*args, *(kwargs[k] for k in computed))
            arg_provs = (*arg_provs, *(kw_provs[k] for k in computed))
        if any(type(p) is Traced for p in provs):
            if fn in _TYPE_QUERIES:
                return None  # a number the graph computes has the type its tensor's (guarded) dtype gives
            return self.traced_op(fn, args, arg_provs)  # ``math.sqrt(t.item())``: computed in the graph
        if self_obj is not None and not isinstance(self_obj, types.ModuleType):
            if not isinstance(self_obj, rules.PURE_METHOD_TYPES):
                return UNKNOWN
            # a method of an immutable value read from a constant (``PATTERN.search(s)``): the bound
            # method is a constant too
        operands = tuple(p if p is not None else Const(a) for a, p in zip(args, arg_provs))
        for a, p in zip(args, arg_provs):
            if _is_tensor(a):
                return None
        return Expr(fn, operands)
