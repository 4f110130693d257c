"""Importing wordllama (whose ``__init__`` calls ``logging.basicConfig(level=INFO)``) leaves the
host's root logger as it was, and takes nothing the host did meanwhile.

Each case runs in a fresh interpreter: wordllama is imported once per process.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

CHILD = textwrap.dedent('''
    import json, logging, sys, threading

    class HostHandler(logging.Handler):
        def emit(self, record): pass

    root = logging.getLogger()
    {host}
    before = [repr(h) for h in root.handlers], root.level

    class DuringImport:  # what a host thread does while wordllama is being imported
        def find_spec(self, name, path=None, target=None):
            if name == "wordllama" and {during}:
                root.addHandler(HostHandler())
            return None

    sys.meta_path.insert(0, DuringImport())
    from reach_preselect.embedders import _load_wordllama
    _load_wordllama("l2_supercat", 256)
    logging.getLogger("host").warning("the host's own warning")  # must reach the host's handlers only
    print(json.dumps({{"before": before, "after": ([repr(h) for h in root.handlers], root.level)}}))
''')

HOSTS = {
    "bare": "",
    "configured": "root.addHandler(HostHandler()); root.setLevel(logging.DEBUG)",
}


def _run(host: str, during: bool) -> tuple[dict, str]:
    code = CHILD.format(host=HOSTS[host], during=during)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout), done.stderr


@pytest.mark.parametrize("host", sorted(HOSTS))
def test_the_root_logger_is_left_as_the_host_had_it(host: str) -> None:
    state, err = _run(host, during=False)
    assert state["after"] == state["before"]
    if host == "bare":  # only the host's own warning, by Python's last resort: no handler was left behind
        assert err == "the host's own warning\n"


def test_a_handler_the_host_adds_during_the_import_is_kept() -> None:
    state, _ = _run("bare", during=True)
    assert state["before"] == [[], 30]
    assert [h.split(" ")[0] for h in state["after"][0]] == ["<HostHandler"] and state["after"][1] == 30
