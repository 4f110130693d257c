"""Hook implementations of reach-shape (entry point ``reach-shape``).

Shaping runs as a ``reach_post_invoke`` step at priority 50, before audit (90),
so audit records what the model actually saw (``meta["shaped"]`` names the
handle of the full result). State (settings, counter, handle store) is one
:class:`ShapePlugin` per ``Reach``, built by ``reach_plugin_instance`` with that
Reach's settings, never in module globals shared between instances.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from reach_core import hookimpl

if TYPE_CHECKING:
    from collections.abc import Callable

    from reach_core import ToolResult

    from .shaper import Shaped, Shaper

# Only reach_core.hookimpl is imported with this module (``reach plugins`` imports it);
# the shaper, the read_result tool and the pydantic settings load when a Reach starts.

# The name config and logs use when this module is registered directly (tests, embedding).
REACH_PLUGIN_NAME = "reach-shape"
# Shaping before audit (90): audit records what the model saw.
REACH_HOOK_PRIORITY = {"reach_post_invoke": 50}

#: The name of the ``read_result`` tool (``reach_shape.reader.ReadResult.name``).
READ_RESULT = "read_result"

#: Results larger than this (characters) are shaped in a worker thread, off the event loop.
THREAD_THRESHOLD = 256 * 1024

def shaper_for(reach: Any) -> Shaper:
    """The ``Shaper`` of one ``Reach`` (made from its ``[plugins.reach-shape]`` settings when it started)."""
    from reach_core import PluginError, plugin_instance

    plugin = plugin_instance(reach, REACH_PLUGIN_NAME)
    if plugin is None:
        raise PluginError(f"{REACH_PLUGIN_NAME} is not loaded in this Reach")
    return plugin.shaper


class ShapePlugin:
    """reach-shape in one ``Reach``: its ``Shaper`` (settings, counter, handle store).

    Slotted, so the call hook's ``self._fits`` stays a fast read after the core lists
    the object's attributes (``dir``, when it registers its hooks: an ordinary instance
    then has a ``__dict__`` that CPython 3.11 reads ~10 times slower).
    """

    __slots__ = ("shaper", "_fits")

    def __init__(self, settings: Any) -> None:
        from .settings import ShapeSettings
        from .shaper import Shaper

        self.shaper: Shaper = Shaper(settings or ShapeSettings())
        #: per tool name, the result length (JSON characters) that surely fits (Shaper.quick_fit)
        self._fits: dict[str, int] = {}

    @hookimpl
    def reach_register_tools(self, register: Any) -> None:
        from .reader import ReadResult

        register(ReadResult(lambda _reach: self.shaper))

    @hookimpl
    def reach_startup(self, reach: Any) -> None:
        if self.shaper.settings.tokenizer != "estimate":
            from .tokens import warm_up

            warm_up()

    @hookimpl
    def reach_post_invoke(self, call: Any, tool: Any, result: ToolResult, ctx: Any) -> Any:
        """Shape a successful result that is over its tool's budget (or has fields configured).

        A plain method, so the usual call (a result that fits) pays no coroutine: it
        returns ``None`` (keep the result) or the shaped result; only a result large
        enough to be shaped in a worker thread returns a coroutine, which the core awaits.
        Every argument of the spec, in its order: the core then calls it without re-packing.
        """
        if tool is None or not result.ok:
            return None
        fits = self._fits.get(tool.name)
        if fits is None:
            fits = self._fits[tool.name] = self.shaper.quick_fit(tool.name)
        if len(result.to_json()) <= fits:
            return None  # the usual call: a short result, no fields configured
        return _post_invoke(self.shaper, tool, result, ctx)

    @hookimpl
    def reach_run_step(self, step: Any) -> None:
        """A step without tool calls (the answer) or with an error ends the run: its handles go."""
        if step.tool_calls and not step.error:
            return
        if step.run_id:
            self.shaper.store.end_run(step.run_id)


@hookimpl
def reach_plugin_settings() -> Any:
    from .settings import ShapeSettings

    return ShapeSettings


@hookimpl
def reach_plugin_instance(settings: Any) -> ShapePlugin:
    return ShapePlugin(settings)


def _post_invoke(shaper: Shaper, tool: Any, result: ToolResult, ctx: Any) -> Any:
    """``None``, a shaped ``ToolResult``, or (a result over ``THREAD_THRESHOLD``) a coroutine of one."""
    if not result.ok or tool is None:
        return None
    if tool.name == READ_RESULT and tool.plugin == REACH_PLUGIN_NAME:
        return None  # read_result enforces its own budget on exactly the slice asked for
    needed, budget, rule = shaper.needs_shaping(result, tool.name)
    if not needed:
        return None
    return _shape(shaper, tool, result, ctx, budget, rule)


def _shape(shaper: Shaper, tool: Any, result: ToolResult, ctx: Any, budget: int, rule: Any) -> Any:
    agent, run_id, query = ctx.agent, ctx.run_id, ctx.query
    kept: list[str | None] = []

    def keep(view: Any) -> str | None:
        kept.append(shaper.store.put(view, agent=agent, run_id=run_id, tool=tool.name, size=len(result.to_json())))
        return kept[-1]

    try:
        over = not shaper.fits(result.to_json(), budget) if rule is not None and rule.fields else True
        if len(result.to_json()) <= THREAD_THRESHOLD:
            shaped = shaper.shape(result.content, budget=budget, rule=rule, query=query, handle=keep, over=over,
                                  mask=_secrets_mask(ctx))
            return _replace(result, shaped, budget, shaper)
    except Exception as exc:  # noqa: BLE001 - a shaping bug must not let an oversized result through
        ctx.log.error("reach_shape.failed", error=repr(exc))
        return _cut_bytes(result, budget, kept[-1] if kept else None, shaper)
    return _shape_large(shaper, result, budget, rule, query, agent, run_id, tool.name, over, ctx)


def _secrets_mask(ctx: Any) -> Callable[[str], str] | None:
    """The Reach's mask of its configured secrets (``reach_core.known_secrets``), or None
    when it has none. The core masks the result before this hook; the mask is for text
    shaping makes (an HTML page's visible text), see ``Shaper.shape``."""
    known = getattr(getattr(getattr(ctx, "reach", None), "redactor", None), "known", None)
    return known.mask if known else None


async def _shape_large(shaper: Shaper, result: ToolResult, budget: int, rule: Any, query: str | None,
                       agent: str, run_id: str | None, tool: str, over: bool, ctx: Any) -> ToolResult | None:
    try:
        return await _shape_in_thread(shaper, result, budget, rule, query, agent, run_id, tool, over,
                                      _secrets_mask(ctx))
    except Exception as exc:  # noqa: BLE001 - a shaping bug must not let an oversized result through
        ctx.log.error("reach_shape.failed", error=repr(exc))
        return _cut_bytes(result, budget, None, shaper)


def _cut_bytes(result: ToolResult, budget: int, handle: str | None, shaper: Shaper) -> ToolResult:
    """The last resort: the head of the result's JSON, short enough to fit whatever it holds
    (a token is at least one byte; a character at most four)."""
    from .shaper import Shaped

    text = result.to_json()
    more = f'; read_result(handle="{handle}") reads the full result' if handle else ""
    head = f"[reach-shape: result of {len(text):,} chars cut to its start{more}]\n"
    from .clusters import snap

    content = head + text[: snap(text, max(0, (budget - len(head)) // 4))]
    shaped = Shaped(content, shaper.count(content), result.content, handle or "", {"kind": "bytes"})
    return _replace(result, shaped, budget, shaper) or result


async def _shape_in_thread(shaper: Shaper, result: ToolResult, budget: int, rule: Any, query: str | None,
                           agent: str, run_id: str | None, tool: str, over: bool,
                           mask: Callable[[str], str] | None = None) -> ToolResult | None:
    # the handle store is not thread-safe: the thread only names the handle, the loop stores the view
    import asyncio

    size = len(result.to_json())
    handle = shaper.store.new_handle() if shaper.store.fits(size) else None
    views: list[Any] = []

    def keep(view: Any) -> str | None:
        views.append(view)
        return handle

    shaped = await asyncio.to_thread(shaper.shape, result.content, budget=budget, rule=rule, query=query,
                                     handle=keep, over=over, mask=mask)
    if shaped is None:
        return None
    if views and handle:
        shaper.store.put(views[0], agent=agent, run_id=run_id, tool=tool, size=size, handle=handle)
    return _replace(result, shaped, budget, shaper)


def _replace(result: ToolResult, shaped: Shaped | None, budget: int, shaper: Shaper) -> ToolResult | None:
    if shaped is None:
        return None
    from reach_core import ToolResult

    meta = dict(result.meta)
    meta["shaped"] = {
        "handle": shaped.handle_note or None,
        "budget": budget,
        "tokens": shaped.tokens,
        "chars_before": len(result.to_json()),
        "tokenizer": shaper.counter.name,
        **shaped.facts,
    }
    if shaped.handle_note:  # the agent loop offers read_result from the next step on
        meta["offer_tools"] = [*meta.get("offer_tools", ()), "read_result"]
    return ToolResult(result.call_id, result.name, True, shaped.content, None, result.elapsed_ms,
                      result.trace_id, meta)
