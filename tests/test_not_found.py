"""``NotFound`` takes the thing that was not found, or a whole message, and never doubles the sentence."""

from __future__ import annotations

import pytest

from reach_core import NotFound


@pytest.mark.parametrize("what", [
    "order A-17", "product 999", "the city 'Atlantis'", "user ann@example.com", "北京的天气站",
    "file notes/2024-05-01.md",
])
def test_a_thing_gets_the_standard_sentence(what):
    assert str(NotFound(what)) == f"{what} was not found; check the name or ask the user."


@pytest.mark.parametrize("message", [
    "no product 999; ask the user for the product number",
    "No order A-17. Ask the user to check the number.",
    "there is no city called Atlantis",
    "There are no notes for that day",
    "unknown currency XYZ; use an ISO code such as EUR",
    "the file notes.md does not exist",
    "the file notes.md doesn't exist",
    "no such table: orders",
    "cannot find the customer; ask for their e-mail",
    "city not found: Atlantis",
    "Order A-17 is not known to the shop!",
])
def test_a_whole_message_is_kept_as_it_is(message):
    text = str(NotFound(message))
    assert text.startswith(message)
    assert "was not found; check the name" not in text
    assert text.count(message) == 1 and text[-1] in ".!?"


def test_an_explicit_message_wins():
    assert str(NotFound("order A-17", message="Order A-17 was cancelled and archived.")) == (
        "Order A-17 was cancelled and archived.")
