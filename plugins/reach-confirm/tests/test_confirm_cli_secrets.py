"""``reach confirm list`` and ``show`` do not print the secrets a call's arguments hold.

The console's approval page shows a request's summary and arguments through the Reach's
redactor (secret keys, known token shapes, URL passwords); ``reach confirm list`` and
``show`` printed them raw: an ``api_key``, a ``password``, a bearer token in
``headers`` or a GitHub token inside a note went to the operator's terminal, its
scrollback and whatever records it (a CI log, ``script``, a shared tmux). They now show
what the console shows. The arguments that run are unchanged, and ``--json`` output
stays exact (it is data, for scripts).
"""

from __future__ import annotations

import asyncio
import json

import pytest
import reach_confirm.plugin as confirm_plugin
from click.testing import CliRunner
from reach_confirm.plugin import queue_for

from reach_core import Connector, hookimpl
from reach_core.cli import cli
from reach_core.testing import make_reach

RAN: list[dict] = []


class Deploy(Connector):
    """A dangerous tool whose arguments may hold credentials (no summarize of its own)."""

    name = "deploy"
    description = "Deploy a service. Use when the user asks to deploy."
    risk = "dangerous"
    input_schema = {"type": "object", "properties": {"region": {"type": "string", "description": "where"}},
                    "required": ["region"], "additionalProperties": True}

    async def execute(self, params, ctx):
        RAN.append(dict(params))
        return "deployed"


class Tools:
    REACH_PLUGIN_NAME = "deployer"

    @hookimpl
    def reach_register_tools(self, register):
        register(Deploy())


#: (argument, value, the secret that must not be printed)
SECRETS = [
    ("api_key", "K1xq8vB2nTzz", "K1xq8vB2nTzz"),
    ("apiKey", "K2xq8vB2nTzz", "K2xq8vB2nTzz"),
    ("API-KEY", "K3xq8vB2nTzz", "K3xq8vB2nTzz"),
    ("password", "P4ss w0rd!", "P4ss w0rd!"),
    ("db_password", "P5ss-w0rd", "P5ss-w0rd"),
    ("client_secret", "C6secretvalue", "C6secretvalue"),
    ("access_token", "T7tokenvalue", "T7tokenvalue"),
    ("headers", {"Authorization": "Bearer T8tokenabcdef"}, "T8tokenabcdef"),
    ("note", "use ghp_abcdefghijklmnopqrstuvwxyz0123456789 now", "ghp_abcdefghijklmnopqrstuvwxyz0123456789"),
    ("aws", "AKIAIOSFODNN7EXAMPLE", "AKIAIOSFODNN7EXAMPLE"),
    ("url", "https://bob:hunter7pw@db.example.com/x", "hunter7pw"),
    ("jwt", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJlc2lnbmF0dXJl", "c2lnbmF0dXJlc2lnbmF0dXJl"),
    ("slack", "xoxb-123456789012-abcdefghijkl", "xoxb-123456789012-abcdefghijkl"),
]


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


async def _approve(tmp_path, cid: str) -> None:
    reach = make_reach(("reach-confirm", confirm_plugin), Tools(), data_dir=tmp_path / "state")
    try:
        assert (await queue_for(reach).approve(cid, by="person:ann")).ok
    finally:
        await reach.aclose()


def _cli(*args: str) -> str:
    out = CliRunner().invoke(cli, ["--config", "reach.toml", "confirm", *args], catch_exceptions=False)
    assert out.exit_code == 0, out.output
    return out.output


@pytest.fixture
def here(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "reach.toml").write_text('[reach]\ndata_dir = "state"\n[plugins]\nload = ["reach-confirm"]\n')
    RAN.clear()
    return tmp_path


@pytest.mark.parametrize("key,value,secret", SECRETS, ids=[s[0] for s in SECRETS])
def test_list_and_show_print_no_secret_of_the_arguments(here, key, value, secret):
    arguments = {"region": "eu-west-1", key: value}
    cid = _ask(here, arguments)
    listed, shown = _cli("list"), _cli("show", cid)
    for out in (listed, shown):
        assert secret not in out, out
        assert "[REDACTED]" in out and "eu-west-1" in out, out
    assert f'"{key}"' in shown  # the argument is named: a person sees that one was given
    # data for scripts stays exact, and the call that runs is the one asked for
    assert json.loads(_cli("show", cid, "--json"))["arguments"] == arguments
    asyncio.run(_approve(here, cid))
    assert RAN == [arguments]


def test_positive_control_arguments_without_secrets_are_shown_whole(here):
    arguments = {"region": "eu-west-1", "replicas": 3, "image": "registry.example.com/app:1.2.3"}
    cid = _ask(here, arguments)
    shown = _cli("show", cid)
    assert "[REDACTED]" not in shown and "registry.example.com/app:1.2.3" in shown and '"replicas": 3' in shown
    assert "registry.example.com/app:1.2.3" in _cli("list")
