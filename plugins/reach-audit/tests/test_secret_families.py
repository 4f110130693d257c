"""Secrets never reach the audit trail or the logs: families of variants per way in.

Each family is checked twice: on the shared :class:`reach_core.redact.Redactor`
directly (many variants, fast), and end to end through a real Reach with
reach-audit, where the secret must appear nowhere in the database files' bytes
(``reach.db``, its WAL), in the JSON-lines audit log, or in the core's own
captured log events.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import reach_audit
import structlog
from conftest import wait_until

from reach_core import BusinessError, Connector, NotFound, RetryableError, hookimpl
from reach_core.redact import MASK, Redactor, key_is_secret


def _secret(i: int) -> str:
    return f"Zq{i:03d}x9Sekr3tVal"


# -- key names -------------------------------------------------------------------------------

BASE_KEYS = [
    "password", "passwd", "pwd", "pw", "passcode", "passphrase", "pin", "card_pin", "pin_code", "secret",
    "client_secret", "token", "access_token", "refresh_token", "id_token", "api_key", "apikey", "key",
    "x-auth", "x-auth-token", "authentication", "authorization", "auth", "db_pass", "db_password",
    "credential", "credentials", "cookie", "set-cookie", "session", "session_id", "sessionToken",
    "private_key", "secret_key", "access_key", "aws_secret_access_key", "ssh_key", "otp", "cvv", "cvc",
    "jwt", "bearer", "signature", "sig", "user_pw", "admin_pass", "master_password", "encryption_key",
    "proxy-authorization", "x-api-key", "pgpassword", "mysql_pwd", "dsn", "connection_string",
]


def _camel(name: str) -> str:
    parts = name.replace("-", "_").split("_")
    return parts[0] + "".join(p.title() for p in parts[1:])


def _fullwidth(name: str) -> str:
    return "".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else c for c in name)


SPELLINGS: list[Callable[[str], str]] = [
    lambda k: k,
    str.upper,
    str.title,
    _camel,
    lambda k: _camel(k)[:1].upper() + _camel(k)[1:],  # PascalCase
    lambda k: k.replace("_", "-"),
    lambda k: k.replace("-", "_").replace("_", ""),  # run together
    lambda k: k.replace("-", "_").replace("_", "."),
    lambda k: "my_" + k,
    lambda k: "x-" + k,
    lambda k: k + "_value",
    lambda k: k + "2",
    lambda k: "new" + _camel(k)[:1].upper() + _camel(k)[1:],
    lambda k: f"  {k}  ",
    _fullwidth,
    lambda k: k[:1] + "\u200b" + k[1:],  # a zero-width space inside
    lambda k: k.replace("a", "\u0430").replace("o", "\u043e").replace("p", "\u0440"),  # Cyrillic look-alikes
]

KEY_VARIANTS = sorted({spell(k) for k in BASE_KEYS for spell in SPELLINGS})

NOT_SECRET_KEYS = [
    "city", "author", "author_name", "authors", "max_tokens", "prompt_tokens", "total_tokens", "input_tokens",
    "output_tokens", "token_count", "keyword", "keywords", "monkey", "compass", "passenger", "passengers",
    "shipping", "spin", "description", "name", "user", "username", "host", "port", "database", "path",
    "query", "limit", "amount", "北京", "date", "email", "url",
]


@pytest.mark.parametrize("key", KEY_VARIANTS)
def test_secret_key_names_in_every_spelling(key: str) -> None:
    r = Redactor()
    secret = _secret(1)
    out = r.value({"outer": {key: secret, "list": [{key: {"nested": secret}}]}, "city": "Paris"})
    assert secret not in json.dumps(out, ensure_ascii=False), key
    assert out["city"] == "Paris"


@pytest.mark.parametrize("key", NOT_SECRET_KEYS)
def test_ordinary_key_names_stay(key: str) -> None:
    assert not key_is_secret(key)
    assert Redactor().value({key: "Paris"}) == {key: "Paris"}


@pytest.mark.parametrize("key", BASE_KEYS)
@pytest.mark.parametrize("shape", [
    "{k}={s}", "{k}: {s}", "{k} = {s}", '"{k}": "{s}"', "'{k}': '{s}'", '{{\\"{k}\\": \\"{s}\\"}}', "--{k}={s}",
    "--{k} {s}", "<{k}>{s}</{k}>", "export {K}={s}", "{K}={s} ./run.sh", "https://h.test/p?{k}={s}&city=Paris",
    "https://h.test/p?a=1&{k}={s}", "https://h.test/cb#{k}={s}", "{k}:\n  {s}", "set {k} := {s};", "{k} => {s}",
])
def test_secret_key_names_inside_text(key: str, shape: str) -> None:
    secret = _secret(2)
    text = shape.format(k=key, K=key.upper().replace("-", "_"), s=secret)
    out = Redactor().text(text)
    assert secret not in out, (text, out)


# -- URLs and DSNs ----------------------------------------------------------------------------

SCHEMES = ["postgresql", "postgres", "postgresql+psycopg", "mysql", "mariadb", "mongodb", "mongodb+srv", "redis",
           "rediss", "amqp", "amqps", "ftp", "sftp", "ssh", "https", "http", "smtp", "ldap", "jdbc:postgresql",
           "sqlserver", "clickhouse", "nats", "kafka", "s3", "git+https", "xyz-custom"]
USERS = ["app", "", "user.name+tag", "admin%40corp", "u"]


@pytest.mark.parametrize("scheme", SCHEMES)
@pytest.mark.parametrize("user", USERS)
def test_userinfo_passwords_in_any_scheme(scheme: str, user: str) -> None:
    secret = _secret(3)
    for url in (f"{scheme}://{user}:{secret}@db.internal:5432/app?sslmode=require",
                f"{scheme}://{user}:{secret}@[::1]/x", f"connect to {scheme}://{user}:{secret}@h now",
                f'"{scheme}://{user}:{secret}@h"', f"{scheme}://{user}:{secret}p%40ss@h/db"):
        out = Redactor().text(url)
        assert secret not in out, (url, out)


DSNS = [
    "host=db port=5432 user=app password={s} dbname=x", "host=db password='{s}' user=app",
    "Server=tcp:x,1433;Database=d;User Id=u;Password={s};", "Driver={{ODBC}};Uid=u;Pwd={s};",
    "PWD={{{s}}};UID=u", "user=app passwd={s}", "Data Source=x;Password = {s}", "password:{s}",
    "dbname=x sslpassword={s}", "jdbc:mysql://h/db?user=u&password={s}&useSSL=true",
    "https://h.test/x?X-Amz-Signature={s}&X-Amz-Credential=AK", "https://acct.blob.core.windows.net/c?sv=2021&sig={s}",
    "https://maps.test/api?key={s}", "https://h.test/?token={s}", "https://h.test/?access_token={s}#top",
    "https://h.test/?apikey={s}", "https://h.test/?api-key={s}&q=1", "wss://h.test/socket?auth={s}",
    "https://h.test/?client_secret={s}&client_id=abc", "amqp://guest@h?password={s}",
]


@pytest.mark.parametrize("dsn", DSNS)
def test_dsn_and_query_string_secrets(dsn: str) -> None:
    secret = _secret(4)
    out = Redactor().text(dsn.format(s=secret))
    assert secret not in out, out


# -- free text --------------------------------------------------------------------------------

FREE_TEXT = [
    "my password is {s}", "My Password Is: {s}", "the password was {s}.", "password = {s}", "Password: {s}",
    "my pw is {s}", "the passcode is {s}", "passphrase: '{s}'", 'the secret is "{s}"', "my api key is {s}",
    "the token is {s}", "the PIN for the card is {s}", "my password for the database is {s}",
    "password -> {s}", "access key: {s}", "private key is {s}",
    "curl -u admin:{s} https://h.test", "curl --user admin:{s} https://h.test", "curl -uadmin:{s} https://h",
    "curl --proxy-user p:{s} https://h", "curl -H 'Authorization: Bearer {s}' https://h",
    'curl -H "X-Api-Key: {s}" https://h', "wget --password={s} ftp://h/f", "wget --http-password {s} http://h",
    "mysql -u root -p{s} shop", "mysql -uroot -p{s}", "mysqldump --password={s} db", "mysql --password {s} db",
    "mariadb -h h -p'{s}' db", "sshpass -p {s} ssh h", "PGPASSWORD={s} psql -h db", "MYSQL_PWD={s} mysql",
    "Authorization: Bearer {s}", "authorization: basic {s}", "Proxy-Authorization: Digest {s}",
    "Cookie: theme=dark; session={s}; lang=en", "Set-Cookie: sid={s}; HttpOnly", "x-auth: {s}",
    "X-Auth-Token: {s}", "db.example.com:5432:prod:app:{s}", "*:*:*:postgres:{s}",
    "localhost:5432:*:app:{s}\nother:5433:db:u:{s}", "machine api.h.test login bob password {s}",
    "export DB_PASSWORD={s}", "DATABASE_URL=postgres://u:{s}@h/db", "spring.datasource.password={s}",
    "<password>{s}</password>", "<Password type=\"x\">{s}</Password>", "密码是{s}", "密码：{s}",
    "login with user bob and password: {s}", "--token={s}", "-p{s}", "mysql -u root -p {s} -h db",
    "docker login -u bob -p {s} registry.h", "redis-cli -h cache -a {s} ping", "mongosh -u admin -p {s}",
]


@pytest.mark.parametrize("template", FREE_TEXT)
def test_secrets_in_free_text(template: str) -> None:
    secret = _secret(5)
    out = Redactor().text(template.format(s=secret))
    assert secret not in out, out


SHAPES = [
    "AKIAIOSFODNN7EXAMPLE", "ASIAY34FZKBOKMUTVV7A",
    "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N",
    "sk-live-4f9aW2mQ8bT1xY6zK3pR", "sk_test_51HcXq2Ll9UaBcDeFgHiJkLm", "sk-proj-AbCdEfGhIjKlMnOpQrStUvWx",
    "ghp_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789", "xoxb-123456789012-abcdefghijkl",
    "AIzaSyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q", "glpat-xXyYzZ1234567890abcd",
    "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA7Zq\n-----END RSA PRIVATE KEY-----",
    "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAA\n-----END OPENSSH PRIVATE KEY-----",
    "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0",  # cut off: masked to the end
]


@pytest.mark.parametrize("shape", SHAPES)
def test_credential_shapes_anywhere(shape: str) -> None:
    body = shape.split("\n")[1] if "\n" in shape else shape
    for text in (shape, f"use {shape} please", f"key:{shape}", f'{{"note": "{shape}"}}'):
        out = Redactor().text(text)
        assert body not in out, out


def test_ordinary_text_stays_as_it_is() -> None:
    r = Redactor()
    for text in ("the weather in Paris is sunny, 20:30 at gate 5", "see https://example.com/a?b=c&city=Beijing",
                 "北京 今天 晴", "tokens used: 1234", "the author is Lu Xun", "a monkey with a compass",
                 "keyword search for shipping rates", '{"city":"Beijing","days":3}', "ping 10.0.0.1"):
        assert r.text(text) == text


def test_a_plugin_adds_rules_to_its_reach() -> None:
    r = Redactor()
    r.add(keys=["national_id"], patterns=[r"ACME-\d{6}"])
    r.add_rule(lambda text: text.replace("launch-code-7", MASK))
    out = r.value({"National-ID": "X1", "note": "ref ACME-123456, launch-code-7, nationalId=Y2"})
    assert out["National-ID"] == MASK
    for secret in ("X1", "ACME-123456", "launch-code-7", "Y2"):
        assert secret not in json.dumps(out)
    assert Redactor().text("ACME-123456") == "ACME-123456"  # per Redactor: another Reach is untouched


# -- end to end: records, JSON lines, database bytes, core log events ------------------------

class Echo(Connector):
    """Echo the arguments back (a read: no ledger row holds the result)."""

    name = "echo"
    description = "Echo the arguments."
    risk = "read"
    input_schema = {"type": "object"}

    async def execute(self, params: dict) -> Any:
        return params


class ReadFile(Connector):
    """Return a file's text, as reach-files would."""

    name = "read_file"
    description = "Read a file."
    risk = "read"
    input_schema = {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}
    files: dict[str, str] = {}

    async def execute(self, params: dict) -> Any:
        return {"path": params["path"], "content": self.files[params["path"]]}


class Connect(Connector):
    """Fail the way database drivers do: the DSN in the message."""

    name = "connect"
    description = "Connect to a database."
    risk = "read"
    max_retries = 0
    input_schema = {"type": "object", "properties": {"how": {"type": "string"}, "text": {"type": "string"}},
                    "required": ["how", "text"]}

    async def execute(self, params: dict) -> Any:
        how, text = params["how"], params["text"]
        if how == "business":
            raise BusinessError(text)
        if how == "retryable":
            raise RetryableError(text)
        if how == "not_found":
            raise NotFound(text)
        if how == "error_dict":
            return {"error": text}
        raise RuntimeError(text)


class ExtraRules:
    """A plugin that adds its own redaction rules to the Reach it runs in."""

    REACH_PLUGIN_NAME = "extra-rules"

    @hookimpl
    def reach_startup(self, reach: Any) -> None:
        reach.redactor.add(keys=["iban"], patterns=[r"ACME-\d{6}"])


@pytest.fixture
def captured() -> Iterator[list[str]]:
    """Every core log event, whether the core logs through structlog's configuration or
    through stdlib ``logging``: rendered to text."""
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


async def _run_everything(reach: Any, log_file: Path, calls: list[tuple[Any, ...]]) -> None:
    for call in calls:
        await reach.invoke(*call[:2], **(call[2] if len(call) > 2 else {}))
    await reach_audit.flush(reach)
    await wait_until(lambda: _lines(log_file) >= len(calls), "the JSON lines, which follow the commit")


def _lines(path: Path) -> int:
    return path.read_text().count("\n") if path.exists() else 0


def _assert_nowhere(secrets: list[str], data_dir: Path, log_file: Path, captured: list[str]) -> None:
    files = [p for p in data_dir.iterdir() if p.name.startswith("reach.db")]
    assert any(p.name == "reach.db-wal" for p in files), "the WAL file must be checked too"
    jsonl = log_file.read_text(encoding="utf-8")
    assert jsonl.count("\n") >= 1
    core_logs = "\n".join(captured)
    assert "reach.tool_call" in core_logs, "the core's events were not captured"
    for secret in secrets:
        for path in files:
            assert secret.encode() not in path.read_bytes(), f"{secret!r} leaked into {path.name}"
        assert secret not in jsonl, f"{secret!r} leaked into the JSON-lines log"
        assert secret not in core_logs, f"{secret!r} leaked into the core's log events"


def _reach(make_reach: Any, tmp_path: Path) -> tuple[Any, Path]:
    log_file = tmp_path / "audit.jsonl"
    reach = make_reach(log=str(log_file), plugins=(ExtraRules(),))
    for tool in (Echo(), ReadFile(), Connect()):
        reach.register(tool)
    return reach, log_file


async def test_secret_arguments_end_to_end(make_reach, data_dir, tmp_path, captured):
    reach, log_file = _reach(make_reach, tmp_path)
    secrets, calls = [], []
    for i, key in enumerate(KEY_VARIANTS[::3]):
        secret = _secret(100 + i)
        secrets.append(secret)
        calls.append(("echo", {key: secret, "city": "Paris"}))
    for i, template in enumerate(FREE_TEXT):
        secret = _secret(300 + i)
        secrets.append(secret)
        calls.append(("echo", {"note": template.format(s=secret)}))
    for i, dsn in enumerate(DSNS):
        secret = _secret(400 + i)
        secrets.append(secret)
        calls.append(("echo", {"target": dsn.format(s=secret)}))
    secret = _secret(450)
    secrets.append(secret)
    calls.append(({"id": "raw", "name": "echo", "arguments": '{"password": "' + secret + '", '}, None))
    calls.append(("echo", {"iban": "DE89370400440532013000", "ref": "ACME-424242"}))
    secrets += ["DE89370400440532013000", "ACME-424242"]
    await _run_everything(reach, log_file, calls)
    _assert_nowhere(secrets, data_dir, log_file, captured)
    report = await reach_audit.verify(reach)
    assert report.ok and report.checked == len(calls)


RESULT_FILES = [
    '{{"pw": "{s}"}}', '{{"user": "app", "db_pass": "{s}"}}', "db.internal:5432:prod:app:{s}\n",
    "# pgpass\n*:*:*:postgres:{s}\nlocalhost:5432:x:y:{s}\n", "DATABASE_URL=postgresql://app:{s}@db/x\n",
    "[client]\nuser=root\npassword={s}\n", "api_key: {s}\n", "machine h login u password {s}\n",
    "Authorization: Bearer {s}\n", '[{{"name": "a", "token": "{s}"}}]',
]


async def test_secrets_in_results_end_to_end(make_reach, data_dir, tmp_path, captured):
    reach, log_file = _reach(make_reach, tmp_path)
    secrets, calls = [], []
    for i, template in enumerate(RESULT_FILES):
        secret = _secret(500 + i)
        secrets.append(secret)
        ReadFile.files[f"f{i}"] = template.format(s=secret)
        calls.append(("read_file", {"path": f"f{i}"}))
    for i, key in enumerate(["pw", "password", "api_key", "session", "cardPin", "x-auth"]):
        secret = _secret(520 + i)
        secrets.append(secret)
        calls.append(("echo", {"nested": [{key: secret}]}))
    await _run_everything(reach, log_file, calls)
    result = await reach.invoke("read_file", {"path": "f0"})
    assert secrets[0] in json.dumps(result.content)  # the model still gets the real result
    _assert_nowhere(secrets, data_dir, log_file, captured)


ERROR_TEXTS = [
    "could not connect to postgresql://app:{s}@db.internal/x", "auth failed for password={s}",
    "FATAL: password authentication failed; dsn host=db password={s}", "GET https://h.test/?api_key={s}: 401",
    "bad key sk-live-{s}", "header Authorization: Bearer {s} rejected",
    "my password is {s}", "mysql -pZ{s} exited 1",
]


@pytest.mark.parametrize("how", ["business", "retryable", "not_found", "error_dict", "crash"])
async def test_secrets_in_connector_errors_end_to_end(make_reach, data_dir, tmp_path, captured, how):
    reach, log_file = _reach(make_reach, tmp_path)
    secrets, calls = [], []
    for i, template in enumerate(ERROR_TEXTS):
        secret = _secret(600 + i)
        secrets.append(secret)
        calls.append(("connect", {"how": how, "text": template.format(s=secret)}))
    await _run_everything(reach, log_file, calls)
    _assert_nowhere(secrets, data_dir, log_file, captured)


UNKNOWN_NAMES = [
    "password={s}", "postgres://u:{s}@h/db", "sk-live-{s}", "my password is {s}", "Bearer {s}",
    "get_weather?api_key={s}", "token:{s}", "curl -u a:{s}",
]


async def test_secrets_in_unknown_tool_names_end_to_end(make_reach, data_dir, tmp_path, captured):
    reach, log_file = _reach(make_reach, tmp_path)
    secrets, calls = [], []
    for i, template in enumerate(UNKNOWN_NAMES):
        secret = _secret(700 + i)
        secrets.append(secret)
        calls.append(({"id": f"u{i}", "name": template.format(s=secret), "arguments": "{}"}, None))
    await _run_everything(reach, log_file, calls)
    _assert_nowhere(secrets, data_dir, log_file, captured)
    tools = [json.loads(line).get("tool") for line in log_file.read_text().splitlines()]
    assert all(MASK in t for t in tools if t), tools
    report = await reach_audit.verify(reach)
    assert report.ok


STRUCTURES = [
    lambda s: {"headers": [["Authorization", f"Bearer {s}"]]},
    lambda s: {"headers": [["X-Api-Key", s], ["Accept", "json"]]},
    lambda s: [("Cookie", s)],
    lambda s: {"env": [{"name": "DB_PASSWORD", "value": s}, {"name": "HOME", "value": "/root"}]},
    lambda s: {"form": [{"field": "card_pin", "value": s}]},
    lambda s: {"params": [{"key": "token", "value": s}]},
    lambda s: {"url": f"https://h.test/?api%5Fkey={s}"},
    lambda s: {"url": f"https://h.test/?%61pi_key={s}&x=1"},
    lambda s: {"auth": ["bob", s]},
    lambda s: {"deep": [[[[{"credentials": {"user": "bob", "pass": s}}]]]]},
    lambda s: {f"password={s}": True},
    lambda s: {"n": {"pin": int(s[-3:]) if s[-3:].isdigit() else s}},
]


@pytest.mark.parametrize("build", STRUCTURES, ids=[f"structure-{i}" for i in range(len(STRUCTURES))])
def test_secrets_by_structure_and_the_fast_scan_agrees(build: Callable[[str], Any]) -> None:
    r = Redactor()
    secret = _secret(9)
    data = build(secret)
    assert secret not in json.dumps(r.value(data), ensure_ascii=False)
    assert r.scan(data) is None, "the writer's fast path would have kept the secret"


class Login(Connector):
    """Takes a password; greets with it (a careless connector)."""

    name = "login2"
    description = "Log in."
    risk = "read"
    input_schema = {"type": "object", "properties": {"user": {"type": "string"}, "password": {"type": "string"},
                                                      "pin": {"type": "integer"}},
                    "required": ["user", "password"], "additionalProperties": False}

    async def execute(self, params: dict) -> Any:
        return {"msg": f"welcome {params['user']}, you signed in with {params['password']}"}


ECHOED = [
    {"user": "bob", "password": 98765432109},  # wrong type: the error message quotes it
    {"user": "bob", "password": ["{s}"]},
    {"user": "bob", "password": "x", "pin": "{s}"},
    {"user": "bob", "password": "{s}"},  # the result quotes it
    {"user": "bob", "password": "{s}", "extra": 1},
]


async def test_secrets_echoed_by_errors_and_results_are_masked_too(make_reach, data_dir, tmp_path, captured):
    reach, log_file = _reach(make_reach, tmp_path)
    reach.register(Login())
    secrets, calls = ["98765432109"], []
    for i, args in enumerate(ECHOED):
        secret = _secret(800 + i)
        secrets.append(secret)
        calls.append(("login2", json.loads(json.dumps(args).replace("{s}", secret))))
    await _run_everything(reach, log_file, calls)
    records = [json.loads(line) for line in log_file.read_text().splitlines()]
    assert [r["status"] for r in records] == ["invalid_arguments"] * 3 + ["ok", "invalid_arguments"]
    _assert_nowhere(secrets, data_dir, log_file, captured)
