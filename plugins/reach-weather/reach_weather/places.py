"""Turning what a user typed ("北京", "New York", "Bejing") into one place.

The geocoder is trusted for aliases and translations (Peking, 北京 → Beijing),
but a result that is merely a near spelling of the query is a typo, and
silently answering for another city is worse than asking: the model gets a
business error naming the city and the likely spelling, and resends.
"""

from __future__ import annotations

import difflib
import math
import unicodedata
from dataclasses import dataclass
from typing import Any

from reach_core import BusinessError, RetryableError

from .openmeteo import OpenMeteo, service_text

# Ratio above which a different name counts as a misspelling of the query.
_TYPO_RATIO = 0.75
# Ratio a second-query candidate needs before it is offered as a suggestion.
_SUGGEST_RATIO = 0.6


@dataclass(frozen=True, slots=True)
class Place:
    """A geocoded place, reduced to what the forecast call and the answer need."""

    name: str
    country: str | None
    latitude: float
    longitude: float

    @classmethod
    def from_result(cls, result: dict[str, Any]) -> Place:
        """The service's bytes are not trusted: names are bounded one-line text (they reach
        the model), coordinates finite numbers in range; anything else is an unusable answer."""
        try:
            latitude, longitude = float(result["latitude"]), float(result["longitude"])
        except (KeyError, TypeError, ValueError, OverflowError):
            latitude = longitude = math.nan
        if not (-90 <= latitude <= 90 and -180 <= longitude <= 180) or isinstance(
                result.get("latitude"), bool) or isinstance(result.get("longitude"), bool):
            raise RetryableError("the weather geocoding service sent a place without usable coordinates")
        country = result.get("country")
        return cls(
            name=service_text(result.get("name")) or "",
            country=service_text(country) if country is not None else None,
            latitude=latitude,
            longitude=longitude,
        )


def has_cjk(text: str) -> bool:
    """True when ``text`` holds CJK ideographs (the user writes Chinese/Japanese)."""
    return any("\u3400" <= ch <= "\u9fff" or "\uf900" <= ch <= "\ufaff" for ch in text)


def normalise(text: str) -> str:
    """Case-, accent- and punctuation-insensitive form of a place name."""
    decomposed = unicodedata.normalize("NFKD", text.casefold())
    kept = (ch for ch in decomposed if not unicodedata.combining(ch) and ch.isalnum())
    name = "".join(kept)
    # 北京市 / 上海市: the administrative suffix is not part of what people type.
    return name[:-1] if has_cjk(name) and len(name) > 2 and name.endswith("市") else name


def _same_place_name(query: str, name: str) -> bool:
    q, n = normalise(query), normalise(name)
    if not q or not n:
        return False
    if q == n:
        return True
    shorter = min(len(q), len(n))
    return shorter >= (2 if has_cjk(q) else 3) and (n.startswith(q) or q.startswith(n))


def _similarity(query: str, name: str) -> float:
    return difflib.SequenceMatcher(None, normalise(query), normalise(name)).ratio()


def query_language(city: str, default: str) -> str:
    """Chinese answers for a Chinese query, else the configured language."""
    return "zh" if has_cjk(city) else default


async def resolve_city(api: OpenMeteo, city: str, language: str) -> Place:
    """The place ``city`` names, or a ``BusinessError`` that helps the model resend."""
    query = " ".join(city.split())
    results = await api.search(query, count=5, language=language)
    if results:
        for result in results:
            if _same_place_name(query, str(result.get("name") or "")):
                return Place.from_result(result)
        best = results[0]
        best_name = str(best.get("name") or "")
        if _similarity(query, best_name) < _TYPO_RATIO:
            # An alias or a translation the geocoder knows (Peking, NYC).
            return Place.from_result(best)
        raise BusinessError(_not_found(query, best_name))
    raise BusinessError(_not_found(query, await _suggest(api, query, language)))


async def _suggest(api: OpenMeteo, query: str, language: str) -> str | None:
    """A likely spelling from a second, looser query on the first letters."""
    key = query[:2] if has_cjk(query) else query[:3]
    if len(key) < 2 or key == query:
        return None
    candidates = await api.search(key, count=20, language=language)
    scored = [
        (_similarity(query, str(c.get("name") or "")), str(c.get("name") or ""))
        for c in candidates
    ]
    scored = [item for item in scored if item[1] and item[0] >= _SUGGEST_RATIO]
    return max(scored)[1] if scored else None


def _not_found(query: str, suggestion: str | None) -> str:
    message = f"no city called {query!r}"
    if suggestion:
        return f"{message}; did you mean {suggestion}? Send the call again with that spelling."
    return f"{message}; check the spelling or use a nearby larger city, then send the call again."
