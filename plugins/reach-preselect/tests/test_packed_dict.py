"""The packed dictionary behind Chinese glosses behaves like a dict (first value wins)."""

from __future__ import annotations

from reach_preselect.crosslingual import _PackedDict


def test_first_value_wins_and_missing_keys():
    d = _PackedDict(capacity=8)
    d.add("天气", "weather/climate/")
    d.add("天气", "something else")
    assert d.get("天气") == "weather/climate/" and "天气" in d
    assert d.get("航班") is None and "航班" not in d and 42 not in d
    assert len(d) == 1


def test_grows_and_keeps_every_entry():
    d = _PackedDict(capacity=8)
    words = [f"词{i}" for i in range(1000)]
    for i, w in enumerate(words):
        d.add(w, f"sense {i}")
    assert len(d) == 1000
    assert all(d.get(w) == f"sense {i}" for i, w in enumerate(words))
