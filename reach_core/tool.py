"""``Tool``: a registered connector with everything the pipeline needs, computed once.

Registration does all the work it can (name check, schema normalisation and
compilation, signature inspection, the OpenAI declaration) so that each call
only looks things up.
"""

from __future__ import annotations

import copy
import hashlib
import inspect
import json
import re
from dataclasses import dataclass, field
from typing import Any

from .connectors import NO_FALLBACK, RISKS, Connector, FunctionConnector
from .errors import ConnectorError
from .schema import CompiledSchema, normalize_schema, strict_schema

__all__ = ["Tool", "NAME_RE"]

NAME_RE = re.compile(r"[a-zA-Z0-9_-]{1,64}\Z")  # \Z, not $: "$" lets a trailing newline through
_RANK = {r: i for i, r in enumerate(RISKS)}


def _closed(obj: Connector, schema: dict[str, Any]) -> dict[str, Any]:
    """The schema calls are checked against: an ``@connector`` function without ``**kwargs``
    cannot take a field it does not name, so one is refused before it runs (the declared
    schema, which pins fingerprint, stays as written)."""
    if isinstance(obj, FunctionConnector) and not obj.takes_extra and "additionalProperties" not in schema:
        return {**schema, "additionalProperties": False}
    return schema


@dataclass(eq=False)
class Tool:
    """A connector as reach runs it: effective risk, limits and compiled schema."""

    connector: Connector
    name: str
    description: str
    schema: dict[str, Any]
    compiled: CompiledSchema
    plugin: str
    risk: str
    idempotent: bool
    timeout: float
    attempt_timeout: float | None
    max_retries: int
    max_concurrency: int | None
    sequential: bool
    weight: int
    tags: tuple[str, ...]
    keywords: tuple[str, ...]
    output_schema: dict[str, Any] | None
    is_async: bool
    pass_ctx: bool
    args_model: Any = None
    risk_declared: str = "write"
    risk_note: str | None = None
    settings: Any = None
    max_calls_per_run: int | None = None
    blocked: str | None = None
    # An ``@connector`` async function taking no context: the executor calls it
    # with the arguments directly, without the connector's wrapper coroutine.
    direct: Any = None
    _decl: dict[str, Any] | None = field(default=None, repr=False)
    _decl_strict: dict[str, Any] | None = field(default=None, repr=False)

    @property
    def has_fallback(self) -> bool:
        return self.connector.fallback is not NO_FALLBACK

    def declaration(self, *, strict: bool = False) -> dict[str, Any]:
        """The OpenAI ``tools`` entry (cached; callers must not mutate it)."""
        if strict:
            if self._decl_strict is None:
                self._decl_strict = {
                    "type": "function",
                    "function": {
                        "name": self.name,
                        "description": self.description,
                        "parameters": strict_schema(self.schema),
                        "strict": True,
                    },
                }
            return self._decl_strict
        if self._decl is None:
            self._decl = {
                "type": "function",
                "function": {"name": self.name, "description": self.description, "parameters": self.schema},
            }
        return self._decl

    def fingerprint(self) -> str:
        """SHA-256 of name, description and schema: what a pin protects."""
        text = json.dumps([self.name, self.description, self.schema], sort_keys=True, ensure_ascii=False)
        return hashlib.sha256(text.encode()).hexdigest()

    def text(self) -> str:
        """Name, description and parameter names/descriptions, for selectors."""
        parts = [self.name.replace("_", " "), self.description]
        for key, sub in (self.schema.get("properties") or {}).items():
            parts.append(key.replace("_", " "))
            if isinstance(sub, dict) and sub.get("description"):
                parts.append(str(sub["description"]))
        return "\n".join(parts)

    @classmethod
    def build(
        cls, obj: Connector, *, plugin: str, overrides: dict[str, Any] | None = None, settings: Any = None
    ) -> Tool:
        if not isinstance(obj, Connector):
            raise ConnectorError(
                f"cannot register {obj!r}: pass a Connector instance or a function decorated with @connector"
            )
        if isinstance(obj, type):
            raise ConnectorError(f"register an instance of {obj.__name__}, not the class")
        ov = overrides or {}
        name = obj.name
        if not isinstance(name, str) or not NAME_RE.match(name):
            raise ConnectorError(
                f"tool name {name!r} is not allowed: OpenAI requires 1-64 characters of letters, digits, '_' or '-'"
            )
        where = f"tool {name!r}"
        schema = normalize_schema(copy.deepcopy(obj.get_input_schema()), where=where)
        declared = obj.risk
        if declared not in _RANK:
            raise ConnectorError(f"{where}: risk must be one of read, write, dangerous; got {declared!r}")
        risk = ov.get("risk") or declared
        if risk not in _RANK:
            raise ConnectorError(f"{where}: [connectors.{name}] risk must be read, write or dangerous")
        note = None
        if _RANK[risk] < _RANK[declared]:
            note = f"risk lowered by config from {declared} to {risk}"
        idem = obj.idempotent if obj.idempotent is not None else declared == "read"
        if "idempotent" in ov:
            idem = bool(ov["idempotent"])
        if _RANK[risk] > _RANK[declared] and obj.idempotent is None and "idempotent" not in ov:
            idem = risk == "read"
        execute = obj.execute
        direct = None
        if isinstance(obj, FunctionConnector):
            is_async, pass_ctx = obj._is_async, True
            if getattr(execute, "__func__", None) is FunctionConnector._execute_async and not obj._ctx_param:
                direct = obj.fn
        else:
            is_async = inspect.iscoroutinefunction(execute)
            try:
                params = [
                    p for p in inspect.signature(execute).parameters.values()
                    if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
                ]
            except (TypeError, ValueError):
                params = []
            pass_ctx = len(params) >= 2
        timeout = float(ov.get("timeout", obj.timeout))
        if timeout <= 0:
            raise ConnectorError(f"{where}: timeout must be positive")
        return cls(
            connector=obj,
            name=name,
            description=(ov.get("description") or obj.description or "").strip(),
            schema=schema,
            compiled=CompiledSchema(_closed(obj, schema)),
            plugin=plugin,
            risk=risk,
            idempotent=idem,
            timeout=timeout,
            attempt_timeout=ov.get("attempt_timeout", obj.attempt_timeout),
            max_retries=int(ov.get("max_retries", ov.get("retries", obj.max_retries))),
            max_concurrency=ov.get("max_concurrency", obj.max_concurrency),
            sequential=bool(ov.get("sequential", obj.sequential)),
            weight=max(1, int(ov.get("weight", obj.weight))),
            tags=tuple(dict.fromkeys([*obj.tags, *ov.get("tags", ())])),
            keywords=tuple(dict.fromkeys([*obj.keywords, *ov.get("keywords", ())])),
            output_schema=obj.get_output_schema(),
            is_async=is_async,
            pass_ctx=pass_ctx,
            # an @connector function's hints that JSON alone does not satisfy are checked like an Args model
            args_model=obj.validator if isinstance(obj, FunctionConnector) and obj.Args is None else obj.Args,
            risk_declared=declared,
            risk_note=note,
            settings=settings,
            max_calls_per_run=ov.get("max_calls_per_run"),
            direct=direct,
        )
