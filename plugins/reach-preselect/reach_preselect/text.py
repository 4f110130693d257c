"""Turning tool declarations and questions into terms.

Tool names are identifiers (`get_current_weather`, `searchFlights`, `math.factorial`),
descriptions and questions are prose in English or Chinese. One tokenizer serves both
sides so a question word meets the same stem in a tool name:

* identifiers are split on `_ . - /` and camelCase boundaries;
* Latin words are lower-cased, English stop words dropped and the rest stemmed
  (PyStemmer's Snowball English stemmer);
* a run of CJK characters becomes its overlapping character bigrams (and the single
  character when the run has only one), the usual way to index Chinese without a
  word segmenter.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable
from functools import lru_cache
from typing import Any

_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_SEPARATORS = re.compile(r"[_\.\-/:]+")
_TOKEN = re.compile(
    r"[a-z0-9]+|[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\u3040-\u30ff\uac00-\ud7af]+"
)
_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\u3040-\u30ff\uac00-\ud7af]")

# A small, generic English stop list: words that say nothing about which tool fits.
STOP_WORDS = frozenset(
    """
    a an and are as at be been being but by can could did do does for from had has have
    how i if in into is it its itself me my of on or our please should so some such than
    that the their them then there these they this those to too us was we were what when
    where which while who whom why will with would you your yours
    """.split()
)
# Only grammatical words. A longer list that also dropped generic verbs ("get",
# "find", "use", "give", "tell", ...) gained on BFCL's wording but not on the held-out
# half, so BM25's own IDF weighs those words now.


@lru_cache(maxsize=1)
def _stemmer() -> Any:
    import Stemmer  # PyStemmer; imported on first use to keep plugin import cheap

    return Stemmer.Stemmer("english")


def split_identifier(name: str) -> str:
    """`getWeather_v2.now` -> `get Weather v2 now` (words of an identifier)."""
    return _SEPARATORS.sub(" ", _CAMEL.sub(" ", name))


def _cjk_terms(run: str) -> list[str]:
    if len(run) == 1:
        return [run]
    return [run[i : i + 2] for i in range(len(run) - 1)]


def tokenize(text: str, *, keep_stop_words: bool = False) -> list[str]:
    """Terms of `text` for BM25 (stemmed English words, CJK bigrams)."""
    return list(_tokenize(text, keep_stop_words))


@lru_cache(maxsize=4096)
def _tokenize(text: str, keep_stop_words: bool) -> tuple[str, ...]:
    # Cached: one question is tokenized for clause splitting and again for scoring.
    words: list[str] = []
    cjk: list[str] = []
    for match in _TOKEN.finditer(split_identifier(text).lower()):
        token = match.group()
        if _CJK.match(token):
            cjk.extend(_cjk_terms(token))
        elif keep_stop_words or token not in STOP_WORDS:
            words.append(token)
    stems = _stemmer().stemWords(words) if words else []
    return tuple(stems + cjk)


_WORD = re.compile(r"[^\W\d_]+(?:['\u2019][^\W\d_]+)*")


def content_words(text: str) -> str:
    """The words of `text` without stop words, numbers or punctuation, case kept."""
    return " ".join(w for w in _WORD.findall(text) if w.lower() not in STOP_WORDS)


def has_cjk(text: str) -> bool:
    return _CJK.search(text) is not None


def schema_text(schema: dict[str, Any] | None) -> tuple[list[str], list[str]]:
    """Parameter names and descriptions (nested objects and arrays included)."""
    names: list[str] = []
    descriptions: list[str] = []

    def walk(node: Any, depth: int) -> None:
        if not isinstance(node, dict) or depth > 4:
            return
        props = node.get("properties")
        if isinstance(props, dict):
            for key, sub in props.items():
                names.append(split_identifier(str(key)))
                if isinstance(sub, dict):
                    desc = sub.get("description")
                    if isinstance(desc, str) and desc:
                        descriptions.append(desc)
                    walk(sub, depth + 1)
        items = node.get("items")
        if isinstance(items, dict):
            walk(items, depth + 1)

    walk(schema or {}, 0)
    return names, descriptions


def content_hash(parts: Iterable[Any]) -> str:
    """Stable hash of a tool's text, the key of its cached embedding."""
    blob = json.dumps(list(parts), ensure_ascii=False, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:32]


# Chinese markers: 然后, 接着 and 以及 are never part of another word and split anywhere;
# the others are also parts of ordinary words (再生 renewable, 最后一个 the last one,
# 一家同时提供 one that also offers), so they split only where a clause starts: at the
# start, or after punctuation or a space (the counterpart of the spaces English needs).
_CLAUSE_SPLIT = re.compile(
    r"(?<=[.?!;。？！；])\s+|[。？！；\n]+|"
    r",?\s+(?:and then|after that|afterwards|additionally|also|then|finally|lastly|"
    r"besides|furthermore|moreover|as well as)\s+|"
    r"(?:然后|接着|以及)|(?:(?<=^)|(?<=[，,、：:。？！；.?!;\s]))(?:另外|此外|并且|同时|最后|还要|再)",
    re.IGNORECASE,
)


def clauses(question: str, *, min_terms: int = 2) -> list[str]:
    """Split a question that asks for several things into its parts.

    A question like "Find X, then book Y. Also tell me Z" needs one tool per part;
    ranking each part on its own keeps the second and third intents from being
    drowned by the first. Parts too short to stand alone are merged into the previous.
    """
    raw = [p.strip(" ,\"'") for p in _CLAUSE_SPLIT.split(question) if p and p.strip(" ,\"'")]
    parts: list[str] = []
    for piece in raw:
        if parts and len(tokenize(piece)) < min_terms:
            parts[-1] = f"{parts[-1]} {piece}"
        else:
            parts.append(piece)
    if len(parts) > 1 and len(tokenize(parts[0])) < min_terms:
        parts[1] = f"{parts[0]} {parts[1]}"
        parts.pop(0)
    return parts
