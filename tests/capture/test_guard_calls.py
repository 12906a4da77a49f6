"""What a guard calls in place of a library function: the same result, computed once while it can be."""
import inspect

import torch

import magpy
from magpy.emit.guard_calls import signature_of


class Layer:
    def chunk(self, hidden, extra=1):
        return hidden


def test_a_signature_a_guard_reads_again_follows_what_it_is_made_from():
    def f(a, b=2):
        return a

    assert signature_of(f) == inspect.signature(f) and signature_of(f) is signature_of(f)
    f.__defaults__ = (3,)
    assert signature_of(f) == inspect.signature(f) and str(signature_of(f)) == "(a, b=3)"
    f.__annotations__["a"] = int
    assert str(signature_of(f)) == "(a: int, b=3)"
    f.__signature__ = inspect.Signature()
    assert str(signature_of(f)) == "()"
    layer = Layer()
    assert signature_of(layer.chunk) == inspect.signature(layer.chunk)
    Layer.chunk.__defaults__ = (5,)
    assert str(signature_of(layer.chunk)) == "(hidden, extra=5)"


def test_a_program_counting_a_methods_parameters_recompiles_when_they_change():
    class Block(torch.nn.Module):
        def ff(self, x):
            return x * 2

        def forward(self, x):
            if len(inspect.signature(self.ff).parameters) == 1:
                return self.ff(x)
            return self.ff(x, x)

    block = Block()
    compiled = magpy.compile(block)
    x = torch.randn(3)
    torch.testing.assert_close(compiled(x), x * 2)
    torch.testing.assert_close(compiled(x), x * 2)
    block.ff = lambda a, b: a + b  # (an instance attribute: the method the program reads changes)
    torch.testing.assert_close(compiled(x), x + x)
