"""Whose guard is it: the user's program's, or the machinery of the libraries it calls?

A call of a small CNN collects a hundred guards, most of them made by torch's own code as it runs
(``self._compiled_call_impl is None``, the hook dictionaries, the checks of ``__getattr__``). They are
needed, but they are not what the user wrote. ``magpy.explain`` shows by default the guards of the
user's program, decided by what each guard is:

- made by a read in the user's files (the innermost running frame's file is the user's:
  ``user_files.is_user_file``), or
- on a value the user's code read, wherever the guard was made: ``self.conv`` is read in ``forward``
  and guarded inside ``nn.Module.__getattr__``, or
- on the call's inputs alone: its arguments and the items of packed ones (``x``, ``args[0]``), or
- (a branch on tensor data) decided at a place in the user's files.

``OriginsObserver`` records what the first two need while the call runs: the file each guard was made
in, and the paths the user's frames read.
"""
from ..interp.tracking import NOT_RETURNED
from .observer import CaptureObserver
from .sources import ArgSource, ItemSource, Source, paths_in
from .user_files import is_user_file


class OriginsObserver(CaptureObserver):
    """The capture observer, also noting where each guard was made and what the user's code read."""

    def __init__(self, fn_globals):
        super().__init__(fn_globals)
        self.origins = {}          # guard key -> the file of the frame whose read made it (None: no frame)
        self.users_paths = set()   # paths of the values the user's own frames read
        self.failed_inside = False  # capture gave up in a frame the root frame called, not in the root

    def _in_users_file(self):
        frame = self.vm.frame
        return frame is not None and is_user_file(frame.filename)

    def guard(self, g):
        key = g.key()
        fresh = key not in self.cap.guards
        super().guard(g)
        if fresh and key in self.cap.guards:
            frame = self.vm.frame
            self.origins[key] = frame.filename if frame is not None else None

    def unsupported(self, reason, frame=None, split=True):
        if self.cap.unsupported is None:
            self.failed_inside = (frame or self.frame) is not self.root
        super().unsupported(reason, frame, split)

    def _read(self, prov):
        if isinstance(prov, Source) and self._in_users_file():
            self.users_paths.add(prov)
        return prov

    def read_global(self, frame, name, value):
        return self._read(super().read_global(frame, name, value))

    def read_cell(self, frame, cell, name, value):
        return self._read(super().read_cell(frame, cell, name, value))

    def read_attr(self, obj, obj_prov, name, value, computed=NOT_RETURNED):
        return self._read(super().read_attr(obj, obj_prov, name, value, computed))

    def read_item(self, obj, obj_prov, key, key_prov, value, computed=NOT_RETURNED):
        return self._read(super().read_item(obj, obj_prov, key, key_prov, value, computed))


def _an_input(path) -> bool:
    """Is ``path`` one of the call's arguments, or an item of one (``args[0]`` of a ``*args``)?"""
    return type(path) is ArgSource or (type(path) is ItemSource and type(path.base) is ArgSource)


def users_guard(g, origin, users_paths) -> bool:
    """Is guard ``g`` (made in file ``origin``) one of the user's program rather than the libraries'?
    (See the module's docstring.)"""
    if origin is not None and is_user_file(origin):
        return True
    if g.expr in users_paths:
        return True
    paths = paths_in(g.expr)
    return bool(paths) and all(_an_input(p) for p in paths)
