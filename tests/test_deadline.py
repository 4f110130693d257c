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
