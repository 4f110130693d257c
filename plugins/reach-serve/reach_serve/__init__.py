"""reach-serve: reach's pipeline behind a small REST endpoint (``reach serve http``).

Stateless by construction: every decision that must hold across requests
(budgets, idempotency keys, pending confirmations, audit) lives in the state
store, so N processes behind any load balancer behave as one.
"""

from .app import build_app
from .settings import ServeHttpSettings

__all__ = ["ServeHttpSettings", "build_app"]
