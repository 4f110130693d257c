"""``reach serve http`` against a real server on 127.0.0.1."""

from __future__ import annotations

from typing import Any

import click
import pytest


def test_requests_need_a_known_token(served: Any) -> None:
    with served.client(None) as c:
        resp = c.post("/v1/invoke", json={"name": "lookup", "arguments": {"city": "Paris"}})
        assert resp.status_code == 401 and resp.headers["www-authenticate"] == "Bearer"
        assert "Authorization: Bearer" in resp.json()["error"]["message"]
    with served.client("tok-not-configured") as c:
        assert c.get("/v1/tools").status_code == 401
    with served.client() as c:
        assert c.get("/healthz").json() == {"ok": True}


def test_invoke_returns_the_tool_result_and_tool_failures_in_band(served: Any) -> None:
    with served.client() as c:
        ok = c.post("/v1/invoke", json={"id": "call-1", "name": "lookup", "arguments": {"city": "北京"}})
        assert ok.status_code == 200
        body = ok.json()
        assert body["ok"] and body["call_id"] == "call-1" and body["content"] == {"city": "北京", "country": "中国"}
        assert "中国" in ok.text  # not \\u-escaped: fewer tokens for the model
        as_string = c.post("/v1/invoke", json={"name": "lookup", "arguments": '{"city": "Rome"}'}).json()
        assert as_string["ok"]
        bad = c.post("/v1/invoke", json={"name": "lookup", "arguments": {"town": "Rome"}}).json()
        assert not bad["ok"] and bad["error"]["code"] == "invalid_arguments"
        unknown = c.post("/v1/invoke", json={"name": "nope", "arguments": {}}).json()
        assert unknown["error"]["code"] == "unknown_tool"


def test_malformed_requests_are_http_errors(served: Any) -> None:
    with served.client() as c:
        assert c.post("/v1/invoke", content=b"{not json").status_code == 400
        assert c.post("/v1/invoke", json=["lookup"]).status_code == 400
        missing = c.post("/v1/invoke", json={"arguments": {}})
        assert missing.status_code == 400 and "`name`" in missing.json()["error"]["message"]
        assert c.post("/v1/invoke", json={"name": "lookup", "arguments": [1]}).status_code == 400
        assert c.post("/v1/invoke", content=b"x" * 1_100_000).status_code == 413
        # a token acts as its agent and no other
        other = c.post("/v1/invoke", json={"name": "lookup", "arguments": {"city": "x"}, "agent": "ops"})
        assert other.status_code == 403


def test_idempotency_key_runs_a_write_once(served: Any) -> None:
    body = {"name": "add_credit", "arguments": {"amount": 5}, "idempotency_key": "credit-77"}
    with served.client() as c:
        first = c.post("/v1/invoke", json={**body, "id": "a"}).json()
        second = c.post("/v1/invoke", json={**body, "id": "b"}).json()
        changed = c.post("/v1/invoke", json={**body, "arguments": {"amount": 6}}).json()
    assert first["ok"] and second["ok"] and second["meta"]["receipt"] is True
    assert second["content"] == first["content"] and served.counter.runs == 1
    assert changed["error"]["code"] == "denied" and "different arguments" in changed["error"]["message"]


def test_tools_lists_openai_entries_for_the_tokens_agent(served: Any) -> None:
    with served.client() as c:
        data = c.get("/v1/tools").json()
        assert data["agent"] == "worker"
        assert {t["function"]["name"] for t in data["tools"]} == {"add_credit", "lookup"}
        assert len(c.get("/v1/tools?limit=1").json()["tools"]) == 1
        assert c.get("/v1/tools?limit=x").status_code == 400


def test_confirmations_and_audit_are_for_operators_only(served: Any) -> None:
    with served.client() as c:
        for path in ("/v1/confirmations", "/v1/audit/tail", "/v1/audit/verify"):
            resp = c.get(path)
            assert resp.status_code == 403 and "operators" in resp.json()["error"]["message"]
        assert c.post("/v1/confirmations/cf_x/approve").status_code == 403


def test_endpoints_say_which_plugin_they_need(served: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "reach_confirm.plugin", None)  # as in a venv without them
    monkeypatch.setitem(sys.modules, "reach_audit", None)
    with served.client("tok-ops-000000001") as c:
        resp = c.get("/v1/confirmations")
        assert resp.status_code == 404 and "reach-confirm" in resp.json()["error"]["message"]
        resp = c.get("/v1/audit/tail")
        assert resp.status_code == 404 and "reach-audit" in resp.json()["error"]["message"]


def test_anonymous_requests_act_as_the_configured_agent(make_served: Any) -> None:
    served = make_served({"anonymous_agent": "guest"})
    with served.client(None) as c:
        assert c.get("/v1/tools").json()["agent"] == "guest"
        assert c.post("/v1/invoke", json={"name": "lookup", "arguments": {"city": "Oslo"}}).json()["ok"]


def test_serve_http_joins_an_existing_serve_group() -> None:
    from reach_serve.commands import add_commands

    root = click.Group("reach")
    existing = click.Group("serve")
    existing.add_command(click.Command("mcp"))
    root.add_command(existing)
    add_commands(root)
    assert set(existing.commands) == {"mcp", "http"}
    fresh = click.Group("reach")
    add_commands(fresh)
    assert set(fresh.commands["serve"].commands) == {"http"}
