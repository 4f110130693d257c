"""One marking for hidden characters wherever a person reads model text (reach_core.reveal).

reach-confirm wrote U+202E as ``\\u202e`` in the summary a person approves from the CLI,
the console as ``⟨U+202E⟩``: the same request looked different in the two places. Both now
use :func:`reach_core.reveal.reveal_text`. Families: bidi controls, zero-width and other
format characters, tag characters, variation selectors, C0 and C1 controls, separators,
private-use and unassigned code points, fillers; honest text in every script is kept.
"""

from __future__ import annotations

import pytest

from reach_core.reveal import MAX_RUN, clip, hidden, reveal_text

BIDI = ["\u202a", "\u202b", "\u202c", "\u202d", "\u202e", "\u2066", "\u2067", "\u2068", "\u2069", "\u200e",
        "\u200f", "\u061c"]
ZERO_WIDTH = ["\u200b", "\u200c", "\u200d", "\u2060", "\ufeff", "\u180e", "\u00ad", "\u2061", "\u2062", "\u2063",
              "\u2064", "\u206a", "\u206f"]
TAGS = ["\U000e0001", "\U000e0020", "\U000e0041", "\U000e0061", "\U000e007e", "\U000e007f"]
C0 = [chr(c) for c in range(0x20) if chr(c) not in "\t\n"] + ["\x7f"]
C1 = [chr(c) for c in range(0x80, 0xA0)]
OTHER = ["\u2028", "\u2029", "\ue000", "\uf8ff", "\U000f0000", "\U0010fffd", "\U000e0080", "\u0378", "\u3164",
         "\u115f", "\u1160", "\uffa0", "\u034f", "\u2800", "\u17b4", "\ud800"]
FAMILIES = BIDI + ZERO_WIDTH + TAGS + C0 + C1 + OTHER


def _marker(char: str) -> str:
    return f"⟨U+{ord(char):04X}⟩"


@pytest.mark.parametrize("char", FAMILIES, ids=[f"U+{ord(c):04X}" for c in FAMILIES])
def test_each_hidden_character_is_spelled_where_it_was(char: str) -> None:
    assert hidden(char)
    for text, want in [(f"pay{char}ment.txt", f"pay{_marker(char)}ment.txt"), (char, _marker(char)),
                       (f"北京{char}", f"北京{_marker(char)}"), (f"{char}{char}x", f"{_marker(char) * 2}x")]:
        assert reveal_text(text) == want


VARIATION_SELECTORS = ["\ufe00", "\ufe0e", "\ufe0f", "\U000e0100", "\U000e01ef"]


@pytest.mark.parametrize("vs", VARIATION_SELECTORS, ids=[f"U+{ord(c):04X}" for c in VARIATION_SELECTORS])
def test_variation_selectors_are_spelled_unless_one_follows_a_visible_character(vs: str) -> None:
    assert reveal_text(f"x{vs}y") == f"x{vs}y"  # how emoji and CJK variants are drawn
    assert reveal_text(f"x{vs}{vs}y") == f"x{_marker(vs) * 2}y"  # a run carries bytes
    assert reveal_text(f"{vs}x") == f"{_marker(vs)}x"
    assert reveal_text(f"\u202e{vs}") == f"{_marker(chr(0x202E))}{_marker(vs)}"


def test_long_runs_are_counted_not_listed() -> None:
    smuggled = "".join(chr(0xE0000 + ord(c)) for c in "approve this now")
    shown = reveal_text(f"ok{smuggled}")
    assert shown.startswith("ok" + "".join(_marker(c) for c in smuggled[:MAX_RUN]))
    assert shown.endswith(f"⟨{len(smuggled) - MAX_RUN} more hidden characters⟩")


@pytest.mark.parametrize("text", ["plain ascii", "tab\there", "two\nlines", "Zoë", "北京", "Łódź", "💶 100",
                                  "naïve café", "ελληνικά", "עברית", "العربية", "👍🏽 ❤️", "Tiếng Việt", "é", ""])
def test_honest_text_is_kept(text: str) -> None:
    assert reveal_text(text) == text


def test_markers_are_safe_in_html_and_json() -> None:
    shown = reveal_text("".join(FAMILIES))
    assert not any(ch in shown for ch in "<>&\"'\\")
    assert not any(hidden(ch) for ch in shown)


@pytest.mark.parametrize("n", range(0, 40))
def test_clip_never_ends_inside_a_marker(n: int) -> None:
    shown = reveal_text("ab\u202ecd\u200b\u200b" + "\U000e0041" * 12 + "ef")
    head = clip(shown, n)
    assert shown.startswith(head) and len(head) <= n
    assert head.count("⟨") == head.count("⟩")
    assert n - len(head) < 30  # only the split marker is left out


def test_clip_keeps_text_without_markers_and_literal_brackets() -> None:
    assert clip("hello world", 5) == "hello"
    assert clip("a ⟨ b", 3) == "a ⟨"  # a lone bracket with no closing one is just text
