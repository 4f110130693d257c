"""OpenAPI import: real public documents -> tools, called against a local server."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from http_testserver import Server
from reach_http import StaticResolver, build_connectors
from reach_http.openapi import SchemaBuilder, build_operations, load_document, server_url, tool_name

from reach_core import ConfigError

DATA = Path(__file__).parent / "data"
PETSTORE3 = DATA / "petstore3" / "openapi.json"
CORE_PETSTORE = DATA / "openapi-core-petstore" / "petstore.yaml"
PETSTORE31 = DATA / "openapi-spec-validator" / "petstore-3.1.yaml"
RECURSIVE = DATA / "openapi-spec-validator" / "property-recursive.yaml"


def _keys(node: Any) -> set[str]:
    if isinstance(node, dict):
        return set(node) | {k for v in node.values() for k in _keys(v)}
    if isinstance(node, list):
        return {k for v in node for k in _keys(v)}
    return set()


def _specs(path: Path) -> dict[str, Any]:
    specs, _ = build_operations(load_document(str(path)).document)
    return {s.name: s for s in specs}


def test_petstore3_operations_become_tools_with_risk_from_the_method() -> None:
    specs = _specs(PETSTORE3)
    assert len(specs) == 19
    table = {name: (s.method, s.risk, s.idempotent) for name, s in specs.items()}
    assert table["getPetById"] == ("GET", "read", True)
    assert table["addPet"] == ("POST", "write", False)
    assert table["updatePet"] == ("PUT", "write", True)
    assert table["deletePet"] == ("DELETE", "dangerous", True)
    assert table["deleteOrder"] == ("DELETE", "dangerous", True)
    assert specs["getPetById"].description == (
        "Find pet by ID. Returns a single pet. Use when the user asks to find pet by ID (GET /pet/{petId})"
    )


def test_petstore3_schemas_are_inlined_and_cleaned() -> None:
    specs = _specs(PETSTORE3)
    get = specs["getPetById"].input_schema
    assert get["required"] == ["petId"]
    assert get["properties"]["petId"] == {"type": "integer", "format": "int64", "description": "ID of pet to return"}
    body = specs["addPet"].input_schema["properties"]["body"]
    assert body["required"] == ["name", "photoUrls"]
    assert body["properties"]["category"]["properties"]["name"] == {"type": "string", "examples": ["Dogs"]}
    assert body["properties"]["status"]["enum"] == ["available", "pending", "sold"]
    assert specs["addPet"].input_schema["required"] == ["body"]
    everything = _keys([s.input_schema for s in specs.values()])
    assert not everything & {"$ref", "xml", "example", "x-swagger-router-model"}  # example -> examples
    # the declared header parameter of deletePet is an optional argument
    assert set(specs["deletePet"].input_schema["properties"]) == {"api_key", "petId"}


def test_openapi_core_document_30_dialect_and_parameter_kinds() -> None:
    doc = load_document(str(CORE_PETSTORE))
    assert server_url(doc.document, None) == "http://petstore.swagger.io/v1"
    specs, skipped = build_operations(doc.document)
    by_name = {s.name: s for s in specs}
    limit = by_name["listPets"].input_schema["properties"]["limit"]
    assert limit["type"] == ["integer", "null"] and "deprecated" in limit["description"]
    create = by_name["createPets"].input_schema
    assert {"api-key", "user", "body"} <= set(create["required"])
    assert {p.location for p in by_name["createPets"].params} == {"header", "cookie"}
    assert [(s.method, s.path) for s in skipped] == [("POST", "/pets/{petId}/photo")]
    assert "image/*" in skipped[0].reason


def test_openapi_31_path_item_ref_and_a_property_named_ref() -> None:
    doc = load_document(str(PETSTORE31)).document
    specs = _specs(PETSTORE31)
    assert set(specs) == {"listPets", "createPets", "showPetById"}
    assert specs["showPetById"].input_schema["properties"]["petId"]["type"] == "string"
    pet = SchemaBuilder(doc).build({"$ref": "#/components/schemas/Pet"})
    assert pet["properties"]["$ref"] == {"type": "string"}


def test_recursive_schema_terminates() -> None:
    doc = load_document(str(RECURSIVE)).document
    schema = SchemaBuilder(doc).build({"$ref": "#/components/schemas/SomeDataType"})
    assert schema["properties"]["id"] == {"type": "integer"}
    assert schema["properties"]["prop1"]["type"] == "object"
    assert "recursive" in schema["properties"]["prop1"]["description"]


def test_nested_and_mutually_recursive_refs() -> None:
    doc = {"openapi": "3.1.0", "paths": {}, "components": {"schemas": {
        "A": {"type": "object", "properties": {"b": {"$ref": "#/components/schemas/B"}}},
        "B": {"type": "object", "properties": {"a": {"$ref": "#/components/schemas/A"},
                                               "c": {"$ref": "#/components/schemas/C"}}},
        "C": {"$ref": "#/components/schemas/D"},
        "D": {"type": "string", "description": "leaf"},
        "E~/x": {"type": "integer"},
    }}}
    built = SchemaBuilder(doc).build({"$ref": "#/components/schemas/A"})
    assert built["properties"]["b"]["properties"]["c"] == {"type": "string", "description": "leaf"}
    assert "recursive" in built["properties"]["b"]["properties"]["a"]["description"]
    assert SchemaBuilder(doc).build({"$ref": "#/components/schemas/E~0~1x"}) == {"type": "integer"}


def test_read_only_properties_are_not_asked_for() -> None:
    doc = {"openapi": "3.0.3", "paths": {"/things": {"post": {
        "operationId": "createThing",
        "requestBody": {"required": True, "content": {"application/json": {"schema": {
            "$ref": "#/components/schemas/Thing"}}}}}}},
        "components": {"schemas": {"Thing": {"type": "object", "required": ["id", "name"], "properties": {
            "id": {"type": "integer", "readOnly": True}, "name": {"type": "string"}}}}}}
    (spec,), _ = build_operations(doc)
    body = spec.input_schema["properties"]["body"]
    assert set(body["properties"]) == {"name"} and body["required"] == ["name"]


def test_names_are_legal_unique_and_have_a_fallback() -> None:
    taken: set[str] = set()
    assert tool_name("get pet/by id!", taken) == "get_pet_by_id"
    assert tool_name("get pet/by id!", taken) == "get_pet_by_id_2"
    long = tool_name("x" * 100, taken)
    assert len(long) == 64 and len(tool_name("x" * 100, taken)) == 64
    doc = {"openapi": "3.0.0", "paths": {"/pets/{id}": {"get": {}, "delete": {"operationId": "删除"}}}}
    specs, _ = build_operations(doc)
    names = [s.name for s in specs]
    assert names == ["get_pets_id", "delete_pets_id"]  # an operationId with no legal character falls back
    import re

    assert all(re.fullmatch(r"[a-zA-Z0-9_-]{1,64}", n) for n in names)


# ------------------------------------------------------------ against the server


def _pets_settings(server: Server, **extra: Any) -> dict[str, Any]:
    return {"services": {"pets": {"openapi": str(PETSTORE3), "base_url": f"http://127.0.0.1:{server.port}/v3",
                                  "allow_private": True, **extra}}}


async def test_petstore3_calls_against_the_local_server(server: Server, make) -> None:
    reach = make(_pets_settings(server, auth={"type": "header", "name": "api_key", "value": "special-key"}))
    names = {t["function"]["name"] for t in reach.tools()}
    assert {"getPetById", "addPet", "findPetsByTags", "getInventory"} <= names
    assert "http_get" not in names  # an OpenAPI service gets typed tools, not the generic ones

    got = await reach.invoke("getPetById", {"petId": 1})
    assert got.ok and got.content["body"]["name"] == "Rex"
    missing = await reach.invoke("getPetById", {"petId": 99})
    assert not missing.ok and "Pet not found" in missing.error.message
    wrong = await reach.invoke("getPetById", {"petId": "one"})
    assert not wrong.ok and wrong.error.code == "invalid_arguments"

    added = await reach.invoke("addPet", {"body": {"name": "Nemo", "photoUrls": [], "status": "pending"}})
    assert added.ok, added.error
    assert server.state.pets[added.content["body"]["id"]]["name"] == "Nemo"
    invalid = await reach.invoke("addPet", {"body": {"photoUrls": []}})
    assert not invalid.ok and invalid.error.code == "invalid_arguments"  # schema: name is required

    tags = await reach.invoke("findPetsByTags", {"tags": ["dog", "cat"]})
    assert tags.ok and len(tags.content["body"]) == 2
    assert server.state.requests[-1]["raw_query"] == "tags=dog&tags=cat"

    inventory = await reach.invoke("getInventory", {})
    assert inventory.ok and inventory.content["body"] == {"available": 1, "sold": 1, "pending": 1}


async def test_delete_is_dangerous_and_needs_approval_by_default(server: Server, make) -> None:
    reach = make(_pets_settings(server))
    held = await reach.invoke("deletePet", {"petId": 1})
    assert not held.ok and held.error.code in ("needs_confirmation", "denied")
    assert server.state.count("DELETE", "/v3/pet/1") == 0
    trusted = make(_pets_settings(server), config={"agents": {"default": {"auto_tier": "dangerous"}}})
    done = await trusted.invoke("deletePet", {"petId": 1})
    assert done.ok, done.error
    assert 1 not in server.state.pets


async def test_openapi_core_document_sends_headers_cookies_and_styled_queries(server: Server, make) -> None:
    reach = make({"services": {"core": {"openapi": str(CORE_PETSTORE), "base_url": f"http://127.0.0.1:{server.port}/v1",
                                        "allow_private": True}}})
    listed = await reach.invoke("listPets", {"limit": 2, "ids": [1, 2], "color": {"R": 1, "G": 2},
                                             "coordinates": {"lat": 1.5, "lon": 2}, "tags": ["cats", "dogs"]})
    assert listed.ok, listed.error
    assert listed.content["headers"]["x-next"] == "page=2"
    query = server.state.requests[-1]["query"]
    assert query["ids"] == ["1", "2"] and query["color[R]"] == ["1"] and query["tags"] == ["cats,dogs"]
    assert json.loads(query["coordinates"][0]) == {"lat": 1.5, "lon": 2}
    created = await reach.invoke("createPets", {"api-key": "a2V5", "user": 7,
                                                "body": {"name": "Kit", "ears": {"healthy": True}}})
    assert created.ok, created.error
    sent = server.state.requests[-1]
    assert sent["headers"]["api-key"] == "a2V5" and sent["headers"]["Cookie"] == "user=7"
    assert created.content == {"status": 201}


async def test_document_by_url_with_a_relative_server(server: Server, make) -> None:
    url = f"http://127.0.0.1:{server.port}/openapi.json"
    reach = make({"services": {"pets": {"openapi": url, "allow_private": True, "operations": ["getPetById"]}}})
    assert [t["function"]["name"] for t in reach.tools()] == ["getPetById"]
    got = await reach.invoke("getPetById", {"petId": 2})
    assert got.ok and got.content["body"]["name"] == "Tom"
    assert server.state.requests[-1]["path"] == "/v3/pet/2"


def test_document_url_goes_through_the_guard(server: Server) -> None:
    url = f"http://127.0.0.1:{server.port}/openapi.json"
    with pytest.raises(ConfigError, match="loopback"):
        build_connectors({"services": {"pets": {"openapi": url}}})
    resolver = StaticResolver({"docs.test": ["10.1.1.1"]})
    with pytest.raises(ConfigError, match="private address"):
        build_connectors({"services": {"p": {"openapi": "http://docs.test/openapi.json"}}}, resolver=resolver)
    assert server.state.requests == []


def test_two_services_with_the_same_operation_ids_get_unique_names(server: Server) -> None:
    base = {"openapi": str(PETSTORE31), "base_url": "https://api.example.com"}
    tools = build_connectors({"services": {"a": base, "b": {**base, "prefix": "b_"}, "c": base}})
    names = [t.name for t in tools]
    assert len(names) == len(set(names)) == 9
    assert {"listPets", "b_listPets", "listPets_2"} <= set(names)


def test_a_broken_document_is_a_config_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("swagger: '2.0'\npaths: {}\n")
    with pytest.raises(ConfigError, match="not an OpenAPI 3.0/3.1 document"):
        build_connectors({"services": {"x": {"openapi": str(bad), "base_url": "https://api.example.com"}}})
    with pytest.raises(ConfigError, match="no absolute server URL"):
        build_connectors({"services": {"x": {"openapi": str(PETSTORE3)}}})
