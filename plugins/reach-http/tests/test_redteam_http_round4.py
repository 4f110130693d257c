"""Red team, round 4: walk-arounds the earlier rounds' tests did not cover.

1. A write with a body redirected by 301/302 (PUT, PATCH, DELETE keep method and body
   there, as HTTP says) to another origin: the rule "a body never follows a redirect to
   another origin" was written for 307/308 only, so the user's data went to whatever
   origin the service named. (Its tests are now part of round 5's wider family, a write
   with or without a body: test_redteam_http_round5.py.)
2. A configured secret the service reflects into something reach *fails* on (a malformed
   header line, a bad chunk size, a redirect target it refuses) reached the model
   unmasked: only successful answers and the service's error bodies were masked.
3. Method overrides in the query or body (``?_method=DELETE`` for Laravel, Symfony,
   Express ``method-override``; ``_HttpMethod`` for Salesforce): a service whose
   ``methods`` leave out DELETE still received a POST that such frameworks run as DELETE.

Real servers on 127.0.0.1 throughout (two :class:`Server` instances for two origins, raw
socket servers for malformed answers).
"""

from __future__ import annotations

import base64
import codecs
import json
import unicodedata
from collections.abc import Callable
from typing import Any
from urllib.parse import quote, quote_plus, unquote

import pytest
from http_testserver import Server, reach_for, write_document
from reach_http import AddressGuard, StaticResolver, build_connectors

from reach_core import InvalidArguments

SECRET = "s3cr3t-Rk7Wq"
RawServer = Callable[[Callable[[Any, str], None]], int]


def _reach(tmp_path: Any, settings: dict[str, Any], guard: AddressGuard | None = None) -> Any:
    """A Reach with the tools of one service ``svc``; no retries, DELETE allowed without a confirmer."""
    return reach_for(tmp_path, settings, guard=guard,
                     connectors={"http_get": {"retries": 0}, "http_request": {"retries": 0, "risk": "write"}})


async def _get_from(raw_server: RawServer, tmp_path: Any, answer: bytes | Callable[[str], bytes],
                    tool: str = "http_get", **settings: Any) -> Any:
    """Call ``tool`` on ``/x`` of a raw server answering ``answer`` (bytes, or made from the request
    head), a loopback service with the real guard."""
    port = raw_server(lambda conn, head: conn.sendall(answer(head) if callable(answer) else answer))
    reach = _reach(tmp_path, {"base_url": f"http://127.0.0.1:{port}", "allow_private": True, **settings},
                   guard=AddressGuard(StaticResolver()))
    args: dict[str, Any] = {"service": "svc", "path": "/x"}
    if tool == "http_request":
        args |= {"method": "POST", "json": {"n": 1}}
    return await reach.invoke(tool, args)


# --------------------------------------------------------------------------- 2. secrets in failure messages

def _echoed(head: str) -> bytes:
    """What a reflecting service quotes: the credential-carrying headers' values and the query string."""
    lines = head.split("\r\n")
    target = lines[0].split(" ")[1] if " " in lines[0] else ""
    parts = [target.split("?", 1)[1]] if "?" in target else []
    for line in lines[1:]:
        name, _, value = line.partition(":")
        if name.strip().lower() in ("authorization", "x-api-key", "cookie"):
            parts.append(value.strip())
    return "; ".join(parts).encode("latin-1")


PAD = b"p" * 170
"""Puts the secret across the 200-character cut of a quoted value, so a prefix would survive a cut-then-mask."""
FAILURES: dict[str, Callable[[bytes], bytes]] = {
    "nul-in-header-value": lambda e: b"HTTP/1.1 200 OK\r\nX-Echo: " + e + b"\x00\r\nContent-Length: 0\r\n\r\n",
    "header-line-without-colon": lambda e: b"HTTP/1.1 200 OK\r\n" + e + b"\r\nContent-Length: 0\r\n\r\n",
    "bad-chunk-size": lambda e: b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + e + b"\r\n",
    "cut-through-secret": lambda e: b"HTTP/1.1 200 OK\r\nX-Echo: " + PAD[:150] + e
                                    + b"\x00\r\nContent-Length: 0\r\n\r\n",
    "location-with-space": lambda e: b"HTTP/1.1 302 Found\r\nLocation: /next?" + e.replace(b" ", b"+")
                                     + b"&a=b c\r\nContent-Length: 0\r\n\r\n",
    "location-odd-port": lambda e: b"HTTP/1.1 302 Found\r\nLocation: http://127.0.0.1:080/next?"
                                   + e.replace(b" ", b"+") + b"\r\nContent-Length: 0\r\n\r\n",
    "location-userinfo": lambda e: b"HTTP/1.1 302 Found\r\nLocation: http://u:" + quote(e).encode()
                                   + b"@127.0.0.1/next\r\nContent-Length: 0\r\n\r\n",
    "location-cut": lambda e: b"HTTP/1.1 302 Found\r\nLocation: /next?" + PAD + e.replace(b" ", b"+")
                              + b"&a=b c\r\nContent-Length: 0\r\n\r\n",
}
AUTHS: dict[str, dict[str, Any]] = {
    "bearer": {"auth": {"type": "bearer", "token": SECRET}},
    "basic": {"auth": {"type": "basic", "username": "svc-user", "password": SECRET}},
    "header": {"auth": {"type": "header", "name": "X-API-Key", "value": SECRET}},
    "query": {"auth": {"type": "query", "name": "api_key", "value": SECRET}},
    "cookie": {"headers": {"Cookie": f"sid={SECRET}"}},
}


def _visible(text: str) -> list[str]:
    """Forms of the secret (or its first 4+ characters) that a model could read in ``text``."""
    forms = {SECRET, quote(SECRET), base64.b64encode(f"svc-user:{SECRET}".encode()).decode()}
    found = [f for f in forms if f.lower() in text.lower() or f.lower() in unquote(text).lower()]
    found += [SECRET[:n] for n in range(4, len(SECRET)) if text.rstrip("')\"; ").endswith(SECRET[:n])]
    return found


@pytest.mark.parametrize("method", ["GET", "POST"])
@pytest.mark.parametrize("kind", sorted(AUTHS))
@pytest.mark.parametrize("failure", sorted(FAILURES))
async def test_a_reflected_secret_is_masked_in_failure_messages(
    failure: str, kind: str, method: str, raw_server: RawServer, tmp_path: Any
) -> None:
    """The service quotes the credential into an answer reach cannot use; the failure the model
    reads says what went wrong without the credential (nor its first characters)."""
    build = FAILURES[failure]
    result = await _get_from(raw_server, tmp_path, lambda head: build(_echoed(head)),
                             "http_get" if method == "GET" else "http_request",
                             methods=["GET", "POST"], **AUTHS[kind])
    assert not result.ok, result.content
    assert _visible(result.error.message) == [], result.error.message
    assert "[redact" in result.error.message, result.error.message  # said, not dropped (a cut may end the marker)


@pytest.mark.parametrize("failure", ["nul-in-header-value", "location-with-space"])
async def test_failures_without_a_secret_are_reported_as_before(failure: str, raw_server: RawServer,
                                                                tmp_path: Any) -> None:
    result = await _get_from(raw_server, tmp_path, FAILURES[failure](b"plain-text-here"))
    assert not result.ok and "plain-text-here" in result.error.message, result.error
    assert "[redacted credential]" not in result.error.message


# --------------------------------------------------------------------------- 3. method overrides in query and body

OVERRIDES = ["_method", "_METHOD", "_Method", " _method", "_method ", "_method[]", "__method", "%5Fmethod",
             "%255Fmethod", "_HttpMethod", "_httpmethod", "_http_method", "X-HTTP-Method-Override",
             "x-http-method-override", "x_http_method_override", "X-Method-Override", "method-override",
             "_method_override", "X-HTTP-Method", "x.http.method", "\uff3fmethod"]
"""``_method`` (Laravel, Symfony, Express method-override, Rails), ``_HttpMethod`` (Salesforce), and
query spellings of the override headers; case, padding, brackets (PHP arrays), percent-encoding and
a full-width underscore (NFKC ``_``)."""
HONEST_NAMES = ["method", "payment_method", "methods", "http_method", "override", "method_name", "shipping-method"]


def _post_only(a: Server) -> dict[str, Any]:
    return {"base_url": f"http://127.0.0.1:{a.port}", "allow_private": True, "methods": ["GET", "POST"]}


@pytest.mark.parametrize("tool", ["http_get", "http_request"])
@pytest.mark.parametrize("name", OVERRIDES)
async def test_a_method_override_in_the_query_is_refused(
    name: str, tool: str, two: tuple[Server, Server], tmp_path: Any
) -> None:
    """A service that allows GET and POST: ``POST /pets/1?_method=DELETE`` would delete on
    Laravel or Express; the override is refused and nothing is sent."""
    a, _ = two
    reach = _reach(tmp_path, _post_only(a))
    args: dict[str, Any] = {"service": "svc", "path": "/echo", "query": {name: "DELETE"}}
    if tool == "http_request":
        args["method"] = "POST"
    result = await reach.invoke(tool, args)
    assert not result.ok and result.error.code == "invalid_arguments", result.content
    assert "overrides the HTTP method" in result.error.message
    assert a.state.requests == []


@pytest.mark.parametrize("name", [n for n in OVERRIDES if "%" not in n and not n.endswith("]")])
async def test_a_method_override_in_the_json_body_is_refused(name: str, two: tuple[Server, Server],
                                                             tmp_path: Any) -> None:
    """Laravel reads ``_method`` from a JSON body as well."""
    a, _ = two
    reach = _reach(tmp_path, _post_only(a))
    result = await reach.invoke("http_request", {"service": "svc", "method": "POST", "path": "/echo",
                                                 "json": {name: "DELETE", "id": 1}})
    assert not result.ok and result.error.code == "invalid_arguments", result.content
    assert a.state.requests == []


async def test_a_method_override_declared_by_a_document_is_refused_when_called(two: tuple[Server, Server],
                                                                              tmp_path: Any) -> None:
    """A document may declare ``_method`` as a query parameter; calling with it still sends nothing."""
    a, _ = two
    doc = write_document(tmp_path, {"/echo/{id}": {"post": {
        "operationId": "updateThing",
        "parameters": [{"name": "id", "in": "path", "required": True, "schema": {"type": "integer"}},
                       {"name": "_method", "in": "query", "schema": {"type": "string"}}],
        "responses": {"200": {"description": "ok"}}}}}, "api.json")
    reach = _reach(tmp_path, {**_post_only(a), "openapi": doc})
    tool = next(t for t in reach.tools() if t["function"]["name"] == "updateThing")
    assert "_method" not in tool["function"]["parameters"]["properties"]
    refused = await reach.invoke("updateThing", {"id": 1, "_method": "DELETE"})
    assert not refused.ok and refused.error.code == "invalid_arguments", refused.content
    assert a.state.requests == []
    client = next(t for t in build_connectors({"services": {"svc": {**_post_only(a), "openapi": doc}}})
                  if t.name == "updateThing").client  # type: ignore[attr-defined]
    with pytest.raises(InvalidArguments):  # a caller that skips the schema cannot send it either
        await client.send("POST", "/echo/1", query=[("_method", "DELETE")])
    assert a.state.requests == []
    plain = await reach.invoke("updateThing", {"id": 1})
    assert plain.ok and plain.content["body"]["method"] == "POST", plain


@pytest.mark.parametrize("name", HONEST_NAMES)
async def test_ordinary_names_with_method_in_them_still_arrive(name: str, two: tuple[Server, Server],
                                                               tmp_path: Any) -> None:
    a, _ = two
    reach = _reach(tmp_path, _post_only(a))
    result = await reach.invoke("http_request", {"service": "svc", "method": "POST", "path": "/echo",
                                                 "query": {name: "card"}, "json": {name: "card"}})
    assert result.ok, result.error
    assert result.content["body"]["query"] == {name: ["card"]}
    assert result.content["body"]["body"] == {name: "card"}


# ------------------------------------------------------------- 4. a cookie argument named like a configured one

CONFIGURED_COOKIES = ["session=configured-1", "theme=dark; session=configured-1", "theme=dark;session = configured-1"]
COOKIE_SPELLINGS = ["session", "SESSION", "Session"]


def _cookie_doc(tmp_path: Any, name: str) -> str:
    doc = write_document(tmp_path, {"/echo/{id}": {"post": {
        "operationId": "postThing",
        "parameters": [{"name": "id", "in": "path", "required": True, "schema": {"type": "string"}},
                       {"name": name, "in": "cookie", "schema": {"type": "string"}},
                       {"name": "pref", "in": "cookie", "schema": {"type": "string"}}],
        "responses": {"200": {"description": "ok"}}}}}, "cookies.json")
    return doc


@pytest.mark.parametrize("configured", CONFIGURED_COOKIES)
@pytest.mark.parametrize("name", COOKIE_SPELLINGS)
async def test_a_cookie_argument_cannot_shadow_a_configured_cookie(
    name: str, configured: str, two: tuple[Server, Server], tmp_path: Any
) -> None:
    """``Cookie: session=configured; session=attacker`` is the attacker's session to Django and
    Python's ``http.cookies`` (the last value wins): the model would act in another account. A
    cookie argument named like a configured cookie, in any case, is dropped like a query key."""
    a, _ = two
    reach = _reach(tmp_path, {"base_url": f"http://127.0.0.1:{a.port}", "allow_private": True,
                              "methods": ["POST"], "openapi": _cookie_doc(tmp_path, name),
                              "headers": {"Cookie": configured}})
    tool = next(t for t in reach.tools() if t["function"]["name"] == "postThing")
    key = next(k for k in tool["function"]["parameters"]["properties"] if k.lower().startswith("session"))
    result = await reach.invoke("postThing", {"id": "1", key: "attacker", "pref": "x"})
    assert result.ok, result.error
    sent = a.state.requests[-1]["headers"]["Cookie"]
    pairs = [p.split("=", 1) for p in sent.split(";")]
    assert [v.strip() for k, v in pairs if k.strip().lower() == "session"] == ["configured-1"], sent
    assert "attacker" not in sent and "pref=x" in sent, sent


# --------------------------------------------------------------------------- 5. credential header names

UNRECOGNISED_CREDENTIALS = [
    "X-JWT", "X-Jwt-Assertion", "X-Goog-IAP-JWT-Assertion", "X-Client-Assertion", "DPoP", "X-Bearer",
    "X-Pass", "X-Passcode", "X-Passphrase", "X-User-Pass", "X-Pwd", "X-HMAC", "X-Sig", "X-Sign", "X-OTP",
    "X-Pat", "X-PIN", "x_jwt",
]
"""Header names that carry a credential without the words the rule knew (``key``, ``token``, ``auth``...):
JWT assertions (WSO2, Google IAP), OAuth client assertions, DPoP proofs, pass phrases, HMACs and
signatures, one-time codes, personal access tokens."""
ORDINARY_CONFIGURED = ["X-Tenant", "X-Region", "Accept-Language", "X-Request-Source", "X-Design-Theme",
                       "X-Shipping-Zone", "X-Compass-Region"]


@pytest.mark.parametrize("name", UNRECOGNISED_CREDENTIALS)
async def test_credential_headers_by_more_names_are_masked_and_stay_home(
    name: str, two: tuple[Server, Server], tmp_path: Any
) -> None:
    """A configured header of that name echoed back is masked; an argument of that name (an OpenAPI
    header parameter) does not follow a redirect to another origin."""
    a, b = two
    doc = write_document(tmp_path, {"/redirect": {"get": {
        "operationId": "getThing",
        "parameters": [{"name": name, "in": "header", "schema": {"type": "string"}},
                       {"name": "to", "in": "query", "schema": {"type": "string"}}],
        "responses": {"200": {"description": "ok"}}}}}, "hdr.json")
    echo = _reach(tmp_path, {"base_url": f"http://127.0.0.1:{a.port}", "headers": {name: SECRET}})
    echoed = await echo.invoke("http_get", {"service": "svc", "path": "/echo"})
    assert echoed.ok, echoed.error
    assert SECRET not in json.dumps(echoed.content), echoed.content["body"]["headers"]
    argued = _reach(tmp_path, {"base_url": f"http://127.0.0.1:{a.port}", "openapi": doc})
    key = next(k for k in next(t for t in argued.tools() if t["function"]["name"] == "getThing")
               ["function"]["parameters"]["properties"] if k != "to")
    result = await argued.invoke("getThing", {key: "users-own-" + SECRET, "to": f"http://127.0.0.1:{b.port}/echo"})
    assert result.ok, result.error
    [landed] = b.state.requests
    assert not any(SECRET in v for v in landed["headers"].values()), landed["headers"]


@pytest.mark.parametrize("name", ORDINARY_CONFIGURED)
async def test_ordinary_configured_headers_are_still_shown(name: str, two: tuple[Server, Server],
                                                           tmp_path: Any) -> None:
    a, _ = two
    reach = _reach(tmp_path, {"base_url": f"http://127.0.0.1:{a.port}", "headers": {name: "plain-value-7"}})
    result = await reach.invoke("http_get", {"service": "svc", "path": "/echo"})
    assert result.ok, result.error
    assert "plain-value-7" in result.content["body"]["headers"].values()


# --------------------------------------------------------------------------- 6. a secret encoded twice

SPECIAL_SECRETS = ["ab+cd/ef==", "tok:en@host%x", "p a s s+w/o=rd", "sk_live/AbC+dEf=="]
"""Secrets whose percent-encoding differs from themselves (base64 tokens, passwords with spaces)."""
TWICE: dict[str, Callable[[str], str]] = {
    "quote-twice": lambda s: quote(quote(s, safe=""), safe=""),
    "quote-plus-then-quote": lambda s: quote(quote_plus(s), safe=""),
    "query-in-next-param": lambda s: "/login?next=" + quote("/x?api_key=" + quote(s, safe=""), safe=""),
}


@pytest.mark.parametrize("where", ["body", "location"])
@pytest.mark.parametrize("form", sorted(TWICE))
@pytest.mark.parametrize("secret", SPECIAL_SECRETS)
async def test_a_secret_percent_encoded_twice_is_masked(secret: str, form: str, where: str, raw_server: RawServer,
                                                       tmp_path: Any) -> None:
    """``/login?next=%2Fx%3Fapi_key%3Dab%252Bcd...``: a sign-in redirect quoting the URL it was asked
    for carries the query key encoded twice, which one decoding by the model gives back."""
    quoted = TWICE[form](secret).encode()
    if where == "body":
        answer = (b"HTTP/1.1 401 Unauthorized\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n\r\n"
                  % (len(quoted) + 9) + b"sign in: " + quoted)
    else:
        answer = b"HTTP/1.1 302 Found\r\nLocation: /login?next=" + quoted + b"\r\nContent-Length: 0\r\n\r\n"
    result = await _get_from(raw_server, tmp_path, answer, max_redirects=0,
                             auth={"type": "query", "name": "api_key", "value": secret})
    shown = result.to_json()
    assert quoted.decode() not in shown and "[redacted credential]" in shown, shown


# --------------------------------------------------------------------------- 7. the charset a service names

NOT_WEB_CHARSETS = ["rot13", "hex", "base64", "zlib", "bz2", "uu", "quopri", "punycode", "idna", "unicode_escape",
                    "raw_unicode_escape", "utf-7", "PUNYCODE", '"punycode"', "rot_13", "hex_codec"]
"""Codec names Python knows that are no web charset: bytes-to-bytes codecs (which crashed the tool
with an internal error), escape codecs, and punycode, whose decoding is quadratic (160 KB took 20 s
of CPU on the event loop, the 2 MB cap would take an hour; no timeout can interrupt it)."""
TEXT = "plain text-with a dash, \\u0041 and +AGE- in it "


WEB_TEXTS = {
    "utf-16": ("h\u00e9llo w\u00f6rld", "utf-16-le"), "UTF-16": ("h\u00e9llo", "utf-16-le"),
    "utf-32": ("h\u00e9llo", "utf-32-le"), "utf-16be": ("h\u00e9llo", "utf-16-be"),
    "iso-8859-1": ("h\u00e9llo", "latin-1"), "windows-1252": ("\u20ac 5", "cp1252"),
    "shift_jis": ("\u65e5\u672c", "shift_jis"), "koi8-r": ("\u043f\u0440\u0438\u0432\u0435\u0442", "koi8-r"),
    "gb18030": ("\u4e2d\u6587", "gb18030"), "euc-kr": ("\ud55c\uad6d", "euc-kr"),
}
MISFITS = [("utf-32", codecs.BOM_UTF16_LE + "hi".encode("utf-16-le")), ("utf-16", b"\x00"),
           ("utf-32", b"\x00\x00\x00"), ("utf-16", codecs.BOM_UTF16_BE + b"\xd8\x00")]
"""Odd lengths, a UTF-16 mark on a UTF-32 body, a lone surrogate: replacement characters, not an error."""
CHARSET_CASES = (
    [pytest.param(c, (TEXT * 20).encode(), TEXT * 20, id=f"not-web-{c}") for c in NOT_WEB_CHARSETS]
    + [pytest.param(c, WEB_TEXTS[c][0].encode(WEB_TEXTS[c][1]), WEB_TEXTS[c][0], id=f"web-{c}")
       for c in sorted(WEB_TEXTS)]
    + [pytest.param(c, body, None, id=f"misfit-{c}-{n}") for n, (c, body) in enumerate(MISFITS)]
)


@pytest.mark.parametrize(("charset", "body", "expected"), CHARSET_CASES)
async def test_a_body_is_decoded_by_its_charset_only_when_that_is_a_web_encoding(
    charset: str, body: bytes, expected: str | None, raw_server: RawServer, tmp_path: Any
) -> None:
    """A codec name that is no web charset is read as UTF-8 (it crashed the tool, or took CPU time
    no timeout interrupts); ``charset=utf-16`` without a byte order mark is UTF-16LE, as browsers
    read it (it used to be an internal error); other web charsets decode as before; a body that
    does not fit its Unicode charset (``expected`` None) is no crash."""
    answer = (b"HTTP/1.1 200 OK\r\nContent-Type: text/plain; charset=" + charset.encode()
              + b"\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
    result = await _get_from(raw_server, tmp_path, answer)
    assert result.ok, result.error
    if expected is not None:
        assert result.content["body"] == expected


# --------------------------------------------------------------------------- 8. what `reach http import` shows

TERMINAL_TRICKS = {
    "erase-line": "\x1b[2K\r", "cursor-up": "\x1b[1A\x1b[2K", "carriage-return": "\r" + " " * 60 + "\r",
    "backspaces": "\b" * 80, "osc-hyperlink": "\x1b]8;;https://evil.example\x1b\\x\x1b]8;;\x1b\\",
    "c1-csi": "\x9b2K", "right-to-left": "\u202e", "line-separator": "\u2028", "bell": "\x07",
    "zero-width-joiner": "\u200d",
}
"""A hostile document's path or media type that, printed raw, rewrites the review listing on a
terminal: erases or overwrites the line of a DELETE, or hides it behind a link or reversed text."""


@pytest.mark.parametrize("where", ["path", "skipped-media-type"])
@pytest.mark.parametrize("trick", sorted(TERMINAL_TRICKS))
def test_the_import_listing_shows_control_characters_escaped(trick: str, where: str, tmp_path: Any) -> None:
    """``reach http import`` lists the tools so a person can review them before enabling: every
    character a terminal would act on is printed escaped, and the dangerous line is there."""

    from click.testing import CliRunner
    from reach_http.cli import http_group

    evil = TERMINAL_TRICKS[trick]
    ops: dict[str, Any] = {"/pets": {"get": {"operationId": "listPets", "responses": {"200": {"description": "ok"}}}}}
    if where == "path":
        ops["/pets/{id}" + evil] = {"delete": {
            "operationId": "deletePet", "responses": {"200": {"description": "ok"}},
            "parameters": [{"name": "id", "in": "path", "required": True, "schema": {"type": "string"}}]}}
    else:
        ops["/upload"] = {"post": {"operationId": "uploadThing", "responses": {"200": {"description": "ok"}},
                                   "requestBody": {"required": True, "content": {
                                       "multipart/form-data" + evil: {"schema": {"type": "object"}}}}}}
    doc = write_document(tmp_path, ops, "doc.json", servers=[{"url": "https://api.example.com"}])
    # color=True: output as to a terminal (click strips only ANSI colour codes otherwise, not the rest)
    result = CliRunner().invoke(http_group, ["import", doc, "--service", "svc"], color=True)
    assert result.exit_code == 0, result.output
    shown = result.stderr
    odd = sorted({c for c in shown if c != "\n" and unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp")})
    assert odd == [], f"raw {odd!r} in {shown!r}"
    # since round 5 an operation whose path holds such characters is skipped: still listed, escaped
    assert ("skipped DELETE /pets/{id}" in shown) if where == "path" else "skipped POST /upload" in shown


# ------------------------------------------------------------ 9. a configured secret that is no header value

STRAY = {"trailing-newline": SECRET + "\n", "trailing-crlf": SECRET + "\r\n", "leading-tab": "\t" + SECRET,
         "nul": SECRET + "\x00", "non-ascii": SECRET + "\u00e9", "line-separator": SECRET + "\u2028",
         "trailing-space": SECRET + " ", "inner-newline": SECRET[:6] + "\n" + SECRET[6:], "del": SECRET + "\x7f"}
"""Secrets as they come out of files and environment variables (a mounted secret's trailing newline)."""
AS_HEADER: dict[str, Callable[[str], dict[str, Any]]] = {
    "bearer": lambda v: {"auth": {"type": "bearer", "token": v}},
    "header": lambda v: {"auth": {"type": "header", "name": "X-API-Key", "value": v}},
    "configured-header": lambda v: {"headers": {"X-Custom-Thing": v}},
    "configured-cookie": lambda v: {"headers": {"Cookie": f"sid={v}"}},
}


@pytest.mark.parametrize("kind", sorted(AS_HEADER))
@pytest.mark.parametrize("stray", sorted(STRAY))
async def test_a_secret_that_cannot_be_a_header_value_is_a_setup_error_that_quotes_nothing(
    stray: str, kind: str, two: tuple[Server, Server], tmp_path: Any
) -> None:
    """h11 refused such a value with an error quoting it (``Illegal header value b'sk-...\\n'``,
    escaped, so the masking missed it) and the model read the credential, told to "try again
    later"; a non-ASCII one was an internal error. Now: a setup error naming the header, nothing
    sent, no part of the value shown."""
    a, _ = two
    reach = _reach(tmp_path, {"base_url": f"http://127.0.0.1:{a.port}", **AS_HEADER[kind](STRAY[stray])})
    result = await reach.invoke("http_get", {"service": "svc", "path": "/echo"})
    assert not result.ok and result.error.code == "execution_failed", result.error
    assert "not set up" in result.error.message, result.error.message
    assert SECRET[:4] not in result.error.message and SECRET[-4:] not in result.error.message, result.error.message
    assert a.state.requests == []


@pytest.mark.parametrize("kind", ["basic", "query"])
@pytest.mark.parametrize("stray", ["trailing-newline", "non-ascii"])
async def test_encoded_credentials_still_carry_any_character(stray: str, kind: str, two: tuple[Server, Server],
                                                             tmp_path: Any) -> None:
    """Basic auth is base64 and a query key percent-encoded: their values may hold anything."""
    a, _ = two
    auth = ({"type": "basic", "username": "u", "password": STRAY[stray]} if kind == "basic"
            else {"type": "query", "name": "k", "value": STRAY[stray]})
    reach = _reach(tmp_path, {"base_url": f"http://127.0.0.1:{a.port}", "auth": auth})
    result = await reach.invoke("http_get", {"service": "svc", "path": "/echo"})
    assert result.ok, result.error
    assert len(a.state.requests) == 1


# --------------------------------------------------------------------------- 10. a header argument h11 would refuse

PADDED = [" a", "a ", "\ta", "a\t", " ", "\t", "  a  "]


def _with_header_argument(tmp_path: Any, a: Server, header: str, method: str = "get") -> Any:
    """A service whose one operation, ``callThing`` on ``/echo``, takes the header ``header`` as an argument."""
    doc = write_document(tmp_path, {"/echo": {method: {
        "operationId": "callThing",
        "parameters": [{"name": header, "in": "header", "schema": {"type": "string"}}],
        "responses": {"200": {"description": "ok"}}}}})
    return _reach(tmp_path, {"base_url": f"http://127.0.0.1:{a.port}", "openapi": doc})


@pytest.mark.parametrize("method", ["get", "post"])
@pytest.mark.parametrize("value", PADDED)
async def test_a_header_argument_with_surrounding_whitespace_is_invalid_not_unknown(
    value: str, method: str, two: tuple[Server, Server], tmp_path: Any
) -> None:
    """h11 refuses such a value before anything leaves; it used to be reported as "the connection
    failed", for a write "may or may not have taken effect", inviting a check of nothing."""
    a, _ = two
    reach = _with_header_argument(tmp_path, a, "X-Request-Id", method)
    result = await reach.invoke("callThing", {"X-Request-Id": value})
    assert not result.ok and result.error.code == "invalid_arguments", result.error
    assert "X-Request-Id" in result.error.message
    assert a.state.requests == []


async def test_inner_spaces_and_empty_header_arguments_still_go(two: tuple[Server, Server], tmp_path: Any) -> None:
    a, _ = two
    reach = _with_header_argument(tmp_path, a, "X-Note")
    for value in ["two words", "a\tb", ""]:
        result = await reach.invoke("callThing", {"X-Note": value})
        assert result.ok, result.error
        assert result.content["body"]["headers"].get("X-Note", "") == value
