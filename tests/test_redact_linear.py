"""Redaction takes time linear in its input: text crafted to make the scans quadratic.

Every audit record, log event and confirmation summary goes through ``Redactor.text``,
and ``re`` holds the GIL: one quadratic scan of a 64 kB tool argument stalls the whole
host. Before this was fixed, "password" written 8,000 times took over a minute here; so
did "a:1:" (a ``.pgpass`` hint and a pair each time), "mysql " repeated before a ``-p``,
"<a " repeated, "password=" repeated. Each case below is 64 kB and must redact within a
CPU budget about ten times what it needs now (and far below what the quadratic scans
took), and the secret appended after it must still be masked.

The second half holds the rewritten scans (a pair's value measured only for a secret
key, the command-then-flag rules as a linear walk, the first scan's bounded runs)
against the previous regexes, kept here verbatim, over generated text.
"""

from __future__ import annotations

import random
import re
import time

import pytest

from reach_core import redact as R
from reach_core.redact import MASK, Redactor

SIZE = 64_000
BUDGET_S = 2.0  # CPU seconds for one 64 kB text; the linear scans need < 0.2 s here

# (name, unit repeated to SIZE, tail holding a secret that must be masked)
FAMILIES = [
    ("keyword run", "password", " password: hunter2-tail"),
    ("short keyword run", "key", " api_key=hunter2-tail"),
    ("pin run", "pin", " pin: 493817"),
    ("upper-case keyword run", "PASSWORD", " PASSWORD: hunter2-tail"),
    ("mixed-case keyword run", "PaSsWoRd", " password = hunter2-tail"),
    ("keyword and dots", "token.", " token: hunter2-tail"),
    ("keyword and dashes", "secret-", " secret: hunter2-tail"),
    ("keyword and digits", "password1", " password: hunter2-tail"),
    ("foreign keyword run", "contraseña", " contraseña: hunter2-tail"),
    ("pgpass-like fields", "a:1:", "\ndb.example:5432:app:alice:hunter2-tail"),
    ("star port fields", "x:*:", " password: hunter2-tail"),
    ("secret pairs in one run", "password=", " password=hunter2-tail"),
    ("plain pairs in one run", "user:", " password: hunter2-tail"),
    ("walrus pairs", "pw:=", " password: hunter2-tail"),
    ("flags in one run", "--k=", " --password hunter2-tail"),
    ("secret flags in one run", "--password=", " --password hunter2-tail"),
    ("open tags", "<a ", " <password>hunter2-tail</password>"),
    ("secret tags", "<password>", " <password>hunter2-tail</password>"),
    ("command words, flag at the end", "mysql ", " -p hunter2-tail"),
    ("command words with flags", "docker -pa ", "; mysql -u root -p hunter2-tail"),
    ("redis command words", "redis-cli ", " -a hunter2-tail"),
    ("quotes after keys", 'key="', ' password: "hunter2-tail"'),
    ("escaped quotes after keys", 'key\\"=', " password: hunter2-tail"),
    ("bearer words", "bearer ", " Authorization: Bearer hunter2-tail-long"),
    ("scheme-looking words", "token bearer", " token: hunter2-tail"),
    ("natural language", "the password for ", " the password is hunter2-tail"),
    ("url fragments", "https://a:", " postgresql://u:hunter2-tail@db/x"),
    ("json-like text", '{"password_hint":', ' "password": "hunter2-tail"'),
]


def _text(unit: str, tail: str) -> str:
    return unit * (SIZE // len(unit)) + tail


REDACTORS = {
    "default": Redactor,
    "extra keys": lambda: Redactor(extra_keys=["x", "employee_pin"]),
}


@pytest.mark.parametrize("kind", REDACTORS)
@pytest.mark.parametrize(("name", "unit", "tail"), FAMILIES, ids=[f[0] for f in FAMILIES])
def test_crafted_text_redacts_in_linear_time_and_masks_the_secret(kind: str, name: str, unit: str, tail: str) -> None:
    redactor = REDACTORS[kind]()
    text = _text(unit, tail)
    t0 = time.process_time()
    out = redactor.text(text)
    spent = time.process_time() - t0
    assert spent < BUDGET_S, f"{name}: {spent:.1f} s of CPU for {len(text)} characters"
    assert "hunter2-tail" not in out and "493817" not in out, f"{name}: the secret after the run was not masked"
    assert MASK in out


@pytest.mark.parametrize(("name", "unit", "tail"), FAMILIES[:12], ids=[f[0] for f in FAMILIES[:12]])
def test_crafted_values_in_data_redact_in_linear_time(name: str, unit: str, tail: str) -> None:
    redactor = Redactor()
    data = {"query": _text(unit, tail), "rows": [_text(unit, "")[:8000]]}
    t0 = time.process_time()
    out = redactor.value(data)
    assert time.process_time() - t0 < BUDGET_S
    assert "hunter2-tail" not in str(out) and "493817" not in str(out)


def test_extra_key_runs_stay_linear() -> None:
    """A one-letter extra key makes every character of a run a keyword start: the worst
    case of the first scan (~0.9 s here for 64 kB, linear; minutes before the runs after a
    keyword were bounded)."""
    redactor = Redactor(extra_keys=["x"])
    t0 = time.process_time()
    redactor.text("x" * SIZE)
    assert time.process_time() - t0 < 5 * BUDGET_S


# -- the previous regexes, verbatim, against the rewritten scans -----------------------
OLD_VALUE = (
    r"(?:\\\"(?P<v1>(?:[^\\\n]|\\(?!\"))*)\\\""
    r"|\"(?P<v2>(?:[^\"\\\n]|\\.)*)\""
    r"|'(?P<v3>[^'\n]*)'"
    r"|(?P<v4>(?:(?:bearer|basic|digest|token|negotiate|ntlm|apikey)\s+)?[^\s\"'&,;<>}\]\\)|]+))"
)
OLD_PAIR = re.compile(
    r"(?i)(?<![\w.%-])(?P<k>(?:[^\W\d]|%)[\w.%-]{0,80})(?:\\?[\"'])?\s*(?P<sep>:=|=>|[:=])\s*(?=" + OLD_VALUE + ")"
)
OLD_FLAG = re.compile(r"(?i)(?<![\w-])--(?P<k>[^\W\d_][\w-]{0,60})(?:=|\s+)(?=" + OLD_VALUE + ")")
OLD_COMMANDS = [
    re.compile(r"(?i)\b(?:sshpass|mysql|mariadb|mysqldump|mysqladmin|mysqlimport|mysqlsh|mongo|mongosh|mongodump|docker"
               r"|podman|helm)\b[^\n|;&]*?\s-p\s+(?P<s>[^\s-]\S*)"),
    re.compile(r"(?i)\bredis-cli\b[^\n|;&]*?\s-a\s*(?P<s>[^\s-]\S*)"),
]
OLD_IN_CONTEXT = (
    r"(?:[\w.-]*\\?[\"']?\s*(?::|=|-?>)"
    r"|\w*\s+(?:is|was|are|were|will|would|should|equals|reads|became|becomes|number|code|no|for|of|to|on|at|in)\b"
    r"|\w*\s*[:=#]?\s*\d{3})"
)

PIECES = [
    "password", "pass", "key", "api_key", "token", "Bearer", "bearer", "basic", "apikey", "user", "x", "a1", "%70ass",
    "=", ":", ":=", "=>", " ", "  ", "\t", "\n", '"', "'", '\\"', "\\", "&", ",", ";", "|", "<", ">", "}", "]", ")",
    "-", "--", "-p", "-a", " -p ", " -a", "mysql", "docker", "redis-cli", "sshpass", "helm", ".", "%", "/", "@",
    "hunter2", "s3cr3t", "1234", "is", " is ", "for", "value", "é", "密码", "<password>", "</password>",
    # values that start with a scheme word: "Bearer  xyz" is one value, "bearer;" is not
    "=bearer ", "token: Bearer ", "=Basic  ", "=token\t", "=NTLM ", "=apikey ", "=bearer",
]


def _generated(seed: int, count: int, longest: int) -> list[str]:
    rng = random.Random(seed)
    return ["".join(rng.choice(PIECES) for _ in range(rng.randint(1, longest))) for _ in range(count)]


def _old_pair_spans(pattern: re.Pattern[str], text: str) -> list[tuple[str, tuple[int, int]]]:
    out = []
    for m in pattern.finditer(text):
        group = next(g for g in ("v1", "v2", "v3", "v4") if m.group(g) is not None)
        out.append((m.group("k"), m.span(group)))
    return out


def _new_pair_spans(pattern: re.Pattern[str], text: str) -> list[tuple[str, tuple[int, int]]]:
    run = [0, 0]
    return [(m.group("k"), R._value_span(text, m.end(), run)) for m in pattern.finditer(text)]


@pytest.mark.parametrize("seed", range(6))
def test_pair_and_flag_values_match_the_previous_lookahead(seed: int) -> None:
    """Every pair and flag the previous patterns found, with the same key and value span
    (for every key, secret or not)."""
    for text in _generated(seed, 2500, 40):
        assert _new_pair_spans(R._PAIR, text) == _old_pair_spans(OLD_PAIR, text), text
        assert _new_pair_spans(R._FLAG, text) == _old_pair_spans(OLD_FLAG, text), text


@pytest.mark.parametrize("seed", range(6))
def test_command_secrets_match_the_previous_regexes(seed: int) -> None:
    for text in _generated(100 + seed, 2500, 40):
        new = [span for command, flag in R._COMMAND_SECRETS for span in R._command_spans(text, command, flag)]
        old = [m.span("s") for pattern in OLD_COMMANDS for m in pattern.finditer(text)]
        assert new == old, text


@pytest.mark.parametrize("seed", range(4))
def test_first_scan_finds_what_it_found_when_runs_are_short(seed: int) -> None:
    """The bounded first scan answers as the unbounded one wherever no run after a keyword
    is longer than 80 characters (longer keys are no key ``_PAIR`` masks)."""
    old = re.compile("(?:" + "|".join(re.escape(w) for w in R._KEYWORDS) + ")" + OLD_IN_CONTEXT)
    new = re.compile("(?:" + "|".join(re.escape(w) for w in R._KEYWORDS) + ")" + R._IN_CONTEXT)
    for text in _generated(200 + seed, 2500, 30):
        low = text.lower()
        assert (old.search(low) is None) == (new.search(low) is None), text


def test_long_keys_and_values_are_still_masked() -> None:
    redactor = Redactor()
    key = "database_password_" + "x" * 60  # 78 characters: a key _PAIR reads
    assert "hunter2" not in redactor.text(f"{key}=hunter2")
    long_value = "Z" * 20_000
    out = redactor.text(f"token={long_value} next=1")
    assert long_value not in out and out.endswith("next=1")
    out = redactor.text("mysql --host db " + "--opt " * 2000 + "-p hunter2")
    assert "hunter2" not in out
    out = redactor.text('<password type="x">hunter2</password>')
    assert "hunter2" not in out
