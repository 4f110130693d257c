"""The optional embedder: an OpenAI-compatible /v1/embeddings endpoint on 127.0.0.1."""

from __future__ import annotations

import hashlib
import json
import re

import pytest
from conftest import build, names

from reach_core.testing import LoopbackHandler, serve_loopback

DIM = 1024


def _vector(text: str) -> list[float]:
    """A deterministic bag-of-words embedding: the server stands in for a real model."""
    vec = [0.0] * DIM
    for word in re.findall(r"[a-z]+", text.lower()):
        stem = word[:5]
        vec[int(hashlib.md5(stem.encode()).hexdigest(), 16) % DIM] += 1.0
    return vec


class _Handler(LoopbackHandler):
    requests: list[dict] = []

    def do_POST(self) -> None:  # noqa: N802 - http.server API
        body = json.loads(self.read_body())
        type(self).requests.append({"path": self.path, "auth": self.headers.get("Authorization"), **body})
        inputs = body["input"] if isinstance(body["input"], list) else [body["input"]]
        payload = {
            "object": "list",
            "data": [{"object": "embedding", "index": i, "embedding": _vector(t)} for i, t in enumerate(inputs)],
            "model": body["model"],
            "usage": {"prompt_tokens": 1, "total_tokens": 1},
        }
        self.reply_json(200, payload)


@pytest.fixture
def server():
    _Handler.requests = []
    with serve_loopback(_Handler) as url:
        yield f"{url}/v1", _Handler.requests


def test_openai_compatible_embedder_ranks_and_caches(tmp_path, server):
    base_url, requests = server
    settings = {
        "embedder": "openai",
        "openai_base_url": base_url,
        "openai_api_key": "sk-test",
        "openai_model": "local-embedder",
        "weights": {"bm25": 0.0, "embedding": 1.0, "tags": 0.0},
    }
    reach = build(tmp_path, settings)
    assert names(reach.tools(query="hotel room booking", limit=1)) == ["book_hotel"]
    assert requests[0]["path"] == "/v1/embeddings"
    assert requests[0]["model"] == "local-embedder"
    assert requests[0]["auth"] == "Bearer sk-test"
    assert len(requests) == 2  # all tool texts in one batch, then the question

    restarted = build(tmp_path, settings)
    assert names(restarted.tools(query="hotel room booking", limit=1)) == ["book_hotel"]
    assert len(requests) == 3  # only the question: tool embeddings came from the disk cache
    assert "wordllama" not in repr(restarted.provider("selector").engine().embedder.model_id)
