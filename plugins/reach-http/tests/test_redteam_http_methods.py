"""Red team: a service's ``methods`` allow-list also bounds the tools its OpenAPI document makes.

``methods`` was read by the generic ``http_request`` only. An operator who wrote
``methods = ["GET"]`` for an OpenAPI service (meaning: this service is read-only
for agents) still got a tool for every DELETE, PUT, POST and PATCH operation the
document declares: the allow-list was walked around by the document. Now, when
``methods`` is written for a service, operations with any other method are not
imported; without it, every operation is imported as before (honest use). Families:
each method left out in turn, spellings of the list (case), the ``operations``
allow-list combined with it, ``prefix``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from reach_http import StaticResolver, build_connectors

METHODS = ["get", "put", "post", "delete", "patch", "head", "options"]


def _document(tmp_path: Path) -> str:
    paths: dict[str, Any] = {"/pets/{id}": {}, "/pets": {}}
    for method in METHODS:
        op: dict[str, Any] = {"operationId": f"{method}Pet", "responses": {"200": {"description": "ok"}}}
        if method in ("get", "put", "delete", "patch", "head", "options"):
            op["parameters"] = [{"name": "id", "in": "path", "required": True, "schema": {"type": "integer"}}]
            paths["/pets/{id}"][method] = op
        else:
            paths["/pets"][method] = op
    doc = {"openapi": "3.0.3", "info": {"title": "pets", "version": "1"}, "paths": paths}
    path = tmp_path / "pets.json"
    path.write_text(json.dumps(doc))
    return str(path)


def _tools(tmp_path: Path, **service: Any) -> set[str]:
    settings = {"services": {"pets": {"openapi": _document(tmp_path), "base_url": "https://pets.example", **service}}}
    return {t.name for t in build_connectors(settings, resolver=StaticResolver())}


def _op(method: str, prefix: str = "") -> str:
    return f"{prefix}{method}Pet"


def test_without_methods_every_operation_is_a_tool(tmp_path: Path) -> None:
    names = _tools(tmp_path)
    assert all(any(n.lower() == _op(m).lower() or n.lower().endswith(m + "pet") for n in names) for m in METHODS), names


ALLOWED = [["GET"], ["GET", "HEAD"], ["GET", "POST"], ["POST"], ["GET", "HEAD", "POST", "PUT", "PATCH"],
           ["get"], ["Get", "head"], ["DELETE"], ["GET", "OPTIONS"], ["PUT", "PATCH"]]


@pytest.mark.parametrize("allowed", ALLOWED)
def test_written_methods_bound_the_openapi_tools(tmp_path: Path, allowed: list[str]) -> None:
    names = {n.lower() for n in _tools(tmp_path, methods=allowed)}
    wanted = {m.lower() for m in allowed}
    for method in METHODS:
        has = any(n.startswith(method) and n.endswith("pet") for n in names)
        assert has == (method in wanted), (method, allowed, names)


@pytest.mark.parametrize("allowed", [["GET"], ["GET", "DELETE"]])
def test_methods_and_operations_both_apply(tmp_path: Path, allowed: list[str]) -> None:
    names = {n.lower() for n in _tools(tmp_path, methods=allowed, operations=["getPet", "deletePet", "postPet"])}
    assert any(n.startswith("get") for n in names)
    assert any(n.startswith("delete") for n in names) == ("DELETE" in allowed)
    assert not any(n.startswith("post") for n in names)


def test_methods_bound_prefixed_tools_too(tmp_path: Path) -> None:
    names = {n.lower() for n in _tools(tmp_path, methods=["GET"], prefix="shop_")}
    assert names and all(not any(m in n for m in ("delete", "put", "post", "patch")) for n in names), names
