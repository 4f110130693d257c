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

from .calls import TaggedParser, ToolCall
from .config import Config
from .connector import Connector, connector
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
from .reach import Reach
from .result import ToolError, ToolResult, to_jsonable
from .tool import Tool

__version__ = "0.1.0"

__all__ = [
    "BusinessError",
    "CallContext",
    "Config",
    "ConfigError",
    "Connector",
    "ConnectorError",
    "Denied",
    "InvalidArguments",
    "NeedsConfirmation",
    "NotFound",
    "PluginError",
    "RateLimited",
    "Reach",
    "ReachError",
    "RetryableError",
    "TaggedParser",
    "Tool",
    "ToolCall",
    "ToolCallError",
    "ToolError",
    "ToolFailure",
    "ToolResult",
    "__version__",
    "connector",
    "hookimpl",
    "hookspec",
    "to_jsonable",
]
