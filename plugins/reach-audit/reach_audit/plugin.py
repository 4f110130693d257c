"""Hook implementations of reach-audit (the module the ``reach`` entry point names).

reach-audit's state in a ``Reach`` is one :class:`AuditPlugin`, built by
``reach_plugin_instance`` with that Reach's validated settings; its runtime hooks
are methods, deliberately tiny: read ``self.audit``, append a capture, return.
Everything else happens in the background writer.
"""

from __future__ import annotations

from typing import Any

from reach_core import hookimpl

# Only reach_core.hookimpl at import: listing plugins (``reach plugins``) imports this
# module, and the audit machinery (writer, store, structlog) loads when a Reach starts.

# Audit runs after shaping (50), so it records what the model actually received.
REACH_PLUGIN_NAME = "reach-audit"
REACH_HOOK_PRIORITY = {"reach_post_invoke": 90}


def _settings_or_default(settings: Any) -> Any:
    from .settings import AuditSettings

    return settings if isinstance(settings, AuditSettings) else AuditSettings()


class AuditPlugin:
    """reach-audit in one ``Reach``: its settings and its ``Audit`` (``None`` while off).

    ``audit`` is created at once (when enabled) and again on the first start after a
    shutdown; ``[plugins.reach-audit] enabled = false`` keeps it ``None`` for good.
    """

    def __init__(self, reach: Any, settings: Any) -> None:
        self.settings = _settings_or_default(settings)
        self.audit: Any = None
        self._open(reach)

    def _open(self, reach: Any) -> None:
        if self.audit is None and self.settings.enabled:
            from .audit import Audit

            self.audit = Audit(reach, self.settings)

    @hookimpl
    def reach_startup(self, reach: Any) -> None:
        self._open(reach)  # a no-op unless a shutdown closed the previous one
        spans = self.audit.spans if self.audit is not None else None
        if spans is not None:
            spans.refresh()  # a tracer provider the host set after building this Reach

    @hookimpl
    async def reach_shutdown(self, reach: Any) -> None:
        audit, self.audit = self.audit, None
        if audit is not None:
            await audit.aclose()

    @hookimpl
    def reach_post_invoke(self, call: Any, tool: Any, result: Any, ctx: Any) -> Any:
        # The hot path: an attribute read, then a tuple appended (see Audit.on_call); a
        # plain method, so the call pays no coroutine. With durability = "sync" it
        # returns the flush, which the core awaits before the invoke returns.
        audit = self.audit
        if audit is not None and audit.on_call(call, tool, result, ctx):
            return _flushed(audit)
        return None

    @hookimpl
    def reach_run_step(self, step: Any, ctx: Any) -> None:
        if self.audit is not None:
            self.audit.on_step(step, ctx)

    @hookimpl
    def reach_confirmation(self, event: Any, ctx: Any, reach: Any) -> None:
        if self.audit is not None:
            self.audit.on_confirmation(event, ctx)


async def _flushed(audit: Any) -> None:
    await audit.writer.flush()


@hookimpl
def reach_plugin_settings() -> Any:
    from .settings import AuditSettings

    return AuditSettings


@hookimpl
def reach_plugin_instance(reach: Any, settings: Any) -> AuditPlugin:
    return AuditPlugin(reach, settings)


@hookimpl
def reach_register_commands(cli: Any) -> None:
    from .cli import audit_group

    cli.add_command(audit_group)
