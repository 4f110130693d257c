"""The optional embedder: an OpenAI-compatible /v1/embeddings endpoint on 127.0.0.1."""

from __future__ import annotations

import hashlib
import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from conftest import build, names

DIM = 1024


def _vector(text: str) -> list[float]:
    """A deterministic bag-of-words embedding: the server stands in for a real model."""
    vec = [0.0] * DIM
    for word in re.findall(r"[a-z]+", text.lower()):
        stem = word[:5]
        vec[int(hashlib.md5(stem.encode()).hexdigest(), 16) % DIM] += 1.0
    return vec


class _Handler(BaseHTTPRequestHandler):
    requests: list[dict] = []

    def do_POST(self) -> None:  # noqa: N802 - http.server API
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).requests.append({"path": self.path, "auth": self.headers.get("Authorization"), **body})
        inputs = body["input"] if isinstance(body["input"], list) else [body["input"]]
        payload = {
            "object": "list",
            "data": [{"object": "embedding", "index": i, "embedding": _vector(t)} for i, t in enumerate(inputs)],
            "model": body["model"],
            "usage": {"prompt_tokens": 1, "total_tokens": 1},
        }
        raw = json.dumps(payload).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def server():
    _Handler.requests = []
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/v1", _Handler.requests
    httpd.shutdown()
    httpd.server_close()


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
