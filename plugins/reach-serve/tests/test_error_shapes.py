"""One error shape on every served surface: REST's ``error`` object carries ``confirmation_id``
and ``fix`` where MCP's does, and HTTP errors that Starlette raises itself (no route,
wrong method) answer JSON like every other error of the API."""

from __future__ import annotations

from typing import Any

import pytest
from conftest import serve

from reach_core import Connector, hookimpl


class Wipe(Connector):
    name = "wipe_account"
    description = "Delete an account and everything in it. Use only when the user insists."
    risk = "dangerous"
    input_schema = {"type": "object", "properties": {"account": {"type": "string"}}, "required": ["account"]}

    async def execute(self, params: dict[str, Any], ctx: Any) -> Any:
        return {"wiped": params["account"]}


class Dangerous:
    REACH_PLUGIN_NAME = "dangerous-tools"

    @hookimpl
    def reach_register_tools(self, register: Any) -> None:
        register(Wipe())


@pytest.fixture
def served_dangerous(tmp_path: Any) -> Any:
    yield from serve(tmp_path, plugins=(Dangerous(),))


def test_a_denial_carries_its_fix_inside_the_error_object(served_dangerous: Any) -> None:
    with served_dangerous.client() as c:
        body = c.post("/v1/invoke", json={"name": "wipe_account", "arguments": {"account": "a-1"}}).json()
    assert not body["ok"]
    error = body["error"]
    assert error["code"] in {"denied", "needs_confirmation"}
    assert isinstance(error.get("fix"), str) and error["fix"]  # where reach-mcp puts it too
    assert set(error) <= {"code", "message", "retry_after", "confirmation_id", "fix"}


@pytest.mark.parametrize("path", ["/v1/nope", "/v2/invoke", "/", "/v1/invoke/extra", "/%E2%98%83", "/v1/tools/x"])
def test_unknown_paths_answer_json_404(served: Any, path: str) -> None:
    with served.client() as c:
        resp = c.get(path)
    assert resp.status_code == 404
    assert resp.headers["content-type"].startswith("application/json")
    assert resp.json()["error"]["code"] == "not_found"


@pytest.mark.parametrize(("method", "path"), [
    ("GET", "/v1/invoke"), ("PUT", "/v1/invoke"), ("DELETE", "/v1/tools"), ("POST", "/v1/tools"),
    ("PATCH", "/v1/confirmations"), ("POST", "/healthz"),
])
def test_wrong_methods_answer_json_405(served: Any, method: str, path: str) -> None:
    with served.client() as c:
        resp = c.request(method, path)
    assert resp.status_code == 405
    assert resp.headers["content-type"].startswith("application/json")
    body = resp.json()["error"]
    assert body["code"] == "method_not_allowed" and method in body["message"]
    assert "allow" in {k.lower() for k in resp.headers}
