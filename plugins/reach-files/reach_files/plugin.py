"""reach-files hook implementations.

Only ``reach_core.hookimpl`` is imported with this module (``reach plugins`` imports
it); the connectors and the settings model load when a Reach registers the tools.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from reach_core import hookimpl

if TYPE_CHECKING:
    from pathlib import Path

    from .jail import Jail
    from .settings import FilesSettings

REACH_PLUGIN_NAME = "reach-files"  # the name when the module is passed to Reach(plugins=[...]) directly


@hookimpl
def reach_plugin_settings() -> type[FilesSettings]:
    from .settings import FilesSettings

    return FilesSettings


def jail_for(settings: FilesSettings, data_dir: Path, reach: Any = None) -> Jail:
    """The configured roots, or ``<data_dir>/files`` (created, since it is ours); reach's own
    state inside them is hidden from every tool."""
    from pathlib import Path

    from .jail import Jail
    from .protect import config_source, reach_paths

    hidden = reach_paths(getattr(reach, "config", None), data_dir, config_source(reach))
    if settings.roots:
        return Jail(list(settings.roots), hidden)
    default = Path(data_dir) / "files"
    default.mkdir(parents=True, exist_ok=True)
    return Jail([default], hidden)


@hookimpl
def reach_register_tools(register: Any, settings: FilesSettings | None, reach: Any) -> None:
    from .connectors import ListDir, ReadFile, SearchFiles, WriteFile
    from .settings import FilesSettings

    settings = settings or FilesSettings()
    jail = jail_for(settings, reach.data_dir, reach)
    for cls in (ReadFile, ListDir, SearchFiles, WriteFile):
        register(cls(jail, settings))
