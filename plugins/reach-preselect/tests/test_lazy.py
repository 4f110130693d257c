"""Importing the plugin (and starting reach with it) loads no model."""

from __future__ import annotations

import json
import subprocess
import sys

HEAVY = ("wordllama", "bm25s", "Stemmer", "tokenizers", "openai")


def _modules_after(code: str) -> dict[str, bool]:
    script = code + f"\nimport sys, json\nprint(json.dumps({{m: m in sys.modules for m in {HEAVY!r}}}))"
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_importing_the_plugin_imports_no_model():
    loaded = _modules_after("import reach_preselect.plugin, reach_preselect")
    assert not any(loaded.values()), loaded


def test_building_reach_with_the_plugin_loads_no_model(tmp_path):
    loaded = _modules_after(
        "import reach_preselect.plugin as p\n"
        "from reach_core.testing import make_reach\n"
        f"r = make_reach(p, data_dir={str(tmp_path)!r})\n"
        "r.tools()\n"
    )
    assert not any(loaded.values()), loaded


def test_first_selection_loads_the_model(reach):
    reach.tools(query="weather", limit=2)
    assert "wordllama" in sys.modules
