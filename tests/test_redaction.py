"""The core's own log events go through its Reach's redactor (``reach.redactor``):
connector exceptions, unknown tool names, bound values; plugins add rules to it."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from typing import Any

import pytest
import structlog

from reach_core import BusinessError, Reach, connector
from reach_core.redact import MASK, RedactingLogger, Redactor

SECRET = "Qv7-hunter2-Secr3tValue"


@connector(risk="read")
def crash(text: str) -> str:
    """Fail with an exception whose message carries ``text``.

    Args:
        text: what the exception says
    """
    raise RuntimeError(text)


@connector(risk="read")
def refuse(text: str) -> str:
    """Fail with a business error whose message carries ``text``.

    Args:
        text: what the error says
    """
    raise BusinessError(text)


@pytest.fixture
def captured() -> Iterator[list[str]]:
    """The core's events as text, whether they go through structlog's configuration
    or through stdlib ``logging``."""
    lines: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            lines.append(record.getMessage() + " " + repr(getattr(record, "reach_event", "")))

    handler = Keep(level=logging.DEBUG)
    logger = logging.getLogger("reach")
    old_level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    structlog.reset_defaults()
    from structlog.testing import capture_logs

    with capture_logs() as events:
        yield lines
        lines.extend(repr(e) for e in events)
    logger.removeHandler(handler)
    logger.setLevel(old_level)


TEXTS = [
    "could not connect to postgresql://app:{s}@db/x", "password={s}", "my password is {s}",
    "GET https://h.test/?api_key={s} failed", "Authorization: Bearer {s}", "curl -u a:{s} h", "mysql -p{s}",
    "db:5432:x:app:{s}",
]


@pytest.mark.parametrize("template", TEXTS)
async def test_connector_exceptions_are_redacted_in_log_events(tmp_path, captured, template):
    reach = Reach({"reach": {"data_dir": str(tmp_path)}}, plugins=[])
    reach.register(crash)
    reach.register(refuse)
    first = await reach.invoke("crash", {"text": template.format(s=SECRET)})
    second = await reach.invoke("refuse", {"text": template.format(s=SECRET)})
    await reach.aclose()
    assert first.error.code == "execution_failed" and SECRET not in first.error.message
    assert second.error.code == "execution_failed"  # the model gets its own business error back
    text = "\n".join(captured)
    assert "reach.connector_exception" in text and "reach.tool_call" in text
    assert SECRET not in text


@pytest.mark.parametrize("template", ["password={s}", "postgres://u:{s}@h/db", "Bearer {s}", "token:{s}",
                                      "x?api_key={s}", "my pin is {s}"])
async def test_unknown_tool_names_are_redacted_in_log_events(tmp_path, captured, template):
    reach = Reach({"reach": {"data_dir": str(tmp_path)}}, plugins=[])
    result = await reach.invoke({"id": "c1", "name": template.format(s=SECRET), "arguments": "{}"})
    await reach.aclose()
    assert result.error.code == "unknown_tool"
    text = "\n".join(captured)
    assert "reach.tool_call" in text and SECRET not in text


async def test_rules_a_plugin_adds_reach_the_core_events(tmp_path, captured):
    reach = Reach({"reach": {"data_dir": str(tmp_path)}}, plugins=[])
    reach.redactor.add(patterns=[r"ACME-\d{6}"])
    reach.register(crash)
    await reach.invoke("crash", {"text": "order ACME-424242 failed"})
    await reach.aclose()
    text = "\n".join(captured)
    assert "reach.connector_exception" in text and "ACME-424242" not in text
    other = Reach({"reach": {"data_dir": str(tmp_path / "b")}}, plugins=[])
    assert other.redactor.text("ACME-424242") == "ACME-424242"  # rules are per Reach


def test_the_redacting_logger_masks_events_and_bound_values() -> None:
    seen: list[tuple[str, dict[str, Any]]] = []

    class Sink:
        def __init__(self, bound: dict[str, Any] | None = None) -> None:
            self.bound = bound or {}

        def bind(self, **kw: Any) -> Sink:
            return Sink({**self.bound, **kw})

        def info(self, event: str, **kw: Any) -> None:
            seen.append((event, {**self.bound, **kw}))

        error = warning = info

    log = RedactingLogger(Sink(), Redactor()).bind(password=SECRET, tool=f"x?token={SECRET}")
    log.info(f"my password is {SECRET}", error=f"dsn host=h password={SECRET}", headers={"X-Auth": SECRET})
    log.error("reach.x", nested=[{"db_pass": SECRET}])
    assert SECRET not in repr(seen)
    assert seen[0][1]["password"] == MASK


# -- key names in other languages and scripts: normalised (accents, case, width, joiners), then decided
FOREIGN_KEYS = [
    "mot_de_passe", "motDePasse", "MDP", "contraseña", "Contrasena", "CONTRASEÑA", "contrasenya", "clave_api",
    "senha", "Senha_BD", "wachtwoord", "Kennwort", "hasło", "HASŁO", "heslo", "salasana", "lösenord",
    "passord", "adgangskode", "jelszó", "şifre", "Şifre", "parola", "lozinka", "chave_api", "clé_api",
    "Schlüssel", "пароль", "Пароль", "ПАРОЛЬ", "пароль_бд", "api_токен", "секрет", "ключ_api", "密码", "数据库密码",
    "密碼", "口令", "密钥", "パスワード", "ﾊﾟｽﾜｰﾄﾞ", "暗証番号", "비밀번호", "كلمة المرور", "كلمة_السر", "סיסמה",
    "κωδικός", "Κωδικός", "पासवर्ड", "รหัสผ่าน", "пар\u200dоль", "ｐａｓｓｗｏｒｄ",
]
NOT_FOREIGN_SECRETS = ["名前", "город", "описание", "название", "título", "城市", "説明", "메모", "шпинат", "clavel"]


@pytest.mark.parametrize("key", FOREIGN_KEYS)
def test_secret_key_names_in_other_languages(key: str) -> None:
    r = Redactor()
    out = r({"user": "ann", key: SECRET, "nested": [{key: SECRET}]})
    assert SECRET not in repr(out), (key, out)
    assert out["user"] == "ann"


@pytest.mark.parametrize("key", NOT_FOREIGN_SECRETS)
def test_ordinary_key_names_in_other_languages_stay(key: str) -> None:
    assert Redactor()({key: "plain value"}) == {key: "plain value"}


# -- JSON inside a string: decided by its structure (escaped keys, header pairs, name/value entries)
EMBEDDED = [
    {"пароль": "{s}"}, {"contraseña": "{s}"}, {"headers": [["X-Api-Key", "{s}"]]}, {"headers": [["Senha", "{s}"]]},
    [{"name": "password", "value": "{s}"}], [{"name": "DB_PASSWORD", "value": "{s}"}],
    [{"key": "senha", "value": "{s}"}],
    {"env": [{"name": "パスワード", "value": "{s}"}]}, {"a": {"b": [["Authorization", "{s}"]]}},
]


@pytest.mark.parametrize("shape", EMBEDDED, ids=lambda s: json.dumps(s, ensure_ascii=True)[:40])
@pytest.mark.parametrize("ascii_only", [True, False])
@pytest.mark.parametrize("layers", [1, 2, 3])
def test_json_inside_strings_is_redacted_by_structure(shape: Any, ascii_only: bool, layers: int) -> None:
    text = json.dumps(shape, ensure_ascii=ascii_only).replace("{s}", SECRET)
    for _ in range(layers - 1):
        text = json.dumps({"body": text}, ensure_ascii=ascii_only)
    r = Redactor()
    assert SECRET not in r(text)
    assert SECRET not in repr(r({"request": text, "list": [" " + text]}))


@pytest.mark.parametrize(
    "text", ['{"a": "b"}', "[1, 2]", "{not json", '["\ud800"]', "[" * 50, '{"n": 123456789012345678901234567890}']
)
def test_json_looking_strings_without_secrets_are_kept(text: str) -> None:
    assert Redactor()(text) == text


# -- the same key names written as text: pairs, flags, tags, query strings
FOREIGN_TEXT = ["{k}={s}", "{k}: {s}", "{k} = \"{s}\"", "--{k} {s}", "--{k}={s}", "<{k}>{s}</{k}>", "https://h/x?{k}={s}&a=1",
                "export {k}='{s}'"]
FOREIGN_TEXT_KEYS = ["пароль", "Пароль", "contraseña", "senha", "mot_de_passe", "mdp", "Kennwort", "hasło", "şifre",
                     "パスワード", "비밀번호", "密码", "lösenord", "jelszó", "wachtwoord", "clé_api"]


@pytest.mark.parametrize("template", FOREIGN_TEXT)
@pytest.mark.parametrize("key", FOREIGN_TEXT_KEYS)
def test_secret_key_names_in_other_languages_in_text(template: str, key: str) -> None:
    text = template.format(k=key, s=SECRET)
    assert SECRET not in Redactor()(text), text


@pytest.mark.parametrize("text", ["город=Москва", "título: Hola", "名前=山田", "описание: пароль не нужен здесь"])
def test_ordinary_pairs_in_other_languages_stay(text: str) -> None:
    assert Redactor()(text) == text


@pytest.mark.parametrize("key", FOREIGN_TEXT_KEYS)
@pytest.mark.parametrize("shape", ["key", "pair", "text", "named"])
def test_the_bulk_fast_path_never_passes_a_foreign_secret(key: str, shape: str) -> None:
    data = {"key": {key: SECRET}, "pair": [[key, SECRET]], "text": {"note": f"{key}: {SECRET}"},
            "named": [{"name": key, "value": SECRET}]}[shape]
    r = Redactor()
    dumped = r.scan(data)
    assert dumped is None or SECRET.encode() not in dumped
    assert SECRET not in repr(r(data))


@pytest.mark.parametrize("shape", EMBEDDED, ids=lambda s: json.dumps(s, ensure_ascii=True)[:40])
def test_secrets_in_json_strings_are_learned_for_scrubbing(shape: Any) -> None:
    r = Redactor()
    arguments = {"body": json.dumps(shape).replace("{s}", SECRET)}
    learned = r.secrets_in(arguments)
    assert SECRET in learned
    assert SECRET not in r.scrub(r.value({"echo": f"got {SECRET} back"}), learned)["echo"]


def test_the_first_scan_finds_every_keyword_in_context() -> None:
    """The hint regex is built as a prefix tree: every keyword (and an extra key) still hits,
    each in context, and plain prose does not."""
    from reach_core.redact import _KEYWORDS

    r = Redactor(extra_keys=["internal_ref"])
    for word in (*_KEYWORDS, "internal_ref", "Internal-Ref"):
        for text in (f"{word}: x", f"{word}=x", f"the {word} is x", f"{word} 1234"):
            assert r._maybe(text), text
    assert not r._maybe("plain text about the weather in berlin, nothing else " * 5)
