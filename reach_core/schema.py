"""Input schemas: normalised and compiled once at registration, checked fast per call.

Checking uses ``jsonschema-rs`` (compiled Rust, ~100× faster than
python-jsonschema) with format validation on, and its meta-schema check at
registration. When a call fails, its errors (which keyword failed, where, with
what value) become the sentences the model reads (:meth:`CompiledSchema.explain`).

Most tool schemas are a flat object of typed scalars (``{"city": {"type":
"string"}, "days": {"type": "integer"}}``). For those, registration also writes a
small Python predicate (:func:`scalar_check`) that accepts arguments whose values
have exactly the declared types; anything it does not accept goes to
``jsonschema-rs``, which decides. Handing a dict to ``jsonschema-rs`` converts it to
Rust values first, which costs more than these few type checks.
"""

from __future__ import annotations

import copy
import itertools
import json
from collections.abc import Callable
from typing import Any

import jsonschema_rs
from orjson import JSONDecodeError as _OrjsonError
from orjson import loads as _orjson_loads

from .calls import _LONG_DIGITS, MAX_INT, MIN_INT, check_values
from .errors import ConnectorError, ToolFailure

__all__ = ["CompiledSchema", "json_reader", "normalize_schema", "scalar_check", "strict_schema"]

_MAX_ERRORS = 50  # errors read to pick the three the model is told (an array of 100,000 bad items has as many)

FORMAT_HINTS: dict[str, tuple[str, str]] = {
    "date": ("YYYY-MM-DD", "2024-05-01"),
    "date-time": ("an ISO 8601 date-time with time zone", "2024-05-01T09:30:00Z"),
    "time": ("HH:MM:SS with time zone", "09:30:00Z"),
    "email": ("an email address", "ann@example.com"),
    "uri": ("an absolute URI", "https://example.com/page"),
    "uuid": ("a UUID", "123e4567-e89b-12d3-a456-426614174000"),
    "ipv4": ("an IPv4 address", "192.0.2.1"),
    "hostname": ("a host name", "example.com"),
}



def normalize_schema(schema: dict[str, Any] | None, *, where: str = "tool") -> dict[str, Any]:
    """Return an object schema with ``type`` and ``properties``; refuse anything else."""
    if schema is None or schema == {}:
        return {"type": "object", "properties": {}}
    if not isinstance(schema, dict):
        raise ConnectorError(f"{where}: input_schema must be a dict (JSON Schema), got {type(schema).__name__}")
    schema = copy.deepcopy(schema)
    schema.pop("$schema", None) if schema.get("$schema", "").endswith("2020-12/schema") else None
    top = schema.get("type", "object")
    if top != "object":
        raise ConnectorError(f"{where}: the top level of input_schema must be type 'object', got {top!r}")
    schema["type"] = "object"
    schema.setdefault("properties", {})
    try:
        jsonschema_rs.meta.validate(schema)
    except jsonschema_rs.ValidationError as exc:
        path = "/".join(str(p) for p in exc.instance_path) or "(root)"
        first = str(exc.message).splitlines()[0] if getattr(exc, "message", None) else str(exc).splitlines()[0]
        raise ConnectorError(f"{where}: input_schema is not valid JSON Schema at {path}: {first}") from None
    return schema


def strict_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """The OpenAI strict-mode form: every property required, optional ones nullable,
    ``additionalProperties: false`` on every object."""
    out = copy.deepcopy(schema)

    def visit(node: Any) -> None:
        if not isinstance(node, dict):
            return
        if node.get("type") == "object" or "properties" in node:
            props = node.setdefault("properties", {})
            required = set(node.get("required", []))
            for key, sub in props.items():
                visit(sub)
                if key not in required and isinstance(sub, dict):
                    t = sub.get("type")
                    if isinstance(t, str) and t != "null":
                        sub["type"] = [t, "null"]
                    elif isinstance(t, list) and "null" not in t:
                        sub["type"] = [*t, "null"]
                    sub.pop("default", None)
            node["required"] = list(props)
            node["additionalProperties"] = False
        for key in ("items", "additionalItems"):
            visit(node.get(key))
        for key in ("anyOf", "oneOf", "allOf", "prefixItems"):
            for sub in node.get(key, []) or []:
                visit(sub)
        for sub in (node.get("$defs") or {}).values():
            visit(sub)

    visit(out)
    return out


def _allows_null(sub: Any) -> bool:
    if not isinstance(sub, dict):
        return True
    t = sub.get("type")
    if t == "null" or (isinstance(t, list) and "null" in t):
        return True
    if sub.get("const", 0) is None or None in (sub.get("enum") or [0]):
        return True
    return any(_allows_null(s) for k in ("anyOf", "oneOf") for s in sub.get(k, []) or [])


def _short(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 60 else text[:57] + "…"


# A value of each JSON type, as the checks below accept it: exact Python types (a bool is
# not an integer, an int subclass is left to jsonschema-rs), finite floats only
# (jsonschema-rs refuses NaN and infinities), and 1.0 as an integer left to jsonschema-rs.
_SCALAR_TESTS = {
    "string": "type(v) is str",
    "integer": f"(type(v) is int and {MIN_INT} <= v <= {MAX_INT})",
    "number": f"((type(v) is int and {MIN_INT} <= v <= {MAX_INT}) or (type(v) is float and v - v == 0.0))",
    "boolean": "type(v) is bool",
    "null": "v is None",
}
# The same tests for values orjson made (json_reader): its integers are always within 64 bits
# (a longer one becomes a float, or is refused) and its floats always finite (it refuses
# "1e999"), so the range and finiteness tests above would never fail there.
_READ_TESTS = {**_SCALAR_TESTS, "integer": "type(v) is int", "number": "(type(v) is int or type(v) is float)"}
# keywords that do not constrain a value (a default is filled in before the check)
_NOTES = frozenset({"description", "title", "default", "examples", "$comment", "deprecated", "readOnly", "writeOnly"})
_MISSING = object()


def _scalar_types(sub: Any) -> list[str] | None:
    """The JSON types a property allows, when it says nothing but its type: ``{"type": T}``,
    ``{"type": [T, ...]}`` or ``{"anyOf": [{"type": T}, ...]}`` (what ``Optional[int]``
    becomes) with scalar types only; else ``None``."""
    if not isinstance(sub, dict):
        return None
    if "anyOf" in sub and "type" not in sub:
        if set(sub) - {"anyOf"} - _NOTES or not isinstance(sub["anyOf"], list) or not sub["anyOf"]:
            return None
        union: list[str] = []
        for member in sub["anyOf"]:
            types = _scalar_types(member) if isinstance(member, dict) and "anyOf" not in member else None
            if types is None:
                return None
            union += types
        return union
    if set(sub) - {"type"} - _NOTES:
        return None
    types = sub.get("type")
    types = [types] if isinstance(types, str) else types
    if not types or not isinstance(types, list) or any(t not in _SCALAR_TESTS for t in types):
        return None
    return types


def _scalar_lines(schema: dict[str, Any], fail: str, tests: dict[str, str] = _SCALAR_TESTS) -> list[str] | None:
    """The body of a check of ``args`` against a flat object of typed scalar properties,
    one line per property (names as literals), each ending the function with ``fail``
    when the value is not of a declared type; the last line ends it with the answer to
    "no field but the declared ones". ``None`` when the schema is not of that form."""
    if set(schema) - {"type", "properties", "required", "additionalProperties"} - _NOTES:
        return None
    closed = schema.get("additionalProperties", True)
    if not isinstance(closed, bool):
        return None
    props = schema.get("properties") or {}
    required = schema.get("required") or []
    if not isinstance(props, dict) or not all(isinstance(r, str) and r in props for r in required):
        return None
    lines = []
    for name, sub in props.items():
        types = _scalar_types(sub)
        if types is None:
            return None
        test = " or ".join(tests[t] for t in types)
        lines.append(f"    v = args.get({name!r}, _MISSING)")
        if name in required:
            lines.append(f"    if v is _MISSING or not ({test}): return {fail}")
        else:
            lines.append(f"    if v is not _MISSING and not ({test}): return {fail}")
    # an undeclared field is left to the full check (which walks values too), open schema or not;
    # when every field is required, all of them present and no more is a count
    lines.append(f"    if len(args) != {len(props)}: return {fail}" if len(set(required)) == len(props) else
                 f"    if not args.keys() <= _NAMES: return {fail}")
    return lines


def _compile(lines: list[str], props: Any, **names: Any) -> Any:
    namespace: dict[str, Any] = {"_MISSING": _MISSING, "_NAMES": frozenset(props), **names}
    exec(compile("\n".join(lines), "<reach scalar check>", "exec"), namespace)  # noqa: S102 - literals only
    return namespace["check"]


def scalar_check(schema: dict[str, Any]) -> Callable[[dict[str, Any]], bool] | None:
    """A predicate that is True only for arguments ``schema`` accepts, or ``None`` when the
    schema is not a flat object of typed scalar properties. It accepts declared fields
    only, and integers only within 64 bits (see ``calls.check_values``).

    It is written as Python source (one line per property, names as literals) and
    compiled once. False means "not sure", never "invalid": the caller asks
    ``jsonschema-rs``.
    """
    lines = _scalar_lines(schema, "False")
    if lines is None:
        return None
    check: Callable[[dict[str, Any]], bool] = _compile(["def check(args):", *lines, "    return True"],
                                                        schema.get("properties") or {})
    return check


def json_reader(schema: dict[str, Any], max_bytes: int) -> Callable[[Any], dict[str, Any] | None] | None:
    """Decoding, its guards and validation in one function, for the usual call: arguments
    as ASCII JSON text, a flat object of typed scalars (see :func:`scalar_check`). Returns
    the arguments the connector receives (defaults filled), or ``None`` when it is not
    sure, and then ``calls.decode_arguments`` and :meth:`CompiledSchema.prepare` decide,
    with their messages. ``None`` instead of a reader when the schema is not of that form.

    It accepts only what those two accept, and gives the same dict, keys in the same
    order: ASCII text up to ``max_bytes`` without ``\\u`` escapes (so no lone surrogate),
    read by orjson like ``decode_arguments``; no run of 19 digits when a field may be a
    float (orjson reads an integer beyond 64 bits as a float); as many ``:`` in the text
    as keys in the object (no key given twice, no colon in a string); every value of a
    declared type and in range (so nested no deeper than one level, which every
    ``max_argument_depth`` allows; the range is orjson's own, see ``_READ_TESTS``). The
    defaults are filled as ``prepare`` fills them; a schema whose default is not an
    immutable value its own field accepts gets no reader (``prepare`` would copy it, or
    refuse the call).
    """
    lines = _scalar_lines(schema, "None", _READ_TESTS)
    if lines is None:
        return None
    props = schema.get("properties") or {}
    required = set(schema.get("required") or ())
    defaults = {k: v["default"] for k, v in props.items()
                if isinstance(v, dict) and "default" in v and k not in required}
    for name, value in defaults.items():
        accepts = scalar_check({"type": "object", "properties": {name: props[name]}})
        # a default its own field refuses (prepare refuses the call) or one it copies
        if type(value) not in (str, int, float, bool, type(None)) or accepts is None or not accepts({name: value}):
            return None
    floats = any("number" in (_scalar_types(sub) or ()) for sub in props.values())
    head = ["def check(raw):",
            f"    if type(raw) is not str or len(raw) > {int(max_bytes)} or not raw.isascii() or '\\\\u' in raw:",
            "        return None"]
    if floats:
        head.append("    if _LONG_DIGITS(raw) is not None: return None")
    head += ["    try:",
             "        args = _loads(raw)",
             "    except _LoadError:",
             "        return None",
             "    if type(args) is not dict or raw.count(':') != len(args): return None"]
    fill = [f"    if {k!r} not in args: args[{k!r}] = _DEFAULTS[{k!r}]" for k in defaults]
    reader: Callable[[Any], dict[str, Any] | None] = _compile(
        [*head, *lines, *fill, "    return args"], props, _LONG_DIGITS=_LONG_DIGITS, _loads=_orjson_loads,
        _LoadError=_OrjsonError, _DEFAULTS=defaults)
    return reader


#: where a schema holds only integers: ``True`` for such a value, a dict per object (property ->
#: its map), ``[map]`` for an array's items; ``None`` where none can be
_IntMap = Any
_EXACT = 2**53  # floats below this hold every whole number exactly


def _integers(node: Any) -> _IntMap:
    """The integer-only places of a schema (see ``_IntMap``): ``{"type": "integer"}`` (or with
    ``null``) and objects and arrays of them, through ``properties`` and ``items``."""
    if not isinstance(node, dict):
        return None
    types = node.get("type")
    if types is not None:
        types = [types] if isinstance(types, str) else types
        if isinstance(types, list) and set(types) - {"null"} == {"integer"}:
            return True
    elif isinstance(node.get("anyOf"), list):  # Optional[X]: X's places
        members = [m for m in node["anyOf"] if not (isinstance(m, dict) and m.get("type") == "null")]
        return _integers(members[0]) if len(members) == 1 else None
    props = node.get("properties")
    if isinstance(props, dict):
        found = {k: m for k, v in props.items() if (m := _integers(v)) is not None}
        return found or None
    items = node.get("items")
    if isinstance(items, dict) and (m := _integers(items)) is not None:
        return [m]
    return None


def _as_integers(value: Any, where: _IntMap, path: tuple[Any, ...]) -> Any:
    """``value`` (valid against its schema) with each whole float in an integer-only place as
    an ``int``: JSON Schema counts ``1.0`` as the integer 1, and so must the connector (an
    ``int`` parameter given ``1.0`` fails, and the run's guards and a person's approval, which
    identify a call by its JSON, saw ``1`` and ``1.0`` as two calls). A float past 2**53 no
    longer holds the number that was written, and is refused."""
    if where is True:
        if type(value) is not float:
            return value
        if abs(value) >= _EXACT:
            field = ".".join(str(p) for p in path) or "arguments"
            raise ToolFailure(f"`{field}` is an integer written as a float ({value!r}) too large to be exact; "
                              "send it without a decimal point or exponent", code="invalid_arguments")
        return int(value)
    if isinstance(where, dict) and isinstance(value, dict):
        changed = {k: new for k, sub in where.items() if k in value
                   and (new := _as_integers(value[k], sub, (*path, k))) is not value[k]}
        return {**value, **changed} if changed else value
    if isinstance(where, list) and isinstance(value, list):
        new_items = [_as_integers(v, where[0], (*path, i)) for i, v in enumerate(value)]
        return new_items if any(a is not b for a, b in zip(new_items, value, strict=True)) else value
    return value


class CompiledSchema:
    """A tool's input schema, prepared once: fast check, defaults, null-dropping, messages."""

    __slots__ = ("schema", "_rs", "_defaults", "_optional_nonnull", "_props", "_quick", "_readers", "_ints")

    def __init__(self, schema: dict[str, Any]) -> None:
        self.schema = schema
        self._rs = jsonschema_rs.Draft202012Validator(schema, validate_formats=True)
        self._quick = scalar_check(schema)
        props = schema.get("properties") or {}
        required = set(schema.get("required") or ())
        self._props = props
        self._defaults = {
            k: v["default"] for k, v in props.items() if isinstance(v, dict) and "default" in v and k not in required
        }
        self._optional_nonnull = frozenset(k for k, v in props.items() if k not in required and not _allows_null(v))
        self._readers: dict[int, Any] = {}
        # fields that only hold an integer: JSON Schema counts 1.0 as the integer 1, and so must
        # what the connector receives (an `int` parameter given 1.0 fails; a guard that counts
        # calls by their JSON saw 1 and 1.0 as two different calls)
        self._ints = _integers(schema)

    def reader(self, max_bytes: int) -> Callable[[Any], dict[str, Any] | None] | None:
        """:func:`json_reader` of this schema for a ``max_argument_bytes`` (built once each)."""
        if max_bytes not in self._readers:
            self._readers[max_bytes] = json_reader(self.schema, max_bytes)
        return self._readers[max_bytes]

    def prepare(self, args: dict[str, Any]) -> dict[str, Any]:
        """Drop ``null`` optional fields the schema does not allow as null, fill defaults, validate.

        Returns the arguments the connector receives; raises ``ToolFailure(invalid_arguments)``.
        """
        if self._optional_nonnull:
            drop = [k for k in self._optional_nonnull if k in args and args[k] is None]
            if drop:
                args = {k: v for k, v in args.items() if k not in drop}
        if self._defaults:
            missing = [k for k in self._defaults if k not in args]
            if missing:
                args = dict(args)
                for k in missing:
                    args[k] = copy.deepcopy(self._defaults[k])
        quick = self._quick
        if quick is not None and quick(args):
            return args
        check_values(args)  # what jsonschema-rs cannot take (lone surrogates, huge integers ...)
        if not self._rs.is_valid(args):
            raise ToolFailure(self.explain(args), code="invalid_arguments")
        if self._ints is not None:
            args = _as_integers(args, self._ints, ())
        return args

    def explain(self, args: dict[str, Any]) -> str:
        """One model-friendly sentence per problem (at most three), from jsonschema-rs's
        own errors: the engine that refused the call says why, in linear time. (A
        Python validator here would re-run the schema's ``pattern`` with ``re``, which
        backtracks, and check ``uniqueItems`` pairwise: 24 characters against
        ``^([a-z0-9]+)*@x$``, or 4,000 objects in a unique array, held the process for
        seconds to minutes.)"""
        errors = sorted(itertools.islice(self._rs.iter_errors(args), _MAX_ERRORS),
                        key=lambda e: (len(e.instance_path), [str(p) for p in e.instance_path]))
        msgs: list[str] = []
        for e in errors:
            msg = self._message(e)
            if msg not in msgs:
                msgs.append(msg)
            if len(msgs) == 3:
                break
        return "; ".join(msgs or ["the arguments do not match the tool's schema"]) + \
            ". Send the call again with corrected arguments."

    def _subschema(self, path: Any) -> dict[str, Any]:
        """The schema object a keyword sits in (``{}`` when the path goes through a ``$ref``)."""
        node: Any = self.schema
        for step in path:
            try:
                node = node[step]
            except (KeyError, IndexError, TypeError):
                return {}
        return node if isinstance(node, dict) else {}

    def _message(self, e: Any) -> str:  # a jsonschema_rs.ValidationError
        field = ".".join(str(p) for p in e.instance_path) or "arguments"
        kw, val, inst = e.kind.name, e.kind.value, e.instance
        sent = f"; you sent {_short(inst)}"
        if kw == "required":
            sub = self._subschema(list(e.schema_path)[:-1])
            declared = sub.get("required")
            wanted: list[Any] = declared if isinstance(declared, list) else [val]
            missing = [m for m in wanted if isinstance(inst, dict) and m not in inst] or [val]
            props = sub.get("properties") or {}
            parts = []
            for m in missing:
                desc = props.get(m, {}).get("description") if isinstance(props.get(m), dict) else None
                parts.append(f"`{m}`" + (f" ({desc})" if desc else ""))
            where = "" if field == "arguments" else f" in `{field}`"
            return f"missing required field{'s' if len(parts) > 1 else ''}{where}: {', '.join(parts)}"
        if kw == "additionalProperties":
            props = self._subschema(list(e.schema_path)[:-1]).get("properties") or {}
            allowed = ", ".join(sorted(props)) or "none"
            extra = sorted(str(x) for x in val) if isinstance(val, list) else []
            return f"unexpected field(s) {', '.join(f'`{x}`' for x in extra)}; allowed fields: {allowed}"
        if kw == "enum":
            return f"`{field}` must be one of {', '.join(str(v) for v in val)}{sent}"
        if kw == "const":
            return f"`{field}` must be {_short(val)}{sent}"
        if kw == "type":
            declared = self._subschema(list(e.schema_path)[:-1]).get("type", val)
            expected = " or ".join(declared) if isinstance(declared, list) else str(declared)
            examples = {"integer": "5", "number": "2.5", "boolean": "true", "string": '"text"', "array": "[...]",
                        "object": "{...}"}
            ex = examples.get(expected, "")
            return (f"`{field}` must be {'an' if expected[:1] in tuple('aeiou') else 'a'} {expected}"
                    + (f", e.g. {ex}" if ex else "") + sent)
        if kw == "format":
            hint, fmt_example = FORMAT_HINTS.get(val, (f"a valid {val}", ""))
            return f"`{field}` must be {hint}" + (f", e.g. {fmt_example}" if fmt_example else "") + sent
        if kw in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
            words = {"minimum": "at least", "maximum": "at most", "exclusiveMinimum": "greater than",
                     "exclusiveMaximum": "less than"}
            return f"`{field}` must be {words[kw]} {val}{sent}"
        if kw in ("minLength", "maxLength"):
            return f"`{field}` must have {'at least' if kw == 'minLength' else 'at most'} {val} characters"
        if kw in ("minItems", "maxItems"):
            return f"`{field}` must have {'at least' if kw == 'minItems' else 'at most'} {val} items"
        if kw == "pattern":
            return f"`{field}` must match the pattern {val}{sent}"
        if kw == "uniqueItems":
            return f"`{field}` must not repeat an item"
        text = str(e.message)  # jsonschema-rs quotes the value whole: a model needs the start
        return f"`{field}`: {text if len(text) <= 200 else text[:197] + '…'}"
