"""Generators: yield, yield from, send/throw/close through the frame's own handlers, generator expressions,
return values, StopIteration semantics (PEP 479), generators returned to the caller."""
import itertools

from . import program


def countdown(n):
    while n > 0:
        yield n
        n -= 1
    return "done"


@program
def simple_generator():
    return list(countdown(4)), sum(countdown(10))


@program(args=(5,))
def generator_returned_to_caller(n):
    # The oracle drains it: the generator runs after the program has returned.
    for i in range(n):
        yield i * i


@program
def generator_return_value_via_stop_iteration():
    g = countdown(2)
    out = [next(g), next(g)]
    try:
        next(g)
    except StopIteration as e:
        out.append(("stop", e.value))
    out.append(next(g, "exhausted"))
    return out


@program
def yield_from_returns_subgenerator_value():
    def outer():
        result = yield from countdown(3)
        yield ("sub returned", result)
        more = yield from [10, 20]
        yield ("list returned", more)
    return list(outer())


@program
def send_values_into_generator():
    def averager():
        total = count = 0
        average = None
        while True:
            value = yield average
            if value is None:
                return average
            total += value
            count += 1
            average = total / count
    g = averager()
    first = next(g)
    seen = [first, g.send(10), g.send(20), g.send(60)]
    try:
        g.send(None)
    except StopIteration as e:
        seen.append(e.value)
    return seen


@program
def send_non_none_to_just_started_generator():
    g = countdown(3)
    g.send(1)


@program
def throw_caught_inside_generator():
    def gen():
        while True:
            try:
                yield "ready"
            except ValueError as e:
                yield f"handled {e}"
    g = gen()
    return [next(g), g.throw(ValueError("boom")), next(g), g.throw(ValueError("again"))]


@program
def throw_uncaught_propagates():
    def gen():
        yield 1
        yield 2
    g = gen()
    next(g)
    try:
        g.throw(KeyError("k"))
    except KeyError as e:
        return repr(e), next(g, "closed-after-throw")


@program
def throw_into_unstarted_generator():
    def gen():
        try:
            yield 1
        except Exception:
            yield "never reached"
    g = gen()
    try:
        g.throw(ValueError("early"))
    except ValueError as e:
        return str(e), list(g)


@program
def close_runs_finally_and_generator_exit():
    log = []

    def gen():
        try:
            yield 1
            yield 2
        except GeneratorExit:
            log.append("exit")
            raise
        finally:
            log.append("finally")
    g = gen()
    next(g)
    g.close()
    g.close()
    return log, list(g)


@program
def close_generator_that_yields_is_error():
    def gen():
        try:
            yield 1
        except GeneratorExit:
            yield "refuse"
    g = gen()
    next(g)
    g.close()


@program
def throw_through_yield_from():
    log = []

    def inner():
        try:
            yield "inner-1"
            yield "inner-2"
        except ValueError:
            log.append("inner caught")
            yield "inner-recovered"
        return "inner-ret"

    def outer():
        r = yield from inner()
        log.append(("outer got", r))
        yield "outer-end"
    g = outer()
    return [next(g), g.throw(ValueError), next(g), next(g, None)], log


@program
def close_through_yield_from():
    log = []

    def inner():
        try:
            yield 1
        finally:
            log.append("inner finally")

    def outer():
        try:
            yield from inner()
        finally:
            log.append("outer finally")
    g = outer()
    next(g)
    g.close()
    return log


@program
def send_through_yield_from():
    def echo():
        received = []
        while True:
            x = yield len(received)
            if x is None:
                return received
            received.append(x)

    def outer():
        result = yield from echo()
        yield result
    g = outer()
    return [next(g), g.send("a"), g.send("b"), g.send(None)]


@program
def yield_from_a_custom_iterator_with_send():
    class It:
        def __init__(self):
            self.sent = []

        def __iter__(self):
            return self

        def __next__(self):
            return self.send(None)

        def send(self, v):
            self.sent.append(v)
            if len(self.sent) > 3:
                raise StopIteration("custom-return")
            return len(self.sent)

    def outer():
        r = yield from It()
        yield r
    g = outer()
    return [next(g), g.send("x"), g.send("y"), g.send("z")]


@program
def stop_iteration_inside_generator_is_runtime_error():
    def gen():
        yield 1
        raise StopIteration("leak")
    return list(gen())


@program
def next_inside_generator_leaking_stop_iteration():
    def gen(it):
        while True:
            yield next(it)
    return list(gen(iter([1, 2])))


@program
def generator_expression_basics():
    squares = (x * x for x in range(6) if x % 2 == 0)
    first = next(squares)
    rest = list(squares)
    return first, rest, sum(x for x in range(5)), max((len(w), w) for w in ["a", "bbb", "cc"])


@program
def generator_expression_first_iterable_evaluated_eagerly():
    log = []

    def source():
        log.append("source called")
        return [1, 2]
    g = (x for x in source())
    log.append("after creation")
    return list(g), log


@program
def generator_expression_of_non_iterable_fails_at_creation():
    try:
        (x for x in 5)
    except TypeError as e:
        return str(e)


@program
def generator_state_and_frame():
    import inspect

    def gen():
        yield 1
    g = gen()
    states = [inspect.getgeneratorstate(g)]
    next(g)
    states.append(inspect.getgeneratorstate(g))
    list(g)
    states.append(inspect.getgeneratorstate(g))
    return states, g.__name__


@program
def generator_running_reentrancy_error():
    def gen():
        yield next(me)
    me = gen()
    try:
        next(me)
    except ValueError as e:
        return str(e)


@program
def infinite_generator_with_islice():
    def naturals():
        n = 0
        while True:
            yield n
            n += 1
    return list(itertools.islice(naturals(), 3, 8)), list(zip("ab", naturals()))


@program
def generator_with_try_finally_exhausted_normally():
    log = []

    def gen():
        try:
            for i in range(2):
                yield i
        finally:
            log.append("cleanup")
    return list(gen()), log


@program
def yield_as_expression_values():
    def gen():
        x = yield
        y = yield x * 2
        z = (yield) or "default"
        yield (x, y, z)
    g = gen()
    next(g)
    return [g.send(5), g.send("y"), g.send(None)]


@program
def generator_in_class_method_and_closure():
    class Tree:
        def __init__(self, value, children=()):
            self.value = value
            self.children = children

        def walk(self):
            yield self.value
            for c in self.children:
                yield from c.walk()
    t = Tree(1, [Tree(2, [Tree(3)]), Tree(4)])
    return list(t.walk())


@program
def generator_pipeline():
    def numbers():
        yield from range(10)

    def evens(src):
        return (n for n in src if n % 2 == 0)

    def scaled(src, k):
        for v in src:
            yield v * k
    return list(scaled(evens(numbers()), 3))


@program
def yield_inside_try_except_with_exception_from_consumer():
    def gen():
        for i in range(3):
            try:
                yield i
            except ZeroDivisionError:
                yield "recovered"
    g = gen()
    out = [next(g), g.throw(ZeroDivisionError()), next(g), next(g)]
    return out


@program
def generator_attributes():
    def gen():
        yield 1
    g = gen()
    return g.__name__, g.__qualname__.split(".")[-1], g.gi_running, g.gi_code.co_name, iter(g) is g


@program
def yield_from_generator_exception_returns_value():
    def inner():
        try:
            yield 1
        except KeyError:
            return "inner handled"

    def outer():
        v = yield from inner()
        return v
    g = outer()
    next(g)
    try:
        g.throw(KeyError)
    except StopIteration as e:
        return e.value


@program
def close_returns_value_on_313():
    def gen():
        try:
            yield 1
        except GeneratorExit:
            return "closing value"
    g = gen()
    next(g)
    return g.close()


@program
def yield_inside_with_block_and_close():
    log = []

    class Cm:
        def __enter__(self):
            log.append("enter")

        def __exit__(self, et, ev, tb):
            log.append(("exit", et.__name__ if et else None))
            return False

    def gen():
        with Cm():
            yield 1
            yield 2
    g = gen()
    next(g)
    g.close()
    full = list(gen())
    return log, full


@program
def yield_inside_finally_during_exhaustion():
    def gen():
        try:
            yield "body"
        finally:
            yield "from finally"
    return list(gen())


@program
def yield_from_iterator_with_close_method():
    log = []

    class Closable:
        def __init__(self):
            self.i = 0

        def __iter__(self):
            return self

        def __next__(self):
            self.i += 1
            return self.i

        def close(self):
            log.append("closed")

    def outer():
        yield from Closable()
    g = outer()
    first = [next(g), next(g)]
    g.close()
    return first, log


@program
def throw_into_yield_from_plain_iterator():
    def outer():
        try:
            yield from iter([1, 2, 3])
        except KeyError as e:
            yield ("outer caught", e.args)
    g = outer()
    return next(g), g.throw(KeyError("k")), list(g)


@program
def generator_local_state_survives_suspension():
    def gen(n):
        acc = []
        for i in range(n):
            acc.append(i)
            received = yield list(acc)
            if received:
                acc.clear()
        return acc
    g = gen(4)
    out = [next(g), g.send(False), g.send(True), g.send(False)]
    try:
        g.send(False)
    except StopIteration as e:
        out.append(e.value)
    return out


@program
def exception_context_inside_generator_handler():
    def gen():
        try:
            raise KeyError("inside")
        except KeyError:
            yield "suspended in handler"
            raise ValueError("after resume")
    g = gen()
    first = next(g)
    try:
        next(g)
    except ValueError as e:
        return first, repr(e), repr(e.__context__)


@program
def caller_exception_state_visible_while_generator_suspended_in_try():
    import sys

    def gen():
        yield sys.exc_info()[0]
        try:
            raise IndexError
        except IndexError:
            yield sys.exc_info()[0]
        yield sys.exc_info()[0]
    g = gen()
    out = []
    try:
        raise KeyError
    except KeyError:
        out.append(next(g))
        out.append(next(g))
    out.append(next(g))
    return [t.__name__ if t else None for t in out]


@program
def generator_expression_with_closure_and_condition_over_generator():
    limit = 3

    def source():
        yield from range(10)
    g = (v * limit for v in source() if v < limit)
    limit = 100  # the body reads the cell when it runs, the first iterable was bound at creation
    return list(g)


@program
def recursive_generator():
    def permutations(items):
        if len(items) <= 1:
            yield list(items)
            return
        for i, head in enumerate(items):
            for rest in permutations(items[:i] + items[i + 1:]):
                yield [head] + rest
    return list(permutations([1, 2, 3]))


@program
def generator_send_after_exhaustion_and_close_after_exception():
    def gen():
        yield 1
        raise ValueError("end")
    g = gen()
    next(g)
    try:
        next(g)
    except ValueError:
        pass
    out = [g.close()]
    try:
        g.send(None)
    except StopIteration as e:
        out.append(("stop", e.value))
    return out


@program
def generator_frame_and_yieldfrom_introspection():
    import inspect

    def inner():
        yield 1

    def outer():
        local_value = "kept"
        yield from inner()
    g = outer()
    next(g)
    return (g.gi_yieldfrom.__name__ if g.gi_yieldfrom else None, dict(inspect.getgeneratorlocals(g)),
            g.gi_frame.f_code.co_name, g.gi_frame.f_locals.get("local_value"))


@program
def generator_return_in_finally_swallows_generator_exit():
    def gen():
        try:
            yield 1
        finally:
            return "swallowed"  # noqa: B012
    g = gen()
    next(g)
    return g.close(), list(g)
