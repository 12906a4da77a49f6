"""Arithmetic the innermost loop repeats for every element moves in front of it (``codegen/cpp/hoist.py``)."""
import re

import pytest
import torch
import torch.nn.functional as F

import magpy
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


# ----------------------------------------------------------------------------------------------
# Upsampling: rows' positions in front of the inner loop, columns' once per kernel, eager's values

UPSAMPLES = [
    dict(mode="bilinear", align_corners=True, scale_factor=2),
    dict(mode="bilinear", align_corners=False, scale_factor=1.7),
    dict(mode="bilinear", align_corners=True, size=(9, 13)),
    dict(mode="bilinear", align_corners=False, size=(4, 3)),
    dict(mode="nearest", scale_factor=2),
    dict(mode="nearest", size=(11, 7)),
]


def _upsample_case(case):
    return "-".join(f"{k}={v}" for k, v in case.items())


def _trained(fn, x):
    """The compiled ``fn``'s output and gradient against eager's, for two random gradients; the
    reports of the graphs compiled."""
    magpy.reset()
    since = mark()
    compiled = magpy.compile(fn, options={"codegen": "cpp"})
    for _ in range(2):
        expected = fn(x)
        grad = torch.randn_like(expected)
        got = compiled(x)
        torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-5)
        torch.testing.assert_close(torch.autograd.grad(got, x, grad)[0], torch.autograd.grad(expected, x, grad)[0],
                                   rtol=1e-5, atol=1e-5)
    found = reports(since=since)
    assert len(found) == 2 and all(r.graph_fallback is None for r in found), [str(r) for r in found]
    return found


@pytest.mark.parametrize("channels_last", [False, True], ids=["nchw", "channels_last"])
@pytest.mark.parametrize("case", UPSAMPLES, ids=_upsample_case)
def test_an_upsample_and_its_gradient_match_eager_at_odd_sizes(case, channels_last):
    x = torch.randn(2, 3, 5, 7)
    if channels_last:
        x = x.contiguous(memory_format=torch.channels_last)
    x.requires_grad_()
    _trained(lambda x: F.interpolate(x, **case) * 2, x)


@pytest.mark.parametrize("channels_last", [False, True], ids=["nchw", "channels_last"])
def test_an_upsample_then_pad_matches_eager(channels_last):
    x = torch.randn(1, 8, 6, 10)
    if channels_last:
        x = x.contiguous(memory_format=torch.channels_last)
    x.requires_grad_()
    _trained(lambda x: F.pad(F.interpolate(x, scale_factor=2, mode="bilinear", align_corners=True), (1, 1, 1, 1)), x)


def _main_nest(source: str) -> int:
    """Where the loops over the output begin: the first loop at the function's level after the
    last column array is filled."""
    fills = [m.end() for m in re.finditer(r"col_\w+\[x\d+( - \d+)?\] = ", source)]
    return source.index("\n    for (int64_t x", max(fills, default=0))


def test_an_upsample_computes_its_columns_once_and_its_rows_outside_the_inner_loop():
    x = torch.randn(1, 8, 6, 10, requires_grad=True)
    forward, backward = _trained(lambda x: F.interpolate(x, scale_factor=2, mode="bilinear", align_corners=True), x)
    for report in (forward, backward):
        # (the kernel that gathers — or, in the backward, scatters — through the positions)
        (source,) = [s for s in report.kernel_sources.values() if "idx" in s]
        # Each output column's source positions and weight, checked, fill arrays in front of the loops
        # over the output...
        assert "col_" in source and source.index("magpy_error = 1") < _main_nest(source), source
        # ... that the innermost loop reads; nothing there checks a position (the rows' are found
        # outside it, once per row or once per kernel).
        inner = re.findall(r"for \(int64_t (x\d) = \d+; \1 < \d+; \1\+\+\) \{", source)[-1]
        body = source[source.rindex(f"for (int64_t {inner} = "):]
        assert re.search(rf"= col_\w+\[{inner}\];", body) and "magpy_error" not in body.split("}")[0], source
