"""Fixtures: a Reach holding only reach-notes, with its notes in a temporary data dir."""

from __future__ import annotations

import pytest


@pytest.fixture
async def make_notes_reach(tmp_path):
    import reach_notes.plugin as plugin

    from reach_core.testing import make_reach

    made = []

    def make(settings: dict | None = None, data_dir=None):
        reach = make_reach(
            plugin,
            config={"plugins": {"reach-notes": settings or {}}},
            data_dir=data_dir or tmp_path / "data",
        )
        made.append(reach)
        return reach

    yield make
    for reach in made:
        await reach.aclose()


@pytest.fixture
def notes_reach(make_notes_reach):
    return make_notes_reach()
