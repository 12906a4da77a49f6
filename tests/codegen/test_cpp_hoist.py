"""Arithmetic the innermost loop repeats for every element moves in front of it (``codegen/cpp/hoist.py``)."""
import torch
import torch.nn.functional as F

from magpy.backends import compile_graph
from magpy.codegen import mark, reports
from magpy.codegen.cpp.hoist import hoist_invariants


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


def test_what_divides_or_assigns_under_a_condition_or_reads_under_a_mask_stays():
    body = [
        "int64_t tmp1 = (x1 / ks0);",                 # (a division may trap where a mask skipped it)
        "int64_t tmp4 = (x0 + x1);",                  # (the loop's own index)
        "float masked5 = 0.0f;",
        "if (tmp4 < 3) {",
        "    float tmp2 = in_ptr0[x1];",              # (a load under a mask: out of range where it is false)
        "    masked5 = tmp2;",                        # (assigned under a condition)
        "}",
        "float tmp6 = magpy_unknown(x1);",            # (a call of unknown effect)
        "float tmp7 = out_ptr1[x1];",                 # (a buffer the body writes)
        "out_ptr1[x0 + 8*x1] = masked5 + tmp7;",
    ]
    before, inside = _hoisted(body)
    assert before == []
    assert inside[:len(body)] == [b.strip() for b in body]


def test_reads_at_outer_positions_move_with_their_wrapping_and_checks_where_the_loop_runs():
    body = [
        "int64_t tmp1 = in_ptr0[x1];",                # (a source row's position, per output row)
        "bool tmp2 = (tmp1 < static_cast<int64_t>(4));",
        "if (!(tmp2)) magpy_error = 1;",
        "int64_t idx3 = static_cast<int64_t>(tmp1);",
        "idx3 = idx3 < 0 ? 0 : (idx3 >= 4 ? 3 : idx3);",
        "int64_t tmp4 = in_ptr1[x0];",                # (the loop's own: stays, and so do its checks)
        "if (!((tmp4 < 8))) magpy_error = 1;",
        "float tmp5 = in_ptr2[x0 + 8*idx3];",
    ]
    before, inside = _hoisted(body)
    assert before == [b.strip() for b in body[:5]]
    assert inside[:3] == [b.strip() for b in body[5:]]
    lines = ["for (int64_t x1 = 0; x1 < 4; x1++) {", "    #pragma omp simd",
             "    for (int64_t x0 = 0; x0 < ks0; x0++) {"] + [f"        {b}" for b in body]
    hoist_invariants(lines, 3, 1, "x0", loads=False)  # (a loop that may be empty reads nothing in front)
    assert [l.strip() for l in lines[3:3 + len(body)]] == body


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


def test_a_0_dim_inputs_load_and_the_math_over_it_move_but_not_from_a_buffer_the_body_writes():
    before, inside = _hoisted([
        "float tmp1 = in_ptr3[0];",                   # (a 0-dim tensor: the step count)
        "float tmp2 = powf(0.9f, tmp1);",
        "float tmp3 = (1.0f / (1.0f - tmp2));",       # (a float division cannot trap)
        "float tmp4 = sqrtf(tmp3);",
        "float tmp5 = out_ptr0[0];",                  # (written below: stays)
        "int64_t tmp6 = (ks0 / 3);",                  # (an integer division may trap)
        "float tmp7 = in_ptr1[x0];",
        "out_ptr0[x0] = static_cast<float>(tmp7 * tmp4 + tmp5);",
    ])
    assert before == ["float tmp1 = in_ptr3[0];", "float tmp2 = powf(0.9f, tmp1);",
                      "float tmp3 = (1.0f / (1.0f - tmp2));", "float tmp4 = sqrtf(tmp3);"]
    assert inside[:2] == ["float tmp5 = out_ptr0[0];", "int64_t tmp6 = (ks0 / 3);"]


def test_an_update_scaled_by_a_0_dim_tensors_power_matches_eager_and_computes_the_power_once_per_row():
    def fn(p, g, step):
        return p - g * (1 - 0.9 ** step).rsqrt() * (1 - 0.999 ** step).sqrt()

    args = [torch.randn(6, 37), torch.randn(6, 37), torch.tensor(3.0)]
    since = mark()
    compiled = compile_graph(torch.fx.symbolic_trace(fn), args)
    for step in (3.0, 4.0, 10.0):
        args[2] = torch.tensor(step)
        torch.testing.assert_close(compiled(*args), fn(*args))
    (source,) = [s for r in reports(since=since) for s in r.kernel_sources.values() if "powf" in s]
    assert source.rindex("powf") < source.index("#pragma omp simd"), source
