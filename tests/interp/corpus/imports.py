"""Imports: import / from-import / as, dotted names, relative imports, import errors, __import__,
importlib, and top-level import statements (IMPORT_STAR) run as module code."""
import sys

from . import program, source_program


@program
def import_inside_function():
    import json
    import os.path
    return json.dumps({"a": [1, 2]}), os.path.basename("/x/y.txt"), "json" in sys.modules


@program
def from_import_and_aliases():
    from collections import OrderedDict as OD, deque
    from math import pi as PI, floor
    import itertools as it
    d = deque([1, 2])
    d.appendleft(0)
    return list(OD(a=1)), list(d), floor(PI), list(it.repeat("r", 2))


@program
def dotted_import_binds_top_package():
    import xml.dom.minidom
    import email.mime.text as text_module
    return xml.__name__, hasattr(xml, "dom"), text_module.__name__


@program
def relative_import_of_sibling_module():
    from . import _importee
    from ._importee import shout, public
    return shout("hi"), public, _importee.loaded_times, _importee.__name__.split(".")[-1]


@program
def relative_import_with_alias():
    from ._importee import shout as s
    return s("x")


@program
def import_missing_module():
    import module_that_does_not_exist_xyz  # noqa: F401


@program
def from_import_missing_name():
    from math import no_such_function  # noqa: F401


@program
def import_error_attributes():
    try:
        import not_a_real_module_abc  # noqa: F401
    except ModuleNotFoundError as e:
        return e.name, str(e), isinstance(e, ImportError)


@program
def dunder_import_and_importlib():
    import importlib
    m = __import__("string")
    sub = __import__("os.path", fromlist=["join"])
    mod = importlib.import_module("textwrap")
    return m.ascii_lowercase[:3], sub.join("a", "b"), mod.shorten("hello world here", 10)


@program
def import_module_attribute_mutation_is_visible():
    import types
    ns = types.SimpleNamespace(a=1)
    ns.b = 2
    return sorted(vars(ns).items())


@program
def import_binds_local_not_global():
    import fractions
    return "fractions" in globals(), "fractions" in locals()


@program
def global_import_statement():
    global heapq
    import heapq
    h = []
    heapq.heappush(h, 3)
    heapq.heappush(h, 1)
    return heapq.heappop(h)


module_body_star_import = source_program(globals(), """
from math import *
from ._importee import *
result = (floor(2.7), shout(public), "_private" in dir())
""")


module_body_plain_imports = source_program(globals(), """
import string as _s
from collections import namedtuple
P = namedtuple("P", "a b")
made = P(1, 2)
letters = _s.digits[:4]
""")
