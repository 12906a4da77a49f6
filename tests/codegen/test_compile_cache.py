"""A graph's C++ kernels share shared objects: gcc's fixed cost per object (the prelude's headers) is paid
once per object, and the objects of one graph compile in parallel."""
import ctypes

import pytest
import torch

from codegen_check import check
from magpy.codegen import compile_cache
from magpy.codegen.cpp.kernel import kernel_source


def adder(name: str, amount: int, padding: int = 0) -> str:
    """The source of a kernel adding ``amount`` to an int64, padded with ``padding`` characters of comment."""
    return (f'extern "C" void {name}(int64_t* out)\n{{\n    out[0] += {amount};\n}}\n'
            + ("// " + "x" * 76 + "\n") * (padding // 80))


def call(path, name, value):
    out = (ctypes.c_int64 * 1)(value)
    compile_cache.load_function(path, name, 1)(ctypes.addressof(out))
    return out[0]


@pytest.fixture
def objects(tmp_path, monkeypatch):
    """The sources each gcc process was given."""
    monkeypatch.setenv("MAGPY_CACHE_DIR", str(tmp_path))
    seen = []
    original = compile_cache._start
    monkeypatch.setattr(compile_cache, "_start",
                        lambda path, source, extra: seen.append((source, tuple(extra))) or original(path, source, extra))
    return seen


def test_small_kernels_share_one_object_and_each_is_found_by_its_name(objects):
    kernels = [(f"k{i}", adder(f"k{i}", i), ()) for i in range(6)]
    paths = compile_cache.compile_kernels(kernels, kernel_source, jobs=2)
    assert len(objects) == 1 and len(set(paths.values())) == 1
    assert [call(paths[f"k{i}"], f"k{i}", 100) for i in range(6)] == [100 + i for i in range(6)]


def test_an_object_starts_compiling_once_its_kernels_fill_it_and_the_rest_is_split_over_the_cores(objects):
    build = compile_cache.KernelBuild(kernel_source, jobs=3)
    quarter = compile_cache.CHUNK_CHARS // 4
    for i in range(4):
        assert objects == []
        build.add(f"k{i}", adder(f"k{i}", i, padding=quarter + 80))
    assert len(objects) == 1  # (gcc runs while the graph's later kernels are printed)
    for i in range(4, 6):
        build.add(f"k{i}", adder(f"k{i}", i, padding=compile_cache.CHUNK_MIN_CHARS))
    paths = build.finish()
    assert len(objects) == 3  # (the two left: one object each, on cores of their own)
    assert len({paths[f"k{i}"] for i in range(4)}) == 1 and paths["k4"] != paths["k5"]
    assert all(call(paths[name], name, 0) == int(name[1:]) for name in paths)


def test_a_kernel_gcc_rejects_fails_the_build_naming_the_error(objects):
    with pytest.raises(compile_cache.CompileError, match="undeclared|not declared"):
        compile_cache.compile_kernels([("good", adder("good", 1), ()),
                                       ("bad", 'extern "C" void bad(int64_t* out) { out[0] = missing; }', ())],
                                      kernel_source)


def test_kernels_wanting_other_flags_get_an_object_of_their_own(objects):
    kernels = [("plain", adder("plain", 1), ()), ("wide", adder("wide", 2), compile_cache.WIDE_VECTORS),
               ("plain2", adder("plain2", 3), ())]
    paths = compile_cache.compile_kernels(kernels, kernel_source)
    assert sorted(extra for _, extra in objects) == [(), compile_cache.WIDE_VECTORS]
    assert paths["plain"] == paths["plain2"] != paths["wide"]


def test_a_graph_compiled_again_finds_its_objects_in_the_cache(objects):
    def f(x, y):
        return (x.exp() * 2).sum(0), torch.relu(y) + 1, (x @ x).tanh()

    check(f, torch.randn(8, 8), torch.randn(9, 9))
    compiled = len(objects)
    assert 1 <= compiled <= 2   # (the exp and tanh want wide vectors; the rest share an object)
    check(f, torch.randn(8, 8), torch.randn(9, 9))
    assert len(objects) == compiled
