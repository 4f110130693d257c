"""Secrets never reach the audit trail: not the records, not the logs, not the disk."""

from __future__ import annotations

import json

import reach_audit
from conftest import wait_until
from reach_audit.redact import MASK, Redactor

SECRETS = (
    "hunter2-PASSWORD-value",
    "sk-live-abcdefghijklmnop1234",
    "Bearer-abc123def456ghi789",
    "cookie-value-zzz-777",
    "ACME-INTERNAL-42",
)


def test_keys_are_matched_case_insensitively_and_nested():
    r = Redactor()
    data = {
        "Password": "a",
        "headers": {"Authorization": "b", "X-Api-Key": "c", "Set-Cookie": "d"},
        "items": [{"client_secret": "e"}, {"refresh_token": "f"}],
        "city": "Beijing",
        "max_tokens": 100,
        "author": "Lu Xun",
    }
    out = r.value(data)
    assert out["Password"] == MASK
    assert out["headers"] == {"Authorization": MASK, "X-Api-Key": MASK, "Set-Cookie": MASK}
    assert out["items"] == [{"client_secret": MASK}, {"refresh_token": MASK}]
    assert out["city"] == "Beijing"
    assert out["max_tokens"] == 100  # a token *count* is not a secret
    assert out["author"] == "Lu Xun"


def test_patterns_catch_secrets_in_free_text():
    r = Redactor(extra_patterns=[r"ACME-INTERNAL-\d+"])
    text = (
        "use sk-live-abcdefghijklmnop1234 with Authorization: Bearer abcdefghijklmnop; "
        "see https://x.test/?api_key=SEKRIT&city=Paris and ACME-INTERNAL-42"
    )
    out = r.text(text)
    for secret in ("sk-live-abcdefghijklmnop1234", "abcdefghijklmnop", "SEKRIT", "ACME-INTERNAL-42"):
        assert secret not in out
    assert "city=Paris" in out


def test_extra_key_names_from_settings():
    r = Redactor(extra_keys=["iban"])
    assert r.value({"IBAN": "DE00", "Customer_IBAN": "DE01"}) == {"IBAN": MASK, "Customer_IBAN": MASK}


async def test_a_secret_never_reaches_disk(make_reach, data_dir, tmp_path):
    log_file = tmp_path / "audit.log"
    reach = make_reach(redact_patterns=[r"ACME-INTERNAL-\d+"], log=str(log_file))
    args = {
        "user": "alice",
        "password": SECRETS[0],
        "note": f"keys {SECRETS[1]} and ACME-INTERNAL-42; header Authorization: Bearer {SECRETS[2]}",
    }
    result = await reach.invoke({"id": "s1", "name": "login", "arguments": json.dumps(args)})
    assert result.ok and result.content["token"] == "tok-" + SECRETS[0]  # the model still gets it
    # an unparseable call carrying a secret in raw text
    await reach.invoke({"id": "s2", "name": "login", "arguments": '{"password": "' + SECRETS[0] + '", '})
    # a secret in a nested header of an unknown tool
    await reach.invoke("fetch", {"headers": {"Cookie": SECRETS[3]}})
    await reach_audit.flush(reach)
    await wait_until(lambda: log_file.exists() and log_file.read_text().count("\n") >= 3,
                     "the log lines, which follow the commit")

    files = [p for p in data_dir.iterdir() if p.name.startswith("reach.db")] + [log_file]
    assert any(p.name == "reach.db-wal" for p in files), "the WAL file must be checked too"
    for path in files:
        blob = path.read_bytes()
        for secret in SECRETS:
            assert secret.encode() not in blob, f"{secret!r} leaked into {path.name}"
    logged = [json.loads(line) for line in log_file.read_text().splitlines()]
    assert logged[0]["args"]["password"] == MASK
    assert logged[0]["result"]["token"] == MASK
    assert logged[0]["event"] == "audit.call"
    report = await reach_audit.verify(reach)
    assert report.ok


async def test_events_go_through_stdlib_logging_and_only_when_someone_listens(make_reach, caplog, capsys):
    reach = make_reach(log="logging")
    with caplog.at_level("INFO", logger="reach.audit"):
        await reach.invoke("login", {"user": "ann", "password": SECRETS[0]})
        await reach.aclose()  # waits for the events that follow the commit
    (record,) = [r for r in caplog.records if r.name == "reach.audit" and r.reach_event["event"] == "audit.call"]
    event = record.reach_event
    assert event["tool"] == "login" and event["status"] == "ok" and event["hash"]
    assert event["args"]["password"] == MASK and SECRETS[0] not in json.dumps(event, default=str)
    assert SECRETS[0] not in record.getMessage()
    out = capsys.readouterr()
    assert out.out == "" and out.err == ""  # a library never prints; logging decides


async def test_no_event_is_built_when_nobody_listens(make_reach, caplog, capsys):
    reach = make_reach(log="logging")
    with caplog.at_level("WARNING", logger="reach.audit"):
        await reach.invoke("login", {"user": "ann", "password": SECRETS[0]})
        await reach.aclose()
    assert [r for r in caplog.records if r.name == "reach.audit"] == []
    assert capsys.readouterr() == ("", "")


def test_the_fast_scan_never_passes_what_the_walk_would_mask():
    """The writer skips the Python walk when scan() says clean; that must be safe."""
    import random

    pieces = ["city", "Beijing", "北京", "password", "Api-Key", "token", "max_tokens", "note", "Bearer abcdefghijk",
              "sk-live-abcdefghijklmnop1234", "a=b", "api_key=xyz", "x" * 40, '"quoted"', "line\nbreak", "\u3000",
              "Authorization", "author", "eyJhbGciOiJI.eyJzdWIiOiIx.SflKxwRJSMeKKF2Q", "ACME-7", "cookie"]
    rng = random.Random(8)

    def sample(depth: int = 0):
        roll = rng.random()
        if depth < 3 and roll < 0.3:
            return {rng.choice(pieces): sample(depth + 1) for _ in range(rng.randint(0, 4))}
        if depth < 3 and roll < 0.45:
            return [sample(depth + 1) for _ in range(rng.randint(0, 3))]
        if roll < 0.6:
            return rng.randint(-5, 5)
        return " ".join(rng.choice(pieces) for _ in range(rng.randint(1, 3)))

    r = Redactor(extra_patterns=[r"ACME-\d+"])
    passed = 0
    for _ in range(3000):
        value = sample()
        if r.scan(value) is not None:
            assert r.value(value) == value, value
            passed += 1
    assert passed > 300  # the fast path is actually taken
