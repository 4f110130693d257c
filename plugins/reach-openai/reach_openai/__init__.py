"""reach-openai: drive ``reach.run`` with any OpenAI-compatible Chat Completions model.

- adapter ``openai`` (native tool calling, or ``tagged`` mode for text-only models);
- :mod:`reach_openai.scripted`: an OpenAI-compatible scripted model server for
  offline demos and tests;
- the ``reach demo`` and ``reach run`` commands.
"""

from __future__ import annotations

from .adapter import OpenAIAdapter
from .settings import OpenAISettings

__all__ = ["OpenAIAdapter", "OpenAISettings"]
