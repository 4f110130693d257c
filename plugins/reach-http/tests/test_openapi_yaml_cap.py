"""The 1,000,000-value cap on YAML OpenAPI documents is checked while parsing, before composing.

libyaml used to compose every node of the document before the cap was looked at, so a flat
list of 1.1M scalars took half a minute (CPU) to be refused. Now the parser's events are
counted (an alias as the size of what it names, at every use) and parsing stops at the cap.

Each document here is counted by an independent oracle (PyYAML's pure-Python composer and
a plain recursive count), and the cap is tried at that count (loads) and one below (refused).
"""

from __future__ import annotations

import time
from typing import Any

import pytest
import yaml
from reach_http.openapi.loader import MAX_NODES, parse_document
from reach_http.openapi.schema import OpenAPIError

HEAD = "openapi: 3.0.3\ninfo: {title: t, version: '1'}\n"
TAIL = "paths: {}\n"


def _oracle(text: str) -> int:
    """Values in ``text`` with aliases counted at each use, by composing it (small documents only)."""
    def count(node: Any) -> int:
        if isinstance(node, yaml.ScalarNode):
            return 1
        if isinstance(node, yaml.SequenceNode):
            return 1 + sum(count(c) for c in node.value)
        return 1 + sum(count(k) + count(v) for k, v in node.value)

    return count(yaml.compose(text, Loader=yaml.SafeLoader))


DOCS = {
    "flat-flow": HEAD + "x: [" + ", ".join(str(i) for i in range(300)) + "]\n" + TAIL,
    "flat-block": HEAD + "x:\n" + "".join(f"  - {i}\n" for i in range(300)) + TAIL,
    "mapping": HEAD + "x:\n" + "".join(f"  k{i}: v{i}\n" for i in range(200)) + TAIL,
    "alias-list": HEAD + "a: &a [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]\nb: [" + ", ".join(["*a"] * 40) + "]\n" + TAIL,
    "alias-map": HEAD + "a: &a {p: 1, q: [2, 3]}\nb: {" + ", ".join(f"k{i}: *a" for i in range(50)) + "}\n" + TAIL,
    "nested-anchors": HEAD + "a: &a [x, y]\nb: &b [*a, *a, *a]\nc: &c {m: *b, n: *b}\nd: [*c, *c, *c, *b, *a]\n"
    + TAIL,
    "anchor-inside-anchor": HEAD + "o: &o {i: &i [1, 2, 3], j: *i}\np: [*o, *i, *o]\n" + TAIL,
    "scalar-anchors": HEAD + "s: &s hello\nt: [" + ", ".join(["*s"] * 100) + "]\n" + TAIL,
    "merge-keys": HEAD + "base: &base {x: 1, y: 2, z: [1, 2]}\nk: {<<: *base, w: 3}\nl: {<<: [*base], v: 4}\n" + TAIL,
    "laughs": HEAD + "l0: &l0 [lol, lol]\nl1: &l1 [*l0, *l0, *l0]\nl2: &l2 [*l1, *l1, *l1]\nl3: [*l2, *l2, *l2]\n"
    + TAIL,
    "alias-as-key": HEAD + "k: &k key\nm: {*k : 1}\n" + TAIL,
    "deep": HEAD + "x: " + "[" * 60 + "1" + "]" * 60 + "\n" + TAIL,
    "comments-and-docs": "%YAML 1.1\n---\n" + HEAD + "# a comment\nx: [1, 2] # more\n" + TAIL,
}


@pytest.mark.parametrize("name", sorted(DOCS))
def test_the_cap_is_exact_at_the_oracles_count(name: str) -> None:
    text = DOCS[name]
    n = _oracle(text)
    assert parse_document(text, "doc.yaml", max_nodes=n)["openapi"] == "3.0.3"
    with pytest.raises(OpenAPIError, match=r"too large: it holds more than \d+ values"):
        parse_document(text, "doc.yaml", max_nodes=n - 1)


@pytest.mark.parametrize("name", sorted(DOCS))
def test_documents_under_the_cap_load_the_same_as_plain_yaml(name: str) -> None:
    text = DOCS[name]
    assert parse_document(text, "doc.yaml") == yaml.load(text, Loader=yaml.SafeLoader)


RECURSIVE = {
    "list": HEAD + "x-r: &r [*r]\n" + TAIL,
    "map": HEAD + "x-r: &r {self: *r}\n" + TAIL,
    "deep-inside": HEAD + "x-r: &r {a: [1, {b: [*r]}]}\n" + TAIL,
    "mutual-inner": HEAD + "x: &o [&i [*o]]\n" + TAIL,
}


@pytest.mark.parametrize("name", sorted(RECURSIVE))
def test_recursive_anchors_are_refused_with_their_message(name: str) -> None:
    with pytest.raises(OpenAPIError, match="refers to itself through an alias"):
        parse_document(RECURSIVE[name], "doc.yaml")


@pytest.mark.parametrize("body", ["x: [*nowhere]\n", "a: &a [1]\nb: &a [2, *a]\n", "a: &a 1\nb: &a [*a, *a]\n"])
def test_undefined_and_duplicate_anchors_are_still_yaml_errors(body: str) -> None:
    with pytest.raises(OpenAPIError, match="neither valid JSON nor YAML"):
        parse_document(HEAD + body + TAIL, "doc.yaml")


def _cpu_to_refuse(text: str) -> float:
    started = time.process_time()
    with pytest.raises(OpenAPIError, match=f"more than {MAX_NODES} values"):
        parse_document(text, "big.yaml")
    return time.process_time() - started


@pytest.mark.parametrize("shape", ["flow", "block-map"])
def test_a_flat_document_past_the_cap_is_refused_in_under_two_seconds(shape: str) -> None:
    """CPU time of this process (the machine is shared; wall time would measure the others)."""
    if shape == "flow":
        text = "openapi: 3.0.3\nx: [" + ",".join(["0"] * 1_100_000) + "]\npaths: {}\n"
    else:
        text = "openapi: 3.0.3\nx:\n" + "".join(f"  k{i}: {i}\n" for i in range(550_000)) + "paths: {}\n"
    assert _cpu_to_refuse(text) < 2.0
