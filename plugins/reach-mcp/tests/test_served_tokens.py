"""A bearer token in ``[plugins.reach-mcp.server] tokens`` must be a real secret.

``clients`` entries required 8 characters; ``tokens`` took any string. The gate strips
what the client sends, so ``tokens = { "" = "ops" }`` (an empty key, e.g. a secret
pasted wrong) let ``Authorization: Bearer`` followed by spaces in as ``ops``, and a
three-letter token is guessed. Tokens shorter than 8 characters, and tokens with
spaces around them (which the stripped header could never match), are config errors.
"""

from __future__ import annotations

import pytest
from pydantic import ValidationError
from reach_mcp.server import TokenGate
from reach_mcp.settings import ClientEntry, ServeSettings

BAD = ["", " ", "  ", "\t", "a", "abc", "1234567", " abcdefgh", "abcdefgh ", "\tabcdefgh", "abcdefgh\n", "        ",
       "\u00a0abcdefgh"]


@pytest.mark.parametrize("token", BAD)
def test_a_short_or_padded_token_is_refused_in_tokens(token: str) -> None:
    with pytest.raises(ValidationError, match="token"):
        ServeSettings(tokens={token: "ops"})


@pytest.mark.parametrize("token", BAD)
def test_a_short_or_padded_token_is_refused_in_clients(token: str) -> None:
    with pytest.raises(ValidationError):
        ClientEntry(token=token, agent="ops")


@pytest.mark.parametrize("header", ["Bearer ", "Bearer  ", "Bearer   ", "Bearer \t", "bearer  ", "BEARER  ",
                                    "Bearer\t", "Bearer", ""])
def test_an_empty_bearer_never_passes_the_gate(header: str) -> None:
    gate = TokenGate(None, ServeSettings(tokens={"tok-long-enough-1": "ops"}))
    ok, agent = gate.agent_for(header or None)
    assert not ok and agent is None


def test_even_a_gate_holding_an_empty_token_refuses_an_empty_bearer() -> None:
    """What the refused config did: a gate holding the empty token let `Bearer  ` in. The header's
    reading now refuses a bearer without a token before any comparison, a second guard."""
    gate = TokenGate(None, ServeSettings(tokens={"tok-long-enough-1": "ops"}))
    gate.tokens.append((b"", "ops"))  # as a ServeSettings with "" in tokens produced it
    for header in ("Bearer  ", "Bearer", "Bearer \t"):
        assert gate.agent_for(header) == (False, None)


@pytest.mark.parametrize("token", ["abcdefgh", "tok-dev-only-123", "x" * 200, "Zx9-_.~+/=Zx9"])
def test_good_tokens_are_accepted(token: str) -> None:
    gate = TokenGate(None, ServeSettings(tokens={token: "ops"}, clients=[ClientEntry(token=token + "2", agent="x")]))
    assert gate.agent_for(f"Bearer {token}") == (True, "ops")
