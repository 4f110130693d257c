"""OpenAPI schema objects -> self-contained JSON Schema a model (and validator) can use.

Tool declarations must stand alone, so every ``$ref`` is inlined. Recursive
schemas (a ``Node`` with ``children: [Node]``) are cut at the second visit of the
same reference with a plain ``object`` placeholder, so inlining always ends.
OpenAPI 3.0 dialect (``nullable``, boolean ``exclusiveMaximum``, ``example``) is
translated to JSON Schema; presentation-only keywords (``xml``,
``discriminator``, ``externalDocs``, ``x-*``) are dropped; ``readOnly``
properties are removed from request schemas because a client must not send them.
"""

from __future__ import annotations

import copy
from typing import Any
from urllib.parse import unquote

__all__ = ["OpenAPIError", "RefResolver", "SchemaBuilder"]

_DROP = {"xml", "discriminator", "externalDocs", "example", "deprecated", "$schema", "$id", "$comment"}
_SCHEMA_MAPS = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")
_SCHEMA_LISTS = ("allOf", "anyOf", "oneOf", "prefixItems")
_SCHEMA_ONE = ("items", "additionalProperties", "not", "contains", "propertyNames", "if", "then", "else",
               "unevaluatedProperties", "unevaluatedItems", "additionalItems")
MAX_DEPTH = 24
MAX_SCHEMA_NODES = 20_000
"""Nodes one inlined schema may have. A reference used twice at each of 20 levels inlines to
2**20 copies: a 3 KB document (hostile, or just badly factored) hung the build for minutes and
would have sent the model a schema of gigabytes. Beyond this the operation is skipped, saying why."""
MAX_DOCUMENT_NODES = 500_000
"""Nodes all of one document's schemas may have together (bounds a document of many such operations)."""


class OpenAPIError(ValueError):
    """The document cannot be used: names the place in it."""


class RefResolver:
    """Looks up local ``#/...`` references in one document."""

    def __init__(self, document: dict[str, Any]) -> None:
        self.document = document

    def lookup(self, ref: str) -> Any:
        if not ref.startswith("#"):
            raise OpenAPIError(f"external reference {ref!r} is not supported; bundle the document first")
        node: Any = self.document
        pointer = ref[1:]
        if pointer in ("", "/"):
            return node
        for raw in pointer.lstrip("/").split("/"):
            key = unquote(raw).replace("~1", "/").replace("~0", "~")
            if isinstance(node, dict) and key in node:
                node = node[key]
            elif isinstance(node, list) and key.isdigit() and int(key) < len(node):
                node = node[int(key)]
            else:
                raise OpenAPIError(f"reference {ref!r} points nowhere")
        return node

    def deref(self, node: Any) -> Any:
        """Follow ``$ref`` chains of a non-schema object (parameter, body, path item)."""
        seen: set[str] = set()
        while isinstance(node, dict) and isinstance(node.get("$ref"), str):
            ref = node["$ref"]
            if ref in seen:
                raise OpenAPIError(f"reference cycle at {ref!r}")
            seen.add(ref)
            node = self.lookup(ref)
        return node


class SchemaBuilder:
    """Builds inlined, cleaned JSON Schemas from one document's schema objects."""

    def __init__(self, document: dict[str, Any]) -> None:
        self.refs = RefResolver(document)
        version = str(document.get("openapi", "3.0"))
        self.v30 = version.startswith("3.0")
        self.total = 0  # nodes built for this document so far
        self._left = 0  # nodes the schema being built may still have

    def build(self, schema: Any, *, request: bool = True) -> dict[str, Any]:
        self._left = min(MAX_SCHEMA_NODES, MAX_DOCUMENT_NODES - self.total)
        start = self._left
        try:
            out = self._walk(schema, (), request, 0)
        finally:
            self.total += start - self._left
        return out if isinstance(out, dict) else {}

    def _spend(self, units: int) -> None:
        self._left -= units
        if self._left < 0:
            if self.total + MAX_SCHEMA_NODES > MAX_DOCUMENT_NODES:
                raise OpenAPIError(
                    f"the document's schemas together expand to more than {MAX_DOCUMENT_NODES} nodes once "
                    "their $refs are inlined; this and the remaining operations are left out"
                )
            raise OpenAPIError(
                f"its schema expands to more than {MAX_SCHEMA_NODES} nodes once its $refs are inlined "
                "(a schema referenced several times at many levels); too large for a tool"
            )

    def _copied(self, value: Any) -> Any:
        """``value`` deep-copied, its size (items and characters / 64) paid from the budget first."""
        stack, units = [value], 0
        while stack:
            item = stack.pop()
            units += 1
            if isinstance(item, dict):
                stack.extend(item.values())
                units += len(item) // 4
            elif isinstance(item, list):
                stack.extend(item)
            elif isinstance(item, str):
                units += len(item) // 64
            if units > self._left:
                break
        self._spend(units)
        return copy.deepcopy(value)

    def _walk(self, node: Any, stack: tuple[str, ...], request: bool, depth: int) -> Any:
        if isinstance(node, bool):
            return node
        if not isinstance(node, dict):
            return {}
        self._spend(1)
        if depth > MAX_DEPTH:
            return {"description": "(nested too deeply to describe here)"}
        ref = node.get("$ref")
        if isinstance(ref, str):
            name = ref.rsplit("/", 1)[-1]
            if ref in stack:
                return {"type": "object", "description": f"a {name} object (recursive; same shape as above)"}
            target = self._walk(self.refs.lookup(ref), (*stack, ref), request, depth + 1)
            siblings = {k: v for k, v in node.items() if k != "$ref"}
            if not siblings or not isinstance(target, dict):
                return target
            merged = dict(target)
            merged.update(self._walk(siblings, stack, request, depth + 1))
            return merged
        out: dict[str, Any] = {}
        dropped: set[str] = set()
        for key, value in node.items():
            if key in _DROP or key.startswith("x-"):
                continue
            if key in _SCHEMA_MAPS and isinstance(value, dict):
                if request and key == "properties":
                    dropped = {k for k, v in value.items() if self._read_only(v)}
                out[key] = {
                    k: self._walk(v, stack, request, depth + 1)
                    for k, v in value.items()
                    if not (key == "properties" and k in dropped)
                }
            elif key in _SCHEMA_LISTS and isinstance(value, list):
                out[key] = [self._walk(v, stack, request, depth + 1) for v in value]
            elif key in _SCHEMA_ONE and isinstance(value, (dict, bool)):
                out[key] = self._walk(value, stack, request, depth + 1)
            elif key in ("readOnly", "writeOnly", "nullable"):
                continue
            else:
                out[key] = self._copied(value)
        if "example" in node and "examples" not in out:
            out["examples"] = [self._copied(node["example"])]
        if dropped and isinstance(out.get("required"), list):
            out["required"] = [r for r in out["required"] if r not in dropped]
            if not out["required"]:
                del out["required"]
        if self.v30:
            self._from_30(node, out)
        return out

    def _read_only(self, prop: Any) -> bool:
        try:
            target = self.refs.deref(prop)
        except OpenAPIError:
            return False
        return isinstance(target, dict) and target.get("readOnly") is True

    @staticmethod
    def _from_30(source: dict[str, Any], out: dict[str, Any]) -> None:
        for bound, limit in (("exclusiveMaximum", "maximum"), ("exclusiveMinimum", "minimum")):
            if isinstance(out.get(bound), bool):
                if out[bound] and limit in out:
                    out[bound] = out.pop(limit)
                else:
                    del out[bound]
        if source.get("nullable") is True:
            kind = out.get("type")
            if isinstance(kind, str):
                out["type"] = [kind, "null"]
                if "enum" in out and None not in out["enum"]:
                    out["enum"] = [*out["enum"], None]
            elif kind is None and out:
                inner = dict(out)
                out.clear()
                out["anyOf"] = [inner, {"type": "null"}]
