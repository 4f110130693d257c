"""Service names are checked to their last character: a trailing newline (which `$`
lets through) or any other odd character is refused when the settings load."""

from __future__ import annotations

import pytest
from reach_http import build_connectors

from reach_core import ConfigError

BAD = ["svc\n", "svc\r\n", "svc\n\n", "svc\x00", "svc ", " svc", "s vc", "svc\t", "\nsvc", "svc\u2028", "svc.x",
       "", "s" * 65, "svc\u200b"]


@pytest.mark.parametrize("name", BAD)
def test_odd_service_names_are_refused(name: str) -> None:
    with pytest.raises(ConfigError, match="service name"):
        build_connectors({"services": {name: {"base_url": "https://api.example.com"}}})


@pytest.mark.parametrize("name", ["svc", "crm-api", "a_1", "A", "s" * 64])
def test_simple_service_names_load(name: str) -> None:
    assert build_connectors({"services": {name: {"base_url": "https://api.example.com"}}})
