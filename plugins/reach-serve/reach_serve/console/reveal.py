"""Characters a person cannot see, made visible before the console shows model text.

The rule is reach_core's (:mod:`reach_core.reveal`), shared with reach-confirm so a person
sees the same ``⟨U+202E⟩`` in the CLI and here. The console applies it in the one place
every rendered value passes (the template environment's ``finalize``), so no page can
forget it.
"""

from __future__ import annotations

from typing import Any

from markupsafe import Markup

from reach_core.reveal import MAX_MARKS, MAX_RUN, MAX_SPACES, hidden, reveal_text

__all__ = ["MAX_MARKS", "MAX_RUN", "MAX_SPACES", "hidden", "reveal"]


def reveal(value: Any) -> Any:
    """``value`` with every hidden character spelled out; the template environment's ``finalize``.

    Numbers and None pass through unchanged (Jinja prints them as before); markup the
    templates built (``|join`` of escaped text) is treated the same as text: the
    replacement holds no ``<``, ``&`` or quote, so it cannot change the markup around it.
    """
    if value is None or isinstance(value, bool | int | float):
        return value
    if isinstance(value, Markup):
        return Markup(reveal_text(str(value)))
    return reveal_text(value if isinstance(value, str) else str(value))
