"""reach_core.lazy.exports: a package's public names imported on first use."""

from __future__ import annotations

import sys

import pytest


def test_names_import_on_first_use_and_stay(tmp_path, monkeypatch):
    pkg = tmp_path / "lazypkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text(
        "from reach_core.lazy import exports\n"
        "__getattr__ = exports(__name__, {'Heavy': 'heavy', 'Dotted': '.heavy'})\n"
    )
    (pkg / "heavy.py").write_text("class Heavy: pass\nDotted = 42\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    import lazypkg

    assert "lazypkg.heavy" not in sys.modules
    assert lazypkg.Heavy.__name__ == "Heavy" and lazypkg.Dotted == 42
    assert "lazypkg.heavy" in sys.modules and "Heavy" in vars(lazypkg)  # kept: no second lookup
    with pytest.raises(AttributeError, match="module 'lazypkg' has no attribute 'Missing'"):
        _ = lazypkg.Missing
    for name in [m for m in sys.modules if m.startswith("lazypkg")]:
        del sys.modules[name]
