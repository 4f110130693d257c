"""Configuration problems as a person reads them: the table, the key, what is wrong,
and the closest valid name.

Why one place: a misspelt key must never be ignored (``[agents.support] alow``
would leave ``support`` with every tool), and the error is only useful when it
says where the mistake is and what was meant. The pydantic models
(``reach_core.config``), the plugin-name checks done once plugins are discovered
(``reach_core.config_names``) and ``reach config check`` all report
:class:`Problem` objects, and raise them together as one ``ConfigError``.

No pydantic here: plugin discovery (``reach plugins``) uses :func:`suggest` and
must stay fast.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from .errors import ConfigError

__all__ = ["Problem", "raise_problems", "suggest", "unknown"]


def _norm(name: str) -> str:
    return name.strip().lower().replace("-", "_").replace(" ", "_")


def suggest(name: str, valid: Iterable[str]) -> str | None:
    """The valid name ``name`` most likely meant, or ``None`` when none is close.

    Case and ``-``/``_`` differences are tried first (``Max-Tier`` means
    ``max_tier``), then ``difflib``'s closest match."""
    choices = sorted({v for v in valid if isinstance(v, str)})
    if not choices or not isinstance(name, str):
        return None
    by_norm: dict[str, str] = {}
    for choice in choices:
        by_norm.setdefault(_norm(choice), choice)
    same = by_norm.get(_norm(name))
    if same is not None and same != name:
        return same
    close = difflib.get_close_matches(name, choices, n=1, cutoff=0.6)
    if close:
        return close[0]
    close = difflib.get_close_matches(_norm(name), list(by_norm), n=1, cutoff=0.6)
    if close:
        return by_norm[close[0]]
    # a misspelt part of a longer name: `timout` for `default_timeout`
    parts: dict[str, str] = {}
    for norm, choice in by_norm.items():
        for part in norm.split("_"):
            if len(part) >= 4:
                parts.setdefault(part, choice)
    close = difflib.get_close_matches(_norm(name), list(parts), n=1, cutoff=0.75)
    return parts[close[0]] if close else None


@dataclass
class Problem:
    """One thing wrong in the configuration.

    ``table`` is written as in TOML (``agents.support``; ``""`` for the top level
    or an environment variable's own name), ``key`` the key in it (``None`` when
    the whole table is wrong)."""

    table: str
    key: str | None
    message: str
    suggestion: str | None = None

    @property
    def where(self) -> str:
        if self.table.startswith("REACH_"):
            return self.table  # an environment variable
        if self.key is None:
            return f"[{self.table}]"
        return f"[{self.table}] {self.key}" if self.table else self.key

    def __str__(self) -> str:
        text = f"`{self.where}`: {self.message}"
        if self.suggestion is not None:
            shown = (f"[{self.suggestion}]" if self.key is None and not self.table.startswith("REACH_")
                     else self.suggestion)
            text += f"; did you mean `{shown}`?"
        return text

    def to_dict(self) -> dict[str, Any]:
        return {"table": self.table, "key": self.key, "where": self.where, "message": self.message,
                "suggestion": self.suggestion, "text": str(self)}


def unknown(table: str, key: str | None, name: str, valid: Sequence[str], *, what: str = "key",
            listing: str | None = None) -> Problem:
    """``name`` is not one of ``valid``: a problem with the closest valid name, or the
    list of valid names when none is close (``listing`` names them, e.g. "installed plugins")."""
    hint = suggest(name, valid)
    message = f"unknown {what}"
    if hint is None:
        shown = ", ".join(f"`{v}`" for v in sorted(valid)[:40]) or "none"
        message += f"; valid {listing or what + 's'}: {shown}"
    return Problem(table, key, message, hint)


def raise_problems(problems: Sequence[Problem], *, source: Any = None) -> None:
    """Raise one ``ConfigError`` listing every problem (first line: the first problem).

    The problems stay on the exception as ``problems`` for ``reach config check --json``."""
    if not problems:
        return
    where = f" in {source}" if source else ""
    lines = [str(p) for p in problems]
    head = f"invalid config{where}: {lines[0]}"
    if len(lines) > 1:
        head += "\n" + "\n".join(f"  also: {line}" for line in lines[1:])
    err = ConfigError(head)
    err.problems = list(problems)  # type: ignore[attr-defined]
    raise err
