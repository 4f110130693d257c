"""The built-in `find_tools` tool: the model asks for tools it was not offered.

Selection can miss. Instead of failing, the model describes what it needs and gets
the best matches among the tools *its agent may use* (reach's policy filters before
ranking, so this never reveals or offers a tool the agent is denied).
"""

from __future__ import annotations

from typing import Any

from reach_core import Connector, InvalidArguments

NAME = "find_tools"


class FindTools(Connector):
    name = NAME
    description = (
        "Find more tools. Use when none of the tools you have fits the next step. Describe "
        "the action you need in a few words (any language); returns matching tools with "
        "their parameters, which you can call from your next step on."
    )
    risk = "read"
    tags = ("reach", "discovery")
    input_schema = {
        "type": "object",
        "properties": {
            "query": {
                "type": "string",
                "description": "What you need to do, e.g. 'convert currency' or '查询天气'.",
            },
            "limit": {
                "type": "integer",
                "minimum": 1,
                "maximum": 20,
                "description": "How many tools to return (default 5).",
            },
        },
        "required": ["query"],
    }

    def __init__(self, default_limit: int = 5) -> None:
        self.default_limit = default_limit

    async def execute(self, params: Any, ctx: Any = None) -> Any:
        query = str(params.get("query") or "").strip()
        if not query:
            raise InvalidArguments("query", "a short description of the action you need", "convert currency")
        limit = int(params.get("limit") or self.default_limit)
        agent = getattr(ctx, "agent", None)
        entries = ctx.reach.tools(agent=agent, query=query, limit=limit + 1)
        found = [e["function"] for e in entries if e["function"]["name"] != NAME][:limit]
        return {
            "tools": [
                {
                    "name": f["name"],
                    "description": f.get("description", ""),
                    "parameters": f.get("parameters", {}),
                }
                for f in found
            ],
            "note": "These tools are offered to you from the next step on; call them by name."
            if found
            else "No tool matches; answer without a tool or ask the user.",
        }
