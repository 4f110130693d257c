"""reach-shape: tool results cut to a token budget by structure, the rest kept behind a handle.

The plugin (entry point ``reach-shape`` -> :mod:`reach_shape.plugin`) shapes
results in ``reach_post_invoke`` and registers the ``read_result`` tool. The
pieces are usable on their own, e.g. in a benchmark or another plugin.
"""

from .json_shape import JsonShaper, Limits, project
from .paths import PathError, resolve
from .reader import ReadResult, read
from .settings import ShapeSettings, ToolShape
from .shaper import Shaped, Shaper
from .store import ResultStore
from .text_shape import TextShaper, cut_string
from .tokens import TokenCounter, estimate_tokens

__all__ = [
    "JsonShaper", "Limits", "PathError", "ReadResult", "ResultStore", "ShapeSettings", "Shaped", "Shaper",
    "TextShaper", "TokenCounter", "ToolShape", "cut_string", "estimate_tokens", "project", "read", "resolve",
]
