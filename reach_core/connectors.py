"""Connectors: what a tool is, declared once, by a class or by a typed function.

A class::

    class GetWeather(Connector):
        name = "get_weather"
        description = "Current weather for a city. Use when the user asks ..."
        risk = "read"
        input_schema = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}

        async def execute(self, params, ctx):
            ...

A function::

    @connector(risk="read")
    def add(a: int, b: int) -> int:
        '''Add two integers.

        Args:
            a: first addend
            b: second addend
        '''
        return a + b

The defaults are the safe ones: ``risk="write"`` (so an undeclared tool is not
treated as harmless), ``idempotent`` only for reads, a 15 s deadline for the
whole call including retries.
"""

from __future__ import annotations

import inspect
import re
import types
import typing
from collections.abc import Callable
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, Field, TypeAdapter, create_model

from .errors import ConnectorError

__all__ = ["NO_FALLBACK", "Connector", "Risk", "connector"]

Risk = Literal["read", "write", "dangerous"]
RISKS: tuple[str, ...] = ("read", "write", "dangerous")


class _NoFallback:
    def __repr__(self) -> str:
        return "NO_FALLBACK"


NO_FALLBACK: Any = _NoFallback()


class Connector:
    """Base class of every tool. Override ``execute``; set the class attributes.

    ``execute(self, params, ctx)`` may be ``async def`` (preferred) or plain ``def``
    (run in a bounded thread pool, never on the event loop). ``ctx`` is optional in
    the signature. With an ``Args`` pydantic model, ``params`` is an ``Args``
    instance; with ``input_schema``, a dict.
    """

    name: str = ""
    description: str = ""
    input_schema: dict[str, Any] | None = None
    Args: ClassVar[type[BaseModel] | None] = None
    Output: ClassVar[type[BaseModel] | None] = None
    output_schema: dict[str, Any] | None = None
    tags: tuple[str, ...] | list[str] = ()
    keywords: tuple[str, ...] | list[str] = ()
    risk: Risk = "write"
    idempotent: bool | None = None
    timeout: float = 15.0
    attempt_timeout: float | None = None
    max_retries: int = 3
    max_concurrency: int | None = None
    sequential: bool = False
    weight: int = 1
    fallback: Any = NO_FALLBACK
    examples: ClassVar[list[dict[str, Any]]] = []
    lint_ignore: ClassVar[tuple[str, ...]] = ()  # `reach tools lint` rules this tool knowingly breaks
    #: its name comes from a document a plugin reads at start-up (an OpenAPI operationId, an MCP
    #: server's tool list), which whoever serves the document may change: on a clash with a tool
    #: another plugin or the host registered (the same name, or one differing only in case or
    #: ``-``/``_``) it steps aside instead of making both unavailable (``Runtime.resolve_conflicts``)
    imported: ClassVar[bool] = False

    async def execute(self, params: Any, ctx: Any = None) -> Any:  # pragma: no cover - abstract
        raise NotImplementedError(f"{type(self).__name__}.execute is not implemented")

    def get_input_schema(self) -> dict[str, Any] | None:
        """The JSON Schema of the arguments (from ``input_schema`` or ``Args``)."""
        if self.input_schema is not None:
            return self.input_schema
        if self.Args is not None:
            return _model_schema(self.Args)
        return None

    def get_output_schema(self) -> dict[str, Any] | None:
        if self.output_schema is not None:
            return self.output_schema
        if self.Output is not None:
            return _model_schema(self.Output)
        return None

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r} risk={self.risk}>"


def _model_schema(model: type[BaseModel]) -> dict[str, Any]:
    schema = model.model_json_schema()
    schema.pop("title", None)
    for prop in (schema.get("properties") or {}).values():
        if isinstance(prop, dict):
            prop.pop("title", None)
    return schema


# ---------------------------------------------------------------- @connector

_ARGS_HEADER = re.compile(r"^\s*(Args|Arguments|Parameters|Params)\s*:\s*$")
_SECTION = re.compile(r"^\s*(Returns?|Raises|Yields|Examples?|Notes?)\s*:\s*$")
_GOOGLE_ARG = re.compile(r"^\s*(\*{0,2}\w+)\s*(\([^)]*\))?\s*:\s*(.*)$")
_SPHINX_ARG = re.compile(r"^\s*:param\s+(?:\w+\s+)?(\w+)\s*:\s*(.*)$")


def parse_docstring(doc: str | None) -> tuple[str, dict[str, str]]:
    """Split a Google/Sphinx/NumPy-light docstring into (description, {param: text})."""
    if not doc:
        return "", {}
    lines = inspect.cleandoc(doc).splitlines()
    desc: list[str] = []
    params: dict[str, str] = {}
    mode = "desc"
    current: str | None = None
    for line in lines:
        if _ARGS_HEADER.match(line):
            mode, current = "args", None
            continue
        if _SECTION.match(line):
            mode, current = "skip", None
            continue
        m = _SPHINX_ARG.match(line)
        if m:
            current = m.group(1)
            params[current] = m.group(2).strip()
            mode = "sphinx"
            continue
        if line.strip().startswith(":"):
            mode, current = "skip", None
            continue
        if mode == "desc":
            desc.append(line)
        elif mode == "args":
            m = _GOOGLE_ARG.match(line)
            if m and (not line.startswith(" " * 8) or current is None):
                current = m.group(1).lstrip("*")
                params[current] = m.group(3).strip()
            elif current and line.strip():
                params[current] += " " + line.strip()
        elif mode == "sphinx" and current and line.strip():
            params[current] += " " + line.strip()
    return "\n".join(desc).strip(), params


#: annotations whose values JSON gives as they are, once the JSON Schema check passed
_JSON_TYPES: frozenset[Any] = frozenset({str, int, float, bool, type(None), Any, list, dict})
_UNIONS: tuple[Any, ...] = (typing.Union, types.UnionType)


def _json_native(ann: Any) -> bool:
    """True when the JSON Schema check alone gives a value of type ``ann``: a JSON scalar,
    ``Any``, a ``Literal`` of scalars, or unions, lists and string-keyed dicts of those.
    A ``date``, an ``Enum``, a ``BaseModel``, a ``tuple`` ... need pydantic to become one."""
    if ann in _JSON_TYPES:
        return True
    origin, args = typing.get_origin(ann), typing.get_args(ann)
    if origin is Literal:
        return all(type(a) in (str, int, bool, type(None)) for a in args)
    if origin in _UNIONS:
        return all(_json_native(a) for a in args)
    if origin is list:
        return all(_json_native(a) for a in args)
    if origin is dict:
        return len(args) == 2 and args[0] is str and _json_native(args[1])
    return False


def _plain_field(info: Any) -> bool:
    """A field the function can receive straight from JSON: a JSON-native type, no alias
    (the schema names the alias, the function the parameter) and no metadata but the
    numeric and length bounds the schema states (``annotated_types``): any other metadata
    (``AfterValidator``, a ``pattern``, ``Strict`` ...) only pydantic applies."""
    if info.alias is not None or info.validation_alias is not None:
        return False
    if not all(type(m).__module__ == "annotated_types" for m in info.metadata):
        return False
    return _json_native(info.annotation)


class FunctionArgs:
    """An ``@connector`` function's arguments checked by its pydantic model (its type hints,
    validators and aliases), as an ``Args`` model checks a class's: the pipeline calls
    :meth:`model_validate` after the JSON Schema check, and the function receives the
    validated values by parameter name (with ``**kwargs``, the undeclared fields too).

    Only functions with a parameter JSON cannot give as it is get one (see
    :func:`_plain_field`); the others are called with the checked JSON values directly.
    """

    __slots__ = ("model", "extra")

    def __init__(self, model: type[BaseModel], extra: bool) -> None:
        self.model = model
        self.extra = extra

    def model_validate(self, args: dict[str, Any]) -> dict[str, Any]:
        """The function's keyword arguments; raises pydantic's ``ValidationError``."""
        fields = self.model.model_fields
        done = self.model.model_validate(args)
        kwargs = {name: getattr(done, name) for name in fields}
        if self.extra:
            names = {info.alias or name for name, info in fields.items()}
            kwargs.update((k, v) for k, v in args.items() if k not in names and k not in kwargs)
        return kwargs


def _is_ctx_param(p: inspect.Parameter, hints: dict[str, Any]) -> bool:
    ann = hints.get(p.name)
    return p.name in ("ctx", "context") or getattr(ann, "__name__", "") == "CallContext"


class FunctionConnector(Connector):
    """A connector made from a typed function by :func:`connector`."""

    def __init__(self, fn: Callable[..., Any], **attrs: Any) -> None:
        self.fn = fn
        self.__wrapped__ = fn
        self.__doc__ = fn.__doc__
        hints = typing.get_type_hints(fn, include_extras=True)
        sig = inspect.signature(fn)
        summary, param_docs = parse_docstring(fn.__doc__)
        fields: dict[str, Any] = {}
        self._ctx_param: str | None = None
        #: with ``**kwargs`` the function takes fields it does not name; else an extra
        #: field is an ``invalid_arguments`` naming the fields it takes (see ``Tool.build``)
        self.takes_extra = False
        for p in sig.parameters.values():
            if p.kind is p.VAR_KEYWORD:
                self.takes_extra = True
            if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
                continue
            if _is_ctx_param(p, hints):
                self._ctx_param = p.name
                continue
            ann = hints.get(p.name, Any)
            default = ... if p.default is inspect.Parameter.empty else p.default
            annotated_desc = any(
                getattr(m, "description", None) for m in getattr(ann, "__metadata__", ())
            )
            if isinstance(default, type(Field())):
                fields[p.name] = (ann, default)
            elif annotated_desc:
                fields[p.name] = (ann, default)
            else:
                fields[p.name] = (ann, Field(default, description=param_docs.get(p.name)))
        self.ArgsModel = create_model(f"{fn.__name__}_args", **fields)  # type: ignore[call-overload]
        self.name = attrs.pop("name", None) or fn.__name__
        self.description = attrs.pop("description", None) or summary
        self.input_schema = _model_schema(self.ArgsModel)
        #: what checks the arguments beyond the JSON Schema, when the hints ask for more
        self.validator = (None if all(_plain_field(f) for f in self.ArgsModel.model_fields.values())
                          else FunctionArgs(self.ArgsModel, self.takes_extra))
        ret = hints.get("return")
        if ret is not None and ret is not type(None):
            try:
                out = TypeAdapter(ret).json_schema()
                out.pop("title", None)
                self.output_schema = out
            except Exception:  # noqa: BLE001 - an unschematisable return type just has no output schema
                self.output_schema = None
        for key, value in attrs.items():
            if not hasattr(Connector, key):
                raise ConnectorError(f"@connector got an unknown option {key!r}")
            setattr(self, key, value)
        self._is_async = inspect.iscoroutinefunction(fn)
        if self._is_async:
            self.execute = self._execute_async  # type: ignore[method-assign]
        else:
            self.execute = self._execute_sync  # type: ignore[method-assign,assignment]

    def _kwargs(self, params: Any, ctx: Any) -> dict[str, Any]:
        kwargs = dict(params)
        if self._ctx_param:
            kwargs[self._ctx_param] = ctx
        return kwargs

    async def _execute_async(self, params: Any, ctx: Any = None) -> Any:
        return await self.fn(**self._kwargs(params, ctx))

    def _execute_sync(self, params: Any, ctx: Any = None) -> Any:
        return self.fn(**self._kwargs(params, ctx))

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Calling the decorated object still calls the plain function."""
        return self.fn(*args, **kwargs)


def connector(fn: Callable[..., Any] | None = None, /, **attrs: Any) -> Any:
    """Make a connector from a typed function: schema from type hints (``Annotated``
    and ``Field`` respected), description and per-parameter text from the docstring.

    Use bare (``@connector``) or with options (``@connector(risk="read", tags=[...])``).
    A parameter named ``ctx`` (or annotated ``CallContext``) receives the call context.
    """
    if fn is not None:
        return FunctionConnector(fn, **attrs)
    return lambda f: FunctionConnector(f, **attrs)
