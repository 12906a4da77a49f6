"""Strings: f-strings with conversions, format specs and nesting, str methods, %-formatting, bytes."""
from . import program


@program(cases=[(3.14159, "pi", 42), (-1.5, "", 0)])
def fstring_conversions_and_specs(num, text, n):
    return [f"{num}", f"{num:.2f}", f"{num:>10.3f}|", f"{text!r}", f"{text!s:*^9}", f"{n:05d}",
            f"{n:#x}", f"{n:b}", f"{n:,}", f"{num:e}", f"{text!a}", f"{n!r:>4}", f"{num:+.1%}"]


@program
def fstring_nested_format_spec():
    width, precision = 12, 3
    value = 2.718281828
    fill = "0"
    return f"{value:{width}.{precision}f}", f"{value:{fill}>{width}}", f"{'x':{'^'}{5}}"


@program
def fstring_expressions_and_self_documenting():
    a, b = 3, 4
    items = {"k": [1, 2]}
    return [f"{a + b}", f"{a=}", f"{a * b = }", f"{items['k'][1]}", f"{'yes' if a < b else 'no'}",
            f"{a!r}{b!s}", f"{{literal}} {a}", f"{len(items)=:>5}"]


@program
def fstring_with_non_ascii_and_unicode_conversion():
    s = "naïve ☕"
    return f"{s!a}", f"{s!r}", f"{s:>10}", f"{s.upper()}"


@program
def fstring_calls_format_dunder():
    class Cell:
        def __format__(self, spec):
            return f"<{spec or 'empty'}>"

        def __repr__(self):
            return "Cell()"

        def __str__(self):
            return "cell"
    c = Cell()
    return f"{c}", f"{c:abc}", f"{c!r}", f"{c!s}", f"{c!r:>8}", format(c, "q")


@program
def fstring_invalid_spec_error():
    return f"{3.5:d}"


@program
def fstring_many_parts():
    parts = list(range(12))
    return (f"{parts[0]}-{parts[1]}-{parts[2]}-{parts[3]}-{parts[4]}-{parts[5]}-{parts[6]}-{parts[7]}-"
            f"{parts[8]}-{parts[9]}-{parts[10]}-{parts[11]}")


@program
def str_format_method_and_percent():
    return ["{} {}".format(1, "a"), "{1}{0}".format("x", "y"), "{name:>5}".format(name="n"),
            "{0.real}".format(3 + 4j), "{:%}".format(0.25), "%s=%d" % ("k", 5), "%(a)s-%(b)r" % {"a": 1, "b": "2"},
            "%5.1f|%-4s|" % (2.345, "ab"), "%c%c" % (72, "i")]


@program
def percent_format_errors():
    out = []
    for thunk in (lambda: "%d" % "x", lambda: "%s %s" % ("only",), lambda: "%(k)s" % {}, lambda: "%z" % 1):
        try:
            thunk()
        except (TypeError, KeyError, ValueError) as e:
            out.append((type(e).__name__, str(e)))
    return out


@program
def str_methods():
    s = "  Hello, World  "
    return [s.strip(), s.lower(), s.split(","), s.replace("l", "L", 2), s.find("o"), s.rfind("o"),
            s.count("l"), s.strip().startswith("Hell"), s.center(20, "."), "-".join(["a", "b", "c"]),
            "a1b2".isalnum(), "ABC".casefold(), s.partition(","), "x".zfill(4), "tItle cAse".title(),
            "a\tb".expandtabs(4), "line1\nline2".splitlines(), s.strip().removeprefix("Hello")]


@program
def string_indexing_and_slicing():
    s = "abcdefgh"
    return [s[0], s[-1], s[2:5], s[::-1], s[::3], s[-3:], s[:100], s[5:2], s[1:-1:2]]


@program
def string_index_error():
    return "abc"[10]


@program
def string_immutability_error():
    s = "abc"
    s[0] = "z"


@program
def bytes_and_encoding():
    b = "héllo".encode("utf-8")
    return [b, len(b), b.decode("utf-8"), b[1], b[1:3], bytes([65, 66]), b"ab" + b"cd", b.hex(),
            bytearray(b"xy") + b"z", "abc".encode("ascii").upper(), b"%d-%s" % (5, b"q")]


@program
def decode_error():
    return b"\xff\xfe\xfa".decode("utf-8")


@program
def string_comparison_and_membership():
    return ["abc" < "abd", "Z" < "a", "" < "a", "ab" in "cabd", "x" not in "abc", "a" * 0 == "",
            sorted(["banana", "Apple", "cherry"]), sorted(["banana", "Apple", "cherry"], key=str.lower),
            max("hello"), min("hello")]


@program
def string_building_in_loop():
    out = ""
    for i in range(5):
        out += str(i) * i
    parts = []
    for c in "abc":
        parts.append(c.upper())
    return out, "".join(parts), str(12345)[::-1], repr("quote'\"")


@program
def multiline_and_raw_strings():
    text = """first
    second\tline"""
    raw = r"C:\new\table"
    return text, raw, len(raw), "\x41\u00e9\N{GREEK SMALL LETTER ALPHA}"


@program
def str_and_repr_of_containers():
    data = [1, "two", 3.0, None, (4,), {"k": [5]}, {6}, b"7", True]
    return str(data), repr(data), ascii(["é"]), str(()), str([]), str({}), str(set())
