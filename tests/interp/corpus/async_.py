"""Coroutines: await chains driven by a tiny hand-written loop and by asyncio.run, async for / async with,
async generators (asend/athrow/aclose), async comprehensions."""
import asyncio
import types

from . import program


class Suspend:
    """An awaitable that suspends once, handing ``value`` to whoever drives the coroutine."""

    def __init__(self, value):
        self.value = value

    def __await__(self):
        received = yield self.value
        return received


def drive(coro, replies=None):
    """The smallest event loop: send replies in, collect what the coroutine yields, return (yields, result)."""
    replies = list(replies or [])
    yielded = []
    value = None
    while True:
        try:
            yielded.append(coro.send(value))
        except StopIteration as stop:
            return yielded, stop.value
        value = replies.pop(0) if replies else None


@program
def await_chain_with_hand_written_loop():
    async def leaf(x):
        got = await Suspend(("leaf", x))
        return (x, got)

    async def middle():
        a = await leaf(1)
        b = await leaf(2)
        return [a, b]
    return drive(middle(), replies=["r1", "r2"])


@program
def coroutine_object_protocol():
    async def f():
        return 5
    c = f()
    kind = (type(c).__name__, isinstance(c, types.CoroutineType), hasattr(c, "__await__"))
    try:
        c.send(None)
    except StopIteration as e:
        return kind, e.value


@program
def asyncio_run_gather():
    async def work(n, log):
        await asyncio.sleep(0)
        log.append(n)
        return n * n

    async def main():
        log = []
        results = await asyncio.gather(work(1, log), work(2, log), work(3, log))
        return results, log
    return asyncio.run(main())


@program
def asyncio_exception_propagates():
    async def fail():
        await asyncio.sleep(0)
        raise ValueError("async failure")

    async def main():
        try:
            await fail()
        except ValueError as e:
            return "caught " + str(e)
    return asyncio.run(main())


@program
def uncaught_exception_out_of_coroutine():
    async def fail():
        raise KeyError("from coroutine")
    return drive(fail())


@program
def async_with_context_manager():
    log = []

    class Resource:
        async def __aenter__(self):
            log.append("enter")
            await Suspend("entering")
            return self

        async def __aexit__(self, exc_type, exc, tb):
            log.append(("exit", exc_type.__name__ if exc_type else None))
            return exc_type is ValueError

    async def main():
        async with Resource() as r:
            log.append(("body", type(r).__name__))
        async with Resource():
            raise ValueError("suppressed")
        return "after"
    return drive(main()), log


@program
def async_for_over_async_iterator():
    class Ticker:
        def __init__(self, n):
            self.i = 0
            self.n = n

        def __aiter__(self):
            return self

        async def __anext__(self):
            if self.i >= self.n:
                raise StopAsyncIteration
            self.i += 1
            await Suspend(("tick", self.i))
            return self.i

    async def main():
        seen = []
        async for v in Ticker(3):
            seen.append(v)
        else:
            seen.append("else")
        return seen
    return drive(main())


@program
def async_generator_with_async_for():
    async def agen(n):
        for i in range(n):
            await Suspend(i)
            yield i * 10

    async def main():
        out = []
        async for v in agen(3):
            if v == 20:
                break
            out.append(v)
        return out
    return drive(main())


@program
def async_generator_asend_athrow_aclose():
    log = []

    async def agen():
        try:
            while True:
                try:
                    got = yield "ready"
                    log.append(("got", got))
                except KeyError:
                    log.append("handled KeyError")
        finally:
            log.append("agen finally")

    async def main():
        g = agen()
        first = await g.asend(None)
        second = await g.asend("hello")
        third = await g.athrow(KeyError)
        await g.aclose()
        return first, second, third
    return asyncio.run(main()), log


@program
def async_comprehensions():
    async def agen():
        for i in range(4):
            yield i

    async def double(x):
        return x * 2

    async def main():
        a = [x async for x in agen() if x % 2]
        b = [await double(x) for x in range(3)]
        c = {x: await double(x) async for x in agen()}
        return a, b, c
    return asyncio.run(main())


@program
def async_lambda_like_awaitable_objects():
    class Ready:
        def __init__(self, v):
            self.v = v

        def __await__(self):
            return iter(())

    async def main():
        return await Ready(1) is None

    class Value:
        def __await__(self):
            return (yield from Suspend("v").__await__())
    return drive(main()), drive(Value().__await__(), replies=["sent"])


@program
def awaiting_a_non_awaitable():
    async def main():
        await 5
    return drive(main())


@program
def asyncio_tasks_and_wait_for():
    async def slow(x):
        await asyncio.sleep(0)
        return x + 1

    async def main():
        t1 = asyncio.create_task(slow(1))
        t2 = asyncio.ensure_future(slow(2))
        r = await asyncio.wait_for(slow(10), timeout=5)
        return await t1, await t2, r, t1.done()
    return asyncio.run(main())


@program
def coroutine_throw_and_close():
    log = []

    async def worker():
        try:
            await Suspend("waiting")
        except RuntimeError as e:
            log.append("caught " + str(e))
            await Suspend("after-catch")
        finally:
            log.append("finally")
    c = worker()
    first = c.send(None)
    second = c.throw(RuntimeError("injected"))
    c.close()
    return first, second, log


@program
def async_generator_finalised_by_aclose_in_asyncio():
    log = []

    async def agen():
        try:
            yield 1
            yield 2
        finally:
            log.append("closed")

    async def main():
        g = agen()
        async for v in g:
            break
        await g.aclose()
        return v
    return asyncio.run(main()), log


@program
def async_with_exception_not_suppressed():
    class Cm:
        async def __aenter__(self):
            return "res"

        async def __aexit__(self, *exc):
            return False

    async def main():
        async with Cm() as r:
            raise IndexError(r)
    return drive(main())


@program
def await_in_finally_and_except():
    log = []

    async def step(name):
        await Suspend(name)
        log.append(name)

    async def main():
        try:
            try:
                await step("body")
                raise KeyError("k")
            except KeyError:
                await step("except")
                raise
            finally:
                await step("finally")
        except KeyError as e:
            return repr(e)
    return drive(main()), log


@program
def gather_with_return_exceptions():
    async def ok(v):
        await asyncio.sleep(0)
        return v

    async def bad():
        await asyncio.sleep(0)
        raise ValueError("bad task")

    async def main():
        results = await asyncio.gather(ok(1), bad(), ok(3), return_exceptions=True)
        return [r if not isinstance(r, Exception) else (type(r).__name__, str(r)) for r in results]
    return asyncio.run(main())


@program
def asyncio_queue_producer_consumer():
    async def producer(q):
        for i in range(4):
            await q.put(i)
        await q.put(None)

    async def consumer(q, out):
        while (item := await q.get()) is not None:
            out.append(item * item)

    async def main():
        q = asyncio.Queue()
        out = []
        await asyncio.gather(producer(q), consumer(q, out))
        return out
    return asyncio.run(main())


@program
def async_method_with_super_and_closure():
    class Base:
        async def fetch(self, key):
            await Suspend(("base", key))
            return key.upper()

    class Child(Base):
        async def fetch(self, key):
            value = await super().fetch(key)
            return value + "!"
    return drive(Child().fetch("k"))


@program
def async_generator_returned_by_program_consumed_by_asyncio():
    async def agen():
        for i in range(3):
            await asyncio.sleep(0)
            yield i

    async def main():
        return [v async for v in agen()], type(agen()).__name__
    return asyncio.run(main())


@program
def async_protocol_errors():
    class SyncOnly:
        def __enter__(self):
            return self

        def __exit__(self, *a):
            return False

    async def bad_with():
        async with SyncOnly():
            pass

    async def bad_for():
        async for _ in [1, 2]:
            pass
    errors = []
    for coro in (bad_with(), bad_for()):
        try:
            drive(coro)
        except TypeError as e:
            errors.append(str(e))
    return errors


@program
def coroutine_introspection():
    async def inner():
        await Suspend("x")

    async def outer():
        await inner()
    c = outer()
    c.send(None)
    info = (c.cr_running, c.cr_frame.f_code.co_name, type(c.cr_await).__name__, c.__qualname__.split(".")[-1])
    c.close()
    return info, c.cr_frame
