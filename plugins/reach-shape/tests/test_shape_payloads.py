"""Realistic oversized results: the budget holds and what the question needs survives."""

from __future__ import annotations

import json

import pytest
import shape_payloads as P
from conftest import tokens

PAYLOADS = {f.__name__: f for f in P.ALL}


@pytest.fixture(scope="module")
def payloads():
    return {name: make() for name, make in PAYLOADS.items()}


async def shaped(make, payload, budget=2000, **invoke):
    reach, echo = make({"default_budget": budget})
    echo.payload = payload.content
    result = await reach.invoke("fetch", {}, run_id="run-1", query=payload.question, **invoke)
    assert result.ok, result.error
    return reach, result


@pytest.mark.parametrize("budget", [200, 300, 1000, 2000, 4000])
@pytest.mark.parametrize("name", list(PAYLOADS))
async def test_budget_is_respected_in_cl100k_tokens(make, payloads, name, budget):
    payload = payloads[name]
    reach, result = await shaped(make, payload, budget)
    assert tokens(payload.content) > budget  # every payload really is over budget
    assert tokens(result.content) <= budget
    assert result.meta["shaped"]["tokens"] == tokens(result.content)
    assert result.meta["shaped"]["tokenizer"] == "cl100k_base"
    json.loads(result.to_json()) if not isinstance(result.content, str) else None


async def test_log_error_line_is_shown_for_the_question(make, payloads):
    payload = payloads["big_log"]
    _, result = await shaped(make, payload)
    text = result.content
    assert "card declined by issuer (code 51, insufficient funds)" in text
    assert text.startswith("[reach-shape: text of ")
    assert "2026-11-30T06:00:00.000Z INFO" in text  # head kept
    assert text.rstrip().endswith(payload.content.rsplit("\n", 1)[1])  # last line kept
    assert "lines omitted (offset " in text


async def test_log_without_question_keeps_head_and_tail(make, payloads):
    payload = payloads["big_log"]
    reach, echo = make()
    echo.payload = payload.content
    result = await reach.invoke("fetch", {}, run_id="r")
    assert "insufficient funds" not in result.content
    assert "showing head and tail" in result.content
    handle = result.meta["shaped"]["handle"]
    found = await reach.invoke("read_result", {"handle": handle, "query": "payment failed order 188231"}, run_id="r")
    lines = payload.content.split("\n")
    assert found.content["matches"][0] == {"offset": 9123, "text": lines[9123],
                                           "next_lines": "\n".join(lines[9124:9126])}


async def test_html_page_is_read_as_text_and_the_answer_survives(make, payloads):
    payload = payloads["html_page"]
    _, result = await shaped(make, payload)
    assert "600 requests per minute" in result.content
    assert "HTML page shown as text" in result.content
    assert "window.analytics" not in result.content and "<h2>" not in result.content
    assert result.meta["shaped"]["html"] is True


async def test_api_response_keeps_structure_and_points_at_the_matching_item(make, payloads):
    payload = payloads["api_response"]
    reach, result = await shaped(make, payload)
    content = result.content
    note = content["_shaped"]
    assert content["total_count"] == 60 and content["incomplete_results"] is False
    assert set(content) == {"_shaped", "total_count", "incomplete_results", "items"}
    shown = content["items"]
    assert 0 < len(shown) < 60
    assert any(f"{len(shown)} of 60 items shown" in line for line in note["cut"])
    # every kept item keeps every key, with the same types
    for kept, full in zip(shown, payload.content["items"], strict=False):
        assert list(kept) == list(full)
        assert all(type(kept[k]) is type(full[k]) for k in full)
    assert note["best_matches_for_question"][0] == "items[37]"
    read = await reach.invoke("read_result", {"handle": note["handle"], "path": "items[37]"}, run_id="run-1")
    assert read.content["value"] == payload.content["items"][37]
    assert str(read.content["value"]["number"]) == payload.answer


async def test_query_result_row_is_reachable(make, payloads):
    payload = payloads["query_rows"]
    reach, result = await shaped(make, payload)
    content = result.content
    assert content["columns"] == payload.content["columns"]
    assert 0 < len(content["rows"]) < 10000
    note = content["_shaped"]
    assert any("of 10,000 items shown" in line for line in note["cut"])
    assert "rows[7777]" in note["best_matches_for_question"]
    handle = note["handle"]
    row = await reach.invoke("read_result", {"handle": handle, "path": "rows[7777]"}, run_id="run-1")
    assert row.content["value"] == payload.content["rows"][7777]
    found = await reach.invoke("read_result", {"handle": handle, "path": "rows", "query": "enterprise"},
                               run_id="run-1")
    assert found.content["matches"][0] == {"path": "rows[7777]", "value": payload.content["rows"][7777]}
    assert payload.answer in json.dumps(found.content)


async def test_deep_nesting_is_collapsed_and_the_leaf_stays_reachable(make, payloads):
    payload = payloads["nested"]
    reach, result = await shaped(make, payload)
    content = result.content
    assert content["status"] == "ok"
    note = content["_shaped"]
    assert any("collapsed" in line for line in note["cut"])
    assert payload.answer not in json.dumps(content["tree"], ensure_ascii=False)
    found = await reach.invoke("read_result", {"handle": note["handle"], "query": "deploy key rotate"},
                               run_id="run-1")
    best = found.content["matches"][0]
    assert payload.answer in json.dumps(best["value"])
    again = await reach.invoke("read_result", {"handle": note["handle"], "path": best["path"]}, run_id="run-1")
    assert again.content["value"] == best["value"]


async def test_long_strings_inside_json_are_cut_head_and_tail(make):
    reach, echo = make({"default_budget": 300})
    body = "BEGIN " + "x" * 20000 + " END"
    echo.payload = {"id": 7, "body": body}
    result = await reach.invoke("fetch", {})
    kept = result.content["body"]
    assert kept.startswith("BEGIN ") and kept.endswith(" END") and "chars cut]" in kept
    assert result.content["id"] == 7
    assert any(line.startswith("body: ") and "of 20,010 chars shown" in line
               for line in result.content["_shaped"]["cut"])


async def test_cjk_text_is_budgeted_in_real_tokens(make):
    reach, echo = make({"default_budget": 500})
    echo.payload = "\n".join(f"第{i}行：北京今天晴，气温二十度，适合跑步。" for i in range(3000))
    result = await reach.invoke("fetch", {}, query="北京 跑步")
    assert tokens(result.content) <= 500
    assert "北京今天晴" in result.content


async def test_http_result_with_an_html_body_is_shaped_as_text(make, payloads):
    """reach-http answers {"status", "headers", "body"}: the page inside is read as text."""
    page = payloads["html_page"]
    wrapped = P.Payload("http", {"status": 200, "headers": {"content-type": "text/html"}, "body": page.content},
                        page.question, page.answer)
    reach, result = await shaped(make, wrapped)
    content = result.content
    assert content["status"] == 200 and content["headers"] == {"content-type": "text/html"}
    assert "600 requests per minute" in content["body"] and "<h2>" not in content["body"]
    assert content["_shaped"]["html_as_text"] == ["body"]
    assert tokens(content) <= 2000
    found = await reach.invoke("read_result", {"handle": content["_shaped"]["handle"], "path": "body",
                                               "query": "rate limits"}, run_id="run-1")
    best = found.content["matches"][0]
    assert best["text"] == "Rate limits" and "600 requests per minute" in best["next_lines"]


async def test_file_result_with_a_log_inside_keeps_the_error_line_and_line_offsets(make, payloads):
    """reach-files answers {"path", "size", "content"}: the text inside is shaped by lines."""
    log = payloads["big_log"]
    wrapped = P.Payload("file", {"path": "logs/app.log", "size": len(log.content), "content": log.content},
                        log.question, log.answer)
    reach, result = await shaped(make, wrapped)
    content = result.content
    assert content["path"] == "logs/app.log"
    assert "insufficient funds" in content["content"]
    assert "lines omitted (offset " in content["content"]
    page = await reach.invoke("read_result", {"handle": content["_shaped"]["handle"], "path": "content",
                                              "offset": 9122, "limit": 3}, run_id="run-1")
    assert page.content["text"] == "\n".join(log.content.split("\n")[9122:9125])
