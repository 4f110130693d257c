"""Hook implementations of reach-audit (the module the ``reach`` entry point names).

The runtime hooks are deliberately tiny: look the Audit up, append a capture,
return. Everything else happens in the background writer.
"""

from __future__ import annotations

from typing import Any

from reach_core import hookimpl

# Only reach_core.hookimpl at import: listing plugins (``reach plugins``) imports this
# module, and the audit machinery (writer, store, structlog) loads when a Reach starts.

# Audit runs after shaping (50), so it records what the model actually received.
REACH_PLUGIN_NAME = "reach-audit"
REACH_HOOK_PRIORITY = {"reach_post_invoke": 90}
ATTR = "_reach_audit"  # = reach_audit.audit.ATTR: where an attached Audit sits on its Reach


_get_audit: Any = None


def get_audit(reach: Any) -> Any:
    """``reach_audit.audit.get_audit``, imported on first use."""
    global _get_audit
    if _get_audit is None:
        from .audit import get_audit as real

        _get_audit = real
    return _get_audit(reach)


def _settings_or_none(settings: Any) -> Any:
    from .settings import AuditSettings

    return settings if isinstance(settings, AuditSettings) else None


@hookimpl
def reach_plugin_settings() -> Any:
    from .settings import AuditSettings

    return AuditSettings


@hookimpl
def reach_register_tools(register: Any, settings: Any, reach: Any) -> None:
    """reach-audit registers no tools; this is where it learns its settings and its Reach."""
    from .audit import attach

    attach(reach, _settings_or_none(settings))


@hookimpl
def reach_startup(reach: Any) -> None:
    # A no-op when reach_register_tools attached it; after a shutdown, attaches anew.
    from .audit import attach

    settings = getattr(reach, "plugin_settings", lambda _name: None)("reach-audit")
    attach(reach, _settings_or_none(settings))


@hookimpl
async def reach_shutdown(reach: Any) -> None:
    from .audit import detach

    audit = detach(reach)
    if audit is not None:
        await audit.aclose()


@hookimpl
def reach_post_invoke(call: Any, tool: Any, result: Any, ctx: Any) -> Any:
    # The hot path: an attribute read, then a tuple appended (see Audit.on_call); a
    # plain function, so the call pays no coroutine. With durability = "sync" it
    # returns the flush, which the core awaits before the invoke returns.
    audit = getattr(ctx.reach, ATTR, None) or get_audit(ctx.reach)
    if audit is not None and audit.on_call(call, tool, result, ctx):
        return _flushed(audit)
    return None


async def _flushed(audit: Any) -> None:
    await audit.writer.flush()


@hookimpl
def reach_run_step(step: Any, ctx: Any) -> None:
    audit = get_audit(ctx.reach)
    if audit is not None:
        audit.on_step(step, ctx)


@hookimpl
def reach_confirmation(event: Any, ctx: Any, reach: Any) -> None:
    audit = get_audit(reach)
    if audit is not None:
        audit.on_confirmation(event, ctx)


@hookimpl
def reach_register_commands(cli: Any) -> None:
    from .cli import audit_group

    cli.add_command(audit_group)
