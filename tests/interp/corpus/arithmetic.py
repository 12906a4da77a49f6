"""Numbers and operators: every binary, unary, in-place and comparison operator on builtin types."""
import math
import operator
from fractions import Fraction
from decimal import Decimal

from . import program


@program(cases=[(7, 3), (-7, 3), (7, -3), (0, 5), (2**70, 3)])
def int_binary_ops(a, b):
    return [a + b, a - b, a * b, a // b, a % b, a ** 2, a << 3, a >> 1, a & b, a | b, a ^ b, a / b,
            divmod(a, b), pow(a, 3, 11)]


@program(cases=[(7, 0), (7.0, 0.0)])
def division_by_zero(a, b):
    return a / b


@program(args=(7, 0))
def floor_division_by_zero(a, b):
    return a // b


@program(args=(7, 0))
def modulo_by_zero(a, b):
    return a % b


@program(cases=[(2.5, 0.5), (-1.25, 3.0), (1e150, 10.0)])
def float_binary_ops(a, b):
    return [a + b, a - b, a * b, a / b, a // b, a % b, a ** 2, -a, +a, abs(a), round(a, 1)]


@program
def float_special_values():
    inf = float("inf")
    nan = float("nan")
    return [inf - inf, inf * 0, nan == nan, nan != nan, -0.0, 0.0 * -1, math.copysign(1.0, -0.0),
            inf > 1e308, [nan] == [nan], nan in [nan]]


@program(cases=[(5,), (-5,), (0,), (7,)])
def unary_ops(a):
    return [-a, +a, ~a, not a, abs(a)]


@program
def unary_positive_on_user_type():
    class Signed:
        def __pos__(self):
            return "pos"

        def __neg__(self):
            return "neg"

        def __invert__(self):
            return "inv"
    s = Signed()
    return [+s, -s, ~s]


@program
def inplace_ops_on_ints():
    x = 10
    x += 5
    x -= 3
    x *= 4
    x //= 5
    x **= 2
    x %= 50
    x <<= 2
    x >>= 1
    x &= 0xFF
    x |= 0x100
    x ^= 0x0F
    y = 7.0
    y /= 2
    return x, y


@program
def inplace_ops_on_list_mutate_alias():
    a = [1, 2]
    b = a
    a += [3]
    a *= 2
    t = (1, 2)
    u = t
    t += (3,)
    return a, b, a is b, t, u, t is u


@program
def matmul_operator_user_type():
    class M:
        def __init__(self, v):
            self.v = v

        def __matmul__(self, other):
            return M(self.v * other.v + 1)

        def __imatmul__(self, other):
            self.v = self.v - other.v
            return self
    a = M(3)
    b = M(4)
    c = a @ b
    a @= b
    return c.v, a.v


@program(cases=[(1, 2), (2, 2), (3, 2), ("a", "b")])
def comparison_ops(a, b):
    return [a < b, a <= b, a == b, a != b, a > b, a >= b]


@program
def comparison_type_error():
    return 1 < "a"


@program
def mixed_int_float_complex():
    return [1 + 2.0, 3 * 1j, (1 + 2j) * (3 - 1j), 2 ** -1, 10 / 4, 7 // 2.0, complex(1, 2).conjugate(),
            (1 + 2j) == complex(1, 2), 0.1 + 0.2 == 0.3]


@program
def bool_arithmetic():
    return [True + True, True * 10, False - 1, True / 2, True & False, True | False, True ^ True,
            type(True & True).__name__, type(True + True).__name__]


@program
def big_integers():
    f = 1
    for i in range(1, 40):
        f *= i
    return f, f % 1000003, len(str(f)), f.bit_length(), -f // 7, (-f) % 7


@program
def fractions_and_decimals():
    a = Fraction(1, 3)
    b = Fraction(1, 6)
    d = Decimal("1.10") + Decimal("2.20")
    return [a + b, a * 3, a < b, float(a - b), str(d), d * 2]


@program
def operator_module_functions():
    return [operator.add(1, 2), operator.mul("ab", 3), operator.itemgetter(1, 0)([5, 6]),
            operator.attrgetter("real")(3 + 4j), operator.neg(5), operator.truth([]),
            operator.index(7), operator.contains([1, 2], 2)]


@program(cases=[(17,), (-17,)])
def builtin_numeric_functions(n):
    return [abs(n), divmod(n, 5), pow(n, 2), round(n / 3, 3), int(n / 3), bin(n), hex(n), oct(n),
            n.bit_length(), float(n).is_integer(), math.gcd(n, 51), math.isqrt(abs(n))]


@program
def reflected_arithmetic_on_builtins():
    return [3 - 1.5, 2 ** 0.5, 5 % 2.5, 4 // 1.5, "ab" * 2, 3 * "ab", [0] * 3, 2 * (1,)]


@program
def string_arithmetic_errors():
    errors = []
    for op in (lambda: "a" + 1, lambda: "a" - "b", lambda: [1] * "x", lambda: {} + {}, lambda: -"s",
               lambda: ~1.5, lambda: None < None):
        try:
            op()
        except TypeError as e:
            errors.append(str(e))
    return errors


@program(cases=[(3,), (0,), (-2,)])
def shift_errors(n):
    try:
        return 1 << n
    except ValueError as e:
        return "ValueError: " + str(e)


@program
def int_float_conversion_edge_cases():
    return [int("  42 "), int("0x1f", 16), int(-3.9), float("1e3"), round(2.5), round(3.5), round(-0.5),
            int(True), 7 .__add__(1), (7).__radd__(1), (2.0).__rtruediv__(1.0)]


@program
def integer_overflow_error():
    return 10.0 ** 400
