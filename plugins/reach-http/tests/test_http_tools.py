"""http_get / http_request against a real server on 127.0.0.1: results, errors, retries, auth."""

from __future__ import annotations

import json
import socket

import pytest
from http_testserver import Server, local
from reach_http import build_connectors


async def test_get_returns_status_headers_and_parsed_body(server: Server, make) -> None:
    reach = make({"services": {"pets": local(server, base_url=f"http://127.0.0.1:{server.port}/v3")}})
    result = await reach.invoke("http_get", {"service": "pets", "path": "/pet/1"})
    assert result.ok, result.error
    assert result.content["status"] == 200
    assert result.content["headers"] == {"content-type": "application/json"}
    assert result.content["body"]["name"] == "Rex"
    assert "truncated" not in result.content


async def test_query_lists_repeat_and_booleans_are_lowercase(server: Server, make) -> None:
    reach = make({"services": {"svc": local(server)}})
    result = await reach.invoke("http_get", {"service": "svc", "path": "/echo",
                                             "query": {"tag": ["a", "b"], "full": True, "n": 2}})
    assert result.ok
    assert server.state.requests[-1]["raw_query"] == "tag=a&tag=b&full=true&n=2"


async def test_4xx_is_a_business_error_with_the_servers_message(server: Server, make) -> None:
    reach = make({"services": {"pets": local(server, base_url=f"http://127.0.0.1:{server.port}/v3")}})
    result = await reach.invoke("http_get", {"service": "pets", "path": "/pet/99"})
    assert not result.ok and result.error.code == "execution_failed"
    assert "404" in result.error.message and "Pet not found" in result.error.message
    assert server.state.count("GET", "/v3/pet/99") == 1  # never retried


async def test_5xx_and_429_on_get_are_retried(server: Server, make) -> None:
    reach = make({"services": {"svc": local(server)}})
    server.state.failures = [(503, {}), (429, {"Retry-After": "0"})]
    result = await reach.invoke("http_get", {"service": "svc", "path": "/echo"})
    assert result.ok, result.error
    assert server.state.count("GET", "/echo") == 3


async def test_persistent_503_on_get_reports_upstream_unavailable_with_retry_after(server: Server, make) -> None:
    reach = make({"services": {"svc": local(server)}}, config={"connectors": {"http_get": {"retries": 0}}})
    result = await reach.invoke("http_get", {"service": "svc", "path": "/status/503", "query": {"retry_after": "0"}})
    assert not result.ok and result.error.code == "upstream_unavailable"
    assert "503" in result.error.message
    assert server.state.count("GET", "/status/503") == 1


@pytest.mark.parametrize("status", [500, 502, 503])
async def test_5xx_on_post_is_never_retried_and_outcome_unknown(server: Server, make, status: int) -> None:
    reach = make({"services": {"svc": local(server)}})
    result = await reach.invoke(
        "http_request", {"service": "svc", "method": "POST", "path": f"/status/{status}", "json": {"a": 1}}
    )
    assert not result.ok and result.error.code == "outcome_unknown"
    assert "may or may not have taken effect" in result.error.message
    assert server.state.count("POST", f"/status/{status}") == 1


async def test_429_on_post_is_a_business_error_naming_the_wait(server: Server, make) -> None:
    reach = make({"services": {"svc": local(server)}})
    result = await reach.invoke(
        "http_request",
        {"service": "svc", "method": "POST", "path": "/status/429", "query": {"retry_after": "30"}, "json": {}},
    )
    assert not result.ok and result.error.code == "execution_failed"
    assert "not processed" in result.error.message and "30 s" in result.error.message
    assert result.error.retry_after == 30
    assert server.state.count("POST", "/status/429") == 1


async def test_slow_get_times_out_retryable_and_slow_post_is_outcome_unknown(server: Server, make) -> None:
    reach = make({"services": {"svc": local(server, timeout=0.3)}},
                 config={"connectors": {"http_get": {"retries": 0}}})
    get = await reach.invoke("http_get", {"service": "svc", "path": "/slow", "query": {"s": 1}})
    assert not get.ok and get.error.code == "upstream_unavailable"
    post = await reach.invoke("http_request", {"service": "svc", "method": "POST", "path": "/slow",
                                               "query": {"s": 1}, "json": {}})
    assert not post.ok and post.error.code == "outcome_unknown"
    assert server.state.count("POST", "/slow") == 1


async def test_connection_refused_is_retryable_and_says_nothing_was_sent(make) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    reach = make({"services": {"svc": {"base_url": f"http://127.0.0.1:{port}", "allow_private": True}}},
                 config={"connectors": {"http_get": {"retries": 0}}})
    result = await reach.invoke("http_get", {"service": "svc", "path": "/x"})
    assert not result.ok and result.error.code == "upstream_unavailable"
    assert "nothing was sent" in result.error.message


async def test_post_sends_json_and_idempotency_key(server: Server, make) -> None:
    reach = make({"services": {"pets": local(server, base_url=f"http://127.0.0.1:{server.port}/v3")}})
    result = await reach.invoke(
        {"id": "call_1", "name": "http_request",
         "arguments": json.dumps({"service": "pets", "method": "POST", "path": "/pet",
                                  "json": {"name": "小白", "photoUrls": []}})},
        run_id="run-7",
    )
    assert result.ok, result.error
    assert result.content["body"]["name"] == "小白"
    sent = server.state.requests[-1]
    assert sent["body"] == {"name": "小白", "photoUrls": []}
    assert sent["headers"].get("Idempotency-Key")
    assert "小白" in result.to_message()["content"]  # not \\u-escaped


async def test_bearer_secret_is_read_from_the_environment_at_use(server: Server, make, monkeypatch) -> None:
    monkeypatch.setenv("REACH_HTTP_TEST_TOKEN", "first")
    reach = make({"services": {"svc": local(server, auth={"type": "bearer",
                                                          "token": {"env": "REACH_HTTP_TEST_TOKEN"}},
                                            headers={"X-Team": "blue", "X-Key": {"env": "REACH_HTTP_TEST_KEY"}})}})
    monkeypatch.setenv("REACH_HTTP_TEST_KEY", "k1")
    first = await reach.invoke("http_get", {"service": "svc", "path": "/echo"})
    arrived = server.state.requests[-1]["headers"]  # the answer masks echoed secrets (test_redteam_http_echo)
    assert first.ok and arrived["Authorization"] == "Bearer first"
    assert arrived["X-Team"] == "blue" and first.content["body"]["headers"]["X-Team"] == "blue"
    assert arrived["X-Key"] == "k1"
    assert first.content["body"]["authorization"] == "[redacted credential]"
    monkeypatch.setenv("REACH_HTTP_TEST_TOKEN", "rotated")
    second = await reach.invoke("http_get", {"service": "svc", "path": "/echo"})
    assert server.state.requests[-1]["headers"]["Authorization"] == "Bearer rotated"
    assert "rotated" not in second.to_json()
    monkeypatch.delenv("REACH_HTTP_TEST_TOKEN")
    missing = await reach.invoke("http_get", {"service": "svc", "path": "/echo"})
    assert not missing.ok and "REACH_HTTP_TEST_TOKEN" in missing.error.message
    assert "rotated" not in json.dumps(missing.to_message())


async def test_basic_and_query_auth(server: Server, make) -> None:
    reach = make({"services": {
        "b": local(server, auth={"type": "basic", "username": "ann", "password": "pw"}),
        "q": local(server, auth={"type": "query", "name": "api_key", "value": "s3"}),
    }})
    basic = await reach.invoke("http_get", {"service": "b", "path": "/echo"})
    assert server.state.requests[-1]["headers"]["Authorization"] == "Basic YW5uOnB3"
    assert "YW5uOnB3" not in basic.to_json()  # an echoed credential is masked (test_redteam_http_echo)
    query = await reach.invoke("http_get", {"service": "q", "path": "/echo"})
    assert query.content["body"]["query"] == {"api_key": ["s3"]}  # shorter than 6: not masked


@pytest.mark.parametrize("path", ["//evil.example/x", "http://evil.example/", "/a/../admin", "/x?y=1", "echo",
                                  "/a b", "/x#frag"])
async def test_paths_cannot_leave_the_service(server: Server, make, path: str) -> None:
    reach = make({"services": {"svc": local(server)}})
    result = await reach.invoke("http_get", {"service": "svc", "path": path})
    assert not result.ok and result.error.code == "invalid_arguments"
    assert server.state.requests == []


async def test_unknown_service_and_disallowed_method(server: Server, make) -> None:
    reach = make({"services": {"svc": local(server, methods=["GET", "POST"])}})
    unknown = await reach.invoke("http_get", {"service": "other", "path": "/echo"})
    assert not unknown.ok and unknown.error.code == "invalid_arguments"
    delete = await reach.invoke("http_request", {"service": "svc", "method": "DELETE", "path": "/echo"})
    assert not delete.ok and delete.error.code == "invalid_arguments"
    get_body = await reach.invoke("http_request", {"service": "svc", "method": "GET", "path": "/echo", "json": {}})
    assert not get_body.ok and "`json`" in get_body.error.message
    assert server.state.requests == []


def test_risk_and_idempotency_of_the_generic_tools() -> None:
    tools = {t.name: t for t in build_connectors({"services": {"a": {"base_url": "https://api.example.com"}}})}
    assert tools["http_get"].risk == "read" and tools["http_get"].idempotent is True
    assert tools["http_request"].risk == "write" and tools["http_request"].idempotent is False
    assert "DELETE" not in tools["http_request"].input_schema["properties"]["method"]["enum"]
    with_delete = build_connectors({"services": {"a": {"base_url": "https://api.example.com",
                                                       "methods": ["GET", "DELETE"]}}})
    assert {t.name: t.risk for t in with_delete}["http_request"] == "dangerous"
    read_only = build_connectors({"services": {"a": {"base_url": "https://api.example.com", "methods": ["GET"]}}})
    assert [t.name for t in read_only] == ["http_get"]


async def test_long_json_is_trimmed_structurally(server: Server, make) -> None:
    reach = make({"services": {"svc": local(server, max_body_chars=2000)}})
    result = await reach.invoke("http_get", {"service": "svc", "path": "/big", "query": {"n": 500}})
    assert result.ok and result.content["truncated"] is True
    items = result.content["body"]["items"]
    assert isinstance(items, list) and items[-1].endswith("more items")
    assert len(json.dumps(result.content["body"], ensure_ascii=False)) <= 2100


async def test_text_is_cut_and_binary_is_described(server: Server, make) -> None:
    reach = make({"services": {"svc": local(server, max_body_chars=500)}})
    text = await reach.invoke("http_get", {"service": "svc", "path": "/text"})
    assert text.ok and text.content["truncated"] is True
    assert text.content["body"].endswith("more characters]") and len(text.content["body"]) < 560
    binary = await reach.invoke("http_get", {"service": "svc", "path": "/binary"})
    assert "body" not in binary.content and "<binary body: 108 bytes, type image/png>" in binary.content["note"]


async def test_head_has_no_body(server: Server, make) -> None:
    reach = make({"services": {"svc": local(server)}})
    result = await reach.invoke("http_request", {"service": "svc", "method": "HEAD", "path": "/echo"})
    assert result.ok and result.content["status"] == 200 and "body" not in result.content


async def test_response_size_is_capped_on_the_wire(server: Server, make) -> None:
    reach = make({"services": {"svc": local(server, max_response_bytes=4096)}})
    result = await reach.invoke("http_get", {"service": "svc", "path": "/big", "query": {"n": 2000}})
    assert result.ok and result.content["truncated"] is True


async def test_a_name_that_does_not_resolve_is_retryable_and_sends_nothing(make) -> None:
    reach = make({"services": {"svc": {"base_url": "https://nowhere.invalid"}}},
                 config={"connectors": {"http_get": {"retries": 0}}})
    result = await reach.invoke("http_get", {"service": "svc", "path": "/x"})
    assert not result.ok and result.error.code == "upstream_unavailable"
    assert "could not be resolved" in result.error.message and "nothing was sent" in result.error.message


async def test_env_secrets_in_reach_config_reach_the_server(server: Server, tmp_path, monkeypatch) -> None:
    """Through the real plugin and config: the core reads ``{ env = ... }`` when settings load."""
    import reach_http.plugin

    from reach_core.testing import make_reach

    monkeypatch.setenv("REACH_HTTP_CFG_TOKEN", "from-env")
    service = {**local(server), "auth": {"type": "bearer", "token": {"env": "REACH_HTTP_CFG_TOKEN"}}}
    reach = make_reach(("reach-http", reach_http.plugin), config={
        "reach": {"data_dir": str(tmp_path / "d")},
        "plugins": {"reach-http": {"services": {"svc": service}}},
    })
    result = await reach.invoke("http_get", {"service": "svc", "path": "/echo"})
    assert result.ok and server.state.requests[-1]["headers"]["Authorization"] == "Bearer from-env"
    assert "from-env" not in result.to_json()
    await reach.aclose()
