"""Tagged mode: tool calling for models that only produce text.

The tools are described in the system prompt, the model writes
``<tool_call>{"name": ..., "arguments": {...}}</tool_call>``, the core's tagged
parser reads the calls back, and tool results return as
``<tool_result name=... id=...>`` blocks in a user message (plain-text models
know no ``tool`` role). The loop's transcript stays canonical; only the wire
form changes here.
"""

from __future__ import annotations

import json
from typing import Any

from reach_core.adapter import ToolChoice, forced_tool_name
from reach_core.result import dumps

OPEN, CLOSE = "<tool_call>", "</tool_call>"


def tools_prompt(tools: list[dict[str, Any]], choice: ToolChoice) -> str:
    """The system-prompt block that teaches a text-only model to call ``tools``."""
    lines = [
        "You can call tools. To call one, write exactly",
        f'{OPEN}{{"name": "TOOL_NAME", "arguments": {{...}}}}{CLOSE}',
        "with a JSON object of arguments; write several blocks to call several tools at once, "
        "then stop and wait. Results come back in <tool_result> blocks. When you have what "
        "you need, answer the user in plain text without tags.",
        "",
        "Tools:",
    ]
    for entry in tools:
        fn = entry.get("function", entry)
        lines.append(f"- {fn['name']}: {fn.get('description', '').strip()}")
        lines.append(
            f"  arguments (JSON Schema): {dumps(fn.get('parameters') or {'type': 'object'})}"
        )
    forced = forced_tool_name(choice)
    if forced:
        lines.append(f"\nNow call the tool `{forced}`.")
    elif choice == "required":
        lines.append("\nNow call at least one tool.")
    return "\n".join(lines)


def _call_block(call: dict[str, Any]) -> str:
    fn = call["function"]
    raw = fn.get("arguments") or "{}"
    try:
        args: Any = json.loads(raw)
    except ValueError:
        return f'{OPEN}{{"name": {json.dumps(fn["name"])}, "arguments": {raw}}}{CLOSE}'
    return f"{OPEN}{dumps({'name': fn['name'], 'arguments': args})}{CLOSE}"


def to_wire(
    messages: list[dict[str, Any]], tools: list[dict[str, Any]], choice: ToolChoice
) -> list[dict[str, Any]]:
    """Rewrite the canonical transcript for a text-only model."""
    names: dict[str, str] = {}
    wire: list[dict[str, Any]] = []
    pending: list[str] = []

    def flush() -> None:
        if pending:
            wire.append({"role": "user", "content": "\n".join(pending)})
            pending.clear()

    for msg in messages:
        role = msg.get("role")
        if role == "tool":
            call_id = str(msg.get("tool_call_id", ""))
            pending.append(
                f'<tool_result name="{names.get(call_id, "")}" id="{call_id}">{msg.get("content", "")}</tool_result>'
            )
            continue
        flush()
        if role == "assistant" and msg.get("tool_calls"):
            for call in msg["tool_calls"]:
                names[str(call["id"])] = call["function"]["name"]
            parts = [msg["content"]] if msg.get("content") else []
            parts += [_call_block(c) for c in msg["tool_calls"]]
            wire.append({"role": "assistant", "content": "\n".join(parts)})
        else:
            wire.append({k: v for k, v in msg.items() if k in ("role", "content", "name")})
    flush()

    if choice != "none" and tools:
        block = tools_prompt(tools, choice)
        if wire and wire[0].get("role") == "system":
            wire[0] = {
                "role": "system",
                "content": f"{wire[0].get('content') or ''}\n\n{block}".strip(),
            }
        else:
            wire.insert(0, {"role": "system", "content": block})
    return wire
