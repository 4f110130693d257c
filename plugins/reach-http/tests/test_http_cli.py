"""``reach http import``: prints or writes the settings entry; the entry then works."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest
from click.testing import CliRunner
from http_testserver import Server
from reach_http import build_connectors
from reach_http.cli import http_group

DATA = Path(__file__).parent / "data"
PETSTORE3 = DATA / "petstore3" / "openapi.json"
CORE_PETSTORE = DATA / "openapi-core-petstore" / "petstore.yaml"


def test_import_prints_a_settings_entry_and_lists_the_tools() -> None:
    result = CliRunner().invoke(http_group, ["import", str(CORE_PETSTORE), "--service", "core"])
    assert result.exit_code == 0, result.output
    entry = tomllib.loads(result.stdout)["plugins"]["reach-http"]["services"]["core"]
    assert entry == {"openapi": str(CORE_PETSTORE.resolve()), "base_url": "http://petstore.swagger.io/v1"}
    assert "listPets" in result.stderr and "dangerous" in result.stderr
    assert "skipped POST /pets/{petId}/photo" in result.stderr
    # the printed entry is valid settings as it stands
    names = {t.name for t in build_connectors({"services": {"core": entry}})}
    assert {"listPets", "createPets", "deleteTag"} <= names


def test_import_without_a_server_url_says_to_set_base_url() -> None:
    result = CliRunner().invoke(http_group, ["import", str(PETSTORE3), "--service", "pets"])
    assert result.exit_code == 0
    assert "set base_url" in result.stderr
    with_base = CliRunner().invoke(http_group, ["import", str(PETSTORE3), "--service", "pets",
                                                "--base-url", "https://petstore3.example.com/api/v3", "--json"])
    data = json.loads(with_base.stdout)
    assert data["settings"]["base_url"] == "https://petstore3.example.com/api/v3"
    ops = {o["name"]: o for o in data["operations"]}
    assert ops["deletePet"] == {"name": "deletePet", "method": "DELETE", "path": "/pet/{petId}",
                                "risk": "dangerous", "idempotent": True, "changes": []}
    assert len(ops) == 19


def test_write_appends_once(tmp_path: Path) -> None:
    config = tmp_path / "reach.toml"
    config.write_text('[reach]\ndata_dir = ".reach"\n')
    args = ["import", str(CORE_PETSTORE), "--service", "core", "--write", str(config)]
    first = CliRunner().invoke(http_group, args)
    assert first.exit_code == 0, first.output
    parsed = tomllib.loads(config.read_text())
    assert parsed["reach"]["data_dir"] == ".reach"
    assert parsed["plugins"]["reach-http"]["services"]["core"]["base_url"] == "http://petstore.swagger.io/v1"
    again = CliRunner().invoke(http_group, args)
    assert again.exit_code != 0 and "already has a service called 'core'" in again.output


def test_import_from_a_url_honours_the_guard(server: Server) -> None:
    url = f"http://127.0.0.1:{server.port}/openapi.json"
    refused = CliRunner().invoke(http_group, ["import", url, "--service", "pets"])
    assert refused.exit_code != 0 and "loopback" in refused.output
    assert server.state.requests == []
    ok = CliRunner().invoke(http_group, ["import", url, "--service", "pets", "--allow-private"])
    assert ok.exit_code == 0, ok.output
    entry = tomllib.loads(ok.stdout)["plugins"]["reach-http"]["services"]["pets"]
    assert entry == {"openapi": url, "base_url": f"http://127.0.0.1:{server.port}/v3", "allow_private": True}


@pytest.mark.parametrize("name", ["has space", "a.b", ""])
def test_service_names_must_be_toml_keys(name: str) -> None:
    result = CliRunner().invoke(http_group, ["import", str(PETSTORE3), "--service", name])
    assert result.exit_code != 0


def test_the_root_reach_cli_gets_the_http_command(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from reach_core.cli import cli

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("REACH_PLUGINS", "reach-http")
    monkeypatch.delenv("REACH_CONFIG", raising=False)
    result = CliRunner().invoke(cli, ["http", "import", str(CORE_PETSTORE), "--service", "core", "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["service"] == "core"
