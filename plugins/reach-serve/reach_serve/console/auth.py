"""Who is at the console: operator tokens exchanged for a signed session cookie.

Stateless, like the rest of reach-serve: a session is a cookie signed with a key
derived from the configured tokens, so any instance (all read the same config)
accepts the cookie any other issued, and nothing is kept in memory. The cookie
names the operator and a keyed digest of the token used to log in (the cookie is
readable, so never a plain hash of the token): rotate or remove
that token, or take the agent off ``operators``, and its sessions stop working
at the next request.

CSRF: every form carries a token derived from the session (HMAC of its nonce),
checked before the form is read any further; the cookie is ``SameSite=Strict``
and ``HttpOnly`` besides, and ``Secure`` when the console is served over TLS.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
import time
from dataclasses import dataclass
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

__all__ = ["COOKIE", "LOGIN_COOKIE", "Session", "Sessions"]

COOKIE = "reach_console"
LOGIN_COOKIE = "reach_console_login"
LIFETIME = 12 * 3600.0  # a working day; then the operator logs in again


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


@dataclass(frozen=True)
class Session:
    """A logged-in operator: its name (the agent its token acts as) and the session's nonce."""

    operator: str
    nonce: str
    token_digest: str
    expires: float


class Sessions:
    """Issues and checks session cookies and CSRF tokens for one set of settings."""

    def __init__(self, tokens: dict[str, str], operators: set[str]) -> None:
        self._tokens = list(tokens.items())
        self._operators = operators
        # every instance derives the same key from the same config; a new token set, a new key
        material = "\n".join(sorted(f"{t}\t{a}" for t, a in tokens.items()))
        self._key = hashlib.sha256(b"reach-console-v1\n" + material.encode()).digest()
        self._digests = {self._digest(t): a for t, a in tokens.items()}

    def _digest(self, token: str) -> str:
        """Which token a session was opened with, as the cookie names it: keyed, because the
        cookie is readable (signed, not encrypted); a plain SHA-256 of the token in it let a
        copied cookie's holder guess a short token offline, and keep it after the session."""
        return _b64(hmac.new(self._key, b"token:" + token.encode(), hashlib.sha256).digest())[:32]

    def _sign(self, text: str) -> str:
        return _b64(hmac.new(self._key, text.encode(), hashlib.sha256).digest())

    # ------------------------------------------------------------ tokens
    def agent_of_token(self, token: str) -> tuple[str, str] | None:
        """``(agent, digest)`` of a configured token, compared in constant time, else None."""
        token = token.strip()
        found = None
        for known, agent in self._tokens:  # compare every token: no timing hint
            if hmac.compare_digest(known.encode(), token.encode()):
                found = (agent, self._digest(known))
        return found

    def is_operator(self, agent: str) -> bool:
        return agent in self._operators

    # ------------------------------------------------------------ sessions
    def issue(self, operator: str, token_digest: str, now: float | None = None) -> str:
        payload = json.dumps({"op": operator, "n": secrets.token_urlsafe(16), "t": token_digest,
                              "exp": round((now or time.time()) + LIFETIME)}, separators=(",", ":"))
        body = _b64(payload.encode())
        return f"{body}.{self._sign('session:' + body)}"

    def read(self, request: Request) -> Session | None:
        """The request's valid session, or None (missing, forged, expired, token or operator withdrawn)."""
        raw = request.cookies.get(COOKIE)
        if not raw or len(raw) > 2048 or raw.count(".") != 1:
            return None
        body, sig = raw.split(".")
        if not hmac.compare_digest(sig.encode(), self._sign("session:" + body).encode()):
            return None
        try:
            data = json.loads(_unb64(body))
            session = Session(str(data["op"]), str(data["n"]), str(data["t"]), float(data["exp"]))
        except (ValueError, KeyError, TypeError):
            return None
        if session.expires < time.time():
            return None
        if self._digests.get(session.token_digest) != session.operator or not self.is_operator(session.operator):
            return None
        return session

    # ------------------------------------------------------------ CSRF
    def csrf(self, session: Session) -> str:
        return self._sign("csrf:" + session.nonce)

    def login_nonce(self, request: Request) -> str | None:
        nonce = request.cookies.get(LOGIN_COOKIE)
        return nonce if nonce and 16 <= len(nonce) <= 64 and nonce.isascii() else None

    def login_csrf(self, nonce: str) -> str:
        return self._sign("login:" + nonce)

    @staticmethod
    def check(expected: str, given: Any) -> bool:
        return isinstance(given, str) and bool(given) and hmac.compare_digest(expected.encode(), given.encode())


def set_cookie(response: Response, request: Request, name: str, value: str, max_age: int | None) -> None:
    """HttpOnly, SameSite=Strict, path /console; Secure when this request came over TLS."""
    response.set_cookie(name, value, max_age=max_age, path="/console", httponly=True, samesite="strict",
                        secure=request.url.scheme == "https")


def clear_cookie(response: Response, request: Request, name: str) -> None:
    response.delete_cookie(name, path="/console", httponly=True, samesite="strict",
                           secure=request.url.scheme == "https")
