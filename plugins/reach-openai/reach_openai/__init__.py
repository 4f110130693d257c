"""reach-openai: drive ``reach.run`` with any OpenAI-compatible Chat Completions model.

- adapter ``openai`` (native tool calling, or ``tagged`` mode for text-only models);
- :mod:`reach_openai.scripted`: an OpenAI-compatible scripted model server for
  offline demos and tests;
- the ``reach demo`` and ``reach run`` commands.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from reach_core.lazy import exports

# Public names and their modules, imported on first access (PEP 562): the entry
# point (reach_openai.plugin) imports this package, and listing plugins must not pay for them.
_EXPORTS = {
    "OpenAIAdapter": "adapter", "OpenAISettings": "settings",
}

if TYPE_CHECKING:
    from .adapter import OpenAIAdapter
    from .settings import OpenAISettings


__getattr__ = exports(__name__, _EXPORTS)


__all__ = ["OpenAIAdapter", "OpenAISettings"]
