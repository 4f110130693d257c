"""Finding and reading reach's configuration as plain data: TOML in, a ``dict`` out.

No validation happens here, so this module imports no pydantic: the fast paths
(``reach plugins``, finding plugin commands) read the few keys they need from
the raw data, and ``reach_core.config`` validates the whole of it.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from .errors import ConfigError

if TYPE_CHECKING:
    from pathlib import Path

__all__ = ["find_default", "mask_secrets", "read_config", "read_file", "resolve_secrets", "secret_values",
           "settings_secrets"]

#: shorter values are not masked by :func:`mask_secrets`: they would mask ordinary words
_MIN_SECRET = 6


def read_file(path: Path | str) -> dict[str, Any]:
    import tomllib

    try:
        with open(path, encoding="utf-8") as f:
            data = tomllib.loads(f.read())
    except FileNotFoundError:
        raise ConfigError(f"config file {path} does not exist") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path} is not valid TOML: {exc}") from None
    if os.path.basename(path) == "pyproject.toml":
        return dict(data.get("tool", {}).get("reach", {}))
    return data


def find_default(*, remember: bool = False) -> tuple[dict[str, Any], Path | None]:
    """The config ``REACH_CONFIG`` names, else ``./reach.toml``, else ``[tool.reach]`` in
    ``./pyproject.toml``. Paths are plain strings until a file is found: ``reach plugins``
    without a config does not import pathlib (nor tomllib without any file).

    With ``remember`` (``reach plugins``), a ``pyproject.toml`` found valid and without
    ``[tool.reach]`` is remembered by its stat (:class:`_WithoutReach`) and not parsed
    again while unchanged."""
    env = os.environ.get("REACH_CONFIG")
    if env:
        path = _path(env)
        return read_file(path), path
    cwd = os.getcwd()
    reach_toml = os.path.join(cwd, "reach.toml")
    if os.path.isfile(reach_toml):
        return read_file(reach_toml), _path(reach_toml)
    pyproject = os.path.join(cwd, "pyproject.toml")
    if os.path.isfile(pyproject):
        seen = _WithoutReach(pyproject) if remember else None
        if seen is not None and seen.known():
            return {}, None
        data = read_file(pyproject)
        if data:
            return data, _path(pyproject)
        if seen is not None:
            seen.remember()
    return {}, None


class _WithoutReach:
    """The ``pyproject.toml`` files ``reach plugins`` parsed and found valid and without
    ``[tool.reach]``, by path and stat, in ``$XDG_CACHE_HOME/reach`` (the entry-point store's folder).

    Why: ``reach plugins`` in a Python project without reach config would otherwise import
    ``tomllib`` and parse the project's file on every run to learn there is nothing for it
    (a twentieth of its start-up target). Only that answer is stored, never config data;
    any change to the file (mtime, ctime, size, inode: an edit, a replace, a ``touch``)
    makes it a miss, and a file changed less than ``entry_index.RACY_NS`` ago is not stored
    (a second change in the same clock tick could not be seen). The stat is taken before
    the file is read. A store that cannot be read or written is ignored.
    """

    NAME = "pyproject-without-reach.json"
    #: files remembered (the most recent); older ones are parsed again when asked for
    KEEP = 64

    def __init__(self, path: str) -> None:
        from .entry_index import cache_dir

        self.path = os.path.abspath(path)
        try:
            st = os.stat(self.path)
            self.stat: list[int] | None = [st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_ino]
        except (OSError, ValueError):
            self.stat = None
        base = cache_dir()
        self.store = os.path.join(base, self.NAME) if base is not None else None

    def _read(self) -> dict[str, Any]:
        import json

        if self.store is None:
            return {}
        try:
            with open(self.store, encoding="utf-8") as f:
                data = json.load(f)
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def known(self) -> bool:
        return self.stat is not None and self._read().get(self.path) == self.stat

    def remember(self) -> None:
        import json
        import time

        from . import entry_index

        if self.stat is None or self.store is None:
            return
        if max(self.stat[0], self.stat[1]) > time.time_ns() - entry_index.RACY_NS:
            return
        data = self._read()
        data.pop(self.path, None)
        data[self.path] = self.stat
        kept = dict(list(data.items())[-self.KEEP:])
        tmp = f"{self.store}.{os.getpid()}.tmp"
        try:
            os.makedirs(os.path.dirname(self.store), exist_ok=True)
            with open(tmp, "w", encoding="utf-8") as f:
                json.dump(kept, f)
            os.replace(tmp, self.store)  # readers see the old store or the new one
        except OSError:
            try:
                os.unlink(tmp)
            except OSError:
                pass


def _path(path: str) -> Path:
    from pathlib import Path

    return Path(path)


def read_config(config: str | os.PathLike[str] | dict[str, Any] | None, *,
                remember: bool = False) -> tuple[dict[str, Any], Path | None]:
    """The raw config data and the file it came from (``None`` for a dict or the defaults);
    ``remember``: see :func:`find_default`."""
    if config is None:
        return find_default(remember=remember)
    if isinstance(config, dict):
        return config, None
    source = _path(os.fspath(config))
    return read_file(source), source


def resolve_secrets(value: Any, *, where: str, found: set[str] | None = None) -> Any:
    """Replace every ``{"env": "VAR"}`` with the variable's value (missing -> ConfigError).

    The values read are added to ``found`` when given: the caller's own set (one per
    table validated, one per ``Reach``), never a process-wide one, so two configurations
    in one process do not share, or leak into each other's, masking."""
    if isinstance(value, dict):
        if set(value) == {"env"} and isinstance(value["env"], str):
            var = value["env"]
            if var not in os.environ:
                raise ConfigError(f"{where}: environment variable {var} is not set")
            secret = os.environ[var]
            if found is not None:
                found.add(secret)
            return secret
        return {k: resolve_secrets(v, where=f"{where}.{k}", found=found) for k, v in value.items()}
    if isinstance(value, list):
        return [resolve_secrets(v, where=f"{where}[{i}]", found=found) for i, v in enumerate(value)]
    return value


def mask_secrets(text: str, secrets: Iterable[str] = ()) -> str:
    """``text`` with each of ``secrets`` (values of 6 characters or more) replaced by ``***``.

    Exception messages and tracebacks go to the logs, and a connector's exception can
    carry its API key. The secrets are the caller's (what :func:`resolve_secrets` read for
    it, a Reach's): this module keeps none. A ``Reach`` masks its log events with its own
    redactor (``Reach.redactor``), which also finds the encoded spellings."""
    for secret in sorted({s for s in secrets if isinstance(s, str) and len(s) >= _MIN_SECRET}, key=len, reverse=True):
        if secret in text:
            text = text.replace(secret, "***")
    return text


def settings_secrets(settings: Any, _depth: int = 0) -> set[str]:
    """The secrets a plugin's validated settings hold as table *keys*: a field declared
    ``Field(json_schema_extra={"reach_secret_keys": True})`` maps secrets to something
    (``tokens = { "tok-..." = "support" }``: bearer token -> agent).

    Why a declaration: :func:`secret_values` decides by key names, and here the key
    *is* the secret; guessing that from the data would mask the field names of every
    table under a secret-sounding key (``auth = { type = "bearer", ... }``).
    """
    found: set[str] = set()
    fields = getattr(type(settings), "model_fields", None)
    if not isinstance(fields, dict) or _depth > 16:
        return found
    for name, info in fields.items():
        value = getattr(settings, name, None)
        extra = getattr(info, "json_schema_extra", None)
        if isinstance(extra, dict) and extra.get("reach_secret_keys") and isinstance(value, dict):
            found |= {k for k in value if isinstance(k, str)}
        for inner in (value.values() if isinstance(value, dict) else value if isinstance(value, list | tuple)
                      else (value,)):
            found |= settings_secrets(inner, _depth + 1)
    return found


def secret_values(value: Any, is_secret_key: Any, *, _secret: bool = False, _depth: int = 0) -> set[str]:
    """Every secret a config table holds, as the value reach will use: what ``{ env = "VAR" }``
    reads, strings under a secret key name (``api_key = "sk-..."``, ``password = "..."``,
    ``is_secret_key(name)`` decides) and the password of any URL (``postgresql://u:PW@h``).

    Why: these exact values must never reach a model or a log, in any spelling
    (``Redactor.add(values=...)``); unset variables are skipped (validation reports them).
    """
    found: set[str] = set()
    if _depth > 32:
        return found
    if isinstance(value, dict):
        if set(value) == {"env"} and isinstance(value["env"], str):
            env = os.environ.get(value["env"])
            if env:
                found.add(env)
            return found
        for k, v in value.items():
            # a secret key's own text (or list of texts); a table under it (auth = {type = "bearer",
            # token = ...}) is decided key by key, or "bearer" would be masked everywhere
            secret = not isinstance(v, dict) and isinstance(k, str) and bool(is_secret_key(k))
            found |= secret_values(v, is_secret_key, _secret=secret, _depth=_depth + 1)
    elif isinstance(value, list | tuple):
        for v in value:
            found |= secret_values(v, is_secret_key, _secret=_secret, _depth=_depth + 1)
    elif isinstance(value, str):
        if _secret:
            found.add(value)
        if "://" in value and "@" in value:
            from urllib.parse import unquote, urlsplit

            try:
                password = urlsplit(value.strip()).password
            except ValueError:
                password = None
            if password:
                found |= {password, unquote(password)}
    return found
