"""``Reach.logger(plugin)`` / ``reach_core.logs.plugin_logger``: the one way a plugin logs.

The stdlib logger ``reach.<plugin>`` (so a host's level, handler or filter on ``reach``
reaches it), every message, field and traceback masked by that Reach's redactor before a
record exists; secrets belong to their configuration (``reach_core.configfile`` keeps none).
"""

from __future__ import annotations

import base64
import json
import logging
from typing import Any
from urllib.parse import quote, quote_plus

import pytest
from pydantic import BaseModel, Field

from reach_core import Reach
from reach_core.config import validate_settings
from reach_core.configfile import mask_secrets, resolve_secrets, settings_secrets
from reach_core.logs import PluginLogger, plugin_logger

SECRET = "pl-S3cret-7f3a9c1e"


class Keep(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []
        self.setFormatter(logging.Formatter("%(name)s %(message)s"))

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)

    def texts(self) -> list[str]:
        return [self.format(r) + repr(getattr(r, "reach_event", "")) for r in self.records]


@pytest.fixture
def kept() -> Any:
    """A host that configured logging at DEBUG on ``reach`` (restored afterwards)."""
    handler = Keep()
    top = logging.getLogger("reach")
    level = top.level
    top.addHandler(handler)
    top.setLevel(logging.DEBUG)
    yield handler
    top.removeHandler(handler)
    top.setLevel(level)


@pytest.fixture
def reach(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> Reach:
    monkeypatch.setenv("PL_TEST_KEY", SECRET)
    return Reach({"reach": {"data_dir": str(tmp_path)}, "connectors": {}}, plugins=[])


def _known(reach: Reach) -> Reach:
    reach.redactor.add(values=[SECRET])  # as if a plugin table had { env = "PL_TEST_KEY" }
    return reach


@pytest.mark.parametrize(("given", "name"), [
    ("audit", "reach.audit"), ("reach-audit", "reach.audit"), ("reach_audit", "reach.audit"),
    ("reach.audit", "reach.audit"), ("serve.console", "reach.serve.console"),
    ("my-plugin", "reach.my-plugin"), ("reach-2fa", "reach.2fa"),
])
def test_the_logger_is_under_reach(given: str, name: str) -> None:
    assert plugin_logger(given).name == name


@pytest.mark.parametrize("bad", ["", "reach-", " ", " audit", "../x", "a b", "audit\n", "a/b", "x.", ".x", "ａudit",
                                 "audit\u200b", "a%b", "a\x00"])
def test_a_name_that_is_no_plugin_name_is_refused(bad: str) -> None:
    with pytest.raises(ValueError, match="not a plugin name"):
        plugin_logger(bad)


# every spelling a secret can take in a message a plugin logs
SPELLINGS = {
    "as is": lambda s: s,
    "url-quoted": lambda s: quote(s, safe=""),
    "quote_plus": quote_plus,
    "repr": repr,
    "upper": str.upper,
    "json-escaped": lambda s: json.dumps(s),
    "\\u-escaped": lambda s: "".join(f"\\u{ord(c):04x}" for c in s),
    "base64": lambda s: base64.b64encode(s.encode()).decode(),
    "hex": lambda s: s.encode().hex(),
    "in a DSN": lambda s: f"postgresql://shop:{s}@db/shop",
    "in a query": lambda s: f"https://api/x?key={s}&q=1",
    "bearer": lambda s: f"Authorization: Bearer {s}",
    "cut at the end": lambda s: "the token was " + s[:10],
}


@pytest.mark.parametrize("spelling", sorted(SPELLINGS))
@pytest.mark.parametrize("style", ["percent args", "structlog field", "exception", "exc_info", "in the format"])
def test_a_configured_secret_never_reaches_a_handler(reach: Reach, kept: Keep, spelling: str, style: str) -> None:
    log = _known(reach).logger("something")
    text = SPELLINGS[spelling](SECRET)
    if style == "percent args":
        log.warning("reach-something: failed: %s", text)
    elif style == "structlog field":
        log.warning("something.failed", error=text, nested={"k": [text]})
    elif style == "in the format":
        log.warning(f"failed: {text}")
    else:
        try:
            raise RuntimeError(f"driver said {text}")
        except RuntimeError as exc:
            if style == "exception":
                log.exception("it failed")
            else:
                log.error("it failed", exc_info=exc)
    (record,) = kept.records
    assert record.name == "reach.something" and record.exc_info is None
    out = "\n".join(kept.texts())
    assert SECRET.lower() not in out.lower() and text not in out, out
    if style in ("exception", "exc_info"):
        assert "Traceback" in out and "RuntimeError" in out  # the traceback is there, masked


def test_honest_messages_are_written_as_given(reach: Reach, kept: Keep) -> None:
    log = _known(reach).logger("something")
    log.warning("reach-something: %d damaged line(s) of %s skipped", 2, "/srv/notes.jsonl")
    log.info("something.added", server="crm", tools=["a", "b"])
    assert [r.getMessage() for r in kept.records] == [
        "reach-something: 2 damaged line(s) of /srv/notes.jsonl skipped",
        "something.added server=crm tools=['a', 'b']",
    ]
    assert kept.records[1].reach_event == {"event": "something.added", "server": "crm", "tools": ["a", "b"]}


def test_a_bad_format_string_is_still_logged(kept: Keep) -> None:
    plugin_logger("something").warning("50%% done, %d of %s", "x")
    assert len(kept.records) == 1 and "50%% done" in kept.records[0].getMessage()


def test_the_record_names_the_plugins_line(kept: Keep) -> None:
    plugin_logger("something").warning("here")
    (record,) = kept.records
    assert record.funcName == "test_the_record_names_the_plugins_line" and record.pathname == __file__


class _Costly:
    built = 0

    def __repr__(self) -> str:
        _Costly.built += 1
        return "costly"


@pytest.mark.parametrize("method", ["debug", "info", "warning", "error", "exception", "critical"])
def test_nothing_is_built_below_the_level(method: str) -> None:
    """A host that listens at CRITICAL only pays for nothing (the record, the masking)."""
    top = logging.getLogger("reach")
    level = top.level
    top.setLevel(logging.CRITICAL + 1)
    try:
        _Costly.built = 0
        getattr(plugin_logger("something"), method)("x %r", _Costly(), field=_Costly())
        assert _Costly.built == 0
    finally:
        top.setLevel(level)


def test_a_hosts_level_and_filter_on_reach_reach_every_plugin(kept: Keep) -> None:
    seen: list[str] = []

    class Host(logging.Filter):
        def filter(self, record: logging.LogRecord) -> bool:
            seen.append(record.name)
            return True

    top = logging.getLogger("reach")
    host = Host()
    kept.addFilter(host)
    try:
        for plugin in ("audit", "mcp", "serve.console", "shell", "notes", "dbos", "preselect", "loop"):
            plugin_logger(plugin).warning("x")
        top.setLevel(logging.ERROR)
        plugin_logger("audit").warning("dropped by the host's level")
    finally:
        kept.removeFilter(host)
    assert seen == ["reach.audit", "reach.mcp", "reach.serve.console", "reach.shell", "reach.notes",
                    "reach.dbos", "reach.preselect", "reach.loop"]


def test_two_reaches_mask_only_their_own_secrets(monkeypatch: pytest.MonkeyPatch, tmp_path: Any, kept: Keep) -> None:
    first, second = "first-S3cret-a1b2c3", "second-S3cret-d4e5f6"
    a = Reach({"reach": {"data_dir": str(tmp_path / "a")}}, plugins=[])
    b = Reach({"reach": {"data_dir": str(tmp_path / "b")}}, plugins=[])
    a.redactor.add(values=[first])
    b.redactor.add(values=[second])
    a.logger("x").warning("%s %s", first, second)
    b.logger("x").warning("%s %s", first, second)
    assert [r.getMessage() for r in kept.records] == [f"[REDACTED] {second}", f"{first} [REDACTED]"]


def test_the_loggers_class_is_public() -> None:
    assert isinstance(plugin_logger("x"), PluginLogger) and "reach.x" in repr(plugin_logger("x"))


# ---------------------------------------------------------------- configfile keeps no secrets
def test_resolving_a_table_shares_its_secrets_with_no_one(monkeypatch: pytest.MonkeyPatch) -> None:
    import reach_core.configfile as configfile

    monkeypatch.setenv("PL_A", "secret-of-a-123")
    found: set[str] = set()
    assert resolve_secrets({"k": {"env": "PL_A"}, "l": [{"env": "PL_A"}]}, where="t", found=found) == {
        "k": "secret-of-a-123", "l": ["secret-of-a-123"]}
    assert found == {"secret-of-a-123"}
    assert not [n for n, v in vars(configfile).items() if isinstance(v, set | list | dict) and not n.startswith("__")]
    assert mask_secrets("x secret-of-a-123 y") == "x secret-of-a-123 y"  # the process knows no secret
    assert mask_secrets("x secret-of-a-123 y", found) == "x *** y"


@pytest.mark.parametrize(("text", "secrets", "out"), [
    ("k=abcdefgh", ["abcdefgh"], "k=***"),
    ("k=abc", ["abc"], "k=abc"),  # too short: it would mask ordinary words
    ("abcdefgh-ij", ["abcdefgh", "abcdefgh-ij"], "***"),  # the longer first
    ("none here", [], "none here"),
])
def test_mask_secrets_masks_the_callers_secrets(text: str, secrets: list[str], out: str) -> None:
    assert mask_secrets(text, secrets) == out


class _Settings(BaseModel):
    name: str = "x"
    timeout: int = 5


def test_a_rejected_value_read_from_the_environment_is_masked_in_its_problem(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PL_BAD", "not-a-number-S3cret-99")
    _, problems = validate_settings(_Settings, {"timeout": {"env": "PL_BAD"}}, "reach-x")
    assert problems and all("S3cret" not in p.message for p in problems), problems
    # another table's secret is not this one's: shown as given
    _, problems = validate_settings(_Settings, {"timeout": "not-a-number-S3cret-99"}, "reach-x")
    assert any("S3cret" in p.message for p in problems), problems


class _Inner(BaseModel):
    tokens: dict[str, str] = Field(default_factory=dict, json_schema_extra={"reach_secret_keys": True})
    headers: dict[str, str] = Field(default_factory=dict)


class _Outer(BaseModel):
    server: _Inner = Field(default_factory=_Inner)
    servers: dict[str, _Inner] = Field(default_factory=dict)
    many: list[_Inner] = Field(default_factory=list)


def test_table_keys_declared_secret_are_found_at_any_depth() -> None:
    settings = _Outer(server=_Inner(tokens={"tok-aaaaaaaa": "support"}, headers={"X-Name": "v"}),
                      servers={"s": _Inner(tokens={"tok-bbbbbbbb": "ops"})},
                      many=[_Inner(tokens={"tok-cccccccc": "x"})])
    assert settings_secrets(settings) == {"tok-aaaaaaaa", "tok-bbbbbbbb", "tok-cccccccc"}
    assert settings_secrets(None) == set() and settings_secrets({"tokens": {"a": "b"}}) == set()
