"""``[plugins.reach-mcp.servers.NAME] tools``/``exclude``/``prefix`` that are almost right are
refused when the settings load.

Remote tool names are compared exactly (``fnmatch``, case-sensitive), so
``exclude = ["delete_repo "]`` (a space after it) or ``["delete\\u200b_repo"]`` (a
zero-width space pasted with it) excluded nothing: the server's ``delete_repo`` was
registered and offered.
"""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError
from reach_mcp.plugin import _selected
from reach_mcp.settings import McpSettings, ServerConfig

MUTATIONS = [
    ("trailing space", lambda n: n + " "),
    ("leading space", lambda n: " " + n),
    ("trailing tab", lambda n: n + "\t"),
    ("trailing newline", lambda n: n + "\n"),
    ("trailing CRLF", lambda n: n + "\r\n"),
    ("inner NUL", lambda n: n[:3] + "\x00" + n[3:]),
    ("trailing no-break space", lambda n: n + "\xa0"),
    ("inner no-break space", lambda n: n[:3] + "\xa0" + n[3:]),
    ("ideographic space", lambda n: n + "\u3000"),
    ("line separator", lambda n: n + "\u2028"),
    ("zero-width space", lambda n: n[:3] + "\u200b" + n[3:]),
    ("zero-width joiner", lambda n: n[:3] + "\u200d" + n[3:]),
    ("BOM in front", lambda n: "\ufeff" + n),
    ("soft hyphen", lambda n: n[:3] + "\xad" + n[3:]),
    ("left-to-right mark", lambda n: n + "\u200e"),
    ("full-width letter", lambda n: "\uff44" + n[1:]),
    ("Cyrillic e", lambda n: n.replace("e", "\u0435", 1)),
    ("Greek omicron", lambda n: n.replace("o", "\u03bf", 1)),
    ("empty", lambda n: ""),
]
IDS = [m[0] for m in MUTATIONS]


def _server(**kw: Any) -> dict[str, Any]:
    return {"servers": {"github": {"command": "mcp-github", **kw}}}


@pytest.mark.parametrize(("_id", "mutate"), MUTATIONS, ids=IDS)
@pytest.mark.parametrize("name", ["delete_repo", "repo_*", "delete.repo"])
@pytest.mark.parametrize("key", ["exclude", "tools"])
def test_a_remote_tool_pattern_that_matches_nothing_is_refused(key: str, name: str, _id: str, mutate: Any) -> None:
    value = mutate(name)
    with pytest.raises(ValidationError) as err:
        McpSettings.model_validate(_server(**{key: ["list_repos", value]}))
    text = str(err.value)
    assert "matches no tool the server names" in text, text
    assert ascii(value)[1:-1] in text.replace("\\\\", "\\"), text


@pytest.mark.parametrize(("_id", "mutate"), MUTATIONS[:-1], ids=IDS[:-1])
def test_a_prefix_allow_and_deny_would_miss_is_refused(_id: str, mutate: Any) -> None:
    with pytest.raises(ValidationError, match="prefix"):
        McpSettings.model_validate(_server(prefix=mutate("develop")))


@pytest.mark.parametrize("typo", ["delete_repo ", "delete\u200b_repo", "\ufeffdelete_repo", "d\u0435lete_repo"])
def test_what_such_an_exclude_did(typo: str) -> None:
    """Built without validation (as the settings were before), it excluded nothing."""
    loose = ServerConfig.model_construct(command="x", exclude=[typo], tools=None)
    assert _selected("delete_repo", loose)
    assert not _selected("delete_repo", ServerConfig(command="x", exclude=["delete_repo"]))
    with pytest.raises(ValidationError, match="matches no tool the server names"):
        ServerConfig(command="x", exclude=[typo])


@pytest.mark.parametrize("patterns", [["delete_repo"], ["delete_*", "admin.*"], ["files/read"], ["get-[ab]*"],
                                      ["読む"], ["*"]])
def test_control_real_patterns_load_unchanged(patterns: list[str]) -> None:
    cfg = McpSettings.model_validate(_server(tools=patterns, exclude=patterns, prefix="gh")).servers["github"]
    assert cfg.tools == patterns and cfg.exclude == patterns and cfg.prefix == "gh"


def test_control_an_empty_prefix_still_means_none() -> None:
    assert McpSettings.model_validate(_server(prefix="")).servers["github"].prefix == ""
