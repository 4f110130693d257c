"""Running one connector: deadline, retries that respect side effects, concurrency caps.

The rules (DESIGN §6, issue 3):

* ``tool.timeout`` is the deadline of the *whole* call: waiting for a slot,
  every attempt, every backoff sleep and Retry-After wait fit inside it.
  ``tool.attempt_timeout`` bounds one try.
* Only idempotent tools are retried, and only for retryable failures
  (``RetryableError``, ``RateLimited``, connection errors, HTTP 429/502/503/504
  raised by an HTTP client, attempt time-outs), up to ``max_retries``, with
  exponential backoff (``[reach] retry_backoff`` = 1 s: 1, 2, 4 s, jittered to
  50-100 %), never shorter than Retry-After, never past the deadline.
* A business error is never retried.
* A non-idempotent call that times out after it started is ``outcome_unknown``
  ("may or may not have happened") and is never re-run. One that never started
  (no free slot, no free thread) is a plain ``timeout``: it did not run.
* Sync connectors run in the bounded pool of the guard rails. On timeout the
  call is abandoned, but its thread and its concurrency slots stay taken until
  the function really returns, so hung sync tools cannot overrun a service or
  the process.

Speed: the connector's coroutine is stepped once before any timer exists; a
call that finishes on that step (most cheap tools) never arms a deadline.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import math
import random
import types
from collections.abc import Coroutine, Generator
from typing import TYPE_CHECKING, Any

from .deadline import until
from .errors import BusinessError, RateLimited, RetryableError, ToolFailure
from .guard.concurrency import free_now, give_back, take_now, take_running
from .guard.threads import DaemonPool

if TYPE_CHECKING:
    from .context import CallContext
    from .guard.concurrency import WeightedLimit
    from .tool import Tool

    Caps = tuple[WeightedLimit, ...]  # process-wide concurrency caps, one unit each

__all__ = ["backoff_delay", "run_connector"]

_RETRY_STATUS = frozenset({429, 502, 503, 504})
_fallback_pool: DaemonPool | None = None


class _Resume:
    """Await the rest of a coroutine that was already stepped once."""

    __slots__ = ("coro", "first")

    def __init__(self, coro: Coroutine[Any, Any, Any], first: Any) -> None:
        self.coro, self.first = coro, first

    def __await__(self) -> Generator[Any, Any, Any]:
        coro, pending = self.coro, self.first
        while True:
            try:
                sent = yield pending
            except BaseException as exc:  # cancellation (our deadline) goes into the connector
                try:
                    pending = coro.throw(exc)
                except StopIteration as stop:
                    return stop.value
            else:
                try:
                    pending = coro.send(sent)
                except StopIteration as stop:
                    return stop.value


class _NotStarted(Exception):
    """The attempt timed out before the connector began (no slot, no thread)."""


def backoff_delay(attempt: int, base: float, cap: float = 30.0, *, retry_after: float | None = None) -> float:
    """Delay before retry number ``attempt`` (1-based): base·2^(n-1), jittered to 50-100 %,
    capped, and never shorter than the server's Retry-After."""
    delay = min(cap, base * (2 ** (attempt - 1))) * (0.5 + random.random() / 2)
    if retry_after is not None and retry_after > delay:
        delay = retry_after
    return delay


def _retry_after_header(headers: Any) -> float | None:
    raw = headers.get("retry-after") if headers is not None else None
    if not raw:
        return None
    try:
        seconds = float(raw)
        # "inf", "nan", "1e999": no usable wait (an infinite one is not even valid JSON for the model)
        return max(0.0, seconds) if math.isfinite(seconds) else None
    except ValueError:
        import time
        from email.utils import parsedate_to_datetime

        try:
            return max(0.0, parsedate_to_datetime(raw).timestamp() - time.time())
        except (TypeError, ValueError):
            return None


def _classify(exc: BaseException, tool: Tool) -> ToolFailure | None:
    """Map well-known transport exceptions a connector let escape to failures.

    Connection errors and HTTP 429/502/503/504 raised by an HTTP client are
    retryable; for a tool with side effects an error after the request may have
    been sent (read error, reset, truncated body) is ``outcome_unknown``.
    """
    mro = {c.__name__ for c in type(exc).__mro__}
    if "HTTPStatusError" in mro:  # httpx, without importing it
        response = getattr(exc, "response", None)
        status = getattr(response, "status_code", None)
        if status in _RETRY_STATUS:
            retry_after = _retry_after_header(getattr(response, "headers", None))
            if status == 429:
                return RateLimited(retry_after, message=f"{tool.name}: the service says slow down (HTTP 429)")
            return RetryableError(f"{tool.name}: the service is unavailable (HTTP {status})", retry_after=retry_after)
        return None
    connect_phase = bool(mro & {"ConnectError", "ConnectTimeout", "ConnectionRefusedError", "PoolTimeout"})
    transport = bool(mro & {"TransportError", "ConnectionError", "ClientConnectionError"})
    if not (connect_phase or transport):
        return None
    if connect_phase or tool.idempotent:
        return RetryableError(f"{tool.name}: could not reach the service ({type(exc).__name__})")
    return ToolFailure(
        f"{tool.name}: the connection failed after the request was sent; the action may or may not have "
        "happened. Check its effect before repeating it.",
        code="outcome_unknown",
    )


async def _acquire_all(caps: Caps, deadline: float, loop: asyncio.AbstractEventLoop) -> None:
    """Take one unit of every cap, waiting for a free one until ``deadline`` (else ``_NotStarted``)."""
    taken: list[WeightedLimit] = []
    try:
        for lim in caps:
            if not lim.try_acquire(1):
                remaining = deadline - loop.time()
                if remaining <= 0:
                    raise _NotStarted
                try:
                    with until(loop, loop.time() + remaining):
                        await lim.acquire(1)
                except TimeoutError:
                    raise _NotStarted from None
            taken.append(lim)
    except BaseException:
        give_back(tuple(taken))
        raise


def _pool(ctx: CallContext) -> DaemonPool:
    guards = ctx.rt.guards
    if guards is not None:
        return guards.thread_pool()
    global _fallback_pool  # only without guard rails (never in practice)
    if _fallback_pool is None:
        _fallback_pool = DaemonPool(16)
    return _fallback_pool


async def _run_sync(tool: Tool, params: Any, ctx: CallContext, budget: float,
                    caps: Caps, loop: asyncio.AbstractEventLoop) -> Any:
    fn = tool.connector.execute
    try:
        cf = _pool(ctx).submit((lambda: fn(params, ctx)) if tool.pass_ctx else (lambda: fn(params)))
    except BaseException:
        give_back(caps)
        raise
    if caps:
        def release_when_done(_f: concurrent.futures.Future[Any]) -> None:
            try:
                loop.call_soon_threadsafe(give_back, caps)
            except RuntimeError:  # loop closed: nobody waits for these caps any more
                pass

        cf.add_done_callback(release_when_done)
    afut = asyncio.wrap_future(cf, loop=loop)
    try:
        with until(loop, loop.time() + budget):
            result = await afut
    except TimeoutError:
        # cancelling afut cancelled cf if its thread had not picked it up yet
        if cf.cancelled():
            raise _NotStarted from None
        raise
    if asyncio.iscoroutine(result):  # a plain def that returned a coroutine: finish it here
        with until(loop, loop.time() + max(0.0, budget)):
            return await result
    return result


def _attempt_end(tool: Tool, deadline: float, loop: asyncio.AbstractEventLoop) -> float:
    """When the current attempt must end: the call's deadline, or sooner with ``attempt_timeout``."""
    if tool.attempt_timeout is None:
        return deadline
    return min(deadline, loop.time() + tool.attempt_timeout)


def _start(tool: Tool, params: Any, ctx: CallContext) -> Any:
    """The connector's coroutine for one attempt (not yet started)."""
    if tool.direct is not None:
        return tool.direct(**params)
    return tool.connector.execute(params, ctx) if tool.pass_ctx else tool.connector.execute(params)


async def _attempt(tool: Tool, params: Any, ctx: CallContext, deadline: float,
                   caps: Caps, loop: asyncio.AbstractEventLoop) -> Any:
    if caps and not take_now(caps):
        await _acquire_all(caps, deadline, loop)
    if not tool.is_async:
        budget = deadline - loop.time()
        if tool.attempt_timeout is not None:
            budget = min(budget, tool.attempt_timeout)
        return await _run_sync(tool, params, ctx, budget, caps, loop)
    try:
        coro = _start(tool, params, ctx)
        try:
            first = coro.send(None)
        except StopIteration as stop:
            return stop.value
        with until(loop, _attempt_end(tool, deadline, loop)):
            return await _Resume(coro, first)
    finally:
        if caps:
            give_back(caps)


def run_connector(
    tool: Tool, params: Any, ctx: CallContext, caps: Caps = ()
) -> tuple[Any, dict[str, Any]] | Coroutine[Any, Any, tuple[Any, dict[str, Any]]]:
    """Run ``tool`` with ``params``: ``(content, meta)``, or a coroutine giving it; raises ``ToolFailure``.

    ``caps`` are the concurrency caps to hold, one unit each, around each attempt
    (``caps`` of the tool's guard plan). ``ctx.attempt`` is the number of attempts
    that began (0: the connector never ran).

    An ``@connector`` async function is stepped right here, in a plain function,
    when its concurrency caps (if any) have a free slot: most cheap tools finish on
    that first step, and then no coroutine, no deadline and no timer is made for
    them. Nor do they take a slot: a call that never waits never runs beside
    another, so a cap has nothing to limit. A call that waits takes its slots
    then (still free: nothing else ran since they were checked) and continues in
    :func:`_run` under the full rules (deadline, retries), holding them until that
    attempt ends; one that raises continues there too.
    """
    deadline = ctx.deadline
    if deadline is not None and deadline <= asyncio.get_running_loop().time():
        # a run's deadline that passed before the call began (it waited behind the turn's
        # other calls, or for a budget or the ledger): stepping the connector even once
        # could start its side effect, which the deadline then cuts off as "unknown"
        raise ToolFailure(
            f"{tool.name} did not start: the time for this task ran out before it began; it did not run.",
            code="timeout",
            details={"attempts": 0},
        )
    direct = tool.direct
    if direct is None:
        return _run(tool, params, ctx, caps)
    if caps:
        one = caps[0]  # one cap, the usual case, is checked without a call
        if not (one.free > 0 and not one._waiters and (len(caps) == 1 or free_now(caps))):
            return _run(tool, params, ctx, caps)  # no free slot: _run waits for one
    ctx.attempt = 1
    cell: list[Any] = []
    try:
        driver = _drive(direct(**params), cell)
        first = next(driver, _DONE)
    except Exception as exc:  # noqa: BLE001 - classified, maybe retried, by the full rules
        return _run(tool, params, ctx, caps, failed=exc)
    if first is not _DONE:  # it waits: it holds its slots from now on, the rest under the full rules
        if caps:
            take_running(caps)
        return _run(tool, params, ctx, caps, started=(driver, first, cell))
    content = cell[0]
    if type(content) is dict and len(content) == 1 and "error" in content:
        failure = BusinessError(str(content["error"]))
        failure.details["attempts"] = 1
        raise failure
    return content, {"attempts": 1}


_DONE = object()


@types.coroutine
def _drive(coro: Coroutine[Any, Any, Any], cell: list[Any]) -> Generator[Any, Any, None]:
    """Run ``coro``, putting its result in ``cell``; stepped by ``next(driver, _DONE)``.

    A coroutine stepped with ``send()`` reports its result by raising
    ``StopIteration`` (about a quarter of a cheap call's cost in reach); a generator
    that returns ``None`` ends ``next(driver, default)`` with no exception at all.
    """
    cell.append((yield from coro))


async def _run(
    tool: Tool, params: Any, ctx: CallContext, caps: Caps,
    *, started: tuple[Any, Any, list[Any]] | None = None, failed: Exception | None = None,
) -> tuple[Any, dict[str, Any]]:
    """The attempts loop. ``started``/``failed``: attempt 1 already stepped once by
    :func:`run_connector` (suspended there, or raised)."""
    loop = asyncio.get_running_loop()
    deadline = ctx.deadline
    if deadline is None:
        deadline = ctx.deadline = loop.time() + tool.timeout
    # An async tool with no concurrency cap is stepped right here: most finish on
    # their first step, and then neither a timer nor an extra coroutine is made.
    inline = tool.is_async and not caps
    attempt = 0
    while True:
        attempt += 1
        ctx.attempt = attempt
        try:
            if failed is not None:
                exc, failed = failed, None
                raise exc
            if started is not None:  # attempt 1, stepped once by run_connector (holding the caps)
                (driver, first, cell), started = started, None
                try:
                    with until(loop, _attempt_end(tool, deadline, loop)):
                        await _Resume(driver, first)
                finally:
                    if caps:
                        give_back(caps)
                content = cell[0]
            elif inline:
                coro = _start(tool, params, ctx)
                try:
                    first = coro.send(None)
                except StopIteration as stop:
                    content = stop.value
                else:
                    with until(loop, _attempt_end(tool, deadline, loop)):
                        content = await _Resume(coro, first)
            else:
                content = await _attempt(tool, params, ctx, deadline, caps, loop)
            if type(content) is dict and len(content) == 1 and "error" in content:
                raise BusinessError(str(content["error"]))
            return content, {"attempts": attempt}
        except ToolFailure as failure:
            failure.details["attempts"] = attempt
            if not (failure.retryable and tool.idempotent and attempt <= tool.max_retries):
                raise
            delay = backoff_delay(attempt, *_base(ctx), retry_after=failure.retry_after)
            if loop.time() + delay >= deadline:
                raise
            await asyncio.sleep(delay)
        except _NotStarted:
            ctx.attempt = attempt - 1
            raise ToolFailure(
                f"{tool.name} did not start within {tool.timeout:g} s because the service is busy "
                "(concurrency limit); it did not run. Try again later.",
                code="timeout",
                details={"attempts": attempt - 1},
            ) from None
        except TimeoutError:
            if not tool.idempotent:
                raise ToolFailure(
                    f"{tool.name} did not finish in time; the action may or may not have happened. "
                    "Check its effect before repeating it.",
                    code="outcome_unknown",
                    details={"attempts": attempt},
                ) from None
            delay = backoff_delay(attempt, *_base(ctx))
            if attempt > tool.max_retries or loop.time() + delay >= deadline:
                raise ToolFailure(
                    f"{tool.name} did not answer within {tool.timeout:g} s; try again later or with a "
                    "smaller request.",
                    code="timeout",
                    details={"attempts": attempt},
                ) from None
            await asyncio.sleep(delay)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            mapped = _classify(exc, tool)
            if mapped is None:
                raise
            mapped.details["attempts"] = attempt
            mapped.details["exception"] = type(exc).__name__
            if not (mapped.retryable and tool.idempotent and attempt <= tool.max_retries):
                raise mapped from exc
            delay = backoff_delay(attempt, *_base(ctx), retry_after=mapped.retry_after)
            if loop.time() + delay >= deadline:
                raise mapped from exc
            await asyncio.sleep(delay)


def _base(ctx: CallContext) -> tuple[float, float]:
    """``([reach] retry_backoff, [reach] retry_backoff_max)``."""
    rt = ctx.rt
    guards = rt.guards
    cap = guards.defaults.retry_backoff_max if guards is not None else 30.0
    try:
        return float(rt.config.reach.retry_backoff), cap
    except AttributeError:
        return 1.0, cap
