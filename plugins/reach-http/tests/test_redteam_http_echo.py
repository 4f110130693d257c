"""Red-team round 5: a service that reflects the credential reach sent it.

Echo endpoints (``/headers``, ``/anything``), debug pages and error messages that quote
the key they rejected (``invalid api key: sk-...``) handed the configured credential to
the model, which a prompt injection could then send anywhere another tool reaches. Now
every configured secret (auth values; configured headers whose names say credential) is
masked in the answer and in error messages: as written, in any case, percent-encoded and
base64-encoded (an echoed ``Basic`` header), also where the body is cut to size.
"""

from __future__ import annotations

import base64
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import quote, quote_plus

import pytest

SECRET = "Zq8-unusual/credential+77"
MASK = "[redacted credential]"


class Reflector(ThreadingHTTPServer):
    """``/echo`` answers what it received; ``/say/N`` answers status N with the body the test set."""

    daemon_threads = True

    def __init__(self) -> None:
        self.bodies: dict[str, tuple[str, bytes]] = {}

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:  # noqa: N802
                server: Reflector = self.server  # type: ignore[assignment]
                if self.path.startswith("/say/"):
                    status = int(self.path.split("/")[2].split("?")[0])
                    ctype, raw = server.bodies[self.path.split("?")[0]]
                else:
                    status, ctype = 200, "application/json"
                    raw = json.dumps({"path": self.path, "headers": dict(self.headers.items())}).encode()
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

        super().__init__(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()


@pytest.fixture(scope="module")
def reflector() -> Iterator[Reflector]:
    srv = Reflector()
    yield srv
    srv.shutdown()
    srv.server_close()


AUTHS: dict[str, dict[str, Any]] = {
    "header": {"auth": {"type": "header", "name": "X-Svc", "value": SECRET}},
    "query": {"auth": {"type": "query", "name": "k", "value": SECRET}},
    "bearer": {"auth": {"type": "bearer", "token": SECRET}},
    "basic": {"auth": {"type": "basic", "username": "robot", "password": SECRET}},
    "headers-key": {"headers": {"X-Api-Key": SECRET}},
    "headers-authorization": {"headers": {"Authorization": f"Token {SECRET}"}},
    "headers-cookie": {"headers": {"Cookie": f"theme=dark; sid={SECRET}"}},
    "env": {"auth": {"type": "header", "name": "X-Svc", "value": {"env": "REDTEAM_ECHO_SECRET"}}},
}


def _reach(make, reflector: Reflector, kind: str, monkeypatch: pytest.MonkeyPatch, **extra: Any) -> Any:
    monkeypatch.setenv("REDTEAM_ECHO_SECRET", SECRET)
    service = {"base_url": f"http://127.0.0.1:{reflector.server_address[1]}", "allow_private": True,
               **AUTHS[kind], **extra}
    return make({"services": {"svc": service}}, config={"connectors": {"http_get": {"retries": 0}}})


def _leaks(payload: Any) -> list[str]:
    text = json.dumps(payload, ensure_ascii=False)
    forms = [SECRET, quote(SECRET, safe=""), quote_plus(SECRET), base64.b64encode(SECRET.encode()).decode(),
             base64.b64encode(f"robot:{SECRET}".encode()).decode(), SECRET.upper(), SECRET.lower(),
             SECRET[: len(SECRET) // 2 + 2]]
    return [f for f in forms if f in text or f.replace("/", "\\/") in text]


@pytest.mark.parametrize("kind", sorted(AUTHS))
async def test_an_echo_of_the_request_masks_the_credential(kind: str, reflector: Reflector, make,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    reach = _reach(make, reflector, kind, monkeypatch)
    result = await reach.invoke("http_get", {"service": "svc", "path": "/echo"})
    assert result.ok, result.error
    assert _leaks(result.model_payload()) == []
    assert MASK in result.to_json()


def _spelled(form: str) -> str:
    b64 = base64.b64encode(SECRET.encode()).decode()
    return {
        "raw": SECRET, "upper": SECRET.upper(), "lower": SECRET.lower(), "percent": quote(SECRET, safe=""),
        "plus": quote_plus(SECRET), "base64": b64, "base64-nopad": b64.rstrip("="),
        "basic-blob": base64.b64encode(f"robot:{SECRET}".encode()).decode(),
        "urlsafe": base64.urlsafe_b64encode(SECRET.encode()).decode().rstrip("="),
    }[form]


FORMS = ["raw", "upper", "lower", "percent", "plus", "base64", "base64-nopad", "urlsafe"]
BODIES = [
    ("application/json", '{{"message": "invalid api key: {s}"}}'),
    ("application/json", '{{"error": {{"detail": "key {s} revoked", "key": "{s}"}}}}'),
    ("text/plain", "Unauthorized ({s})"),
    ("text/html", "<p>bad token <b>{s}</b></p>"),
]


@pytest.mark.parametrize("body", range(len(BODIES)))
@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("status", [200, 401, 403, 500])
async def test_a_quoted_credential_is_masked_in_answers_and_errors(
    status: int, form: str, body: int, reflector: Reflector, make, monkeypatch: pytest.MonkeyPatch
) -> None:
    ctype, template = BODIES[body]
    path = f"/say/{status}/{form}/{body}"
    reflector.bodies[path] = (ctype, template.format(s=_spelled(form)).encode())
    reach = _reach(make, reflector, "header", monkeypatch)
    result = await reach.invoke("http_get", {"service": "svc", "path": path})
    assert result.ok is (status == 200), result
    assert _leaks(result.model_payload()) == [], result.model_payload()


@pytest.mark.parametrize("kind", ["header", "basic", "query"])
async def test_a_credential_cut_through_by_the_size_limit_is_masked_first(
    kind: str, reflector: Reflector, make, monkeypatch: pytest.MonkeyPatch
) -> None:
    filler = "x" * 1000
    path = f"/say/200/cut/{kind}"
    reflector.bodies[path] = ("text/plain", f"{filler}{SECRET}{filler}".encode())
    reach = _reach(make, reflector, kind, monkeypatch, max_body_chars=1000 + len(SECRET) // 2)
    result = await reach.invoke("http_get", {"service": "svc", "path": path})
    assert result.ok, result.error
    assert SECRET[:6] not in result.to_json()


async def test_ordinary_configured_headers_and_short_values_are_not_masked(
    reflector: Reflector, make, monkeypatch: pytest.MonkeyPatch
) -> None:
    reach = _reach(make, reflector, "header", monkeypatch,
                   headers={"Accept": "application/vnd.pets+json", "X-Tenant": "acme-corp-tenant"})
    result = await reach.invoke("http_get", {"service": "svc", "path": "/echo"})
    sent = {k.lower(): v for k, v in result.content["body"]["headers"].items()}
    assert sent["x-tenant"] == "acme-corp-tenant" and sent["accept"] == "application/vnd.pets+json"
    assert sent["x-svc"] == MASK
