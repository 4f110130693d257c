"""The redactor's fast paths against the algorithm they replaced, over many generated inputs.

The first scan (``_hint``, ``_FOREIGN_HINT``) became one trie, ``scan`` moved its checks
into ``_clean_dump``, and bulk writers got ``scan_many`` and ``texts``, which check many
values in one pass. None of that may change a single output: the previous code is kept
here, verbatim, as :class:`Reference`, and every generated input (each secret family,
encodings and look-alikes, nesting, sizes, near-misses, random character soup) must come
out of both identically: the hint's verdict, ``text``, ``value``, ``scan``,
``secrets_in``, and ``scan_many``/``texts`` against the old one-by-one answers.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Iterable
from typing import Any
from urllib.parse import quote

import orjson
import pytest

from reach_core import redact as R
from reach_core.redact import Redactor, skeleton

# -- the previous algorithm, verbatim ------------------------------------------------


def _old_trie(words: Iterable[str]) -> str:
    ordered = sorted(set(words))
    if "" in ordered:
        rest = [w for w in ordered if w]
        return "(?:" + _old_trie(rest) + ")?" if rest else ""
    groups: dict[str, list[str]] = {}
    for w in ordered:
        groups.setdefault(w[0], []).append(w[1:])
    alts = [re.escape(c) + _old_trie(tails) for c, tails in groups.items()]
    return alts[0] if len(alts) == 1 else "(?:" + "|".join(alts) + ")"


def _old_hint(extra_keys: Iterable[str] = ()) -> re.Pattern[str]:
    words = {*R._KEYWORDS, *(R._loose(k) for k in extra_keys)}
    loose = sorted((w for w in words if "[" in w), key=len, reverse=True)  # regexes of extra keys
    literal = [w for w in words if "[" not in w]
    plain = sorted(R._HINT_WORDS, key=len, reverse=True)
    return re.compile(
        "(?:" + "|".join([_old_trie(literal), *loose]) + ")" + R._IN_CONTEXT
        + "|" + "|".join(re.escape(w) for w in plain)
        + r"|:\d{1,5}:"
    )


# the dump checks' patterns before they stopped at line breaks (kept verbatim)
_OLD_JSON_KEY = re.compile(r'"([^"]*)":')
_OLD_PAIR_HEAD = re.compile(r'\["([^"]{1,99})",')
_OLD_NAMED = re.compile(r'"(?:name|key|header|field|id)":"([^"]{1,99})"')
_OLD_FOREIGN_HINT = re.compile(
    "(?:" + "|".join(re.escape(w) for w in sorted(set(R._FOREIGN_KEYWORDS), key=len, reverse=True)) + ")"
    + R._IN_CONTEXT
)


class Reference(Redactor):
    """The redactor as it was: the old first scans, the old ``_maybe`` and ``scan`` (plus the
    escape rule ``scan`` gained with ``_escaped_secrets``)."""

    def _compile(self) -> None:
        super()._compile()
        self._hint = _old_hint(self._extra_keys)

    def _maybe(self, value: str) -> bool:
        low = value.lower()
        if self._hint.search(low) is not None:
            return True
        if not value.isascii() and _OLD_FOREIGN_HINT.search(low) is not None:
            return True
        return self._extra_any is not None and self._extra_any.search(value) is not None

    def scan(self, data: Any) -> bytes | None:
        if not self._fast:
            return None
        try:
            dumped = orjson.dumps(data)
        except TypeError:
            return None
        if b"\\" in dumped:
            return None
        text = dumped.decode("utf-8")
        extra = self._extra_any
        if self._hint.search(text.lower()) is not None or (extra is not None and extra.search(text) is not None):
            return None
        if not text.isascii() and _OLD_FOREIGN_HINT.search(text.lower()) is not None:
            return None
        if not text.isascii() and skeleton(text) != text:
            return None
        # added with the escape rule (percent and HTML escapes that hide a pair): not the old code,
        # the rule every fast path must now agree with
        if R._ESCAPE_HINT.search(text) is not None and self._hint.search(R._unescape(text).lower()) is not None:
            return None
        key = self._key
        for name in _OLD_JSON_KEY.findall(text):
            if key(name)[0]:
                return None
        if "[" in text:
            for name in _OLD_PAIR_HEAD.findall(text):
                if key(name)[0]:
                    return None
        if '"value":' in text:
            for name in _OLD_NAMED.findall(text):
                if key(name)[0]:
                    return None
        return dumped


# -- generated inputs ----------------------------------------------------------------

SECRET = "Zq7x9Sekr3tVal"
KEYS = [
    "password", "passwd", "pwd", "pw", "passcode", "pin", "card_pin", "secret", "client_secret", "token",
    "access_token", "api_key", "apikey", "key", "x-auth", "authorization", "auth", "db_pass", "credential",
    "cookie", "set-cookie", "session_id", "sessionToken", "private_key", "otp", "cvv", "jwt", "bearer",
    "signature", "sig", "dsn", "connection_string", "mot_de_passe", "contraseña", "Kennwort", "hasło",
    "пароль", "密码", "パスワード", "nonce", "csrf", "iban", "ssn", "mfa", "sid", "hmac", "salt",
]
NEAR_KEYS = [
    "city", "author", "authors", "max_tokens", "prompt_tokens", "token_count", "keyword", "keywords", "monkey",
    "compass", "passenger", "spin", "spinner", "description", "name", "user", "host", "port", "path", "query",
    "limit", "amount", "北京", "date", "email", "url", "pinyin", "ping", "passage", "oauth2", "turkey", "a", "b",
    "value", "id", "field", "header", "",
]
TEMPLATES = [
    "{k}={s}", "{k}: {s}", "{k} = {s}", '"{k}": "{s}"', "'{k}': '{s}'", '{{\\"{k}\\": \\"{s}\\"}}', "--{k}={s}",
    "--{k} {s}", "<{k}>{s}</{k}>", "export {K}={s}", "https://h.test/p?{k}={s}&city=Paris", "{k} => {s}",
    "my {k} is {s}", "the {k} was {s}.", "{k} -> {s}", "{k} number {s}", "{k} 1234", "{k}:\n  {s}",
    "set {k} := {s};", "{k}", "{k}s", "the {k}", "{k} of the day", "{k}{k}", "x{k}y: {s}",
]
TEXTS = [
    "postgresql://app:{s}@db.internal:5432/app", "redis://:{s}@cache:6379", "https://ghp_{s}{s}{s}@github.com/x",
    "user:{s}@host.example", "Authorization: Bearer {s}", "authorization: basic {s}", "Cookie: a=b; session={s}",
    "X-Api-Key: {s}", "curl -u admin:{s} https://h", "mysql -u root -p{s} db", "sshpass -p {s} ssh h",
    "redis-cli -a {s} ping", "db.example.com:5432:prod:app:{s}", "machine h login bob password {s}",
    "PIN 1234", "cvv: 123", "passcode #4321", "密码是{s}", "密码：{s}", "AKIAIOSFODNN7EXAMPLE",
    "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N", "sk-live-4f9aW2mQ8bT1xY6zK3pR",
    "sk_test_51HcXq2Ll9UaBcDeFgHiJkLm", "ghp_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789", "xoxb-123456789012-abcdefghijkl",
    "AIzaSyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q", "glpat-xXyYzZ1234567890abcd",
    "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA7Zq\n-----END RSA PRIVATE KEY-----",
    "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0", "github_pat_{s}{s}{s}",
    # near misses: a hint word without a secret, a keyword without context, ports, addresses
    "the weather in Paris is sunny", "Paris", "c1", "call_8f3a", "add", "ok", "3", "", " ", "\n", "a@b", "--help",
    "-u", "-p", "-a", "login", "bearer", "basic", "digest ", "sk-", "pk_", "rk-", "xox", "eyJ", ":80:", "h:5432:",
    "host:port", "10:30:00", "2026-05-01T08:00:00Z", "prompt_tokens: 12", "max_tokens=100", "tokenizer",
    "keyboard shortcuts", "compass and passenger", "author: Jane", "spinner", "the pin is in the drawer",
    "password", "Password reset", "reset your password at https://h.test", "token count 1234",
    "select * from users where id = 3", "name=Paris&city=Lyon", "<b>bold</b>", "<name>x</name>", "Bearer",
    "a:1,b:2", "{not json", "[1, 2", "[\"Authorization\", \"Bearer abc\"]", "  {\"pw\": \"x\"}",
]
SPELL = [
    lambda t: t, str.upper, str.title, lambda t: t.replace("_", "-"), lambda t: t.replace("_", ""),
    lambda t: "".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else c for c in t),  # fullwidth
    lambda t: t[:1] + "\u200b" + t[1:],  # a zero-width space inside
    lambda t: t.replace("a", "\u0430").replace("o", "\u043e").replace("p", "\u0440"),  # Cyrillic look-alikes
    lambda t: json.dumps(t)[1:-1],  # JSON-escaped
    lambda t: quote(t),  # URL-encoded
]
SOUP = "passwordtokenkeyauthpinsecretbearerAKIAeyJsk_-:=@\"'\\ \n\t{}[],.#>0123456789пароль密码éß"


def _text(rng: random.Random, nested: bool = False) -> str:
    pick = rng.random()
    secret = rng.choice([SECRET, "1234", "hunter2", "x", SECRET * 20])
    if pick < 0.35:
        key = rng.choice(KEYS + NEAR_KEYS)
        out = rng.choice(TEMPLATES).format(k=key, K=key.upper(), s=secret)
    elif pick < 0.6:
        out = rng.choice(TEXTS).replace("{s}", secret)
    elif pick < 0.8:
        out = "".join(rng.choice(SOUP) for _ in range(rng.randint(0, 40)))
    elif not nested:  # several pieces run together, as in a log line or a paragraph
        out = rng.choice([" ", ", ", "\n", "; ", "&"]).join(_text(rng, True) for _ in range(rng.randint(2, 4)))
    else:
        out = rng.choice(TEXTS).replace("{s}", secret)
    if rng.random() < 0.3:
        out = rng.choice(SPELL)(out)
    if not nested and rng.random() < 0.05:
        # large: a few thousand characters (spaced: a run of thousands of word characters
        # after a keyword costs the first scan quadratic time, before and after alike)
        out = " ".join([out or "Paris"] * (5000 // (len(out) + 1) + 1))
    return out


def _data(rng: random.Random, depth: int = 0) -> Any:
    pick = rng.random()
    if depth > 3 or pick < 0.3:
        return rng.choice([_text(rng), _text(rng), rng.randint(0, 99999), 1.5, True, None, 1234, 98765432])
    if pick < 0.65:
        keys = KEYS + NEAR_KEYS + [_text(rng)[:20]]
        return {rng.choice(SPELL)(rng.choice(keys)) if rng.random() < 0.2 else rng.choice(keys): _data(rng, depth + 1)
                for _ in range(rng.randint(0, 4))}
    if pick < 0.75:
        return [rng.choice(KEYS + NEAR_KEYS), _data(rng, depth + 1)]  # ("Authorization", "...") pairs
    if pick < 0.82:
        return {"name": rng.choice(KEYS + NEAR_KEYS), "value": _data(rng, depth + 1)}
    if pick < 0.9:
        return json.dumps(_data(rng, depth + 1))  # JSON inside a string
    return [_data(rng, depth + 1) for _ in range(rng.randint(0, 4))]


def _clean_data(rng: random.Random) -> Any:
    """What tools usually send: dicts of ordinary keys and values (most pass the scan)."""
    return {rng.choice(NEAR_KEYS[:-1]): rng.choice(["Paris", 3, 1.5, [1, 2], {"a": 1}, "call_8f3a", None])
            for _ in range(rng.randint(1, 4))}


REDACTORS = [
    ("default", lambda cls: cls()),
    ("extra keys", lambda cls: cls(extra_keys=["national_id", "Tax Number"])),
    ("extra patterns", lambda cls: cls(extra_patterns=[r"ACME-\d{6}", r"(?P<secret>emp\d{4})"])),
]


@pytest.fixture(params=REDACTORS, ids=[name for name, _ in REDACTORS])
def pair(request: pytest.FixtureRequest) -> tuple[Redactor, Reference]:
    make = request.param[1]
    return make(Redactor), make(Reference)


@pytest.mark.parametrize("seed", range(4))
def test_the_first_scans_agree_with_the_old_ones(seed: int) -> None:
    rng = random.Random(seed)
    new, old = R._hint(), _old_hint()
    new_x, old_x = R._hint(["national_id", "taxnumber"]), _old_hint(["national_id", "taxnumber"])
    texts = [_text(rng) for _ in range(3000)]
    texts += [orjson.dumps(_data(rng)).decode() for _ in range(1000)]
    for text in texts:
        for variant in (text, text.lower(), skeleton(text).lower()):
            assert (new.search(variant) is None) == (old.search(variant) is None), variant
            assert (new_x.search(variant) is None) == (old_x.search(variant) is None), variant
            assert (R._FOREIGN_HINT.search(variant) is None) == (_OLD_FOREIGN_HINT.search(variant) is None), variant


@pytest.mark.parametrize("seed", range(3))
def test_text_value_scan_and_secrets_agree(pair: tuple[Redactor, Reference], seed: int) -> None:
    new, old = pair
    rng = random.Random(100 + seed)
    for _ in range(1500):
        text = _text(rng)
        assert new.text(text) == old.text(text), text
    for _ in range(800):
        data = _data(rng)
        assert new.value(data) == old.value(data), data
        assert new.scan(data) == old.scan(data), data
        assert new.secrets_in(data) == old.secrets_in(data), data


@pytest.mark.parametrize("seed", range(3))
def test_many_at_once_equals_one_by_one(pair: tuple[Redactor, Reference], seed: int) -> None:
    new, old = pair
    rng = random.Random(200 + seed)
    for _ in range(150):
        size = rng.choice([1, 2, 3, 7, 64, 130])
        dirty = rng.choice([0.0, 0.0, 0.02, 0.2, 1.0])  # share of values that may hold a secret
        values = [_data(rng) if rng.random() < dirty else _clean_data(rng) for _ in range(size)]
        assert new.scan_many(values) == [old.scan(v) for v in values], values
        texts = [_text(rng) if rng.random() < dirty else rng.choice(["c1", "call_8f3a", "add", "Paris", "ok"])
                 for _ in range(size)]
        assert new.texts(texts) == [old.text(t) for t in texts], texts


def test_a_match_spanning_two_values_costs_a_second_look_not_a_secret() -> None:
    """Dumps side by side can form a hint or a key pattern neither holds alone: the
    halves are checked again, and each clean value still comes back as its dump."""
    r, old = Redactor(), Reference()
    values = [{"k": "x["}, [",password", "hunter2"], {"a": "my pass"}, {"word": "is 1234"}, ["pin"], [" 1234"]]
    assert r.scan_many(values) == [old.scan(v) for v in values]
    texts = ["the pass", "word is hunter2", "pin", "1234", "c1"]
    assert r.texts(texts) == [old.text(t) for t in texts]


def test_rules_and_no_fast_path_fall_back_to_one_by_one() -> None:
    r, old = Redactor(), Reference()
    for red in (r, old):
        red.add_rule(lambda t: t.replace("Paris", "[CITY]"))
    values = [{"city": "Paris"}, {"a": 1}]
    assert r.scan_many(values) == [old.scan(v) for v in values] == [None, None]
    assert r.texts(["Paris", "c1"]) == [old.text(t) for t in ["Paris", "c1"]] == ["[CITY]", "c1"]
