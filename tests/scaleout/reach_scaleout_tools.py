"""Tools the scale-out tests serve: every execution of a side effect appends one
line to ``$REACH_SCALEOUT_EFFECTS`` (O_APPEND: whole lines, from any process), so
a test can count how often an action really ran, across all instances."""

from __future__ import annotations

import asyncio
import os
from typing import Any

from reach_core import Connector, hookimpl


def effect(kind: str, key: str | None) -> None:
    line = f"{kind} {key} {os.getpid()}\n".encode()
    fd = os.open(os.environ["REACH_SCALEOUT_EFFECTS"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line)
    finally:
        os.close(fd)


class Ping(Connector):
    name = "ping"
    description = "Answer with the serving process id. Use to check the service."
    risk = "read"
    input_schema = {"type": "object", "properties": {"n": {"type": "integer"}}}

    async def execute(self, params: dict[str, Any], ctx: Any) -> Any:
        return {"pid": os.getpid(), "n": params.get("n")}


class Echo(Connector):
    name = "echo"
    description = "Echo a number back. Use to test rate limits."
    risk = "read"
    input_schema = {"type": "object", "properties": {"n": {"type": "integer"}}}

    async def execute(self, params: dict[str, Any], ctx: Any) -> Any:
        return params.get("n")


class Charge(Connector):
    name = "charge"
    description = "Charge an amount once per idempotency key. Use to bill a customer."
    risk = "write"
    input_schema = {
        "type": "object",
        "properties": {"amount": {"type": "integer"}, "delay": {"type": "number"}},
        "required": ["amount"],
    }

    async def execute(self, params: dict[str, Any], ctx: Any) -> Any:
        effect("charge", ctx.idempotency_key)
        await asyncio.sleep(float(params.get("delay") or 0))
        return {"charged": params["amount"], "pid": os.getpid()}


class Transfer(Connector):
    name = "transfer"
    description = "Start a slow transfer. Use to move money."
    risk = "write"
    input_schema = {"type": "object", "properties": {"amount": {"type": "integer"}}, "required": ["amount"]}

    async def execute(self, params: dict[str, Any], ctx: Any) -> Any:
        effect("transfer", ctx.idempotency_key)
        await asyncio.sleep(2.5)
        return {"moved": params["amount"]}


class Wipe(Connector):
    name = "wipe"
    description = "Delete a dataset for good. Use only when asked."
    risk = "dangerous"
    input_schema = {"type": "object", "properties": {"target": {"type": "string"}}, "required": ["target"]}

    async def execute(self, params: dict[str, Any], ctx: Any) -> Any:
        effect("wipe", params["target"])
        return {"wiped": params["target"]}


@hookimpl
def reach_register_tools(register: Any) -> None:
    for cls in (Ping, Echo, Charge, Transfer, Wipe):
        register(cls())
