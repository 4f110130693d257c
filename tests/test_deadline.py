"""reach_core.deadline: the per-loop deadline timer behind every waiting call."""

from __future__ import annotations

import asyncio

import pytest

from reach_core.deadline import _dogs, until


async def test_a_block_past_its_deadline_raises_timeout_error() -> None:
    loop = asyncio.get_running_loop()
    t0 = loop.time()
    with pytest.raises(TimeoutError):
        with until(loop, loop.time() + 0.05):
            await asyncio.sleep(5)
    assert 0.04 <= loop.time() - t0 < 1.0


async def test_a_block_that_finishes_in_time_is_untouched_and_leaves_no_cancellation() -> None:
    loop = asyncio.get_running_loop()
    with until(loop, loop.time() + 1.0):
        await asyncio.sleep(0.01)
    task = asyncio.current_task()
    assert task is not None and task.cancelling() == 0
    await asyncio.sleep(0.01)  # the task is not cancelled later by a stale timer


async def test_a_deadline_already_past_expires_at_the_first_wait() -> None:
    loop = asyncio.get_running_loop()
    with pytest.raises(TimeoutError):
        with until(loop, loop.time() - 1.0):
            await asyncio.sleep(1)


async def test_an_outside_cancellation_is_not_turned_into_a_timeout() -> None:
    loop = asyncio.get_running_loop()
    entered = asyncio.Event()

    async def body() -> None:
        with until(loop, loop.time() + 10.0):
            entered.set()
            await asyncio.sleep(10)

    task = asyncio.create_task(body())
    await entered.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_nested_deadlines_the_inner_one_fires_first_and_the_outer_still_holds() -> None:
    loop = asyncio.get_running_loop()
    with pytest.raises(TimeoutError):
        with until(loop, loop.time() + 0.2):
            with pytest.raises(TimeoutError):
                with until(loop, loop.time() + 0.02):
                    await asyncio.sleep(1)
            await asyncio.sleep(1)  # the outer deadline still fires


async def test_many_deadlines_fire_in_order_and_finished_ones_are_compacted() -> None:
    loop = asyncio.get_running_loop()
    fired: list[int] = []

    async def one(i: int, wait: float) -> None:
        try:
            with until(loop, loop.time() + 0.01 * (i % 5 + 1)):
                await asyncio.sleep(wait)
        except TimeoutError:
            fired.append(i)

    # 300 that finish at once (dead entries), then 10 that time out
    await asyncio.gather(*(one(i, 0) for i in range(300)))
    await asyncio.gather(*(one(i, 1.0) for i in range(10)))
    assert sorted(fired) == list(range(10))
    dog = _dogs[loop]
    assert len(dog.heap) < 300  # finished entries did not pile up


@pytest.mark.parametrize(("header", "expected"), [
    ("5", 5.0), ("0", 0.0), ("-3", 0.0), ("1.5", 1.5), ("inf", None), ("-inf", None), ("nan", None),
    ("1e999", None), ("Infinity", None), ("soon", None), ("", None),
])
def test_retry_after_headers_that_are_not_a_finite_wait_give_none(header, expected):
    from reach_core.execute import _retry_after_header

    assert _retry_after_header({"retry-after": header}) == expected


# -- what a finished block leaves behind ----------------------------------------------------


async def _exits(loop: asyncio.AbstractEventLoop, how: str) -> None:
    """One block under a deadline, ended the way ``how`` says (each a way calls end)."""
    try:
        with until(loop, loop.time() + 5.0):
            if how == "at_once":
                pass
            elif how == "yield":
                await asyncio.sleep(0)
            elif how == "sleep":
                await asyncio.sleep(0.001)
            elif how == "raises":
                await asyncio.sleep(0)
                raise ValueError("the tool failed")
            elif how == "nested":
                with until(loop, loop.time() + 2.0):
                    await asyncio.sleep(0)
            elif how == "thread":
                await asyncio.to_thread(int, "7")
            elif how == "times_out":
                with until(loop, loop.time() + 0.005):
                    await asyncio.sleep(1)
    except (ValueError, TimeoutError):
        pass


WAYS = ["at_once", "yield", "sleep", "raises", "nested", "thread", "times_out"]


@pytest.mark.parametrize("how", WAYS)
async def test_blocks_one_after_another_leave_no_entry_behind(how: str) -> None:
    """A call that waited under a deadline and ended (however) leaves nothing in the heap
    once it is the earliest: calls one after another keep it empty, so a finished call's
    entry (a tuple, its watch and, through it, its task) is not kept alive for later ones."""
    loop = asyncio.get_running_loop()
    for _ in range(20):
        await _exits(loop, how)
        dog = _dogs[loop]
        assert dog.heap == [] and dog.dead == 0


@pytest.mark.parametrize("how", WAYS)
async def test_a_fan_out_finishing_in_deadline_order_leaves_the_heap_empty(how: str) -> None:
    loop = asyncio.get_running_loop()
    for size in (2, 7, 40):
        await asyncio.gather(*(_exits(loop, how) for _ in range(size)))
        dog = _dogs[loop]
        assert dog.heap == [] and dog.dead == 0, size


async def test_a_finished_entry_not_yet_dropped_keeps_its_task_no_longer() -> None:
    """An entry behind an earlier deadline stays in the heap until that one goes; it must
    not keep the task of its (finished) call, nor what the task holds, alive meanwhile."""
    import gc
    import weakref

    loop = asyncio.get_running_loop()
    release = asyncio.Event()

    async def early() -> None:  # the earliest deadline, still waiting
        with until(loop, loop.time() + 1.0):
            await release.wait()

    holder = asyncio.create_task(early())
    await asyncio.sleep(0)
    refs = []
    for _ in range(5):
        task = asyncio.create_task(_exits(loop, "yield"))
        await task
        refs.append(weakref.ref(task))
        del task
    await asyncio.sleep(0)  # (the loop lets go of the last one's wake-up)
    gc.collect()
    assert [r() for r in refs] == [None] * 5
    release.set()
    await holder
    dog = _dogs[loop]
    assert dog.heap == [] and dog.dead == 0


async def test_deadlines_still_fire_after_earlier_entries_went_at_their_exit() -> None:
    """The timer may still be set for an entry that left at its exit: when it goes off it
    finds the next deadline and sets itself for that one, which still fires in time."""
    loop = asyncio.get_running_loop()
    with until(loop, loop.time() + 0.01):  # sets the timer at +0.01, then leaves at once
        pass
    t0 = loop.time()
    with pytest.raises(TimeoutError):
        with until(loop, loop.time() + 0.05):
            await asyncio.sleep(2)
    assert 0.04 <= loop.time() - t0 < 1.0
    with until(loop, loop.time() + 5.0):  # a later block under a far deadline is not cut short
        await asyncio.sleep(0.06)


@pytest.mark.parametrize("kind", ["sync", "async_waits", "async_at_once"])
async def test_calls_through_reach_leave_no_deadline_entry(tmp_path, kind: str) -> None:
    """Through the whole pipeline: a plain-def tool (run in a thread, under a deadline), an
    async tool that waits, and one that finishes at its first step (which arms no deadline
    at all) leave the loop's deadline heap empty after each call."""
    from reach_core import connector
    from reach_core.testing import make_reach

    @connector(risk="read")
    def add_sync(a: int, b: int) -> int:
        """Add in a thread."""
        return a + b

    @connector(risk="read")
    async def add_async_waits(a: int, b: int) -> int:
        """Add after a pause."""
        await asyncio.sleep(0)
        return a + b

    @connector(risk="read")
    async def add_async_at_once(a: int, b: int) -> int:
        """Add."""
        return a + b

    reach = make_reach(data_dir=tmp_path)
    for tool in (add_sync, add_async_waits, add_async_at_once):
        reach.register(tool)
    loop = asyncio.get_running_loop()
    for _ in range(30):
        result = await reach.invoke({"id": "c", "name": f"add_{kind}", "arguments": {"a": 1, "b": 2}})
        assert result.ok and result.content == 3
        dog = _dogs.get(loop)
        assert dog is None or (dog.heap == [] and dog.dead == 0)
    await reach.aclose()
