"""reach-serve: reach's pipeline behind a small REST endpoint (``reach serve http``).

Stateless by construction: every decision that must hold across requests
(budgets, idempotency keys, pending confirmations, audit) lives in the state
store, so N processes behind any load balancer behave as one.
"""

from typing import TYPE_CHECKING

from reach_core.lazy import exports

# Public names and their modules, imported on first access (PEP 562): the entry
# point (reach_serve.plugin) imports this package, and listing plugins must not pay for them.
_EXPORTS = {
    "build_app": "app", "ServeHttpSettings": "settings",
}

if TYPE_CHECKING:
    from .app import build_app
    from .settings import ServeHttpSettings


__getattr__ = exports(__name__, _EXPORTS)


__all__ = ["ServeHttpSettings", "build_app"]
