"""reach's loggers: structlog events delivered through the standard ``logging`` module.

reach is a guest in its host's process. Its events go to the stdlib loggers
``reach`` and ``reach.<plugin>`` and nowhere else: nothing is printed unless the
host configures logging (``logging.basicConfig(level="INFO")``, or the ``reach``
CLI's ``--log-level``), and stdout is never touched (it may be a protocol: MCP
over stdio, ``reach run --json``).

Why structlog at all: call sites keep structlog's ``log.info("event", key=value)``
style and ``bind()``. Each logger is wrapped on its own (``structlog.wrap_logger``),
so structlog's process-wide configuration is neither read nor changed: a host
that configures structlog for itself does not reconfigure reach, and reach never
reconfigures the host.

A record's message is ``event key=value ...``; the event and its fields are also
on the record as ``record.reach_event`` (a dict) for JSON formatters.

structlog and ``logging`` are imported on first use: ``reach --version`` does not
pay for them.
"""

from __future__ import annotations

from collections.abc import Callable, MutableMapping
from typing import Any

__all__ = ["PluginLogger", "configure_stderr", "configure_stderr_on_import", "get_logger", "is_enabled",
           "plugin_logger"]


def _field(value: Any) -> str:
    if isinstance(value, str) and value and not any(c in value for c in " =\"'\n"):
        return value
    return repr(value)


def _to_stdlib(_logger: Any, _method: str, event_dict: MutableMapping[str, Any]) -> tuple[tuple[str], dict[str, Any]]:
    """The last processor: a readable message, and the whole event on ``record.reach_event``."""
    event = str(event_dict.pop("event", ""))
    fields = " ".join(f"{key}={_field(value)}" for key, value in event_dict.items())
    message = f"{event} {fields}" if fields else event
    return (message,), {"extra": {"reach_event": {"event": event, **event_dict}}}


def configure_stderr_on_import(level: int | str, *, json_lines: bool = False) -> None:
    """:func:`configure_stderr`, done when the ``logging`` module is first imported (now if it is).

    Why: ``reach plugins`` imports no logging of its own, and importing ``logging`` is a
    tenth of its start-up. Nothing can log before ``logging`` is imported, and this runs
    right after the module has executed, before the import that asked for it returns:
    every record is handled as if the CLI had configured logging up front.
    """
    import sys

    if "logging" in sys.modules:
        configure_stderr(level, json_lines=json_lines)
        return
    sys.meta_path.insert(0, _AfterImport("logging", lambda: configure_stderr(level, json_lines=json_lines)))


class _AfterImport:
    """A meta-path finder that finds nothing itself: on the first import of ``name`` it takes
    itself out of ``sys.meta_path``, lets the other finders find the module, and has the
    module's loader call ``then()`` once the module has executed."""

    def __init__(self, name: str, then: Callable[[], None]) -> None:
        self.name = name
        self.then = then

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        import sys

        if fullname != self.name:
            return None
        if self in sys.meta_path:
            sys.meta_path.remove(self)
        for finder in sys.meta_path:
            find = getattr(finder, "find_spec", None)
            spec = find(fullname, path, target) if find is not None else None
            if spec is not None:
                if spec.loader is not None:
                    spec.loader = _ThenLoader(spec.loader, self.then)
                return spec
        return None


class _ThenLoader:
    """``loader``, calling ``then()`` after executing a module; everything else (``get_source``
    for tracebacks, ``get_resource_reader`` ...) is the wrapped loader's."""

    def __init__(self, loader: Any, then: Callable[[], None]) -> None:
        self._loader = loader
        self._then = then

    def create_module(self, spec: Any) -> Any:
        return self._loader.create_module(spec)

    def exec_module(self, module: Any) -> None:
        self._loader.exec_module(module)
        self._then()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._loader, name)


def get_logger(name: str = "reach") -> Any:
    """A structlog logger bound to the stdlib logger ``name`` (a ``reach`` child by convention).

    Events below the stdlib logger's effective level are dropped by the first
    processor, before any rendering.
    """
    import logging

    import structlog

    _quiet_by_default()
    return structlog.wrap_logger(
        logging.getLogger(name),
        wrapper_class=structlog.stdlib.BoundLogger,
        processors=[structlog.stdlib.filter_by_level, _to_stdlib],
    ).bind()


def plugin_logger(plugin: str, redactor: Any = None) -> PluginLogger:
    """The logger a plugin writes through: the stdlib logger ``reach.<plugin>``, its records masked.

    ``plugin`` is the plugin's short name (``"audit"``; ``"reach-audit"`` and
    ``"reach_audit"`` are taken as ``"audit"``). ``redactor`` is the Reach's own
    (``reach.redactor``): every message, field and traceback is run through it, so a
    secret that Reach was configured with never reaches a handler, in any spelling.
    Without one (code that runs before any Reach exists), only the built-in key and
    pattern rules apply. ``Reach.logger(plugin)`` is the same with its redactor.

    Why one way: a plugin that logs on a logger of its own name (``reach_audit``) sits
    outside the ``reach`` tree, where a host's level, handlers and filters on ``reach``
    do not reach it, and around the masking that the core's events get.
    """
    short = plugin
    for prefix in ("reach-", "reach_", "reach."):
        if short.startswith(prefix):
            short = short[len(prefix):]
    import re

    # ASCII words joined by - _ . (a logger name a host can write in its config, no look-alikes)
    if re.fullmatch(r"[A-Za-z0-9]+(?:[-_.][A-Za-z0-9]+)*", short) is None:
        raise ValueError(f"plugin_logger: {plugin!r} is not a plugin name")
    return PluginLogger(f"reach.{short}", redactor)


class PluginLogger:
    """A stdlib logger's front that masks what it is given before a record exists.

    Both call styles of reach's code work: the stdlib's (``log.warning("failed: %r",
    exc)``) and structlog's (``log.warning("reach.mcp_relist_failed", server=name)``;
    fields are written ``key=value`` after the event, as the core's events are, and
    are on the record as ``record.reach_event``). ``exc_info`` (and
    :meth:`exception`) puts the masked traceback in the message: a record carries no
    exception object whose formatting a handler would do unmasked. Nothing is built
    below the logger's effective level.
    """

    __slots__ = ("name", "_logger", "_redactor")

    def __init__(self, name: str, redactor: Any = None) -> None:
        import logging

        _quiet_by_default()
        self.name = name
        self._logger = logging.getLogger(name)
        self._redactor = redactor

    def isEnabledFor(self, level: int) -> bool:  # noqa: N802 (the stdlib's name)
        return self._logger.isEnabledFor(level)

    def _mask(self) -> Any:
        if self._redactor is None:
            from .redact import Redactor

            self._redactor = Redactor()
        return self._redactor

    def log(self, level: int, msg: Any, *args: Any, exc_info: Any = None, **fields: Any) -> None:
        if not self._logger.isEnabledFor(level):
            return
        self._emit(level, msg, args, exc_info, fields)

    def _emit(self, level: int, msg: Any, args: tuple[Any, ...], exc_info: Any, fields: dict[str, Any]) -> None:
        redactor = self._mask()
        try:
            event = str(msg) % args if args else str(msg)
        except (TypeError, ValueError, KeyError):  # a bad format string is the caller's bug: still log it
            event = f"{msg} {args!r}"
        event = redactor.text(event)
        fields = redactor.value(fields) if fields else {}
        message = event + "".join(f" {key}={_field(value)}" for key, value in fields.items())
        trace = _traceback(exc_info)
        if trace:
            message = f"{message}\n{redactor.text(trace)}"
        # stacklevel 3: the record names the plugin's line, not this module's
        self._logger.log(level, message, extra={"reach_event": {"event": event, **fields}}, stacklevel=3)

    def debug(self, msg: Any, *args: Any, exc_info: Any = None, **fields: Any) -> None:
        if self._logger.isEnabledFor(10):
            self._emit(10, msg, args, exc_info, fields)

    def info(self, msg: Any, *args: Any, exc_info: Any = None, **fields: Any) -> None:
        if self._logger.isEnabledFor(20):
            self._emit(20, msg, args, exc_info, fields)

    def warning(self, msg: Any, *args: Any, exc_info: Any = None, **fields: Any) -> None:
        if self._logger.isEnabledFor(30):
            self._emit(30, msg, args, exc_info, fields)

    def error(self, msg: Any, *args: Any, exc_info: Any = None, **fields: Any) -> None:
        if self._logger.isEnabledFor(40):
            self._emit(40, msg, args, exc_info, fields)

    def exception(self, msg: Any, *args: Any, exc_info: Any = True, **fields: Any) -> None:
        if self._logger.isEnabledFor(40):
            self._emit(40, msg, args, exc_info, fields)

    def critical(self, msg: Any, *args: Any, exc_info: Any = None, **fields: Any) -> None:
        if self._logger.isEnabledFor(50):
            self._emit(50, msg, args, exc_info, fields)

    def __repr__(self) -> str:
        return f"<PluginLogger {self.name}>"


def _traceback(exc_info: Any) -> str:
    """The traceback text ``exc_info`` asks for (as the stdlib takes it: True, an exception, a triple)."""
    import sys
    import traceback

    if not exc_info:
        return ""
    if isinstance(exc_info, BaseException):
        return "".join(traceback.format_exception(exc_info)).rstrip()
    if not isinstance(exc_info, tuple):
        exc_info = sys.exc_info()
    if exc_info[0] is None:
        return ""
    return "".join(traceback.format_exception(*exc_info)).rstrip()


def _quiet_by_default() -> None:
    """The stdlib convention for libraries: a ``NullHandler`` on ``reach``, or Python's
    last-resort handler would print reach's warnings on stderr of a host that configured nothing."""
    import logging

    root = logging.getLogger("reach")
    if not root.handlers:
        root.addHandler(logging.NullHandler())


def is_enabled(level: int, name: str = "reach") -> bool:
    """Whether anything listens at ``level`` (cheap: the stdlib logger caches the answer)."""
    import logging

    return logging.getLogger(name).isEnabledFor(level)


def configure_stderr(level: int | str, *, json_lines: bool = False) -> None:
    """What the ``reach`` CLI (a host, not a library) does: reach's loggers to stderr at ``level``.

    Only the ``reach`` logger tree is configured; the root logger and other
    libraries' loggers are left as they are.
    """
    import json
    import logging
    import sys

    class _JSONLines(logging.Formatter):
        def format(self, record: logging.LogRecord) -> str:
            event = getattr(record, "reach_event", None) or {"event": record.getMessage()}
            return json.dumps({"level": record.levelname.lower(), "logger": record.name, **event},
                              ensure_ascii=False, default=str)

    logger = logging.getLogger("reach")
    for handler in [h for h in logger.handlers if getattr(h, "_reach_cli", False)]:
        logger.removeHandler(handler)
    handler = logging.StreamHandler(sys.stderr)
    handler._reach_cli = True  # type: ignore[attr-defined]
    handler.setFormatter(_JSONLines() if json_lines else logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    logger.addHandler(handler)
    logger.setLevel(level if isinstance(level, int) else level.upper())
