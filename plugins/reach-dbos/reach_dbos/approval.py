"""A durable wait for a person's approval (reach-confirm, or any confirmer with ``resolve``).

The wait is a step of the run: while it waits nothing but the pending request
exists (in the confirmer's store, shared by every instance). If the process
stops during the wait, the step did not finish, so whichever instance resumes
the run waits again, and finds the decision if a person took it meanwhile
through any instance (CLI, REST, MCP). The decision is then checkpointed: a
later restart replays it instead of asking the confirmer again. The approved
call itself runs once, where it is approved (the confirmer's own rule).
"""

from __future__ import annotations

import time
from typing import Any

from dbos import DBOS

__all__ = ["DurableConfirmer"]

APPROVAL_STEP = "reach.approval"


class DurableConfirmer:
    """Wraps the installed confirmer: each ``resolve`` is a checkpointed step of the run."""

    def __init__(self, inner: Any, reach: Any) -> None:
        self._inner = inner
        self._reach = reach

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    async def resolve(self, reach: Any, result: Any, wait: float) -> Any:
        real = self._reach  # the confirmer keys its queue on the real Reach, not the run's view of it
        started = time.time()

        async def decide() -> Any:
            # a resumed wait counts the time already waited in the same attempt only; a restart
            # waits the full time again (the person may still answer; the request may expire first)
            left = max(0.0, wait - (time.time() - started))
            return await self._inner.resolve(real, result, left)

        return await DBOS.run_step_async({"name": APPROVAL_STEP}, decide)
