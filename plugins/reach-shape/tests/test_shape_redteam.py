"""Red-team families for shaping.

* A failure is never hidden by a cut: error keys (error, errors, message, detail, ...,
  any case and separator) survive the cut, or their paths are listed in
  ``_shaped.errors_in_cut_part``, wherever they sit (keys past the limit, items past the
  limit, nested too deep, the summary-only fallback).
* A cut never splits a grapheme cluster, a surrogate pair or a combining sequence.
* Shaping a 50 MB string does not copy it around (tracemalloc peak).
* ``read_result`` answers stay within ``read_budget`` for every kind of slice, and odd
  results (cyclic, very deep) give a clear error instead of an internal one.
"""

from __future__ import annotations

import re
import tracemalloc
from typing import Any

import pytest
from conftest import tokens
from reach_shape.reader import read
from reach_shape.settings import ShapeSettings
from reach_shape.shaper import Shaper
from reach_shape.tokens import TokenCounter

SMALL = {"default_budget": 300, "tokenizer": "cl100k"}

_ERROR_KEYS = ["error", "errors", "Error", "ERROR", "message", "detail", "details", "error_message",
               "errorMessage", "error-code", "exception", "traceback", "fault", "failure", "failures", "stderr"]


def _filler(n: int) -> dict[str, Any]:
    return {f"field_{i:04d}": f"value number {i} with some words" for i in range(n)}


def _error_found(content: Any, key: str) -> bool:
    """The error is in the shaped result (the key with its text) or reported by path."""
    note = content.get("_shaped", {}) if isinstance(content, dict) else {}
    reported = note.get("errors_in_cut_part") or []

    def walk(v: Any) -> bool:
        if isinstance(v, dict):
            return any((k == key and "disk full" in str(x)) or walk(x) for k, x in v.items())
        if isinstance(v, list):
            return any(walk(x) for x in v)
        return False

    return walk(content) or any(key in p for p in reported)


def _placements(key: str) -> dict[str, Any]:
    err = {key: "disk full on /var (errno 28)"}
    deep: Any = err
    for i in range(20):
        deep = {f"level{i}": deep}
    return {
        "last_key": {**_filler(1500), **err},
        "item_past_limit": {"results": [{"id": i, "ok": True, "text": "fine " * 5} for i in range(600)] + [err]},
        "nested_deep": {"data": deep},
        "inside_cut_item": {"rows": [[i, "x" * 20] for i in range(800)] + [{"status": "failed", **err}]},
        "top_list": [{"row": i, "v": "y" * 30} for i in range(900)] + [err],
    }


@pytest.mark.parametrize("key", _ERROR_KEYS)
@pytest.mark.parametrize("where", ["last_key", "item_past_limit", "nested_deep", "inside_cut_item", "top_list"])
async def test_errors_survive_the_cut_or_are_reported(make, key, where):
    reach, echo = make(SMALL)
    echo.payload = _placements(key)[where]
    r = await reach.invoke("fetch", {})
    assert r.ok and "_shaped" in str(r.content)[:2000] or isinstance(r.content, dict)
    assert tokens(r.content) <= 300
    assert _error_found(r.content, key), f"{key} at {where} hidden by the cut: {str(r.content)[:300]}"


async def test_a_result_without_errors_reports_none(make):
    reach, echo = make(SMALL)
    echo.payload = {**_filler(1500), "status": "ok", "messages_count": 3}
    r = await reach.invoke("fetch", {})
    assert r.ok and "errors_in_cut_part" not in r.content["_shaped"]


# --------------------------------------------------------------------------- graphemes

_CLUSTERS = {
    "family_zwj": "\U0001F468\u200d\U0001F469\u200d\U0001F467",
    "flag": "\U0001F1EB\U0001F1F7",
    "skin_tone": "\U0001F44D\U0001F3FD",
    "combining": "\u00e5\u0301\u0323",
    "hangul_jamo": "\u1100\u1161\u11a8",
    "keycap": "#\ufe0f\u20e3",
    "tag_flag": "\U0001F3F4\U000E0067\U000E0062\U000E0073\U000E0063\U000E0074\U000E007F",
    "devanagari": "\u0915\u094d\u0937\u093f",
    "surrogate_pair": "\ud83d\ude00",
    "crlf_pair": "\r\n",
}


def _whole(text: str, cluster: str) -> bool:
    """Every run of the cluster's characters in ``text`` is whole clusters."""
    chars = re.escape("".join(sorted(set(cluster))))
    for run in re.findall(f"[{chars}]+", text):
        if run.replace(cluster, ""):
            return False
    return True


@pytest.mark.parametrize("name", sorted(_CLUSTERS))
@pytest.mark.parametrize("shape", ["string", "json_field", "text_lines"])
def test_cuts_never_split_a_cluster(name, shape):
    cluster = _CLUSTERS[name]
    sh = Shaper(ShapeSettings(tokenizer="estimate"))
    ok_ascii = "ab" if name != "crlf_pair" else "xy"
    for reps in (997, 1000, 1003):
        body = (ok_ascii + cluster) * reps
        if shape == "text_lines":
            body = "\n".join((cluster * 7 + f" line {i}") for i in range(reps))
        one_line = body if name == "crlf_pair" else body.replace("\n", " ")
        content: Any = body if shape != "json_field" else {"id": 1, "body": one_line}
        for budget in (200, 333, 500):
            out = sh.shape(content, budget=budget, rule=None, query=None, handle=lambda v: "res_x")
            text = out.content if isinstance(out.content, str) else str(out.content.get("body", ""))
            if name == "crlf_pair":
                assert not re.search("\r(?!\n)", text), (reps, budget)
            else:
                assert _whole(text, cluster), (name, reps, budget)


@pytest.mark.parametrize("name", sorted(_CLUSTERS))
def test_read_result_pages_never_split_a_cluster(name):
    cluster = _CLUSTERS[name]
    count = TokenCounter("estimate").count
    text = ("ab" + cluster) * 5000
    for budget in (200, 300, 450):
        answer = read(text, handle="res_x", path=None, offset=None, limit=None, query=None, budget=budget,
                      count=count)
        shown = answer.get("text") or answer.get("value") or ""
        if name != "crlf_pair":
            assert _whole(shown, cluster), (name, budget)


# --------------------------------------------------------------------------- memory


@pytest.mark.parametrize("case", ["text", "text_query", "json_body", "json_body_query", "cjk_query"])
def test_shaping_a_50mb_string_does_not_copy_it(case):
    line = "2026-01-01 12:00:00 INFO worker-3 processed request id=abc123 in 12ms status=200\n"
    big = line * (50_000_000 // len(line))
    if case == "cjk_query":
        big = ("天气晴朗，适合出门跑步。worker\n" * 3_000_000)
    content: Any = big if case.startswith(("text", "cjk")) else {"status": 200, "body": big}
    query = "timeout worker error" if case.endswith("query") else None
    sh = Shaper(ShapeSettings(tokenizer="estimate"))
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        out = sh.shape(content, budget=2000, rule=None, query=query, handle=lambda v: "res_x")
        peak = tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()
    assert out is not None and out.tokens <= 2000
    assert peak < 8_000_000, f"{case}: shaping took {peak / 1e6:.1f} MB more memory"


# --------------------------------------------------------------------------- read_result budget and odd inputs


def _payloads() -> dict[str, Any]:
    return {
        "cjk_line": "北京天气晴朗" * 20000,
        "cjk_lines": "\n".join("北京天气晴朗，适合出门" * 30 for _ in range(300)),
        "digits_list": list(range(50000)),
        "one_huge_item": [{"blob": "数据" * 30000}, 1, 2],
        "huge_key_value": {"a": "é" * 60000, "b": 1},
        "many_keys": {f"k{i}": "中" * 50 for i in range(5000)},
        "nested_lists": [[[["深" * 100] * 10] * 10] * 10],
        "emoji_text": "🙂" * 40000,
        "long_words": " ".join("x" * 5000 for _ in range(50)),
    }


@pytest.mark.parametrize("name", sorted(_payloads()))
@pytest.mark.parametrize("args", [{}, {"offset": 0}, {"offset": 0, "limit": 1000}, {"query": "北京 数据 x"},
                                  {"path": "[0]"}, {"offset": 1, "limit": 3}, {"query": "🙂"}])
@pytest.mark.parametrize("budget", [250])
def test_read_result_answers_stay_within_the_budget(name, args, budget):
    value = _payloads()[name]
    count = TokenCounter("cl100k").count
    from reach_core import InvalidArguments
    from reach_core.result import dumps

    try:
        answer = read(value, handle="res_abcdefghijkl", path=args.get("path"), offset=args.get("offset"),
                      limit=args.get("limit"), query=args.get("query"), budget=budget, count=count)
    except InvalidArguments:
        return  # a path or offset that does not fit this value: a clear refusal is fine
    assert count(dumps(answer)) <= budget, (name, args, count(dumps(answer)))


def _deep(n: int) -> Any:
    v: Any = "bottom of the well"
    for _ in range(n):
        v = [v]
    return v


def _deep_dict(n: int) -> Any:
    v: Any = {"error": "at the bottom"}
    for i in range(n):
        v = {f"k{i % 7}": v, "pad": "x" * 20}
    return v


@pytest.mark.parametrize("payload", ["deep_list_300", "deep_dict_300", "wide_and_deep"])
async def test_very_deep_results_are_shaped_within_budget(make, payload):
    """As deep as the core passes on (its own conversion, reach_core/result.py to_jsonable,
    fails on cyclic and ~500-deep values before any hook runs)."""
    reach, echo = make(SMALL)
    echo.payload = {"deep_list_300": lambda: {"data": _deep(300)}, "deep_dict_300": lambda: _deep_dict(300),
                    "wide_and_deep": lambda: [_deep_dict(200) for _ in range(20)]}[payload]()
    r = await reach.invoke("fetch", {})
    assert r.ok, r.error
    assert tokens(r.content) <= 300
    if payload != "deep_list_300":
        assert r.content["_shaped"].get("errors_in_cut_part"), "the error at the bottom was hidden"
    handle = r.content["_shaped"]["handle"]
    for args in ({}, {"path": "data[0][0][0]"} if payload == "deep_list_300" else {"path": "k0"}, {"query": "bottom"}):
        more = await reach.invoke("read_result", {"handle": handle, **args})
        assert more.ok or more.error.code in ("invalid_arguments", "not_found"), more.error
        if more.ok:
            assert tokens(more.content) <= 4000
