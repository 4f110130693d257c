"""Red-team families for the ``city`` argument: refused with ``invalid_arguments`` before
any request leaves the process, and honest names of every script still answered.

Families: control and format characters (NUL, newlines, tabs, zero-width, bidi overrides,
BOM, line separators), overlong names (characters, stacked combining marks), URL
metacharacters and escapes (query/fragment/path/percent/userinfo/template/CRLF), and
look-alikes (Latin mixed with Cyrillic or Greek letters drawn the same). Width and style
variants (fullwidth, mathematical letters) are folded to the plain name, not refused.
"""

from __future__ import annotations

import pytest

_CONTROL = ["Beijing\x00", "\x00", "Bei\njing", "Beijing\r\nX-Injected: 1", "Lon\tdon", "Paris\x1b[31m",
            "Paris\x7f", "Pa\u200bris", "\u200bParis", "Paris\u200d", "\ufeffLondon", "Lon\u202edon",
            "Tokyo\u2066", "Paris\u2028", "Paris\u2029", "Sy\u00addney", "Par\u2060is", "\u0085Paris",
            "Par\U000e0041is", "Beijing\udc80", "\ud800"]
_LONG = ["a" * 101, "Paris" * 30, "北" * 101, "Llanfair" + "pwll" * 30, "Pa" + "\u0301" * 10 + "ris",
         "e\u0301\u0302\u0303\u0304"]
_URL = ["Paris&count=100", "Paris?x=1", "Paris#frag", "Paris/../v1/forecast", "../../etc/passwd",
        "Paris%00", "Paris%26count%3D100", "Pa%72is", "user@evil.example", "http://evil.example/",
        "Paris;rm -rf", "Paris|ls", "{{city}}", "${city}", "Paris<script>", "Paris>x", "Paris\"", "Paris`id`",
        "Paris\\x", "Paris[0]", "Paris^", "Paris=", "Paris+London", "Paris~", "Paris$", "Paris*", "Paris!"]
_LOOKALIKE = ["P\u0430ris",          # Cyrillic а
              "L\u043endon",         # Cyrillic о
              "\u0422okyo",          # Cyrillic Т
              "Sydn\u0435y",         # Cyrillic е
              "B\u0435ijing",        # Cyrillic е
              "N\u0435w York",
              "Par\u0456s",          # Cyrillic і
              "\u03a1aris",          # Greek Ρ
              "Tok\u03bfyo"[:-1],    # Greek ο
              "Lond\u03bfn",
              "\u041c\u043e\u0441kva"]   # Cyrillic and Latin in one word


@pytest.mark.parametrize("city", _CONTROL + _LONG + _URL + _LOOKALIKE)
@pytest.mark.parametrize("tool", ["get_weather", "get_forecast"])
async def test_bad_city_names_are_refused_before_any_request(weather_reach, demo, tool, city):
    before = len(demo.requests)
    r = await weather_reach.invoke(tool, {"city": city})
    assert not r.ok, f"{city!r} was answered: {r.content}"
    assert r.error.code == "invalid_arguments", (city, r.error)
    assert "city" in r.error.message and "internal error" not in r.error.message
    assert len(demo.requests) == before, f"{city!r} reached the service: {demo.requests[before:]}"


@pytest.mark.parametrize(("city", "name"), [
    ("Beijing", "Beijing"), ("北京", "北京"), ("  Paris  ", "Paris"), ("New York", "New York"),
    ("new york", "New York"), ("London", "London"), ("东京", "东京"),
    ("\uff22\uff45\uff49\uff4a\uff49\uff4e\uff47", "Beijing"),            # fullwidth letters
    ("\U0001d401\U0001d41e\U0001d422\U0001d423\U0001d422\U0001d427\U0001d420", "Beijing"),  # math bold
    ("New\u00a0York", "New York"), ("New\u3000York", "New York"),       # no-break and ideographic space
])
async def test_honest_names_are_answered(weather_reach, city, name):
    r = await weather_reach.invoke("get_weather", {"city": city})
    assert r.ok, (city, r.error)
    assert r.content["city"] == name


@pytest.mark.parametrize("city", ["São Paulo", "Zürich", "St. Louis", "Winston-Salem", "Xi'an", "L’Aquila",
                                  "Ho Chi Minh City", "Москва", "Αθήνα", "서울", "القاهرة", "Tel Aviv-Yafo",
                                  "Washington, D.C.", "Paris (Texas)", "Hà Nội", "Nizhny Novgorod", "1000 Islands",
                                  "Llanfairpwllgwyngyllgogerychwyrndrobwllllantysiliogogogoch", "Kraków",
                                  "Ōsaka", "Reykjavík", "Tōkyō", "Mumbai मुंबई", "Beijing 北京",
                                  "Winston–Salem", "Halle (Saale)", "'s-Hertogenbosch", "Coeur d’Alene"])
async def test_real_place_names_reach_the_geocoder(weather_reach, demo, city):
    """Not in the demo data, so a business error (no such city) -- but after a request: not refused."""
    before = len(demo.requests)
    r = await weather_reach.invoke("get_weather", {"city": city})
    assert len(demo.requests) > before, (city, r.error)
    assert r.ok or r.error.code != "invalid_arguments", (city, r.error)
