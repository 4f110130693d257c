"""Finding and reading reach's configuration as plain data: TOML in, a ``dict`` out.

No validation happens here, so this module imports no pydantic: the fast paths
(``reach plugins``, finding plugin commands) read the few keys they need from
the raw data, and ``reach_core.config`` validates the whole of it.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from .errors import ConfigError

if TYPE_CHECKING:
    from pathlib import Path

__all__ = ["find_default", "mask_secrets", "read_config", "read_file", "resolve_secrets"]

#: every secret value read through ``{ env = "VAR" }`` in this process (6 characters or
#: more: shorter values would mask ordinary words), masked in reach's error logs
_secrets: set[str] = set()


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


def find_default() -> tuple[dict[str, Any], Path | None]:
    """The config ``REACH_CONFIG`` names, else ``./reach.toml``, else ``[tool.reach]`` in
    ``./pyproject.toml``. Paths are plain strings until a file is found: ``reach plugins``
    without a config does not import pathlib (nor tomllib without any file)."""
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
        data = read_file(pyproject)
        if data:
            return data, _path(pyproject)
    return {}, None


def _path(path: str) -> Path:
    from pathlib import Path

    return Path(path)


def read_config(config: str | os.PathLike[str] | dict[str, Any] | None) -> tuple[dict[str, Any], Path | None]:
    """The raw config data and the file it came from (``None`` for a dict or the defaults)."""
    if config is None:
        return find_default()
    if isinstance(config, dict):
        return config, None
    source = _path(os.fspath(config))
    return read_file(source), source


def resolve_secrets(value: Any, *, where: str) -> Any:
    """Replace every ``{"env": "VAR"}`` with the variable's value (missing -> ConfigError)."""
    if isinstance(value, dict):
        if set(value) == {"env"} and isinstance(value["env"], str):
            var = value["env"]
            if var not in os.environ:
                raise ConfigError(f"{where}: environment variable {var} is not set")
            secret = os.environ[var]
            if len(secret) >= 6:
                _secrets.add(secret)
            return secret
        return {k: resolve_secrets(v, where=f"{where}.{k}") for k, v in value.items()}
    if isinstance(value, list):
        return [resolve_secrets(v, where=f"{where}[{i}]") for i, v in enumerate(value)]
    return value


def mask_secrets(text: str) -> str:
    """``text`` with every secret reach read from the environment replaced by ``***``.

    Exception messages and tracebacks go to the logs, and a connector's exception
    can carry its API key (a URL with a token, a failed auth header echoed back)."""
    for secret in _secrets:
        if secret in text:
            text = text.replace(secret, "***")
    return text
