"""Red-team round 5: an OpenAPI document whose `$ref`s inline to an exponential schema.

Recursion was cut, but a schema that references the next one several times at each of
many levels (a "billion laughs" made of ``$ref``) is not recursive: a 3 KB document of 12
levels x 4 references inlined to 4**12 nodes, hung the build for minutes and would have
become a tool schema of gigabytes. The same through parameters, ``allOf``/``anyOf``,
``items``, ``additionalProperties`` and big ``enum``/``example`` values copied at every use.
Now one schema may inline at most ``MAX_SCHEMA_NODES`` nodes and a document
``MAX_DOCUMENT_NODES``: the operation is skipped with the reason, the others still load.
Every case builds in well under a second (it is the *size* that is bounded, not a timer).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from reach_http import StaticResolver, build_connectors
from reach_http.openapi import schema as schema_module
from reach_http.openapi.operations import build_operations


def _chain(levels: int, fan: int, how: str) -> dict[str, Any]:
    schemas: dict[str, Any] = {}
    for i in range(levels):
        nxt = {"$ref": f"#/components/schemas/S{i + 1}"}
        if how == "properties":
            schemas[f"S{i}"] = {"type": "object", "properties": {f"p{j}": nxt for j in range(fan)}}
        elif how == "allOf":
            schemas[f"S{i}"] = {"allOf": [nxt] * fan}
        elif how == "anyOf":
            schemas[f"S{i}"] = {"anyOf": [dict(nxt, description=f"v{j}") for j in range(fan)]}
        elif how == "items":
            schemas[f"S{i}"] = {"type": "object", "properties": {f"p{j}": {"type": "array", "items": nxt}
                                                                 for j in range(fan)}}
        elif how == "additional":
            schemas[f"S{i}"] = {"type": "object", "additionalProperties": nxt,
                                "properties": {f"p{j}": nxt for j in range(fan - 1)}}
        elif how == "ref-chain":  # references to references
            schemas[f"S{i}"] = {"type": "object", "properties": {f"p{j}": {"$ref": f"#/components/schemas/R{i}"}
                                                                 for j in range(fan)}}
            schemas[f"R{i}"] = nxt
    schemas[f"S{levels}"] = {"type": "string"}
    return schemas


def _doc(schemas: dict[str, Any], *, where: str = "body", extra_ops: int = 1) -> dict[str, Any]:
    ref = {"$ref": "#/components/schemas/S0"}
    if where == "body":
        bad = {"operationId": "postBomb", "requestBody": {"content": {"application/json": {"schema": ref}}},
               "responses": {"200": {"description": "ok"}}}
    else:
        bad = {"operationId": "postBomb", "parameters": [{"name": "filter", "in": "query", "schema": ref}],
               "responses": {"200": {"description": "ok"}}}
    paths: dict[str, Any] = {"/bomb": {"post": bad}}
    for n in range(extra_ops):
        paths[f"/fine{n}"] = {"get": {"operationId": f"getFine{n}", "responses": {"200": {"description": "ok"}},
                                      "parameters": [{"name": "q", "in": "query", "schema": {"type": "string"}}]}}
    return {"openapi": "3.0.3", "info": {"title": "t", "version": "1"},
            "servers": [{"url": "https://api.example.com"}], "components": {"schemas": schemas}, "paths": paths}


def _build(doc: dict[str, Any], tmp_path: Path) -> list[Any]:
    path = tmp_path / "doc.json"
    path.write_text(json.dumps(doc))
    return build_connectors({"services": {"s": {"openapi": str(path)}}}, resolver=StaticResolver())


SHAPES = [(12, 4), (20, 2), (9, 8), (6, 16), (24, 10)]
HOWS = ["properties", "allOf", "anyOf", "items", "additional", "ref-chain"]


@pytest.mark.parametrize("how", HOWS)
@pytest.mark.parametrize(("levels", "fan"), SHAPES)
@pytest.mark.parametrize("where", ["body", "query"])
def test_an_exponential_schema_skips_its_operation_only(levels: int, fan: int, how: str, where: str,
                                                        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(schema_module, "MAX_SCHEMA_NODES", 2_000)  # the same rule, a smaller bomb suffices
    tools = _build(_doc(_chain(levels, fan, how), where=where), tmp_path)
    names = {t.name for t in tools}
    assert "getFine0" in names, names
    # skipped, or (where MAX_DEPTH already cut the nesting short) small
    assert all(len(json.dumps(t.input_schema)) < 200_000 for t in tools)
    if fan ** min(levels, 8) > 2_000 and how != "ref-chain":
        assert "postBomb" not in names


def test_the_skip_says_why(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(schema_module, "MAX_SCHEMA_NODES", 2_000)
    _, skipped = build_operations(_doc(_chain(12, 4, "properties")))
    (skip,) = [s for s in skipped if s.path == "/bomb"]
    assert "$ref" in skip.reason and "2000 nodes" in skip.reason, skip.reason


@pytest.mark.parametrize("kind", ["enum", "example", "default"])
def test_a_big_value_copied_at_every_use_counts_too(kind: str, tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(schema_module, "MAX_SCHEMA_NODES", 2_000)
    big: dict[str, Any] = {"type": "string"}
    big[kind] = [f"value-{i}" for i in range(5_000)] if kind == "enum" else "x" * 400_000
    schemas = {"S0": {"type": "object", "properties": {f"p{j}": {"$ref": "#/components/schemas/Big"}
                                                       for j in range(50)}}, "Big": big}
    tools = _build(_doc(schemas), tmp_path)
    assert "postBomb" not in {t.name for t in tools}


def test_many_operations_share_one_document_budget(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(schema_module, "MAX_SCHEMA_NODES", 1_200)
    monkeypatch.setattr(schema_module, "MAX_DOCUMENT_NODES", 5_000)
    schemas = _chain(6, 3, "properties")  # S1: 3**5 leaves, 1,092 nodes each time
    paths = {f"/op{n}": {"post": {"operationId": f"postOp{n}", "responses": {"200": {"description": "ok"}},
                                  "requestBody": {"content": {"application/json": {
                                      "schema": {"$ref": "#/components/schemas/S1"}}}}}} for n in range(40)}
    doc = {"openapi": "3.0.3", "info": {"title": "t", "version": "1"}, "servers": [{"url": "https://a.example"}],
           "components": {"schemas": schemas}, "paths": paths}
    ops, skipped = build_operations(doc)
    assert 0 < len(ops) < 40 and len(ops) + len(skipped) == 40
    assert any("document's schemas together" in s.reason for s in skipped)


@pytest.mark.parametrize(("levels", "fan"), [(5, 4), (3, 10), (1, 200), (10, 1)])
def test_ordinary_shared_schemas_still_inline(levels: int, fan: int, tmp_path: Path) -> None:
    tools = _build(_doc(_chain(levels, fan, "properties")), tmp_path)
    (bomb,) = [t for t in tools if t.name == "postBomb"]
    text = json.dumps(bomb.input_schema)
    assert text.count('"type": "string"') >= fan ** levels


def test_the_limits_are_generous_for_real_documents() -> None:
    assert schema_module.MAX_SCHEMA_NODES >= 20_000 and schema_module.MAX_DOCUMENT_NODES >= 500_000
