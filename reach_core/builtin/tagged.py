"""The built-in ``tagged`` parser: tool calls written as tags in a model's text.

Registered as the plugin ``reach.tagged`` before the installed plugins; it
provides the parser named ``tagged`` (``[strategies] parser``). Disable it like any
plugin (``[plugins] disable = ["reach.tagged"]``) to leave parsing to another plugin.
"""

from __future__ import annotations

from typing import Any

from ..calls import TaggedParser
from ..hookspecs import hookimpl

__all__ = ["NAME", "TaggedPlugin"]

#: the name this built-in plugin is registered (and disabled) under
NAME = "reach.tagged"


class TaggedPlugin:
    """Provides the ``tagged`` parser (see ``reach_core.calls.TaggedParser``)."""

    @hookimpl
    def reach_register_parsers(self, register: Any) -> None:
        register("tagged", TaggedParser())
