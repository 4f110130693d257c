"""reach_core.schema: the Python pre-check of flat scalar schemas never accepts what
jsonschema-rs refuses, and does accept the ordinary valid calls it exists for."""

from __future__ import annotations

import enum
import itertools

import jsonschema_rs
import pytest

from reach_core.schema import CompiledSchema, normalize_schema, scalar_check


class Colour(enum.IntEnum):
    RED = 1


VALUES = [None, True, False, 0, 1, -7, 2**64, 10**30, 1.0, 2.5, -0.0, float("nan"), float("inf"),
          float("-inf"), "", "x", "\ud800", [], [1], {}, {"k": 1}, (1,), Colour.RED, b"x"]
TYPES = ["string", "integer", "number", "boolean", "null", ["string", "null"], ["integer", "number"],
         ["boolean", "integer"], {"anyOf": [{"type": "integer"}, {"type": "null"}]},
         {"anyOf": [{"type": "string", "description": "a name"}, {"type": ["boolean", "number"]}]}]


def schemas():
    for t1, t2 in itertools.product(TYPES, repeat=2):
        for required, closed in itertools.product((["a"], ["a", "b"], []), (None, True, False)):
            a = {**t1, "description": "first"} if isinstance(t1, dict) else {"type": t1, "description": "first"}
            b = t2 if isinstance(t2, dict) else {"type": t2}
            schema = {"type": "object", "properties": {"a": a, "b": b}, "required": required}
            if closed is not None:
                schema["additionalProperties"] = closed
            yield schema


def test_the_pre_check_never_accepts_what_jsonschema_rs_refuses() -> None:
    checked = accepted = 0
    for schema in schemas():
        quick = scalar_check(schema)
        assert quick is not None, schema
        rs = jsonschema_rs.Draft202012Validator(schema, validate_formats=True)
        argsets = [{}, {"c": 1}] + [{"a": v} for v in VALUES] + [{"a": v, "b": w} for v in VALUES for w in VALUES[:12]]
        argsets += [{"a": v, "b": 1, "c": "extra"} for v in VALUES]
        for args in argsets:
            checked += 1
            if quick(args):
                accepted += 1
                assert rs.is_valid(args), (schema, args)
    assert accepted > checked // 20  # and it does accept the ordinary valid calls


def test_the_pre_check_accepts_ordinary_calls_and_leaves_the_rest_to_jsonschema_rs() -> None:
    schema = {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"},
                                               "metric": {"type": "boolean", "default": True}},
              "required": ["city"], "additionalProperties": False}
    quick = scalar_check(schema)
    assert quick is not None
    assert quick({"city": "Paris", "days": 3, "metric": False})
    assert quick({"city": "Paris"})
    assert not quick({"city": "Paris", "days": 3.0})  # valid (an integer in JSON Schema): jsonschema-rs says so
    assert not quick({"days": 3})  # missing city
    assert not quick({"city": "Paris", "country": "FR"})  # closed
    compiled = CompiledSchema(normalize_schema(schema))
    assert compiled.prepare({"city": "Paris", "days": 3.0}) == {"city": "Paris", "days": 3.0, "metric": True}


@pytest.mark.parametrize("schema", [
    {"type": "object", "properties": {"a": {"type": "integer", "minimum": 0}}},
    {"type": "object", "properties": {"a": {"type": "string", "format": "date"}}},
    {"type": "object", "properties": {"a": {"type": "string", "enum": ["x"]}}},
    {"type": "object", "properties": {"a": {"type": "array"}}},
    {"type": "object", "properties": {"a": {"type": "object"}}},
    {"type": "object", "properties": {"a": {"anyOf": [{"type": "string", "minLength": 1}]}}},
    {"type": "object", "properties": {"a": {"anyOf": [{"type": "array"}, {"type": "null"}]}}},
    {"type": "object", "properties": {"a": {"oneOf": [{"type": "string"}]}}},
    {"type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": {"type": "string"}},
    {"type": "object", "properties": {"a": {"$ref": "#/$defs/x"}}, "$defs": {"x": {"type": "string"}}},
])
def test_schemas_with_any_constraint_beyond_scalar_types_get_no_pre_check(schema) -> None:
    assert scalar_check(schema) is None
