"""The fallback estimate stays close to cl100k on the kinds of results tools return."""

from __future__ import annotations

import random

import pytest
from conftest import tokens
from reach_shape.tokens import estimate_tokens

from reach_core.result import dumps

_rng = random.Random(7)
_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"

SAMPLES = {
    "rows": dumps({"rows": [[i, f"name {i}"] for i in range(300)]}),
    "records": dumps([{"id": i, "name": f"user{i}", "email": f"u{i}@example.com", "active": i % 2 == 0}
                      for i in range(200)]),
    "nested": dumps({"a": {"b": [{"c": [1, 2, {"d": None}]}] * 50}}),
    "numbers": dumps([_rng.random() * 100 for _ in range(300)]),
    "ids": dumps({"ids": ["res_" + "".join(_rng.choices(_ALPHABET, k=12)) for _ in range(100)]}),
    "log": "\n".join(f"2026-11-30 09:{i % 60:02d}:12,345 INFO worker[{i}] GET /api/v1/items/{i * 7} took {i % 97}ms"
                     for i in range(300)),
    "html": "".join(f'<div class="item"><a href="/p/{i}">Product {i}</a><span>${i}.99</span></div>\n'
                    for i in range(200)),
    "english": ("The model brings the intelligence; reach brings the reliability. A tool call names what the "
                "agent wants to do, and reach checks it, runs it under timeouts and limits, and hands back a "
                "small, clean result. ") * 20,
}


@pytest.mark.parametrize("kind", sorted(SAMPLES))
def test_estimate_is_within_fifteen_percent_of_cl100k(kind):
    text = SAMPLES[kind]
    actual, estimate = tokens(text), estimate_tokens(text)
    assert 0.85 <= actual / estimate <= 1.15, (kind, actual, estimate)


def test_estimate_errs_on_the_side_of_fitting_for_structured_results():
    for kind in ("rows", "records", "nested", "numbers", "log", "html"):
        assert estimate_tokens(SAMPLES[kind]) >= tokens(SAMPLES[kind]), kind
