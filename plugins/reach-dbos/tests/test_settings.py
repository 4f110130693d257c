"""Settings and names a person or a config file hands reach-dbos: refused before they reach SQL."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError
from reach_dbos.runner import _sqlalchemy_url
from reach_dbos.settings import DbosSettings


@pytest.mark.parametrize("schema", [
    'x"; DROP SCHEMA public CASCADE; --', "Reach", "1abc", "a-b", "a b", "", "a" * 64, "ａｂｃ", "dbos\u200b",
    "a;b", "a.b", "public\n", "ünïcode",
])
def test_schema_names_outside_plain_identifiers_are_refused(schema: str) -> None:
    with pytest.raises(ValidationError):
        DbosSettings.model_validate({"schema": schema})


@pytest.mark.parametrize("schema", ["reach_dbos", "_x", "a" * 63, "tenant_42"])
def test_plain_identifiers_are_accepted(schema: str) -> None:
    assert DbosSettings.model_validate({"schema": schema}).schema_name == schema


@pytest.mark.parametrize(("given", "expected"), [
    ("postgresql://u:p@h/db", "postgresql+psycopg://u:p@h/db"),
    ("postgres://u:p@h/db", "postgresql+psycopg://u:p@h/db"),
    ("postgresql+psycopg2://u:p@h/db", "postgresql+psycopg://u:p@h/db"),
    ("postgresql+psycopg://u:p@h/db", "postgresql+psycopg://u:p@h/db"),
])
def test_database_urls_are_spoken_through_psycopg_3(given: str, expected: str) -> None:
    assert _sqlalchemy_url(given) == expected


@pytest.mark.parametrize("extra", [{"databse_url": "x"}, {"poll_interval": 0}, {"poll_interval": -1},
                                   {"poll_interval": 11}, {"recover_on_start": "maybe"}])
def test_misspelt_keys_and_bad_values_are_errors(extra: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        DbosSettings.model_validate(extra)


def test_the_url_comes_from_the_environment_when_not_set(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REACH_DBOS_DATABASE_URL", "postgresql://e:p@h/db")
    assert DbosSettings.model_validate({}).url() == "postgresql://e:p@h/db"
    assert DbosSettings.model_validate({"database_url": "postgresql://c:p@h/db"}).url() == "postgresql://c:p@h/db"
    monkeypatch.delenv("REACH_DBOS_DATABASE_URL")
    assert DbosSettings.model_validate({}).url() is None


def test_takeover_after_must_leave_room_for_two_heartbeats() -> None:
    with pytest.raises(ValidationError, match="twice heartbeat"):
        DbosSettings.model_validate({"takeover_after": 10, "heartbeat": 5})
    assert DbosSettings.model_validate({"takeover_after": 30}).heartbeat == 5.0
    assert DbosSettings.model_validate({}).takeover_after is None  # by hand only, unless set


def test_prices_refuse_negative_or_misspelt_fields() -> None:
    for bad in ({"m": {"prompt": -1, "completion": 1}}, {"m": {"prompt": 1, "completion": 1, "cache": 1}},
                {"m": {"prompt": 1}}):
        with pytest.raises(ValidationError):
            DbosSettings.model_validate({"prices": bad})
