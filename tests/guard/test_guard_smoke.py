from reach_core import connector


async def test_smoke(make_reach):
    @connector(risk="read")
    def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    r = make_reach(add)
    res = await r.invoke("add", {"a": 1, "b": 2})
    assert res.ok, res
    assert res.content == 3
