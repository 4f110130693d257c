"""Running one connector: deadline, retries that respect side effects, fallback.

The rules (DESIGN §6):

* ``tool.timeout`` is the deadline of the *whole* call: every attempt, backoff
  sleep and Retry-After wait fits inside it.
* Only idempotent tools are retried, and only for retryable failures
  (``RetryableError``, ``RateLimited``, attempt time-outs), with exponential
  backoff and jitter, honouring ``retry_after``. A business error never is.
* A non-idempotent call that times out is ``outcome_unknown`` ("may or may not
  have happened") and is never re-run.
* Sync connectors run in a bounded thread pool, never on the event loop.

Speed: ``asyncio.timeout`` is only armed when the connector actually has to
wait. The coroutine is stepped once; if it finishes on that step (most cheap
tools do) no timer is created at all.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Coroutine, Generator
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

from .errors import BusinessError, ToolFailure

if TYPE_CHECKING:
    from .context import CallContext
    from .tool import Tool

__all__ = ["run_connector"]

_pool: ThreadPoolExecutor | None = None


def _thread_pool() -> ThreadPoolExecutor:
    global _pool  # one bounded pool per process: hung sync tools cannot exhaust it silently
    if _pool is None:
        _pool = ThreadPoolExecutor(max_workers=32, thread_name_prefix="reach-sync")
    return _pool


class _Resume:
    """Await the rest of a coroutine that has already been stepped once."""

    __slots__ = ("coro", "first")

    def __init__(self, coro: Coroutine[Any, Any, Any], first: Any) -> None:
        self.coro, self.first = coro, first

    def __await__(self) -> Generator[Any, Any, Any]:
        coro, pending = self.coro, self.first
        while True:
            try:
                sent = yield pending
            except BaseException as exc:  # cancellation and timeouts go into the connector
                try:
                    pending = coro.throw(exc)
                except StopIteration as stop:
                    return stop.value
            else:
                try:
                    pending = coro.send(sent)
                except StopIteration as stop:
                    return stop.value


async def _attempt(tool: Tool, params: Any, ctx: CallContext, budget: float) -> Any:
    connector = tool.connector
    if tool.is_async:
        coro = connector.execute(params, ctx) if tool.pass_ctx else connector.execute(params)
        try:
            first = coro.send(None)
        except StopIteration as stop:
            return stop.value
        async with asyncio.timeout(budget):
            return await _Resume(coro, first)
    loop = asyncio.get_running_loop()
    fn = connector.execute
    fut = loop.run_in_executor(_thread_pool(), (lambda: fn(params, ctx)) if tool.pass_ctx else (lambda: fn(params)))
    result = await asyncio.wait_for(asyncio.shield(fut), budget)
    if asyncio.iscoroutine(result):  # a sync def that returned a coroutine: finish it here
        async with asyncio.timeout(budget):
            return await result
    return result


def _backoff(attempt: int, base: float, retry_after: float | None) -> float:
    delay = base * (2 ** (attempt - 1)) * (0.5 + random.random() / 2)
    if retry_after is not None:
        delay = max(delay, retry_after)
    return delay


async def run_connector(tool: Tool, params: Any, ctx: CallContext) -> tuple[Any, dict[str, Any]]:
    """Run ``tool`` with ``params``; return ``(content, meta)`` or raise ``ToolFailure``."""
    loop = asyncio.get_running_loop()
    deadline = ctx.deadline if ctx.deadline is not None else loop.time() + tool.timeout
    ctx.deadline = deadline
    base = ctx.reach.config.reach.retry_backoff
    attempt = 0
    while True:
        attempt += 1
        ctx.attempt = attempt
        remaining = deadline - loop.time()
        budget = remaining if tool.attempt_timeout is None else min(remaining, tool.attempt_timeout)
        try:
            content = await _attempt(tool, params, ctx, budget)
            if isinstance(content, dict) and len(content) == 1 and "error" in content:
                raise BusinessError(str(content["error"]))
            return content, {"attempts": attempt}
        except ToolFailure as failure:
            failure.details.setdefault("attempts", attempt)
            if not (failure.retryable and tool.idempotent and attempt <= tool.max_retries):
                raise
            delay = _backoff(attempt, base, failure.retry_after)
            if loop.time() + delay >= deadline:
                raise
            await asyncio.sleep(delay)
        except TimeoutError:
            if not tool.idempotent:
                raise ToolFailure(
                    f"{tool.name} did not finish within {tool.timeout:g} s; the action may or may not "
                    "have happened. Check its effect before repeating it.",
                    code="outcome_unknown",
                    details={"attempts": attempt},
                ) from None
            whole = loop.time() >= deadline - 1e-3
            delay = _backoff(attempt, base, None)
            if whole or attempt > tool.max_retries or loop.time() + delay >= deadline:
                raise ToolFailure(
                    f"{tool.name} did not answer within {tool.timeout:g} s; try again later or with a smaller request.",
                    code="timeout",
                    details={"attempts": attempt},
                ) from None
            await asyncio.sleep(delay)
