"""Rate limits per tool, per agent and per plugin, counted by the ``limits`` library.

``memory://`` uses limits' in-process storage through its synchronous API: the
whole check-then-hit runs without yielding to the event loop, so counts are
exact under any number of concurrent calls and cost no await. Any other URI
(``redis://...``) goes through ``limits.aio`` so a shared server never blocks the
loop; the same items and keys are used, so the two behave alike.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # `limits` is imported when a rate limit is first parsed, not at start-up
    from limits import RateLimitItem

__all__ = ["RateLimiter", "Rule"]

_STRATEGIES = {
    "fixed-window": "FixedWindowRateLimiter",
    "moving-window": "MovingWindowRateLimiter",
    "sliding-window-counter": "SlidingWindowCounterRateLimiter",
}

#: One limit to check: (items, key parts, who — for the message).
Rule = tuple[Sequence["RateLimitItem"], tuple[str, ...], str]


def _redis_client() -> str:
    """Which Redis client limits should use: coredis if installed, else redis-py."""
    import importlib.util

    if importlib.util.find_spec("coredis") is not None:
        return "coredis"
    if importlib.util.find_spec("redis") is not None:
        return "redispy"
    from ..errors import ConfigError

    raise ConfigError('[limits] storage is redis://: install a client with `pip install "redis>=5"`')


class RateLimiter:
    """Checks and consumes several limits at once; all-or-nothing in memory mode."""

    def __init__(self, storage: str = "memory://", strategy: str = "fixed-window") -> None:
        self.uri = storage
        self.strategy_name = strategy
        self._sync: Any = None
        self._async: Any = None
        self._parsed: dict[str, list[RateLimitItem]] = {}

    def parse(self, spec: str) -> list[RateLimitItem]:
        items = self._parsed.get(spec)
        if items is None:
            from limits import parse_many

            items = self._parsed[spec] = list(parse_many(spec))
        return items

    @property
    def is_memory(self) -> bool:
        return self.uri.startswith("memory://")

    def _limiter_sync(self) -> Any:
        if self._sync is None:
            from limits import storage, strategies

            self._sync = getattr(strategies, _STRATEGIES[self.strategy_name])(storage.MemoryStorage())
        return self._sync

    def _limiter_async(self) -> Any:
        if self._async is None:
            from limits.aio import strategies
            from limits.storage import storage_from_string

            uri = self.uri if self.uri.startswith("async+") else f"async+{self.uri}"
            options: dict[str, Any] = {}
            if "redis" in uri.split("://", 1)[0]:
                options["implementation"] = _redis_client()
            self._async = getattr(strategies, _STRATEGIES[self.strategy_name])(storage_from_string(uri, **options))
        return self._async

    def hit_sync(self, rules: Sequence[Rule]) -> tuple[float, str] | None:
        """Memory mode: consume one unit of every rule, or none if any is exhausted.

        Returns ``None`` when allowed, else ``(retry_after_seconds, who)``.
        """
        limiter = self._limiter_sync()
        if len(rules) == 1 and len(rules[0][0]) == 1:  # the common case: one hit, no separate test
            items, key, who = rules[0]
            if limiter.hit(items[0], *key):
                return None
            return self._retry_after_sync(limiter, items[0], key), who
        for items, key, who in rules:
            for item in items:
                if not limiter.test(item, *key):
                    return self._retry_after_sync(limiter, item, key), who
        for items, key, _who in rules:
            for item in items:
                limiter.hit(item, *key)
        return None

    async def hit(self, rules: Sequence[Rule]) -> tuple[float, str] | None:
        """Consume one unit of every rule; ``(retry_after, who)`` when one is exhausted."""
        if self.is_memory:
            return self.hit_sync(rules)
        limiter = self._limiter_async()
        for items, key, who in rules:
            for item in items:
                if not await limiter.hit(item, *key):
                    stats = await limiter.get_window_stats(item, *key)
                    return max(0.0, stats.reset_time - time.time()), who
        return None

    @staticmethod
    def _retry_after_sync(limiter: Any, item: RateLimitItem, key: tuple[str, ...]) -> float:
        stats = limiter.get_window_stats(item, *key)
        return max(0.0, stats.reset_time - time.time())
