"""The C++ text every kernel starts with: includes, libmvec vector declarations, small helpers.

No torch headers: kernels see raw pointers only. Half floats are stored as ``_Float16`` and
bfloat16 as ``uint16_t``; both are computed in ``float``.
"""

# Functions glibc's libmvec provides vector variants of (checked on glibc 2.36). Declaring them
# with the simd attribute lets gcc vectorize loops that call them without -ffast-math.
LIBMVEC_UNARY = (
    "sin cos tan asin acos atan sinh cosh tanh asinh acosh atanh exp exp2 exp10 expm1 "
    "log log2 log10 log1p erf erfc cbrt"
).split()
LIBMVEC_BINARY = ("pow", "atan2", "hypot")


def _simd_declarations() -> str:
    lines = []
    for name in LIBMVEC_UNARY:
        lines.append(f'float {name}f(float) __attribute__((simd("notinbranch"), nothrow));')
        lines.append(f'double {name}(double) __attribute__((simd("notinbranch"), nothrow));')
    for name in LIBMVEC_BINARY:
        lines.append(f'float {name}f(float, float) __attribute__((simd("notinbranch"), nothrow));')
        lines.append(f'double {name}(double, double) __attribute__((simd("notinbranch"), nothrow));')
    return "\n".join(lines)


def _transpose_stages() -> str:
    """The shuffles of a 16x16 transpose: four rounds of swapping off-diagonal blocks."""
    lines = []
    for block in (8, 4, 2, 1):
        low = ", ".join(str(j if not j & block else 16 + j - block) for j in range(16))
        high = ", ".join(str(j + block if not j & block else 16 + j) for j in range(16))
        lines += [
            f"    for (int i = 0; i < 16; i++) if (!(i & {block})) {{",
            f"        magpy_u32x16 a = r[i], b = r[i + {block}];",
            f"        r[i] = MAGPY_SHUFFLE(a, b, {low});",
            f"        r[i + {block}] = MAGPY_SHUFFLE(a, b, {high});",
            "    }",
        ]
    return "\n".join(lines)


PRELUDE = r"""
#include <math.h>
#include <stdint.h>
#include <limits>

#if defined(__GNUC__) && defined(__x86_64__) && !defined(__clang__)
extern "C" {
%(simd)s
}
#endif

#define MAGPY_INLINE static inline __attribute__((always_inline))

MAGPY_INLINE float magpy_bf16_to_float(uint16_t v) {
    uint32_t bits = ((uint32_t)v) << 16;
    float out;
    __builtin_memcpy(&out, &bits, 4);
    return out;
}
MAGPY_INLINE uint16_t magpy_float_to_bf16(float f) {
    uint32_t bits;
    __builtin_memcpy(&bits, &f, 4);
    if (f != f) return (uint16_t)0x7fc0;
    bits += 0x7fff + ((bits >> 16) & 1);  // round to nearest even
    return (uint16_t)(bits >> 16);
}
MAGPY_INLINE float magpy_round_bf16(float f) { return magpy_bf16_to_float(magpy_float_to_bf16(f)); }
MAGPY_INLINE float magpy_round_f16(float f) { return (float)(_Float16)f; }

// NaN-propagating max/min, written as two selects: a chain of them still vectorizes, which
// ``(a != a || a > b) ? a : b`` does not.
template <typename T> MAGPY_INLINE T magpy_max(T a, T b) { T m = a > b ? a : b; return a != a ? a : m; }
template <typename T> MAGPY_INLINE T magpy_min(T a, T b) { T m = a < b ? a : b; return a != a ? a : m; }
template <typename T> MAGPY_INLINE T magpy_floordiv(T a, T b) {
    if (b == 0) return 0;
    T q = a / b;
    return (q * b != a && ((a < 0) != (b < 0))) ? q - 1 : q;
}
// Floor division of floats as eager (ATen's div_floor_floating) and Python compute it: from
// fmod, exact, then rounded — floor(a / b) rounds the quotient first (3.0 / 0.3 is 10.000001).
#define MAGPY_FLOAT_FLOORDIV(name, T, FMOD, FLOOR, COPYSIGN)                      \
    MAGPY_INLINE T name(T a, T b) {                                               \
        if (b == 0) return a / b;                                                 \
        T mod = FMOD(a, b);                                                       \
        T div = (a - mod) / b;                                                    \
        if (mod != 0 && ((b < 0) != (mod < 0))) div -= 1;                         \
        if (div == 0) return COPYSIGN((T)0, a / b);                               \
        T q = FLOOR(div);                                                         \
        return div - q > (T)0.5 ? q + 1 : q;                                      \
    }
MAGPY_FLOAT_FLOORDIV(magpy_floordivf, float, fmodf, floorf, copysignf)
MAGPY_FLOAT_FLOORDIV(magpy_floordivd, double, fmod, floor, copysign)
template <typename T> MAGPY_INLINE T magpy_truncdiv(T a, T b) { return b == 0 ? 0 : a / b; }
template <typename T> MAGPY_INLINE T magpy_mod(T a, T b) {
    if (b == 0) return 0;
    T r = a %% b;
    return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}
template <typename T> MAGPY_INLINE T magpy_fmod_int(T a, T b) { return b == 0 ? 0 : a %% b; }
MAGPY_INLINE float magpy_fmodf(float a, float b) {
    float r = fmodf(a, b);
    return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}
MAGPY_INLINE double magpy_fmodd(double a, double b) {
    double r = fmod(a, b);
    return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}
template <typename T> MAGPY_INLINE T magpy_ipow(T base, T exp) {
    T result = 1;
    if (exp < 0) return base == 1 ? 1 : (base == -1 ? ((exp & 1) ? -1 : 1) : 0);
    while (exp) {
        if (exp & 1) result *= base;
        base *= base;
        exp >>= 1;
    }
    return result;
}
template <typename T> MAGPY_INLINE T magpy_sign(T a) {
    return a > 0 ? (T)1 : (a < 0 ? (T)-1 : (T)0);  // NaN -> 0, as torch.sign
}
template <typename T> MAGPY_INLINE T magpy_abs(T a) { return a < 0 ? -a : a; }

// dst[16 * i + j] = src[stride * j + i] for a 16x16 tile of 4-byte elements: 16 vector loads,
// shuffles in registers, 16 vector stores (a gather per element is several times slower). Not inlined: a
// call per 256 elements costs nothing measurable, and gcc -O3 spent ~0.3 s on each inlined copy (a
// channels-last batch norm's kernel transposes three inputs: tridentnet's forward 8.5 -> 3.5 s of gcc).
typedef uint32_t magpy_u32x16 __attribute__((vector_size(64)));
#if defined(__clang__)
#define MAGPY_SHUFFLE(a, b, ...) __builtin_shufflevector(a, b, __VA_ARGS__)
#else
typedef int32_t magpy_i32x16 __attribute__((vector_size(64)));
#define MAGPY_SHUFFLE(a, b, ...) __builtin_shuffle(a, b, magpy_i32x16{__VA_ARGS__})
#endif
static __attribute__((noinline)) void magpy_transpose16_b32(const void* src, int64_t stride, void* dst) {
    magpy_u32x16 r[16];
    for (int i = 0; i < 16; i++) __builtin_memcpy(&r[i], (const uint32_t*)src + stride * i, 64);
%(transpose)s
    for (int i = 0; i < 16; i++) __builtin_memcpy((uint32_t*)dst + 16 * i, &r[i], 64);
}
""" % {"simd": _simd_declarations(), "transpose": _transpose_stages()}
