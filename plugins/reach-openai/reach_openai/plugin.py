"""Hook implementations of reach-openai: settings, the ``openai`` adapter, CLI commands.

Nothing heavy is imported here (the SDK loads on the first model call), so the
plugin costs nothing to commands that never run a model.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from reach_core import hookimpl

if TYPE_CHECKING:
    from .settings import OpenAISettings


def make_adapter(reach: Any, settings: OpenAISettings | None) -> Any:
    """The adapter factory the core calls once per Reach (``factory(reach, settings)``)."""
    from .adapter import OpenAIAdapter

    return OpenAIAdapter(settings, reach=reach)


@hookimpl
def reach_plugin_settings() -> type[OpenAISettings]:
    from .settings import OpenAISettings

    return OpenAISettings


@hookimpl
def reach_register_adapters(register: Any) -> None:
    register("openai", make_adapter)


@hookimpl
def reach_register_commands(cli: Any) -> None:
    from .cli import demo_command, run_command

    for command in (demo_command, run_command):
        if command.name not in cli.commands:  # the core (or another plugin) may already own it
            cli.add_command(command)
