"""The facade sits on top: no module below ``reach.py`` imports it, not even for typing.

The pipeline, the turn runner, streaming, the call context, delegation and the
executor read a ``Runtime`` (``reach_core.runtime``); only the facade's own
neighbours (the package's public table, the CLI, the test helpers) may import ``Reach``.
"""

from __future__ import annotations

import ast
from pathlib import Path

import reach_core

ROOT = Path(reach_core.__file__).parent
#: modules allowed to import the facade: itself, the public table, the CLI and the test helpers
ABOVE = {"reach.py", "__init__.py", "testing.py"}


def _modules() -> list[Path]:
    return sorted(p for p in ROOT.rglob("*.py")
                  if p.relative_to(ROOT).as_posix() not in ABOVE and not p.name.startswith("cli"))


def _imports_facade(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = ".".join(("reach_core", *path.relative_to(ROOT).parent.parts))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                module = ".".join([*base, *([node.module] if node.module else [])])
            else:
                module = node.module or ""
            names = [f"{module}.{a.name}" for a in node.names]
            if module == "reach_core.reach" or "reach_core.reach" in names:
                found.append(f"line {node.lineno}: from {'.' * node.level}{node.module or ''} import ...")
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == "reach_core.reach":
                    found.append(f"line {node.lineno}: import {alias.name}")
    return found


def test_no_module_below_the_facade_imports_it():
    offenders = {p.relative_to(ROOT).as_posix(): hits for p in _modules() if (hits := _imports_facade(p))}
    assert offenders == {}


def test_the_check_sees_an_import_of_the_facade(tmp_path):
    """The check can fail: each spelling of the import is caught."""
    sub = ROOT / "builtin"
    for text in ("from ..reach import Reach\n", "from .. import reach\n", "import reach_core.reach\n",
                 "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from reach_core.reach import Reach\n"):
        probe = sub / "_probe_layers.py"
        probe.write_text(text, encoding="utf-8")
        try:
            assert _imports_facade(probe), text
        finally:
            probe.unlink()


def test_no_core_module_reads_the_facades_private_state():
    """``reach._x`` from a core module would bring the facade back into the hot path."""
    import re

    pattern = re.compile(r"\breach\._[a-z]")
    offenders = [f"{p.relative_to(ROOT)}:{i}" for p in _modules()
                 for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1) if pattern.search(line)]
    assert offenders == []


async def test_the_facade_hands_invoke_to_the_runtime_and_a_subclass_may_override_it(tmp_path):
    from reach_core import Reach, ToolResult
    from reach_core.pipeline import invoke

    r = Reach({"reach": {"data_dir": str(tmp_path)}}, plugins=[])
    assert r.invoke.func is invoke and r.invoke.args == (r.runtime,)  # no frame between caller and pipeline

    class Counting(Reach):
        calls = 0

        async def invoke(self, call, arguments=None, **kw):  # type: ignore[override]
            Counting.calls += 1
            return await super().invoke(call, arguments, **kw)

    c = Counting({"reach": {"data_dir": str(tmp_path)}}, plugins=[])
    result = await c.invoke("nope", {})
    assert isinstance(result, ToolResult) and result.error.code == "unknown_tool" and Counting.calls == 1


def test_the_loop_reads_the_facade_only_through_its_agent_port(tmp_path):
    """``run_agent`` takes an ``AgentPort``; ``Reach`` satisfies it, and an object lacking
    a member the loop reads does not."""
    from reach_core import Reach
    from reach_core.loop import AgentPort

    reach = Reach({"reach": {"data_dir": str(tmp_path)}}, plugins=[])
    assert isinstance(reach, AgentPort)

    class Partial:
        runtime = reach.runtime
        config = reach.config

    assert not isinstance(Partial(), AgentPort)
    loop_src = (ROOT / "loop.py").read_text(encoding="utf-8")
    port_members = {n for n in AgentPort.__dict__ if not n.startswith("_")}
    import re

    read = set(re.findall(r"(?<![.\w])reach\.([a-z_]+)\b", loop_src.split("async def run_agent(", 1)[1]))
    assert read <= port_members | {"run", "loop"}, read - port_members  # run/loop: in messages, not attributes
