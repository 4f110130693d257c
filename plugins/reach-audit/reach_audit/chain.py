"""The hash chain that makes the audit log tamper-evident.

Each record's hash is SHA-256 over the previous record's hash and the record's
canonical JSON. Changing, inserting or deleting a row in the middle breaks every
later link; ``reach audit verify`` walks the chain and names the first broken one.
Cutting rows off the *end* cannot be seen from inside the log: anchor the head
hash that ``verify`` prints somewhere else if that matters to you.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

import orjson

GENESIS = "0" * 64


def canonical_json(record: dict[str, Any]) -> str:
    """One byte-exact text per record: sorted keys, no spaces, UTF-8 kept as is.

    ``verify`` hashes the stored text itself and never re-serialises, so the
    encoder may change between versions without breaking old chains. orjson is
    several times faster than ``json`` on the writer's path; ``json`` (same
    output for these records) covers what orjson refuses (integers past 64 bits).
    """
    try:
        return orjson.dumps(record, option=orjson.OPT_SORT_KEYS).decode("utf-8")
    except TypeError:
        return json.dumps(record, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def link_hash(prev_hash: str, canonical: str) -> str:
    """The hash of one link: depends on everything before it through ``prev_hash``."""
    digest = hashlib.sha256()
    digest.update(prev_hash.encode("ascii"))
    digest.update(b"\n")
    digest.update(canonical.encode("utf-8"))
    return digest.hexdigest()


_SORTED = orjson.OPT_SORT_KEYS
_sha256 = hashlib.sha256


def link(prev_hash: str, record: dict[str, Any]) -> tuple[str, str]:
    """``(canonical_json(record), link_hash(prev_hash, that))`` in one go, hashing the
    encoder's bytes as they come instead of encoding the text again, in one ``update``
    (the previous hash, the newline and the record joined: SHA-256 of the same bytes)."""
    try:
        raw = orjson.dumps(record, option=_SORTED)
    except TypeError:
        canonical = canonical_json(record)
        return canonical, link_hash(prev_hash, canonical)
    return raw.decode("utf-8"), _sha256(prev_hash.encode("ascii") + b"\n" + raw).hexdigest()
