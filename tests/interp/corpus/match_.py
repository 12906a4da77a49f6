"""Structural pattern matching: literal, capture, wildcard, value, group, sequence (with star), mapping
(with **rest), class (positional via __match_args__ and keyword), or-patterns, as-patterns, guards."""
import collections
import dataclasses
import enum

from . import program


class Color(enum.Enum):
    RED = 1
    BLUE = 2


@dataclasses.dataclass
class Point:
    x: int
    y: int


class Shape:
    __match_args__ = ("kind", "size")

    def __init__(self, kind, size):
        self.kind = kind
        self.size = size


@program(cases=[(0,), (1,), ("hello",), (None,), (True,), (2.5,), (b"x",), (-3,)])
def literal_patterns(v):
    match v:
        case 0:
            return "zero"
        case 1:
            return "one"
        case "hello":
            return "greeting"
        case None:
            return "none"
        case True:
            return "true"
        case b"x":
            return "bytes"
        case -3:
            return "minus three"
        case _:
            return "other"


@program(cases=[(Color.RED,), (Color.BLUE,), (1,)])
def value_patterns(c):
    match c:
        case Color.RED:
            return "red"
        case Color.BLUE:
            return "blue"
    return "fell through"


@program(cases=[([],), ([1],), ([1, 2],), ([1, 2, 3, 4],), ((5, 6),), ("ab",), ([[1, 2], 3],)])
def sequence_patterns(seq):
    match seq:
        case []:
            return "empty"
        case [x]:
            return ("one", x)
        case [[a, b], c]:
            return ("nested", a, b, c)
        case [x, y]:
            return ("two", x, y)
        case [first, *middle, last]:
            return ("many", first, middle, last)
        case _:
            return "not a sequence"


@program(cases=[((1, 2, 3),), ([0, 0],), ([1],)])
def star_pattern_positions(seq):
    match seq:
        case [*init, 3]:
            return ("ends with 3", init)
        case [0, *_]:
            return "starts with 0"
        case [*everything]:
            return ("all", everything)


@program(cases=[({"type": "move", "x": 1, "y": 2},), ({"type": "stop"},),
                ({"type": "say", "text": "hi", "loud": True},),
                ({"other": 1},), ([1],)])
def mapping_patterns(event):
    match event:
        case {"type": "move", "x": x, "y": y}:
            return ("move", x, y)
        case {"type": "say", "text": str() as text, **rest}:
            return ("say", text, rest)
        case {"type": "stop"}:
            return "stop"
        case {}:
            return "some mapping"
    return "no match"


@program(cases=[(Point(0, 0),), (Point(3, 0),), (Point(1, 1),), (Point(2, 5),), ("not a point",)])
def class_patterns_keyword_and_positional(p):
    match p:
        case Point(x=0, y=0):
            return "origin"
        case Point(x=x, y=0):
            return ("on x axis", x)
        case Point(a, b) if a == b:
            return ("diagonal", a)
        case Point(x, y):
            return ("point", x, y)
        case str(s):
            return ("string", s)


@program(cases=[(Shape("circle", 3),), (Shape("square", 10),), (Shape("tri", 1),)])
def class_pattern_match_args(shape):
    match shape:
        case Shape("circle", r):
            return ("circle", r)
        case Shape(_, size) if size > 5:
            return ("big", size)
        case Shape(kind=k):
            return ("small", k)


@program(cases=[(1,), (2,), (3,), ("a",), ([1, "x"],)])
def or_and_as_patterns(v):
    match v:
        case 1 | 2 as small:
            return ("small", small)
        case int() | float() as num:
            return ("number", num)
        case [int() as n, str() as s] | [str() as s, int() as n]:
            return ("pair", n, s)
        case str() as text:
            return ("text", text)


@program(cases=[(5,), (-5,), (0,)])
def guards_evaluated_in_order(n):
    log = []

    def check(label, ok):
        log.append(label)
        return ok
    match n:
        case int() if check("positive?", n > 0):
            result = "positive"
        case int() if check("negative?", n < 0):
            result = "negative"
        case _:
            result = "zero"
    return result, log


@program(cases=[(42,), ([1, 2],)])
def capture_pattern_binds_after_match(v):
    match v:
        case [a, b]:
            pass
        case whole:
            a = b = whole
    return a, b


@program
def builtin_class_patterns():
    out = []
    for v in (1, 1.5, "s", b"b", [1], (2,), {"k": 1}, {3}, True, None, bytearray(b"x"), frozenset()):
        match v:
            case bool(b):
                out.append(("bool", b))
            case int(i):
                out.append(("int", i))
            case float(f):
                out.append(("float", f))
            case str(s):
                out.append(("str", s))
            case bytes(b):
                out.append(("bytes", b))
            case list(l):
                out.append(("list", l))
            case tuple(t):
                out.append(("tuple", t))
            case dict(d):
                out.append(("dict", d))
            case set(s) | frozenset(s):
                out.append(("set", type(s).__name__))
            case bytearray():
                out.append("bytearray")
            case _:
                out.append("other")
    return out


@program
def strings_are_not_sequences_for_patterns():
    out = []
    for v in ("ab", b"ab", bytearray(b"ab"), ["a", "b"], range(2)):
        match v:
            case [a, b]:
                out.append(("seq", a, b))
            case _:
                out.append("no")
    return out


@program
def mapping_pattern_uses_get_and_ignores_extra_keys():
    class Logged(dict):
        def get(self, key, default=None):
            calls.append(key)
            return super().get(key, default)
    calls = []
    match Logged(a=1, b=2, c=3):
        case {"a": 1, "b": b}:
            result = b
    return result


@program
def class_pattern_too_many_positional_errors():
    class NoArgs:
        pass
    match NoArgs():
        case NoArgs(x):
            return x


@program
def match_on_namedtuple_and_nested_structures():
    Pair = collections.namedtuple("Pair", "left right")
    data = [Pair(1, [2, 3]), Pair("a", {"k": Pair(0, 0)}), Pair(None, None)]
    out = []
    for item in data:
        match item:
            case Pair(int(l), [a, *rest]):
                out.append(("ints", l, a, rest))
            case Pair(str(), {"k": Pair(0, right)}):
                out.append(("nested", right))
            case Pair(None, _):
                out.append("none-left")
    return out


@program(cases=[((1, 2),), ((1, 2, 3),), ([1, 2, 3, 4, 5],)])
def match_with_len_checks(seq):
    match seq:
        case (a, b):
            return "two"
        case (a, b, c):
            return "three"
        case [_, _, *_]:
            return "three or more"


@program
def match_subject_evaluated_once():
    calls = []

    def subject():
        calls.append(1)
        return [1, 2]
    match subject():
        case [3, _]:
            r = "no"
        case [1, x]:
            r = x
    return r, len(calls)


@program(cases=[("go north",), ("look",), ("drop sword shield",), ("fly",)])
def match_command_split(command):
    match command.split():
        case ["go", direction]:
            return f"going {direction}"
        case ["look"]:
            return "looking"
        case ["drop", *objects]:
            return f"dropping {len(objects)}"
        case _:
            return f"unknown {command!r}"


@program
def match_mapping_duplicate_and_non_literal_keys():
    key = "dynamic"
    match {"dynamic": 1, 2: "two"}:
        case {2: value}:
            first = value
    match {"dynamic": 1}:
        case {"dynamic": v}:
            second = v
    return first, second, key


@program(cases=[((1, "a"),), ((2, "b"),), ((3, "c"),), ([4],)])
def group_patterns_and_parenthesised_alternatives(v):
    match v:
        case ((1 | 2) as n, ("a" | "b") as s):
            return ("group", n, s)
        case (3, (_)):
            return "three"
        case [(x)]:
            return ("single", x)


@program
def mapping_pattern_on_non_dict_mapping_and_rest():
    import collections.abc
    import types

    class Config(collections.abc.Mapping):
        def __init__(self, **kw):
            self._d = kw

        def __getitem__(self, k):
            return self._d[k]

        def __iter__(self):
            return iter(self._d)

        def __len__(self):
            return len(self._d)
    out = []
    for subject in (Config(mode="fast", level=3), types.MappingProxyType({"mode": "slow"}), {"other": 1}):
        match subject:
            case {"mode": "fast", **rest}:
                out.append(("fast", dict(rest)))
            case {"mode": m}:
                out.append(("mode", m))
            case {**everything}:
                out.append(("rest", everything))
    return out


@program
def class_pattern_with_bad_match_args_and_missing_attribute():
    class BadArgs:
        __match_args__ = ["x"]

        def __init__(self):
            self.x = 1

    class NoAttr:
        pass
    out = []
    match NoAttr():
        case NoAttr(missing=1):
            out.append("matched")
        case _:
            out.append("attribute missing means no match")
    try:
        match BadArgs():
            case BadArgs(x):
                out.append(x)
    except TypeError as e:
        out.append(str(e))
    return out
