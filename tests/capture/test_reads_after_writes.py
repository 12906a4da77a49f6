"""A read of state the call itself wrote is the call's value, whatever way it reads it: by key, through a
view of the whole container (``values()``, ``items()``, a copy, its text), through the object's
``__dict__``, or an instance attribute found on a class the call changed. Each program writes outside state
and reads it back another way; eager and compiled run the same calls on identical state.
"""
import copy

import pytest
import torch

from twin import FromEnv, differential, fresh


class Box:
    pass


def counts_env():
    return {"steps": 0, "skipped": 2}


def group_env():
    return {"lr": 1.0, "momentum": 0.5}


def box_env():
    box = Box()
    box.n = 0
    box.scale = 2.0
    return box


def values_sum(x, d):
    d["steps"] += 1
    return x * sum(d.values())


def items_product(x, d):
    d["steps"] += 1
    total = 0
    for k, v in d.items():
        total += len(k) * v
    return x * total


def first_value_after_decay(x, group):
    group["lr"] *= 0.5
    return x * next(iter(group.values()))


def dict_copy(x, d):
    d["steps"] += 1
    return x * dict(d)["steps"], x * d.copy()["steps"], x * {**d}["steps"]


def text(x, d):
    d["steps"] += 1
    return x * len(str(d)), str(d)


def sorted_and_max(x, d):
    d["steps"] += 3
    return x * sorted(d.values())[-1], x * max(d.values())


def new_key_then_values(x, d):
    d["new"] = d.get("new", 0) + 1
    return x * sum(d.values()), tuple(d)


def list_item_then_sum(x, xs):
    xs[0] += 1
    return x * sum(xs), list(xs)


DICT_PROGRAMS = [values_sum, items_product, dict_copy, text, sorted_and_max, new_key_then_values]


@pytest.mark.parametrize("backend", ["eager", "magpy"])
@pytest.mark.parametrize("fn", DICT_PROGRAMS, ids=lambda f: f.__name__)
def test_a_dict_read_whole_after_a_write_by_key(fn, backend):
    def make():
        env = counts_env()
        return fn, env
    differential(make, fresh(lambda: (torch.randn(3), FromEnv()), 4), backend=backend)


def test_an_optimizer_group_read_after_decay():
    def make():
        env = group_env()
        return first_value_after_decay, env
    differential(make, fresh(lambda: (torch.randn(3), FromEnv()), 4))


def test_a_list_item_written_then_summed():
    def make():
        return list_item_then_sum, [1, 2, 3]
    differential(make, fresh(lambda: (torch.randn(3), FromEnv()), 4))


def vars_read(x, box):
    box.n += 1
    return x * vars(box)["n"]


def dict_attribute_read(x, box):
    box.n += 1
    return x * box.__dict__["n"] + box.__dict__["scale"]


def copied_object(x, box):
    box.n += 1
    twin = copy.copy(box)
    return x * twin.n


@pytest.mark.parametrize("backend", ["eager", "magpy"])
@pytest.mark.parametrize("fn", [vars_read, dict_attribute_read, copied_object], ids=lambda f: f.__name__)
def test_an_attribute_read_through_the_objects_dict_after_a_write(fn, backend):
    def make():
        env = box_env()
        return fn, env
    differential(make, fresh(lambda: (torch.randn(3), FromEnv()), 4), backend=backend,
                 observe=lambda box: dict(vars(box)))


@pytest.mark.parametrize("backend", ["eager", "magpy"])
def test_an_instance_reads_the_class_attribute_the_call_incremented(backend):
    def make():
        class Counter:
            count = 0

            def step(self, x):
                type(self).count += 1
                return x * self.count

        return Counter().step, Counter
    differential(make, fresh(lambda: (torch.randn(3),), 4), backend=backend,
                 observe=lambda cls: cls.count)


def nested_config_text(x, cfg):
    cfg["opt"]["lr"] *= 0.5
    return x * cfg["opt"]["lr"], str(cfg), sum(cfg["opt"].values())


def attribute_items(x, box):
    box.n += 1
    return x * sum(v for k, v in vars(box).items() if k == "n"), sorted(box.__dict__)


@pytest.mark.parametrize("backend", ["eager", "magpy"])
def test_a_container_holding_a_dict_the_call_wrote_read_whole(backend):
    def make():
        return nested_config_text, {"opt": {"lr": 1.0, "momentum": 0.5}}
    differential(make, fresh(lambda: (torch.randn(3), FromEnv()), 4), backend=backend)


@pytest.mark.parametrize("backend", ["eager", "magpy"])
def test_the_items_of_an_objects_dict_after_an_attribute_write(backend):
    def make():
        env = box_env()
        return attribute_items, env
    differential(make, fresh(lambda: (torch.randn(3), FromEnv()), 4), backend=backend,
                 observe=lambda box: dict(vars(box)))
