"""Undoing what a run of the graph did, for the entry that must take it back: the random generators'
states, and copies of the inputs the graph writes in place (put back where the graph raised)."""
import random

import numpy as np
import torch


class Raised:
    """What an entry returns when its graph raised (an index past the end, on this call's data) and what
    it did was undone: the caller runs the original function, which raises as eager does — or, should it
    not, the graph was wrong (``error`` says how)."""

    __slots__ = ("error",)

    def __init__(self, error):
        self.error = error


def rng_state():
    cuda = torch.cuda.get_rng_state_all() if torch.cuda.is_initialized() else None
    return torch.get_rng_state(), cuda


def set_rng_state(state):
    cpu, cuda = state
    torch.set_rng_state(cpu)
    if cuda is not None:
        torch.cuda.set_rng_state_all(cuda)


def undoable(graph_fn, written, checks=()):
    """``graph_fn``, returning ``Raised`` where it raises, with the inputs at positions ``written`` (those
    it writes in place) put back as they were; the same where one of ``checks`` (``(output index,
    truth)``: a condition on data the first call took one way) comes out the other way."""
    if not written:
        def run(*inputs):
            try:
                return graph_fn(*inputs)
            except Exception as e:  # noqa: BLE001 - the call reruns eagerly and raises as eager does
                return Raised(e)
        return run

    def run_kept(*inputs):
        with torch.no_grad():
            kept = [inputs[k].clone() for k in written]
        try:
            out = graph_fn(*inputs)
            for index, truth in checks:
                if out[index] is not truth:
                    raise _OtherWay
            return out
        except Exception as e:  # noqa: BLE001 - (as above)
            with torch.no_grad():
                for k, t in zip(written, kept):
                    inputs[k].copy_(t)
            return Raised(e)
    return run_kept


class _OtherWay(Exception):
    """(a condition of the graph went the other way: its run is undone and the call misses)"""


def random_states():
    """Python's and numpy's global generators (the ones a call's draws come from)."""
    return random.getstate(), np.random.get_state()


def set_random_states(states):
    random.setstate(states[0])
    np.random.set_state(states[1])


def state_functions(cap):
    """(get, set) of the generators the call's draws come from: numpy's state is saved on every call
    only when the call draws from it."""
    numpy = any(getattr(getattr(fn, "func", fn), "__self__", None) is np.random.mtrand._rand
                for fn, _ in cap.draws)
    return (random_states, set_random_states) if numpy else (random.getstate, random.setstate)
