"""Names and annotations: what a model and reach's policy see of a remote tool."""

from __future__ import annotations

from typing import Any

import mcp_types as types
import pytest
from reach_mcp import annotations_for, risk_from_annotations, tool_name
from reach_mcp.settings import McpSettings

from reach_core.tool import NAME_RE


@pytest.mark.parametrize("remote", ["weather", "files.read", "a/b c", "x" * 90, "工具"])
def test_names_are_always_legal_and_prefixed(remote: str) -> None:
    name = tool_name("srv", remote)
    assert NAME_RE.match(name), name
    assert name.startswith("srv__")


def test_sanitised_names_do_not_collide() -> None:
    assert tool_name("s", "a.b") != tool_name("s", "a_b")
    assert tool_name("s", "x" * 90) != tool_name("s", "x" * 91)
    assert tool_name("s", "plain") == "s__plain"


@pytest.mark.parametrize(
    ("ann", "risk", "idem"),
    [
        (types.ToolAnnotations(read_only_hint=True), "read", True),
        (types.ToolAnnotations(destructive_hint=True), "dangerous", None),
        (types.ToolAnnotations(destructive_hint=False, idempotent_hint=True), "write", True),
        (None, "write", None),
    ],
)
def test_annotations_map_to_tiers(ann: types.ToolAnnotations | None, risk: str, idem: bool | None) -> None:
    assert risk_from_annotations(ann) == (risk, idem)


def test_min_risk_is_a_floor_for_untrusted_servers() -> None:
    ro = types.ToolAnnotations(read_only_hint=True)
    assert risk_from_annotations(ro, min_risk="write")[0] == "write"
    assert risk_from_annotations(ro, min_risk="dangerous")[0] == "dangerous"
    assert risk_from_annotations(None, default_risk="dangerous")[0] == "dangerous"


def test_tiers_map_back_to_annotations() -> None:
    assert annotations_for("read", True).read_only_hint is True
    dangerous = annotations_for("dangerous", False)
    assert (dangerous.read_only_hint, dangerous.destructive_hint) == (False, True)
    write = annotations_for("write", True)
    assert (write.destructive_hint, write.idempotent_hint) == (False, True)


def test_settings_need_exactly_one_transport() -> None:
    with pytest.raises(ValueError, match="exactly one"):
        McpSettings.model_validate({"servers": {"x": {"command": "a", "url": "http://h/mcp"}}})
    with pytest.raises(ValueError, match="exactly one"):
        McpSettings.model_validate({"servers": {"x": {}}})
    with pytest.raises(ValueError, match="server name"):
        McpSettings.model_validate({"servers": {"bad name": {"command": "a"}}})


def test_serve_group_is_shared_with_other_plugins() -> None:
    import click
    from reach_mcp.commands import add_commands

    @click.group()
    def cli() -> None: ...

    other = click.Group("serve")
    other.add_command(click.Command("http", callback=lambda: None))
    cli.add_command(other)
    add_commands(cli)
    assert cli.commands["serve"] is other
    assert set(other.commands) == {"http", "mcp"}
    fresh = click.Group("root")
    add_commands(fresh)
    assert set(fresh.commands["serve"].commands) == {"mcp"}  # type: ignore[attr-defined]


def test_result_content_shapes() -> None:
    from reach_mcp.results import content_of

    from reach_core import BusinessError

    def result(*blocks: Any, structured: Any = None, error: bool = False) -> types.CallToolResult:
        return types.CallToolResult(content=list(blocks), structured_content=structured, is_error=error)

    text = types.TextContent(type="text", text='{"a": 1}')
    image = types.ImageContent(type="image", data="QUJD", mime_type="image/png")
    assert content_of(result(text, structured={"b": 2}), server="s", tool="t") == {"b": 2}
    assert content_of(result(text), server="s", tool="t") == {"a": 1}  # JSON text is not double-encoded
    assert content_of(result(types.TextContent(type="text", text="plain")), server="s", tool="t") == "plain"
    assert content_of(result(text, image), server="s", tool="t") == [
        {"type": "text", "text": '{"a": 1}'}, {"type": "image", "mime_type": "image/png", "base64_chars": 4}]
    assert content_of(result(), server="s", tool="t") is None
    with pytest.raises(BusinessError, match="t \\(MCP server 's'\\) failed: no such account"):
        content_of(result(types.TextContent(type="text", text="no such account"), error=True), server="s", tool="t")


@pytest.mark.parametrize(("risk", "tags", "expected"), [
    ("read", (), False), ("read", ("computation",), False), ("read", ("files",), False),
    ("read", ("database", "sql"), False), ("read", ("file_system",), False),
    ("read", ("external_api",), True), ("read", ("mcp", "mcp:demo"), True), ("read", ("open_world",), True),
    ("write", ("notify", "message"), True), ("write", (), None), ("dangerous", ("payments",), None),
    ("write", ("external_api",), True),
])
def test_open_world_hint_says_false_only_for_read_tools_that_stay_inside(risk, tags, expected):
    from types import SimpleNamespace

    from reach_mcp.annotations import open_world

    tool = SimpleNamespace(risk=risk, tags=tags)
    assert open_world(tool) is expected
    assert annotations_for(risk, True, open_world=open_world(tool)).open_world_hint is expected


@pytest.mark.parametrize(("one", "other"), [
    (("a:b", "c"), ("a", "b:c")), (("support", "k"), ("support:", "k")), (("x", ":y"), ("x:", "y")),
    (("", "a:b"), (":a", "b")), (("ops", "1"), ("ops", "1 ")), (("1:a", "b"), ("1", "a:b")),
])
def test_scoped_idempotency_keys_never_collide_across_agents(one, other):
    from reach_mcp.server import scoped_key

    assert scoped_key(*one) != scoped_key(*other)
    assert scoped_key(*one) == scoped_key(*one)
