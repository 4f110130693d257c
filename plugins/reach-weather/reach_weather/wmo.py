"""WMO weather interpretation codes (as used by Open-Meteo) turned into words.

A model reasons about "light rain" far better than about code 61, and Chinese
users expect 小雨, so every code has an English and a Chinese wording.
"""

from __future__ import annotations

_CODES: dict[int, tuple[str, str]] = {
    0: ("clear sky", "晴"),
    1: ("mainly clear", "晴间多云"),
    2: ("partly cloudy", "多云"),
    3: ("overcast", "阴"),
    45: ("fog", "雾"),
    48: ("freezing fog", "冻雾"),
    51: ("light drizzle", "小毛毛雨"),
    53: ("drizzle", "毛毛雨"),
    55: ("dense drizzle", "浓毛毛雨"),
    56: ("light freezing drizzle", "小冻毛毛雨"),
    57: ("freezing drizzle", "冻毛毛雨"),
    61: ("light rain", "小雨"),
    63: ("rain", "中雨"),
    65: ("heavy rain", "大雨"),
    66: ("light freezing rain", "小冻雨"),
    67: ("freezing rain", "冻雨"),
    71: ("light snow", "小雪"),
    73: ("snow", "中雪"),
    75: ("heavy snow", "大雪"),
    77: ("snow grains", "米雪"),
    80: ("light rain showers", "小阵雨"),
    81: ("rain showers", "阵雨"),
    82: ("violent rain showers", "强阵雨"),
    85: ("light snow showers", "小阵雪"),
    86: ("snow showers", "阵雪"),
    95: ("thunderstorm", "雷阵雨"),
    96: ("thunderstorm with light hail", "雷阵雨伴有小冰雹"),
    99: ("thunderstorm with hail", "雷阵雨伴有冰雹"),
}

# Codes at which an umbrella is worth carrying; lets the tool answer the
# question users actually ask ("do I need an umbrella?") without the model
# having to know the WMO table.
WET_CODES = frozenset(c for c in _CODES if c >= 51 and c not in (71, 73, 75, 77, 85, 86))


def describe(code: int | None, language: str = "en") -> str:
    """Words for a WMO code in ``language`` ("en" or "zh"); unknown codes stay readable."""
    if code is None:
        return "unknown" if language != "zh" else "未知"
    words = _CODES.get(int(code))
    if words is None:
        return f"weather code {code}" if language != "zh" else f"天气代码 {code}"
    return words[1] if language == "zh" else words[0]
