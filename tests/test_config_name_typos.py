"""Config names that are almost right: refused when the config is read, never matching nothing.

Config compares names exactly. A name that differs from the one meant only by what
a tired operator does not see (a space after it, a zero-width space or BOM pasted
with it, a no-break space, a full-width or Cyrillic letter) matched nothing, and
where the name restricts, the restriction was silently dropped:

* ``[agents."support "]``: callers say ``support``, find no table and get the
  ``default`` agent's rights (usually every tool);
* ``deny = ["shell_run\\u200b"]``, ``deny = ["tag:filesystem "]``: denied nothing;
* ``[connectors."shell_run "] enabled = false``: removed nothing;
* ``deny = ["[^s]*"]``: a regex habit, which in a glob is a class holding ``^``.

Each family below is an attack on the loader (every variant was accepted before);
the controls at the end show that valid names, other scripts and free text load
unchanged.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any

import pytest

from reach_core import ConfigError, connector
from reach_core.config import AgentConfig, load_config
from reach_core.policy import Policy
from reach_core.testing import make_reach
from reach_core.tokens import require_agents

_CYRILLIC = {"a": "а", "e": "е", "o": "о", "p": "р", "c": "с", "x": "х", "y": "у", "i": "і", "s": "ѕ",
             "h": "һ", "d": "ԁ", "l": "ӏ", "j": "ј"}
_GREEK = {"o": "ο", "a": "α", "i": "ι", "e": "ε", "u": "υ", "p": "ρ", "t": "τ", "k": "κ", "x": "χ"}


def _swap(name: str, table: dict[str, str]) -> str:
    i = next(i for i, c in enumerate(name) if c in table)
    return name[:i] + table[name[i]] + name[i + 1:]


def _first_letter(name: str, shift: int) -> str:
    i = next(i for i, c in enumerate(name) if c.isascii() and c.isalpha())
    return name[:i] + chr(ord(name[i].lower()) + shift) + name[i + 1:]


def _inside(name: str, char: str) -> str:
    return name[:2] + char + name[2:]


#: (id, mutation, recoverable: the message's "did you mean" names the original)
MUTATIONS = [
    ("trailing space", lambda n: n + " ", True),
    ("leading space", lambda n: " " + n, True),
    ("two trailing spaces", lambda n: n + "  ", True),
    ("trailing tab", lambda n: n + "\t", True),
    ("trailing newline", lambda n: n + "\n", True),
    ("trailing CRLF", lambda n: n + "\r\n", True),
    ("leading newline", lambda n: "\n" + n, True),
    ("trailing NUL", lambda n: n + "\x00", True),
    ("inner NUL", lambda n: _inside(n, "\x00"), True),
    ("inner escape", lambda n: _inside(n, "\x1b"), True),
    ("inner newline", lambda n: _inside(n, "\n"), False),
    ("trailing no-break space", lambda n: n + "\xa0", True),
    ("inner no-break space", lambda n: _inside(n, "\xa0"), False),
    ("trailing ideographic space", lambda n: n + "\u3000", True),
    ("trailing narrow no-break space", lambda n: n + "\u202f", True),
    ("trailing line separator", lambda n: n + "\u2028", True),
    ("trailing next line", lambda n: n + "\x85", True),
    ("zero-width space", lambda n: _inside(n, "\u200b"), True),
    ("zero-width space at end", lambda n: n + "\u200b", True),
    ("zero-width joiner", lambda n: _inside(n, "\u200d"), True),
    ("zero-width non-joiner", lambda n: _inside(n, "\u200c"), True),
    ("word joiner", lambda n: _inside(n, "\u2060"), True),
    ("BOM in front", lambda n: "\ufeff" + n, True),
    ("right-to-left override", lambda n: _inside(n, "\u202e"), True),
    ("left-to-right mark at end", lambda n: n + "\u200e", True),
    ("soft hyphen", lambda n: _inside(n, "\xad"), True),
    ("full-width letter", lambda n: _first_letter(n, 0xFEE0), True),
    ("all full-width", lambda n: "".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else c for c in n), True),
    ("mathematical bold letter", lambda n: _first_letter(n, 0x1D41A - ord("a")), True),
    ("Cyrillic look-alike", lambda n: _swap(n, _CYRILLIC), True),
    ("Greek look-alike", lambda n: _swap(n, _GREEK), True),
    ("empty", lambda n: "", False),
]
MUTATION_IDS = [m[0] for m in MUTATIONS]


def _refused(config: dict[str, Any]) -> str:
    """The message of the ConfigError reading ``config`` raises (it must raise)."""
    with pytest.raises(ConfigError) as err:
        load_config(config)
    return str(err.value)


def _check(text: str, where: str, value: str, meant: str | None) -> None:
    assert f"`{where}`" in text, text
    # the value as repr shows it, non-ASCII escaped: invisible and look-alike characters show
    # (a long one is cut in the middle)
    assert ascii(value)[1:40] in text, text
    if meant is not None:
        assert f"did you mean `{meant}`?" in text, text


# ------------------------------------------------------------------ agent tables
AGENTS = ["support", "ops-bot", "read_only"]


def _toml_table(name: str) -> str:
    import json

    return name if name.replace("-", "").replace("_", "").isalnum() and name.isascii() else json.dumps(name)


@pytest.mark.parametrize(("_id", "mutate", "recoverable"), MUTATIONS, ids=MUTATION_IDS)
@pytest.mark.parametrize("agent", AGENTS)
def test_an_agent_table_no_caller_can_name_is_refused(agent: str, _id: str, mutate: Any, recoverable: bool) -> None:
    name = mutate(agent)
    text = _refused({"agents": {name: {"allow": ["get_weather"]}}})
    _check(text, f"[agents.{_toml_table(name)}]", name, f"[agents.{agent}]" if recoverable else None)
    assert "`default` agent's rights" in text


@pytest.mark.parametrize("name", ["Default", "DEFAULT", "dEfault", "DeFaUlT"])
def test_a_default_table_in_another_case_is_refused(name: str) -> None:
    """``[agents.Default] deny = ["*"]`` restricted an agent nobody names, not ``default``."""
    text = _refused({"agents": {name: {"deny": ["*"]}}})
    _check(text, f"[agents.{name}]", name, "[agents.default]")


def test_a_refused_agent_table_from_a_toml_file(tmp_path: Path) -> None:
    """The real route: ``[agents."support "]`` in reach.toml (what the known gap was)."""
    path = tmp_path / "reach.toml"
    path.write_text('[agents."support "]\nallow = ["get_weather"]\n\n[agents."ops\u200b"]\ndeny = ["*"]\n',
                    encoding="utf-8")
    with pytest.raises(ConfigError) as err:
        load_config(path)
    text = str(err.value)
    assert str(path) in text
    assert "`[agents.\"support \"]`: 'support ' has spaces" in text and "did you mean `[agents.support]`?" in text
    assert "`[agents.\"ops\\u200b\"]`: 'ops\\u200b' holds an invisible character" in text  # both reported at once


@pytest.mark.parametrize(("_id", "mutate", "recoverable"), MUTATIONS[:8] + MUTATIONS[17:24], ids=MUTATION_IDS[:8]
                         + MUTATION_IDS[17:24])
def test_end_to_end_a_misspelt_agent_table_no_longer_hands_out_default_rights(
        tmp_path: Path, _id: str, mutate: Any, recoverable: bool) -> None:
    """Before: the table was kept under its odd name, and ``agent="support"`` got
    ``default`` (here: the dangerous tool, unattended)."""

    @connector(risk="dangerous")
    def wipe(target: str) -> str:
        """Wipe a target."""
        return target

    config = {"agents": {"default": {"auto_tier": "dangerous"}, mutate("support"): {"allow": []}}}
    with pytest.raises(ConfigError, match="`default` agent's rights"):
        reach = make_reach(config=config, data_dir=tmp_path)
        reach.register(wipe)
        result = asyncio.run(reach.invoke("wipe", {"target": "all"}, agent="support"))
        raise AssertionError(f"support ran wipe with default's rights: {result}")


# ------------------------------------------------------------------ tool-name patterns
PATTERNS = ["shell_run", "sql_admin_*", "get_?eather", "send_[e]mail"]
KEYS = ["deny", "allow", "approval", "pinned"]


def _agent(key: str, pattern: str) -> dict[str, Any]:
    return {"agents": {"support": {key: {pattern: "always"} if key == "approval" else [pattern]}}}


@pytest.mark.parametrize(("_id", "mutate", "recoverable"), MUTATIONS, ids=MUTATION_IDS)
@pytest.mark.parametrize("pattern", PATTERNS)
@pytest.mark.parametrize("key", KEYS)
def test_a_tool_pattern_that_can_match_no_tool_is_refused(key: str, pattern: str, _id: str, mutate: Any,
                                                         recoverable: bool) -> None:
    value = mutate(pattern)
    text = _refused(_agent(key, value))
    _check(text, f"[agents.support] {key}", value, pattern if recoverable else None)


@pytest.mark.parametrize(("_id", "mutate", "recoverable"), MUTATIONS, ids=MUTATION_IDS)
@pytest.mark.parametrize("prefix,name", [("tag:", "filesystem"), ("tag:", "external_api"), ("plugin:", "reach-*"),
                                         ("plugin:", "reach-sh?ll")])
@pytest.mark.parametrize("key", ["deny", "approval"])
def test_a_tag_or_plugin_pattern_that_can_match_nothing_is_refused(key: str, prefix: str, name: str, _id: str,
                                                                   mutate: Any, recoverable: bool) -> None:
    """The name after ``tag:``/``plugin:`` mutated (``deny = ["tag:filesystem "]`` denied
    nothing; a ``plugin:`` glob was never looked up)."""
    value = prefix + mutate(name)
    text = _refused(_agent(key, value))
    _check(text, f"[agents.support] {key}", value, prefix + name if recoverable else None)


# globs a person writes that no tool name (1-64 of [A-Za-z0-9_-]) can match, with the name meant
NON_NAMES = [
    ("shell.run", "shell_run"), ("send email", "send_email"), ("shell/run", "shell_run"),
    ("delete_all *", "delete_all_*"),
    ("sql_*;", "sql_*"), ("shell\\run", "shell_run"), ("shell,run", "shell_run"), ("shell_run;rm", "shell_run_rm"),
    ("café_*", "cafe_*"), ("send-e‑mail", "send-e-mail"), ("🔥*", None), ("delete_all\"", "delete_all"),
    ("'delete_all'", "delete_all"), ("sql_[a-z ]*", None), ("[^s]*", "[!s]*"), ("sql_[^x]", "sql_[!x]"),
    ("[!s", None), ("sql_[ab", None), ("x" * 65, None), ("a" * 100, None), ("shell+run", "shell_run"),
    ("shell@run", "shell_run"), ("shell#run", "shell_run"), ("shell_run()", "shell_run"), ("<shell_run>", "shell_run"),
    ("[]]", None), ("sql_[]]", None), ("[.]*", None), ("shell_run$", "shell_run"), ("^shell_run", "shell_run"),
]


@pytest.mark.parametrize(("pattern", "meant"), NON_NAMES, ids=[ascii(p)[:30] for p, _ in NON_NAMES])
@pytest.mark.parametrize("key", KEYS)
def test_a_glob_of_characters_no_tool_name_holds_is_refused(key: str, pattern: str, meant: str | None) -> None:
    text = _refused(_agent(key, pattern))
    _check(text, f"[agents.support] {key}", pattern, None)
    if meant is not None and meant != pattern:
        assert f"did you mean `{meant}`?" in text, text


APPROVAL_TIERS = [("Dangerous", "dangerous"), ("DANGEROUS", "dangerous"), ("Write", "write"), ("READ", "read"),
                  ("Read", "read"), ("dangerous\n", "dangerous"), (" write", "write"), ("dangerous\u200b", "dangerous"),
                  ("dаngerous", "dangerous"), ("ｒｅａｄ", "read")]


@pytest.mark.parametrize(("tier", "meant"), APPROVAL_TIERS, ids=[ascii(t) for t, _ in APPROVAL_TIERS])
def test_an_approval_tier_not_written_as_a_tier_is_refused(tier: str, meant: str) -> None:
    """``approval = {Dangerous = "always"}`` was taken as a tool named ``Dangerous``:
    dangerous tools kept running without approval."""
    text = _refused({"agents": {"ops": {"approval": {tier: "always"}}}})
    _check(text, "[agents.ops] approval", tier, meant)


def test_what_a_refused_deny_did_before(tmp_path: Path) -> None:
    """Why these must not get past config: a deny entry with a zero-width space denied nothing."""

    @connector(risk="dangerous")
    def wipe(target: str) -> str:
        """Wipe a target."""
        return target

    reach = make_reach(config={"agents": {"ops": {"deny": ["wipe"]}}}, data_dir=tmp_path)
    reach.register(wipe)
    tool = reach.tool("wipe")
    assert not reach.policy("ops").allows(tool)
    for typo in ("wipe\u200b", "wipe ", "ｗipe", "wіpe", "[^x]ipe", "tag:danger\xa0"):
        assert Policy("ops", AgentConfig(deny=[typo])).allows(tool), typo  # the typo denied nothing
        with pytest.raises(ConfigError):
            make_reach(config={"agents": {"ops": {"deny": [typo]}}}, data_dir=tmp_path)


# ------------------------------------------------------------------ connectors
@pytest.mark.parametrize(("_id", "mutate", "recoverable"), MUTATIONS, ids=MUTATION_IDS)
@pytest.mark.parametrize("tool", ["shell_run", "get_weather"])
def test_a_connectors_table_no_tool_has_is_refused(tool: str, _id: str, mutate: Any, recoverable: bool) -> None:
    """``[connectors."shell_run "] enabled = false`` removed nothing."""
    name = mutate(tool)
    text = _refused({"connectors": {name: {"enabled": False, "risk": "dangerous"}}})
    _check(text, f"[connectors.{_toml_table(name)}]", name, f"[connectors.{tool}]" if recoverable else None)


@pytest.mark.parametrize("name", ["sql_*", "shell.run", "shell run", "x" * 65, "get_?eather", "tag:files",
                                  "plugin:reach-shell"])
def test_a_connectors_table_that_is_no_tool_name_is_refused(name: str) -> None:
    """A glob or a non-name there is taken as an exact tool name: its settings applied to none."""
    text = _refused({"connectors": {name: {"enabled": False}}})
    assert "no tool's name" in text or "can match" in text or "no tool has" in text, text
    assert ascii(name)[1:-1][:40] in text, text


@pytest.mark.parametrize(("_id", "mutate", "recoverable"), MUTATIONS, ids=MUTATION_IDS)
@pytest.mark.parametrize("tag", ["filesystem", "ops"])
def test_a_connector_tag_no_pattern_can_name_is_refused(tag: str, _id: str, mutate: Any, recoverable: bool) -> None:
    """``tags = ["ops "]`` added a tag ``deny = ["tag:ops"]`` never matched."""
    value = mutate(tag)
    text = _refused({"connectors": {"shell_run": {"tags": ["shell", value]}}})
    _check(text, "[connectors.shell_run] tags", value, tag if recoverable else None)


# ------------------------------------------------------------------ delegates, token maps, secrets
@pytest.mark.parametrize(("_id", "mutate", "recoverable"), MUTATIONS, ids=MUTATION_IDS)
def test_a_delegate_named_with_odd_characters_is_refused_when_read(_id: str, mutate: Any, recoverable: bool) -> None:
    """Before, only ``Reach(...)`` found it (``reach config check`` passed it)."""
    value = mutate("researcher")
    text = _refused({"agents": {"main": {"delegates": [value]}, "researcher": {}}})
    _check(text, "[agents.main] delegates", value, "researcher" if recoverable else None)


class _Reach:
    def __init__(self, *agents: str) -> None:
        self.config = load_config({"agents": {a: {} for a in agents}})


TOKEN_TYPOS = ["supp\u200bort", "suppоrt", "ｓｕｐｐｏｒｔ", "\ufeffsupport", "sup\xadport", "ѕupport", "Supp\u2060ort",
               "default\u200b", "ԁefault"]


@pytest.mark.parametrize("name", TOKEN_TYPOS, ids=ascii)
def test_a_token_map_naming_an_agent_almost_right_says_which_and_what_was_meant(name: str) -> None:
    """reach-serve / reach-mcp ``tokens``: the message shows the invisible or look-alike
    character and names the agent meant (before: ``'supp\u200bort'`` printed as
    ``'supp​ort'`` with no hint)."""
    with pytest.raises(ConfigError) as err:
        require_agents(_Reach("support", "ops"), [("tokens", name)], "plugins.reach-serve")
    text = str(err.value)
    assert ascii(name) in text, text
    meant = "default" if "efault" in name else "support"
    assert f"did you mean '{meant}'?" in text, text


SECRET = "S3cr3t-Passw0rd-xyz"
SECRET_NAMES = [f"postgresql://u:{SECRET}@db/x", f"redis://:{SECRET}@cache:6379/0", f"https://u:{SECRET}@h.test/*",
                f"amqp://bot:{SECRET}@mq "]


@pytest.mark.parametrize("value", SECRET_NAMES)
@pytest.mark.parametrize("where", ["deny", "approval", "agent", "connector", "tag"])
def test_a_password_pasted_into_a_name_is_masked_in_the_error(where: str, value: str) -> None:
    if where == "agent":  # any text names an agent: only an odd one is refused
        config: dict[str, Any] = {"agents": {value.strip() + "\u200b": {}}}
    elif where == "connector":
        config = {"connectors": {value: {"enabled": False}}}
    elif where == "tag":
        config = {"agents": {"a": {"deny": ["tag:" + value + " "]}}}
    else:
        config = _agent(where, value)
    try:
        load_config(config)
    except ConfigError as exc:
        assert SECRET not in str(exc), str(exc)
        return
    raise AssertionError("accepted a name no tool or agent can have")


# ------------------------------------------------------------------ controls: what must still load
def test_control_a_real_config_loads_unchanged() -> None:
    data = {
        "agents": {
            "default": {"max_tier": "write"},
            "support": {"allow": ["get_weather", "sql_*", "get_[wx]eather", "tag:external_api", "plugin:reach-*",
                                  "risk:read", "send-mail", "?et_weather", "[!x]*"],
                        "deny": ["sql_drop*", "tag:two words", "tag:mcp:files", "tag:跑步", "tag:файлы",
                                 "plugin:reach-sh?ll"],
                        "approval": {"dangerous": "always", "write": "once", "send_*": "run",
                                     "risk:dangerous": "always", "tag:payments": "always"},
                        "pinned": ["get_weather"], "delegates": ["ops.bot", "поддержка"]},
            "ops.bot": {}, "поддержка": {"allow": ["*"]}, "サポート": {}, "Support-2": {}, "a": {},
        },
        "connectors": {
            "get_weather": {"tags": ["跑步", "two words", "mcp:files", "файлы"],
                            "keywords": ["  café  ", "wetter\xa0heute", "天气\u200b", "", "line\nbreak", "Ｆｕｌｌ"],
                            "description": " Weather\u200b of a city. "},
            "x" * 64: {"enabled": False},
        },
    }
    cfg = load_config(data)
    for name, table in data["agents"].items():
        got = cfg.agents[name].model_dump(exclude_unset=True)
        assert got == table, (name, got)
    weather = cfg.connectors["get_weather"]
    assert weather.keywords == data["connectors"]["get_weather"]["keywords"]  # free text: kept as written
    assert weather.tags == data["connectors"]["get_weather"]["tags"]
    assert weather.description == " Weather\u200b of a city. "
    assert list(cfg.connectors) == ["get_weather", "x" * 64]


@pytest.mark.parametrize("name", ["support", "ops.bot", "ops bot", "поддержка", "サポート", "客服", "Support", "a",
                                  "support-2", "δοκιμή", "ops:bot", "x" * 200])
def test_control_agent_names_of_any_script_load(name: str) -> None:
    assert name in load_config({"agents": {name: {"deny": ["*"]}}}).agents


@pytest.mark.parametrize("pattern", ["*", "?", "sql_*", "[!s]*", "get_[wx]eather", "send-mail", "A_B", "x" * 64,
                                     "*" + "x" * 70, "[!]]x", "[!.]*", "[!^]x", "[a-z]*", "tag:跑步", "tag:a b",
                                     "tag:mcp:files", "plugin:reach-*", "plugin:reach.weather*", "risk:dangerous"])
@pytest.mark.parametrize("key", KEYS)
def test_control_patterns_that_can_match_load(key: str, pattern: str) -> None:
    load_config(_agent(key, pattern))


async def test_control_a_case_difference_stays_a_logged_warning(tmp_path: Path, caplog: Any) -> None:
    """``deny = ["Send_Email"]`` is a valid tool name (a tool of that name may be registered
    later), so it keeps the documented rule: a `reach.config_unknown_tool` warning at start
    naming the tool meant, not a refusal."""

    @connector(risk="write")
    def send_email(to: str) -> str:
        """Send an email."""
        return to

    reach = make_reach(config={"agents": {"a": {"deny": ["Send_Email"]}}}, data_dir=tmp_path)
    reach.register(send_email)
    with caplog.at_level(logging.WARNING, logger="reach"):
        await reach.start()
    await reach.aclose()
    warned = [r.reach_event["problem"] for r in caplog.records
              if getattr(r, "reach_event", {}).get("event") == "reach.config_unknown_tool"]
    assert len(warned) == 1 and "did you mean `send_email`?" in warned[0], warned
