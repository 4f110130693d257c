"""``reach confirm approve`` does not print the secrets the call's result (or its error) holds.

``list`` and ``show`` show a request through the Reach's redactor (the console's rule); ``approve``
then printed the result of the call it ran raw: a token the tool returned, an ``api_key`` field,
the password from the arguments echoed back, a URL with its password, or a secret in an error
message went to the operator's terminal, its scrollback and whatever records it. It now shows the
result through the same redactor, masking the secrets found in the arguments and the result
wherever they appear. ``--json`` output stays exact (data for scripts).
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
import reach_confirm.plugin as confirm_plugin
from click.testing import CliRunner

from reach_core import BusinessError, Connector, hookimpl
from reach_core.cli import cli
from reach_core.testing import make_reach

ANSWER: dict[str, Any] = {}


class Deploy(Connector):
    """A dangerous tool whose result is set by the test (what an upstream answered)."""

    name = "deploy"
    description = "Deploy a service. Use when the user asks to deploy."
    risk = "dangerous"
    input_schema = {"type": "object", "properties": {"region": {"type": "string", "description": "where"}},
                    "required": ["region"], "additionalProperties": True}

    async def execute(self, params, ctx):
        if "error" in ANSWER:
            raise BusinessError(ANSWER["error"])
        return ANSWER["result"]


class Tools:
    REACH_PLUGIN_NAME = "deployer"

    @hookimpl
    def reach_register_tools(self, register):
        register(Deploy())


#: (extra arguments, what the tool answers, the secret that must not be printed)
CASES = [
    ({}, {"api_key": "K1xq8vB2nTzz", "region": "eu"}, "K1xq8vB2nTzz"),
    ({}, {"credentials": {"password": "P2ss w0rd!"}}, "P2ss w0rd!"),
    ({}, {"headers": {"Authorization": "Bearer T3tokenabcdef"}}, "T3tokenabcdef"),
    ({}, "created token ghp_abcdefghijklmnopqrstuvwxyz0123456789", "ghp_abcdefghijklmnopqrstuvwxyz0123456789"),
    ({}, {"log": ["AKIAIOSFODNN7EXAMPLE"]}, "AKIAIOSFODNN7EXAMPLE"),
    ({}, {"dsn": "postgres://bob:hunter7pw@db.example.com/x"}, "hunter7pw"),
    ({}, "xoxb-123456789012-abcdefghijkl", "xoxb-123456789012-abcdefghijkl"),
    ({}, [{"name": "DB_PASSWORD", "value": "V8secretvalue"}], "V8secretvalue"),
    ({"password": "P9echoed!"}, "deployed with P9echoed! as asked", "P9echoed!"),  # learned from the arguments
    ({"db_password": "P10echoed"}, {"note": "used P10echoed"}, "P10echoed"),
    ({}, {"client_secret": "C11secret", "note": "again: C11secret"}, "C11secret"),  # learned from the result
]


@pytest.fixture
def here(tmp_path, monkeypatch):
    """The CLI's Reach is the one the request was made in: reach-confirm and the deployer tool
    (the command's own code, given the Reach ``reach_of`` would build with these plugins)."""
    import reach_core.cli

    monkeypatch.chdir(tmp_path)
    (tmp_path / "reach.toml").write_text('[reach]\ndata_dir = "state"\n[plugins]\nload = ["reach-confirm"]\n')
    built: list[Any] = []

    def reach_of(ctx, *, quiet=False):
        if not built:
            built.append(make_reach(("reach-confirm", confirm_plugin), Tools(), data_dir=tmp_path / "state"))
        return built[0]

    monkeypatch.setattr(reach_core.cli, "reach_of", reach_of)
    ANSWER.clear()
    return tmp_path


def _ask(tmp_path, arguments) -> str:
    async def go() -> str:
        reach = make_reach(("reach-confirm", confirm_plugin), Tools(),
                           config={"plugins": {"reach-confirm": {"ttl_seconds": 600}}}, data_dir=tmp_path / "state")
        try:
            res = await reach.invoke({"id": "c1", "name": "deploy", "arguments": arguments})
            return res.meta["confirmation_id"]
        finally:
            await reach.aclose()

    return asyncio.run(go())


def _cli(*args: str) -> str:
    out = CliRunner().invoke(cli, ["--config", "reach.toml", "confirm", *args], catch_exceptions=False)
    assert out.exit_code == 0, out.output
    return out.output


@pytest.mark.parametrize("extra,answer,secret", CASES, ids=[str(i) for i in range(len(CASES))])
def test_approve_prints_no_secret_of_the_result(here, extra, answer, secret):
    ANSWER["result"] = answer
    out = _cli("approve", _ask(here, {"region": "eu-west-1", **extra}))
    assert "the call ran: ok" in out
    assert secret not in out and "[REDACTED]" in out, out


@pytest.mark.parametrize("extra,answer,secret", CASES[:3], ids=["0", "1", "2"])
def test_approve_json_stays_exact(here, extra, answer, secret):
    ANSWER["result"] = answer
    data = json.loads(_cli("approve", _ask(here, {"region": "eu-west-1", **extra}), "--json"))
    assert data["ok"] and data["content"] == answer


@pytest.mark.parametrize("message,secret", [
    ("upstream refused key sk-live-0123456789abcdefABCDEF", "sk-live-0123456789abcdefABCDEF"),
    ("login as P12errpw failed", "P12errpw"),  # the password from the arguments
    ("see https://ann:hunter13pw@ci.example.com/job", "hunter13pw"),
])
def test_approve_prints_no_secret_of_the_error(here, message, secret):
    ANSWER["error"] = message
    out = _cli("approve", _ask(here, {"region": "eu-west-1", "password": "P12errpw"}))
    assert "the call ran:" in out and "ok" not in out.split("the call ran:")[1][:4]
    assert secret not in out, out


def test_positive_control_a_result_without_secrets_is_shown_whole(here):
    ANSWER["result"] = {"region": "eu-west-1", "replicas": 3, "image": "registry.example.com/app:1.2.3"}
    out = _cli("approve", _ask(here, {"region": "eu-west-1"}))
    assert "[REDACTED]" not in out and "registry.example.com/app:1.2.3" in out and '"replicas":3' in out
