"""reach: give LLM agents real, controlled hands.

A model asks for a tool call; reach checks it, runs the right connector under
timeouts, retries, limits, budgets, permissions and confirmation, and hands the
model back a small, clean result::

    from reach_core import Reach, connector

    @connector(risk="read")
    def add(a: int, b: int) -> int:
        '''Add two integers.'''
        return a + b

    reach = Reach(plugins=[])
    reach.register(add)
    result = await reach.invoke("add", {"a": 1, "b": 2})   # ToolResult(ok=True, content=3)

The exception tree is documented in ``reach_core.errors``; hooks in
``reach_core.hookspecs``; configuration in ``reach_core.config``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

# The public names, and the module each lives in. Imported on first access
# (PEP 562) so that ``reach --version`` and plugin modules that only need
# ``hookimpl`` do not pay for pydantic, jsonschema and friends.
_EXPORTS = {
    "BusinessError": "errors", "ConfigError": "errors", "ConnectorError": "errors", "Denied": "errors",
    "InvalidArguments": "errors", "NeedsConfirmation": "errors", "NotFound": "errors", "PluginError": "errors",
    "RateLimited": "errors", "ReachError": "errors", "RetryableError": "errors", "ToolCallError": "errors",
    "ToolFailure": "errors",
    "CallContext": "context", "Config": "config", "Connector": "connectors", "connector": "connectors",
    "TaggedParser": "calls", "ToolCall": "calls", "hookimpl": "hookspecs", "hookspec": "hookspecs",
    "Reach": "reach", "ToolError": "result", "ToolResult": "result", "to_jsonable": "result", "Tool": "tool",
    "Progress": "streaming", "Final": "streaming", "StreamEvent": "streaming",
    "RunResult": "loop", "RunStep": "loop", "Adapter": "adapter", "ModelError": "adapter",
    "ModelRequest": "adapter", "ModelResponse": "adapter", "ModelToolCall": "adapter", "Usage": "adapter",
    "Redactor": "redact", "plugin_instance": "plugins",
}

if TYPE_CHECKING:
    from .adapter import Adapter, ModelError, ModelRequest, ModelResponse, ModelToolCall, Usage
    from .calls import TaggedParser, ToolCall
    from .config import Config
    from .connectors import Connector, connector
    from .context import CallContext
    from .errors import (
        BusinessError,
        ConfigError,
        ConnectorError,
        Denied,
        InvalidArguments,
        NeedsConfirmation,
        NotFound,
        PluginError,
        RateLimited,
        ReachError,
        RetryableError,
        ToolCallError,
        ToolFailure,
    )
    from .hookspecs import hookimpl, hookspec
    from .loop import RunResult, RunStep
    from .plugins import plugin_instance
    from .reach import Reach
    from .redact import Redactor
    from .result import ToolError, ToolResult, to_jsonable
    from .streaming import Final, Progress, StreamEvent
    from .tool import Tool


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'reach_core' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_EXPORTS])

# A literal list, for type checkers and IDEs; tests/test_public_api.py keeps it, the lazy
# table (_EXPORTS) and the TYPE_CHECKING imports above equal.
__all__ = [
    "Adapter",
    "BusinessError",
    "CallContext",
    "Config",
    "ConfigError",
    "Connector",
    "ConnectorError",
    "Denied",
    "Final",
    "InvalidArguments",
    "ModelError",
    "ModelRequest",
    "ModelResponse",
    "ModelToolCall",
    "NeedsConfirmation",
    "NotFound",
    "PluginError",
    "Progress",
    "RateLimited",
    "Reach",
    "ReachError",
    "Redactor",
    "RetryableError",
    "RunResult",
    "RunStep",
    "StreamEvent",
    "TaggedParser",
    "Tool",
    "ToolCall",
    "ToolCallError",
    "ToolError",
    "ToolFailure",
    "ToolResult",
    "Usage",
    "__version__",
    "connector",
    "hookimpl",
    "hookspec",
    "plugin_instance",
    "to_jsonable",
]
