"""Realistic oversized tool results, generated deterministically (no files, no network).

Each payload hides one fact a question needs somewhere a byte cut would lose it.
The benchmark (bench/bench_shape.py) uses the same generators.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from typing import Any


@dataclass
class Payload:
    name: str
    content: Any
    question: str
    answer: str  # text that must be reachable (in the shaped result, or via read_result)


def api_response() -> Payload:
    """About 20 KB: a search API's page of issues; the one about a parser memory leak is item 37."""
    rnd = random.Random(1)
    words = "cache retry timeout flaky docs build windows unicode config plugin cli release".split()
    items = []
    for i in range(60):
        topic = rnd.sample(words, 3)
        title = f"{topic[0].capitalize()} {topic[1]} issue with {topic[2]}"
        body = f"Steps: run the {topic[1]} command with {topic[2]} enabled; expected it to work, got an error. " * 2
        if i == 37:
            title = "Memory leak in the streaming parser after 10k messages"
            body = "RSS grows by 40 MB per hour when the streaming parser handles long sessions; fixed by #4218."
        items.append({
            "id": 900000 + i, "number": 4180 + i, "title": title, "state": "open" if i % 3 else "closed",
            "user": {"login": f"user{i}", "id": 1000 + i, "type": "User", "site_admin": False},
            "labels": [{"name": topic[0], "color": "ededed"}],
            "comments": i % 7, "created_at": f"2026-10-{1 + i % 28:02d}T12:00:00Z", "body": body,
        })
    content = {"total_count": 60, "incomplete_results": False, "items": items}
    assert 15_000 < len(json.dumps(content)) < 30_000
    return Payload("api_20kb", content, "Which issue is about a memory leak in the parser?", "4217")


def big_log() -> Payload:
    """About 1 MB of service log with one ERROR line in the middle explaining a failed payment."""
    rnd = random.Random(2)
    lines = []
    for i in range(14000):
        ms = rnd.randint(3, 400)
        lines.append(f"2026-11-30T06:{(i // 600) % 60:02d}:{(i // 10) % 60:02d}.{i % 1000:03d}Z INFO "
                     f"worker-{i % 8} http GET /v1/orders/{100000 + i} 200 {ms}ms")
    lines[9123] = ("2026-11-30T06:15:12.123Z ERROR worker-3 payment charge failed for order 188231: "
                   "card declined by issuer (code 51, insufficient funds)")
    text = "\n".join(lines)
    assert len(text) > 900_000
    return Payload("log_1mb", text, "Why did the payment for order 188231 fail?", "insufficient funds")


def query_rows() -> Payload:
    """A 10,000-row SQL result in the reach-sql shape (columns + rows)."""
    cols = ["id", "email", "country", "plan", "mrr"]
    rows = [[i, f"customer{i}@example.com", ["DE", "FR", "JP", "US", "CN"][i % 5],
             ["free", "pro", "team"][i % 3], round(i * 1.37 % 500, 2)] for i in range(10000)]
    rows[7777][3] = "enterprise"
    return Payload("rows_10k", {"columns": cols, "rows": rows}, "Which customer is on the enterprise plan?",
                   "customer7777@example.com")


def nested() -> Payload:
    """A 40-level deep tree (e.g. a config or AST dump) with the needed value at the bottom."""
    node: Any = {"name": "leaf", "value": "the deploy key rotates every 90 days", "children": []}
    for depth in range(40, 0, -1):
        node = {"name": f"level{depth}", "kind": "group", "attrs": {"depth": depth, "owner": "infra"},
                "children": [node] + [
                    {"name": f"sibling{depth}.{j}", "kind": "item", "children": [],
                     "notes": f"routine entry {j} at depth {depth}: owned by infra, reviewed quarterly, "
                              "no action needed; kept for the audit trail of the configuration tree."}
                    for j in range(4)]}
    content = {"status": "ok", "tree": node}
    return Payload("nested_40", content, "How often does the deploy key rotate?", "every 90 days")


def html_page() -> Payload:
    """A long documentation page (~150 KB) with scripts, styles and a rate-limit section deep inside."""
    rnd = random.Random(3)
    parts = ["<!DOCTYPE html><html><head><title>Acme API reference</title>",
             "<style>" + "body{font-family:sans-serif} .x{color:red}\n" * 300 + "</style>",
             "<script>" + "window.analytics=function(){return 1};\n" * 400 + "</script></head><body>",
             "<nav><a href='/docs'>Docs</a> <a href='/pricing'>Pricing</a></nav>"]
    topics = "authentication pagination errors webhooks idempotency versioning sandbox".split()
    for i in range(260):
        t = rnd.choice(topics)
        parts.append(f"<h2>Section {i}: {t}</h2><p>The {t} guide explains how requests are signed, "
                     f"retried and logged. See the examples below for section {i}.</p>"
                     f"<pre>curl https://api.acme.test/v1/{t}/{i}</pre>")
        if i == 171:
            parts.append("<h2>Rate limits</h2><p>Each API key may send 600 requests per minute; "
                         "beyond that the API answers 429 with a Retry-After header.</p>")
    parts.append("</body></html>")
    html = "".join(parts)
    assert len(html) > 80_000
    return Payload("html_page", html, "What is the API rate limit per minute?", "600 requests per minute")


ALL = (api_response, big_log, query_rows, nested, html_page)
