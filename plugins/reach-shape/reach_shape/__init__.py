"""reach-shape: tool results cut to a token budget by structure, the rest kept behind a handle.

The plugin (entry point ``reach-shape`` -> :mod:`reach_shape.plugin`) shapes
results in ``reach_post_invoke`` and registers the ``read_result`` tool. The
pieces are usable on their own, e.g. in a benchmark or another plugin.
"""

from typing import TYPE_CHECKING

from reach_core.lazy import exports

# Public names and their modules, imported on first access (PEP 562): the entry
# point (reach_shape.plugin) imports this package, and listing plugins must not pay for them.
_EXPORTS = {
    "JsonShaper": "json_shape", "Limits": "json_shape", "project": "json_shape",
    "PathError": "paths", "resolve": "paths", "ReadResult": "reader", "read": "reader",
    "ShapeSettings": "settings", "ToolShape": "settings", "Shaped": "shaper", "Shaper": "shaper",
    "ResultStore": "store", "TextShaper": "text_shape", "cut_string": "text_shape",
    "TokenCounter": "tokens", "estimate_tokens": "tokens",
}

if TYPE_CHECKING:
    from .json_shape import JsonShaper, Limits, project
    from .paths import PathError, resolve
    from .reader import ReadResult, read
    from .settings import ShapeSettings, ToolShape
    from .shaper import Shaped, Shaper
    from .store import ResultStore
    from .text_shape import TextShaper, cut_string
    from .tokens import TokenCounter, estimate_tokens


__getattr__ = exports(__name__, _EXPORTS)


__all__ = [
    "JsonShaper", "Limits", "PathError", "ReadResult", "ResultStore", "ShapeSettings", "Shaped", "Shaper",
    "TextShaper", "TokenCounter", "ToolShape", "cut_string", "estimate_tokens", "project", "read", "resolve",
]
