"""Arithmetic the innermost loop repeats for every element moves in front of it (``codegen/cpp_hoist.py``)."""
import torch
import torch.nn.functional as F

from magpy.backends import compile_graph
from magpy.codegen import mark, reports
from magpy.codegen.cpp_hoist import hoist_invariants


def _hoisted(body, variable="x0"):
    lines = ["for (int64_t x1 = 0; x1 < 4; x1++) {", "    #pragma omp simd",
             "    for (int64_t x0 = 0; x0 < 8; x0++) {"] + [f"        {b}" for b in body]
    hoist_invariants(lines, 3, 1, variable)
    loop = lines.index("    #pragma omp simd")
    return [l.strip() for l in lines[1:loop]], [l.strip() for l in lines[loop + 2:]]


def test_index_arithmetic_over_outer_indices_moves_with_its_wrapping_lines():
    before, inside = _hoisted([
        "float tmp1 = static_cast<float>(x1);",
        "int64_t idx2 = static_cast<int64_t>(magpy_max(tmp1 * 0.5f, 0.0f));",
        "idx2 = idx2 < 0 ? idx2 + 4 : idx2;",
        "float tmp3 = in_ptr0[x0 + 8*idx2];",
        "float tmp4 = (tmp3 * tmp1);",
    ])
    assert before == ["float tmp1 = static_cast<float>(x1);",
                      "int64_t idx2 = static_cast<int64_t>(magpy_max(tmp1 * 0.5f, 0.0f));",
                      "idx2 = idx2 < 0 ? idx2 + 4 : idx2;"]
    assert inside == ["float tmp3 = in_ptr0[x0 + 8*idx2];", "float tmp4 = (tmp3 * tmp1);"]


def test_what_the_index_loads_divides_or_assigns_under_a_condition_stays():
    body = [
        "int64_t tmp1 = (x1 / ks0);",                 # (a division may trap where a mask skipped it)
        "float tmp2 = in_ptr0[x1];",                  # (a load)
        "float tmp3 = (tmp2 + 1.0f);",                # (over a load)
        "int64_t tmp4 = (x0 + x1);",                  # (the loop's own index)
        "float masked5 = 0.0f;",
        "if (tmp4 < 3) {",
        "    masked5 = 2.0f;",                        # (assigned under a condition)
        "}",
        "float tmp6 = magpy_unknown(x1);",            # (a call of unknown effect)
    ]
    before, inside = _hoisted(body)
    assert before == []
    assert inside[:5] == [b.strip() for b in body[:5]]


def test_a_channels_last_upsample_and_pad_match_eager():
    def fn(x):
        up = F.interpolate(x, scale_factor=2, mode="bilinear", align_corners=True)
        return torch.nn.functional.conv2d(F.pad(up, (1, 1, 1, 1)), torch.ones(4, 8, 3, 3) / 72)

    x = torch.randn(1, 8, 6, 10).to(memory_format=torch.channels_last)
    since = mark()
    compiled = compile_graph(torch.fx.symbolic_trace(fn), [x])
    for _ in range(2):
        x = torch.randn(1, 8, 6, 10).to(memory_format=torch.channels_last)
        torch.testing.assert_close(compiled(x), fn(x), rtol=1e-4, atol=1e-5)
    sources = [s for r in reports(since=since) for s in r.kernel_sources.values()]
    # (the upsample's source positions, computed per pixel in front of the loop over channels)
    assert any(s.index("static_cast<float>") < s.index("#pragma omp simd") for s in sources
               if "static_cast<float>" in s and "#pragma omp simd" in s), sources
