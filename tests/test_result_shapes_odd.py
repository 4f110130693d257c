"""A connector whose answer refers to itself or is nested very deeply: the call fails
clearly (execution_failed, naming the tool, saying it ran), not as reach's internal error,
and the next call works."""

from __future__ import annotations

from typing import Any

import pytest

from reach_core import Reach, connector


def _cyclic_dict() -> Any:
    d: dict[str, Any] = {"a": 1}
    d["self"] = d
    return d


def _cyclic_list() -> Any:
    xs: list[Any] = [1]
    xs.append(xs)
    return xs


def _through_a_dict() -> Any:
    xs: list[Any] = []
    xs.append({"items": xs})
    return {"root": xs}


def _deep(n: int) -> Any:
    out: Any = "leaf"
    for _ in range(n):
        out = {"k": out}
    return out


def _deep_list(n: int) -> Any:
    out: Any = 1
    for _ in range(n):
        out = [out]
    return out


ODD = {
    "cyclic dict": _cyclic_dict,
    "cyclic list": _cyclic_list,
    "cycle through a dict": _through_a_dict,
    "dict 5000 deep": lambda: _deep(5000),
    "list 5000 deep": lambda: _deep_list(5000),
    "set holding a deep tuple": lambda: {"s": (_deep_list(3000),)},
}


@pytest.mark.parametrize("kind", list(ODD))
@pytest.mark.parametrize("risk", ["read", "write"])
async def test_an_answer_that_cannot_be_json_fails_that_call_clearly(kind: str, risk: str) -> None:
    ran: list[int] = []

    @connector(name="odd", risk=risk)
    def odd() -> Any:
        """Return an odd answer."""
        ran.append(1)
        return ODD[kind]()

    @connector(name="fine", risk="read")
    def fine() -> dict[str, int]:
        """Return a fine answer."""
        return {"ok": 1}

    reach = Reach(plugins=[])
    reach.register(odd)
    reach.register(fine)
    result = await reach.invoke("odd", {})
    assert not result.ok
    assert result.error.code == "execution_failed"
    assert "internal error" not in result.error.message
    assert "odd ran" in result.error.message and "do not resend" in result.error.message
    assert ran == [1]  # run once, not retried
    again = await reach.invoke("fine", {})
    assert again.ok and again.content == {"ok": 1}
