"""Red team of issue 20's class "a typo never widens rights": rules that matched nothing silently.

* ``[limits] storage`` with an unknown scheme (``memroy://``, ``Redis://``, ``redis:/h``)
  was accepted at start; every call then failed as an internal error. It is a config
  error naming the key (without echoing the rest of the URI, which may hold a password).
* A glob in ``deny`` or ``approval`` that matches no tool (globs are case-sensitive:
  ``Delete_*``), or a ``tag:NAME`` no tool carries (``tag:filesytem``, ``tag: fs``,
  ``tag:FS``), restricted nothing, without a word, while plain misspelt names were
  already logged as ``reach.config_unknown_tool``. Now they are logged too, with the
  tool or tag meant when one is close. Honest globs and tags stay quiet.
"""

from __future__ import annotations

from typing import Any

import pytest

from reach_core import ConfigError, connector
from reach_core.config import load_config
from reach_core.testing import make_reach

BAD_STORAGE = ["memroy://", "Memory://", "MEMORY://", "memory", "memory:/", "memory:", "", " memory://",
               "redis:/localhost:6379/0", "Redis://localhost:6379/0", "redis//localhost", "reddis://localhost:6379",
               "file:///tmp/limits", "http://localhost:6379", "sqlite:///x.db", "postgresql://h/db",
               "redis+sentinels://h:1/x", "async+memroy://", "asyncmemory://"]
GOOD_STORAGE = ["memory://", "async+memory://", "redis://localhost:6379/0", "rediss://h:6380/1",
                "redis+sentinel://h:26379/mymaster", "redis+unix:///tmp/redis.sock", "async+redis://h:1/0"]


@pytest.mark.parametrize("storage", BAD_STORAGE)
def test_an_unknown_limits_storage_is_a_config_error(storage: str) -> None:
    with pytest.raises(ConfigError, match=r"\[limits\] storage"):
        load_config({"limits": {"storage": storage}})


@pytest.mark.parametrize("storage", GOOD_STORAGE)
def test_real_storage_uris_are_accepted(storage: str) -> None:
    assert load_config({"limits": {"storage": storage}}).limits.storage == storage


@connector(risk="dangerous", tags=("filesystem",))
def delete_all(scope: str) -> str:
    """Delete everything."""
    return scope


@connector(risk="write", tags=("mail", "external_api"))
def send_email(to: str) -> str:
    """Send an email."""
    return to


@connector(risk="read")
def get_weather(city: str) -> str:
    """Weather of a city."""
    return city


async def _warnings(tmp_path: Any, caplog: Any, agent: dict[str, Any]) -> list[str]:
    reach = make_reach(config={"agents": {"a": agent}}, data_dir=tmp_path)
    for tool in (delete_all, send_email, get_weather):
        reach.register(tool)
    with caplog.at_level("WARNING", logger="reach"):
        await reach.start()
    await reach.aclose()
    return [r.reach_event["problem"] for r in caplog.records
            if getattr(r, "reach_event", {}).get("event") == "reach.config_unknown_tool"]


MISSED_GLOBS = [("Delete_*", "delete_all"), ("DELETE_*", "delete_all"), ("delete-*", None), ("Send*", "send_email"),
                ("*_All", "delete_all"), ("del?te-all", None), ("[D]elete_all", "delete_all"),
                ("*Weather", "get_weather"), ("sendemail*", None)]
# ("delete_all *", "tag: filesystem", "tag:filesystem ", "tag:") can match nothing whatever is
# registered: refused when the config is read (tests/test_config_name_typos.py), not logged here
MISSED_TAGS = [("tag:filesytem", "filesystem"), ("tag:FileSystem", "filesystem"), ("tag:mails", "mail"),
               ("tag:Mail", "mail"), ("tag:fs", None), ("tag:external-api", "external_api")]


@pytest.mark.parametrize("key", ["deny", "approval"])
@pytest.mark.parametrize(("pattern", "meant"), MISSED_GLOBS + MISSED_TAGS)
async def test_a_restricting_pattern_that_matches_nothing_is_logged(tmp_path, caplog, key, pattern, meant) -> None:
    agent = {"deny": [pattern]} if key == "deny" else {"approval": {pattern: "always"}}
    warned = await _warnings(tmp_path, caplog, agent)
    assert len(warned) == 1 and f"[agents.a] {key}" in warned[0] and pattern in warned[0], warned
    if meant is not None:
        assert meant in warned[0].split("did you mean", 1)[-1], warned


@pytest.mark.parametrize("pattern", ["delete_*", "*_all", "?et_weather", "send_[e]mail", "*", "tag:filesystem",
                                     "tag:mail", "tag:external_api", "risk:dangerous", "plugin:*"])
@pytest.mark.parametrize("key", ["deny", "approval"])
async def test_patterns_that_match_a_tool_are_not_logged(tmp_path, caplog, key, pattern) -> None:
    agent = {"deny": [pattern]} if key == "deny" else {"approval": {pattern: "always"}}
    assert await _warnings(tmp_path, caplog, agent) == []


@pytest.mark.parametrize("pattern", ["Delete_*", "tag:nothing_has_it"])
async def test_in_allow_a_miss_only_narrows_and_is_not_logged(tmp_path, caplog, pattern) -> None:
    assert await _warnings(tmp_path, caplog, {"allow": [pattern, "get_weather"]}) == []
