"""Send one request to a configured service: guard, pin, follow redirects, map errors.

Everything that can go wrong is turned into one of reach's failures with a
message a model can act on:

* 4xx (except 429) -> ``BusinessError`` carrying the server's own message;
* 429 and 5xx -> ``RetryableError`` (with Retry-After) for GET/HEAD only;
  for other methods the request may have taken effect, so it is reported and
  never retried (``outcome_unknown`` when the server failed mid-way);
* connect failures (nothing was sent) -> ``RetryableError``;
* a timeout or broken connection after sending -> retryable for GET/HEAD,
  ``outcome_unknown`` for writes.
"""

from __future__ import annotations

import asyncio
import base64
import email.utils
import math
import re
import time
import unicodedata
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote, unquote_to_bytes

import httpx

from reach_core import BusinessError, InvalidArguments, RetryableError

from .decoding import DecodeFailed, bounded_body
from .guard import AddressGuard, HostRefused, HostUnresolved
from .headers import check_header_value, header_key, header_value, is_credential_header, model_header_refusal
from .masking import Masker
from .settings import MissingSecret, ServiceSettings, reveal
from .shaping import error_message, shape_response
from .transport import PinnedTransport
from .urls import BadURL, check_url_text

__all__ = ["SAFE_METHODS", "Credentials", "Origin", "ServiceClient", "origin", "retry_after_seconds"]

SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
REDIRECTS = frozenset({301, 302, 303, 307, 308})

Origin = tuple[str, str, int]
"""(scheme, lower-case host as sent, port with the scheme's default filled in)."""


def retry_after_seconds(value: str | None) -> float | None:
    """Retry-After as seconds (it may be a number or an HTTP date)."""
    if not value:
        return None
    value = value.strip()
    try:
        seconds = float(value)
    except ValueError:
        pass
    else:  # "inf", "nan", "1e999": not a wait anyone can honour (nor a JSON number)
        return max(0.0, seconds) if math.isfinite(seconds) else None
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def origin(url: httpx.URL) -> Origin:
    """The origin of ``url``: two URLs share credentials only when these are equal."""
    scheme = url.scheme.lower()
    return (scheme, url.raw_host.decode("ascii").lower(), url.port or (443 if scheme == "https" else 80))


@dataclass(frozen=True)
class Credentials:
    """What the operator configured for a service (headers, auth, query key).

    Sent on a hop only when its URL is at the service's own origin: a redirect to
    another scheme, host or port gets none of it, a redirect back gets it again.
    """

    headers: dict[str, str] = field(default_factory=dict)
    query: list[tuple[str, str]] = field(default_factory=list)
    secrets: tuple[str, ...] = ()
    """The secret values among them (auth values, credential-named headers), for :meth:`scrub`."""

    @property
    def masker(self) -> Masker:
        """Masks these secrets in answers (see :mod:`.masking`)."""
        return Masker(self.secrets)

    def scrub(self, value: Any) -> Any:
        """``value`` (a shaped answer or a message) with every configured secret masked."""
        return self.masker.value(value)

    def header_keys(self) -> set[str]:
        return {header_key(k) for k in self.headers}

    def query_names(self) -> set[str]:
        return {k.lower() for k, _ in self.query}

    def cookie_names(self) -> set[str]:
        """Names of the cookies configured in ``headers`` (``Cookie: a=1; session=...``), lower case."""
        return {
            part.split("=", 1)[0].strip().lower()
            for key, value in self.headers.items() if header_key(key) == "cookie"
            for part in value.split(";") if "=" in part
        }


_HEADER_VALUE = re.compile(r"^([!-~]([ \t]*[!-~])*)?\Z")
"""A header value h11 sends as it is: printable ASCII, inner spaces and tabs only."""
_UNPRINTABLE = frozenset({"Cc", "Zs", "Zl", "Zp"})
"""Control characters and every kind of space or line separator (``\\x7f``, NBSP, U+2028 ...)."""
_BREAKING = frozenset({"Cc", "Zl", "Zp"})
"""What a percent-escape may not spell: ``%0d%0a`` in a path a server decodes and echoes (into a
``Location``, a log line) starts a new header or line there; ``%20`` stays allowed."""


def _decoded(text: str) -> str:
    """``text`` with percent-escapes undone until nothing changes (``%252e`` -> ``%2e`` -> ``.``)."""
    for _ in range(4):
        decoded = unquote(text)
        if decoded == text:
            break
        text = decoded
    return text


def _dot_segment(path: str) -> bool:
    """Whether some server could read a ``.``/``..`` segment in ``path``.

    Servers differ in what they undo before resolving dot segments: percent-escapes
    (``%2e%2e``, ``.%2E``, twice-encoded ``%252e``; nginx and Apache decode first), an
    encoded separator (``..%2f``, ``..%5c``), path parameters (``..;x`` on Tomcat and
    Jetty), Unicode compatibility forms (``\\u2025`` two-dot leader, full-width stops).
    A segment that is a dot segment in any of those readings would climb out of the
    base URL's path, so it is refused.
    """
    text = _decoded(path)
    text = unicodedata.normalize("NFKC", text).translate(_LOOK_ALIKES)
    for segment in text.replace("\\", "/").split("/"):
        if segment.split(";", 1)[0].strip() in (".", ".."):
            return True
    return False


_LOOK_ALIKES = str.maketrans({"\u3002": ".", "\uff61": ".", "\u2215": "/", "\u2044": "/", "\u29f8": "/",
                              "\uff3c": "/", "\u2216": "/", "\ufe68": "/"})
"""Dots and slashes NFKC leaves alone but a normalising server or file system may still read as such."""
_OVERLONG = re.compile(rb"[\xc0\xc1\xf5-\xff]|\xe0[\x80-\x9f]|\xf0[\x80-\x8f]")
_U_ESCAPE = re.compile(r"%u[0-9a-f]{4}", re.IGNORECASE)


def _odd_escape(path: str) -> bool:
    """Whether ``path`` spells something through escapes only a lenient server decodes.

    Overlong UTF-8 (``%c0%ae`` is ``.`` to old IIS and Tomcat, ``%c0%af`` is ``/``) and
    IIS's ``%u002e`` never appear in an honest path; each decoding layer is looked at
    (``%25c0%25ae`` becomes ``%c0%ae`` after one).
    """
    data = path.encode("utf-8", "surrogatepass")
    for _ in range(5):
        if _OVERLONG.search(data) or _U_ESCAPE.search(data.decode("latin-1")):
            return True
        decoded = unquote_to_bytes(data)
        if decoded == data:
            return False
        data = decoded
    return True  # still escaped after five layers: nothing honest looks like that


def _check_path(path: str) -> str:
    """A path the model sent: below the base URL, no smuggled host, query or traversal."""
    if not isinstance(path, str) or not path.startswith("/"):
        raise InvalidArguments("path", "a path starting with '/'", "/pets/1")
    if path.startswith("//") or "\\" in path or "#" in path or "?" in path:
        raise InvalidArguments(
            "path", "a plain path without '//', '\\', '?' or '#' (put query parameters in `query`)", "/pets/1"
        )
    if any(unicodedata.category(c) in _UNPRINTABLE for c in path) or any(
        unicodedata.category(c) in _BREAKING for c in _decoded(path)
    ):
        raise InvalidArguments(
            "path", "a path without spaces, line breaks or control characters (also not percent-encoded: "
            "%0d, %0a, %00 ...; a space may be written %20)", "/pets/1"
        )
    if _odd_escape(path):
        raise InvalidArguments(
            "path", "a path without overlong UTF-8 (%c0%ae) or %u escapes; write characters plainly", "/pets/1"
        )
    if _dot_segment(path):
        raise InvalidArguments(
            "path", "a path without '.'/'..' segments (also not percent-encoded, as '..;' or full-width)", "/pets/1"
        )
    return path


_SQUASH = re.compile(r"[^a-z0-9_]")


def method_override(name: str) -> bool:
    """Whether a query parameter or top-level body field ``name`` overrides the HTTP method.

    Laravel and Symfony run a POST carrying ``_method=DELETE`` (in the query, a form or, in
    Laravel, a JSON body) as a DELETE; Express's ``method-override`` reads ``?_method=``,
    Rails a ``_method`` form field, Salesforce ``?_HttpMethod=PATCH``, and some gateways a
    query named like the ``X-HTTP-Method-Override`` header. A model that may only POST
    could delete through them, past the service's ``methods``, so these names are refused
    in any case, percent-encoded, with ``-``/``.``/spaces or brackets around them.
    ``method`` or ``payment_method`` (no leading ``_``) are ordinary names and pass.
    """
    squashed = _SQUASH.sub("", unicodedata.normalize("NFKC", _decoded(name)).strip().lower())
    bare = squashed.replace("_", "")
    return (
        re.fullmatch(r"_+(http_*)?method", squashed) is not None
        or "methodoverride" in bare
        or bare == "xhttpmethod"
    )


def _check_no_method_override(query: list[tuple[str, str]], json_body: Any) -> None:
    for key, _ in query:
        if method_override(key):
            raise InvalidArguments(
                "query", f"without {key!r}: it overrides the HTTP method on many servers; the method is "
                "chosen by the tool (its `method` argument, within the service's allowed methods)", {"page": 2},
            )
    for key in json_body if isinstance(json_body, dict) else ():
        if isinstance(key, str) and method_override(key):
            raise InvalidArguments(
                "json", f"without the field {key!r}: it overrides the HTTP method on many servers; the method "
                "is chosen by the tool (its `method` argument, within the service's allowed methods)",
            )


def _secret_values(headers: dict[str, str], secret_auth: list[str]) -> tuple[str, ...]:
    """Auth values, and the values of configured headers whose names say they carry a credential
    (each cookie's value too); ``Accept`` or ``X-Tenant`` values are not secrets and stay."""
    found = list(secret_auth)
    for key, value in headers.items():
        if not is_credential_header(key):
            continue
        found.append(value)
        if header_key(key) == "cookie":
            found.extend(part.split("=", 1)[1].strip() for part in value.split(";") if "=" in part)
        scheme, _, rest = value.partition(" ")
        if rest.strip() and scheme.isalpha():  # "Bearer xyz", "Token xyz": the credential alone too
            found.append(rest.strip())
    return tuple(dict.fromkeys(found))


@dataclass
class Prepared:
    """What one call will send before redirects change it."""

    method: str
    url: httpx.URL
    """Base URL, path and the model's query (configured query credentials are added per hop)."""
    headers: dict[str, str]
    json_body: Any
    has_body: bool
    credentials: Credentials = field(default_factory=Credentials)


class ServiceClient:
    """Sends requests to one service, following its settings."""

    def __init__(
        self,
        name: str,
        settings: ServiceSettings,
        guard: AddressGuard,
        base_url: str,
        *,
        private_origins: Collection[Origin] | None = None,
    ) -> None:
        """``private_origins``: origins the operator wrote in config that ``allow_private`` opens
        (default: the base URL's when it is set); a host taken from an OpenAPI document is not one."""
        self.name = name
        self.settings = settings
        self.guard = guard
        self.base_url = httpx.URL(base_url.rstrip("/") + "/")
        if private_origins is None:
            private_origins = [origin(self.base_url)]
        self.private_origins = frozenset(private_origins) if settings.allow_private else frozenset()

    def _url(self, path: str, query: list[tuple[str, str]]) -> httpx.URL:
        """The base URL, the checked ``path`` and the model's ``query``; too long for httpx
        (a URL or its query past 65,536 characters, which no server takes) is the model's
        argument to shorten, not a crash."""
        base = str(self.base_url).rstrip("/")
        try:
            url = httpx.URL(base + path)
            return url.copy_merge_params(httpx.QueryParams(tuple(query))) if query else url
        except httpx.InvalidURL as exc:
            raise InvalidArguments(
                "path" if len(base + path) > 65_536 else "query",
                f"a shorter value: the URL would be too long ({exc})", "/pets?status=available",
            ) from None

    def _credentials(self) -> Credentials:
        s = self.settings
        headers: dict[str, str] = {}
        query: list[tuple[str, str]] = []
        auth_values: list[str] = []
        try:
            for key, secret in s.headers.items():
                headers[key] = reveal(secret)
            auth = s.auth
            if auth is not None:
                if auth.type == "bearer":
                    auth_values.append(reveal(auth.token))
                    headers["Authorization"] = f"Bearer {auth_values[-1]}"
                elif auth.type == "basic":
                    raw = f"{reveal(auth.username)}:{reveal(auth.password)}"
                    auth_values += [reveal(auth.password), raw]
                    headers["Authorization"] = "Basic " + base64.b64encode(raw.encode()).decode("ascii")
                elif auth.type == "header":
                    auth_values.append(reveal(auth.value))
                    headers[auth.name] = auth_values[-1]
                elif auth.type == "query":
                    auth_values.append(reveal(auth.value))
                    query.append((auth.name, auth_values[-1]))
        except MissingSecret as exc:
            raise BusinessError(
                f"service {self.name!r} is not set up: the environment variable {exc.args[0]} "
                "holding its credentials is not set; tell the user, do not retry"
            ) from None
        sent_raw = [(k, v) for k, v in headers.items()]  # each header, and each secret in a header alone:
        sent_raw += [("Authorization", v) for v in auth_values if auth is not None and auth.type == "bearer"]
        sent_raw += [(auth.name, v) for v in auth_values if auth is not None and auth.type == "header"]
        sent_raw += [(k, part.split("=", 1)[1].strip(" ")) for k, v in headers.items() if header_key(k) == "cookie"
                     for part in v.split(";") if "=" in part]  # "Bearer \tsk-..." is a valid line, not a valid token
        for key, value in sent_raw:
            if not _HEADER_VALUE.match(value):
                # h11 would refuse it with an error quoting the value (escaped, so masking misses
                # it), or httpx crash on non-ASCII: say which setting, never what it holds
                raise BusinessError(
                    f"service {self.name!r} is not set up: the configured value of its {key} header "
                    "(from headers or auth) is not one line of printable ASCII (a trailing newline, a "
                    "control or non-ASCII character, or surrounding spaces); nothing was sent. Tell the "
                    "user to fix the setting or the environment variable holding it; do not retry"
                )
        return Credentials(headers, query, _secret_values(headers, auth_values))

    async def send(
        self,
        method: str,
        path: str,
        *,
        query: list[tuple[str, str]] | None = None,
        json_body: Any = None,
        has_body: bool = False,
        headers: dict[str, str] | None = None,
        cookies: list[tuple[str, str]] | None = None,
        idempotency_key: str | None = None,
    ) -> dict[str, Any]:
        """Send and return the shaped response; raise reach failures otherwise.

        ``headers`` and ``cookies`` come from tool arguments: a header that controls
        the HTTP stack or a proxy (``Host``, ``Content-Length``, ``X-Forwarded-For`` ...)
        is refused in any spelling, and none can replace a configured credential.
        """
        method = method.upper()
        credentials = self._credentials()
        configured = credentials.header_keys()
        plain = {"User-Agent": "reach-http", "Accept": "application/json, */*;q=0.5"}
        for key, value in (headers or {}).items():
            why = model_header_refusal(key)
            if why is not None:
                raise InvalidArguments(key, f"left out ({why})")
            if header_key(key) in configured:
                continue  # the service's configured credential wins, whatever the spelling
            for other in [k for k in plain if header_key(k) == header_key(key)]:
                del plain[other]
            plain[key] = check_header_value(key, str(value))
        # a cookie argument named like a configured cookie is dropped, like a query key: with both
        # sent, Django and http.cookies take the last one, the model's (another account's session)
        mine = credentials.cookie_names()
        cookies = [(k, v) for k, v in cookies or [] if k.strip().lower() not in mine]
        if cookies:
            plain["Cookie"] = "; ".join(f"{k}={v}" for k, v in cookies)
        if idempotency_key and method not in SAFE_METHODS and "idempotency-key" not in map(header_key, plain):
            plain["Idempotency-Key"] = header_value(idempotency_key)
        _check_no_method_override(query or [], json_body)
        secret_names = credentials.query_names()
        prepared = Prepared(
            method=method,
            url=self._url(_check_path(path), [(k, v) for k, v in (query or []) if k.lower() not in secret_names]),
            headers=plain,
            json_body=json_body,
            has_body=has_body,
            credentials=credentials,
        )
        return await self._send_prepared(prepared, shown=f"{method} {path}")

    async def _send_prepared(self, p: Prepared, shown: str) -> dict[str, Any]:
        s = self.settings
        safe = p.method in SAFE_METHODS
        masker = p.credentials.masker

        def said(exc: Exception, limit: int | None = None) -> str:
            """What went wrong, configured secrets masked *before* any cut: an error quoting what
            the service sent (a malformed header line, a bad chunk size, a redirect target reach
            refuses) can hold a credential the service reflected."""
            text = masker.text(str(exc) or type(exc).__name__)
            return text if limit is None else masker.cut(text, limit)

        try:
            raw = await exchange(
                self.guard,
                method=p.method,
                url=p.url,
                headers=p.headers,
                credentials=p.credentials,
                json_body=p.json_body,
                has_body=p.has_body,
                request_timeout=s.timeout,
                verify=s.verify,
                max_redirects=s.max_redirects,
                max_bytes=s.max_response_bytes,
                private_origins=self.private_origins,
            )
        except WriteRedirectedElsewhere as exc:
            target = masker.cut(masker.text(exc.target), 200)
            raise BusinessError(
                f"service {self.name!r} answered {shown} with {exc.status}, pointing the {exc.method} to another "
                f"origin, {target!r}; reach sends a write only to the service's own origin, so it was not sent "
                "there. The service answered with a redirect instead of a result: the request may or may not have "
                "taken effect. Check the current state before sending it again, and tell the user where the "
                "service points",
                code="outcome_unknown",
            ) from None
        except RedirectNotFollowed as exc:
            raise BusinessError(
                f"service {self.name!r} received {shown} and answered with a redirect that was not followed "
                f"({said(exc)}); the request has probably taken effect. Check the current state before sending it "
                "again",
                code="outcome_unknown",
            ) from None
        except HostUnresolved as exc:
            raise RetryableError(f"service {self.name!r} on {shown}: {said(exc)}; nothing was sent") from None
        except HostRefused as exc:
            raise BusinessError(
                f"refused to call service {self.name!r} on {shown}: {said(exc)}; do not retry"
            ) from None
        except TooManyRedirects as exc:
            raise BusinessError(
                f"service {self.name!r}: {said(exc)} on {shown}; the request was not completed"
            ) from None
        except (httpx.ConnectError, httpx.ConnectTimeout) as exc:
            raise RetryableError(
                f"could not connect to service {self.name!r} ({said(exc, 200)}); nothing was sent"
            ) from None
        except httpx.TimeoutException:
            raise self._unfinished(safe, shown, f"no complete answer within {s.timeout:g} s") from None
        except httpx.TransportError as exc:
            raise self._unfinished(safe, shown, f"the connection failed ({said(exc, 200)})") from None
        except httpx.DecodingError as exc:
            raise self._unfinished(safe, shown, f"its answer could not be decoded ({said(exc, 200)})") from None
        return p.credentials.scrub(self._result(raw, shown, p.method, p.credentials))

    def _unfinished(self, safe: bool, shown: str, what: str) -> Exception:
        if safe:
            return RetryableError(f"service {self.name!r}: {what} on {shown}; try again later")
        return BusinessError(
            f"service {self.name!r}: {what} on {shown}; the request may or may not have taken effect. "
            "Check the current state before sending it again",
            code="outcome_unknown",
        )

    def _result(
        self, raw: RawResponse, shown: str, sent_method: str, credentials: Credentials | None = None
    ) -> dict[str, Any]:
        """Shape a success; classify a failure by the method first sent (a POST that
        was redirected to a GET has still been processed). Configured secrets the
        service echoed are masked in both (see :meth:`Credentials.scrub`)."""
        status, headers, body = raw.status, raw.headers, raw.body
        masker = credentials.masker if credentials is not None else Masker()
        if status < 400:
            return shape_response(
                status, headers, b"" if raw.method == "HEAD" else body,
                max_chars=self.settings.max_body_chars, cut_on_wire=raw.cut, masker=masker,
            )
        message = error_message(body, headers, raw.reason or "error", masker)
        safe = sent_method in SAFE_METHODS
        retry_after = retry_after_seconds(headers.get("retry-after"))
        if status == 429:
            if safe:
                raise RetryableError(
                    f"service {self.name!r} is rate limiting ({message}) on {shown}", retry_after=retry_after
                )
            wait = f" after {retry_after:.0f} s" if retry_after is not None else " later"
            raise BusinessError(
                f"service {self.name!r} rejected {shown} with 429 Too Many Requests ({message}); "
                f"it was not processed. Send it again{wait} if still needed",
                retry_after=retry_after,
            )
        if status >= 500:
            if safe:
                raise RetryableError(
                    f"service {self.name!r} failed with {status} ({message}) on {shown}", retry_after=retry_after
                )
            raise BusinessError(
                f"service {self.name!r} failed with {status} ({message}) on {shown}; the request may or may "
                "not have taken effect. Check the current state before sending it again",
                code="outcome_unknown",
            )
        raise BusinessError(f"service {self.name!r} answered {status} to {shown}: {message}")


async def _read_limited(response: httpx.Response, limit: int) -> tuple[bytes, bool]:
    """At most ``limit`` decoded bytes of the body; True when more was sent and dropped.

    The raw bytes are decoded here, each stage within a budget (see :mod:`.decoding`):
    a compressed body cannot grow past the cap in memory before it is compared.
    """
    try:
        return await bounded_body(response.aiter_raw(), response.headers.get("content-encoding", ""), limit)
    except DecodeFailed as exc:
        raise httpx.DecodingError(str(exc)) from None


class TooManyRedirects(Exception):
    """More redirects than allowed."""


class RedirectNotFollowed(Exception):
    """A write was sent and answered, and the redirect it was answered with could not be
    followed (refused, unresolvable, unreachable, one too many). The write has most likely
    taken effect: saying "nothing was sent" or "refused" would invite sending it again."""


class WriteRedirectedElsewhere(RedirectNotFollowed):
    """A write was answered with a redirect that would repeat it (its method, and body if any)
    at another origin. Not followed: the operator configured this service's origin, not the one
    the service names, and a ``DELETE`` needs no body to do harm there."""

    def __init__(self, status: int, method: str, target: str) -> None:
        super().__init__(f"a {status} pointing the {method} to another origin, {target}")
        self.status = status
        self.method = method
        self.target = target


@dataclass
class RawResponse:
    """The final response of an exchange, body already read (and capped)."""

    status: int
    reason: str
    headers: dict[str, str]
    body: bytes
    cut: bool
    method: str
    url: httpx.URL


async def exchange(
    guard: AddressGuard,
    *,
    method: str,
    url: httpx.URL,
    headers: dict[str, str],
    credentials: Credentials | None = None,
    json_body: Any = None,
    has_body: bool = False,
    request_timeout: float,
    verify: bool | str = True,
    max_redirects: int = 5,
    max_bytes: int = 2_000_000,
    private_origins: Collection[Origin] = (),
    private_origin: tuple[str, str, int | None] | None = None,
) -> RawResponse:
    """One request with its redirects, every hop checked by ``guard`` and pinned.

    ``private_origins`` are the origins the operator wrote in config for a service
    with ``allow_private``; every other hop (another host of the document, a
    redirect target) is checked as strictly as any URL.

    ``credentials`` go only to the first URL's origin: on a hop elsewhere they are
    left out, and so is every header in ``headers`` that looks like a credential
    (``Authorization``, ``Cookie``, ``*-Key``, ``*Token*`` ...). A later hop back to
    that origin gets them again (query credentials included, which the redirect's
    URL would otherwise lose). 303 (and 301/302 after POST) continue as GET without
    the body, as browsers do. Any other redirect keeps the method and body (307/308 always,
    301/302 for PUT, PATCH, DELETE), so a write (anything but GET, HEAD, OPTIONS) it would
    repeat at another origin, with a body or without, is not followed:
    :class:`WriteRedirectedElsewhere`.
    """
    if private_origin is not None:  # the earlier single-origin spelling
        scheme, host_name, port_number = private_origin
        port_number = port_number or (443 if scheme == "https" else 80)
        private_origins = [*private_origins, (scheme.lower(), host_name.lower(), port_number)]
    pins: dict[str, str] = {}
    first_method = method
    send_body = has_body
    headers = dict(headers)
    credentials = credentials or Credentials()
    home = origin(url)
    extensions = {"timeout": httpx.Timeout(request_timeout).as_dict()}
    # The transport is driven directly (not through AsyncClient.send) so no
    # redirect, cookie or proxy logic of httpx runs behind the guard's back.
    loop = asyncio.get_running_loop()
    sent = False  # a write, once sent, has taken effect whatever happens to its redirects
    try:
        async with PinnedTransport(pins, verify=verify) as transport:
            for hop in range(max_redirects + 1):
                host = url.raw_host.decode("ascii")
                port = url.port or (443 if url.scheme == "https" else 80)
                here = origin(url)
                deadline = loop.time() + request_timeout  # one per hop: resolving, connecting, answer
                address = await guard.check_within(request_timeout, url.scheme, host, port,
                                                   allow_private=here in private_origins)
                pins[host.lower()] = str(address)
                if here == home:
                    hop_headers = _with_credentials(headers, credentials.headers)
                    hop_url = _with_query(url, credentials.query)
                else:
                    hop_headers = {k: v for k, v in headers.items() if not is_credential_header(k)}
                    hop_url = url
                request = httpx.Request(
                    method, hop_url, headers=hop_headers, json=json_body if send_body else None, extensions=extensions
                )
                response, body, cut = await _one_hop(transport, request, max_bytes, deadline, request_timeout)
                sent = True
                location = response.headers.get("location")
                if response.status_code in REDIRECTS and location and max_redirects > 0:
                    if hop == max_redirects:
                        raise TooManyRedirects(f"more than {max_redirects} redirects")
                    try:
                        _check_location(location, url.scheme)
                        next_url = url.join(location)
                        origin(next_url)
                    except (httpx.InvalidURL, ValueError) as exc:  # idna errors and BadURL are ValueErrors
                        shown_target = credentials.masker.cut(credentials.masker.text(location), 200)
                        raise HostRefused(
                            f"the redirect target {shown_target!r} is not a valid URL ({exc})"
                        ) from None
                    as_get = response.status_code == 303 or (response.status_code in (301, 302) and method == "POST")
                    if method not in SAFE_METHODS and not as_get and origin(next_url) != home:
                        # 307/308 keep the method (and body) by definition, and 301/302 keep them for
                        # every method but POST: whatever the code, a write, with a body or without (a
                        # bare DELETE), never goes to an origin the server picked.
                        raise WriteRedirectedElsewhere(response.status_code, method, str(next_url))
                    if as_get:
                        if method != "HEAD":
                            method = "GET"
                        send_body = False
                        headers = {k: v for k, v in headers.items() if k.lower() != "content-type"}
                    url = next_url
                    continue
                return _raw(response, body, cut, method, url)
    except (HostRefused, TooManyRedirects, httpx.ConnectError, httpx.ConnectTimeout) as exc:
        if sent and first_method not in SAFE_METHODS:
            raise RedirectNotFollowed(str(exc) or type(exc).__name__) from None
        raise
    raise AssertionError("unreachable")  # pragma: no cover


def _raw(response: httpx.Response, body: bytes, cut: bool, method: str, url: httpx.URL) -> RawResponse:
    """The answer as it came (headers lower-cased)."""
    return RawResponse(
        status=response.status_code,
        reason=response.reason_phrase,
        headers={k.lower(): v for k, v in response.headers.items()},
        body=body,
        cut=cut,
        method=method,
        url=url,
    )


async def _one_hop(
    transport: PinnedTransport, request: httpx.Request, max_bytes: int, deadline: float, request_timeout: float
) -> tuple[httpx.Response, bytes, bool]:
    """Send one hop and read its body, all of it before ``deadline`` (event-loop time):
    ``request_timeout`` seconds after the hop began, its name's resolution included.

    httpx's timeouts bound each *read*: a server that drips one byte just inside the
    read timeout (or sends headers slowly, line by line) would hold the call until the
    core's deadline. ``timeout`` is documented per request, so the whole exchange of
    one hop is bounded here; running out is a read timeout like any other.
    """
    try:
        async with asyncio.timeout_at(deadline):
            response = await transport.handle_async_request(request)
            response.request = request
            try:
                body, cut = await _read_limited(response, max_bytes)
            finally:
                await response.aclose()
    except TimeoutError:
        raise httpx.ReadTimeout(f"no complete answer within {request_timeout:g} s", request=request) from None
    return response, body, cut


_ABSOLUTE = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")


def _check_location(location: str, scheme: str) -> None:
    """A redirect target read strictly (see :mod:`.urls`): no backslash, space or control
    character anywhere (``http:\\\\h/`` is the host ``h`` to a browser and a path on the
    same host to httpx), and an absolute or scheme-relative one names its host and port in
    a form every parser reads alike."""
    if "\\" in location or any(unicodedata.category(c) in _UNPRINTABLE for c in location):
        raise BadURL("a redirect target with a backslash, space or control character, which parsers "
                     "read as different hosts")
    if location.startswith("//"):
        location = f"{scheme}:{location}"
    if _ABSOLUTE.match(location) and location.lower().startswith(("http://", "https://")):
        check_url_text(location, allow_query=True)
    # another scheme (file:, gopher:) is refused by the guard, which names it


def _with_credentials(headers: dict[str, str], secret: dict[str, str]) -> dict[str, str]:
    """``headers`` plus the configured ones, which replace any same-named header (any spelling)."""
    keys = {header_key(k) for k in secret}
    merged = {k: v for k, v in headers.items() if header_key(k) not in keys}
    merged.update(secret)
    # a configured cookie and the operation's cookie parameters travel together
    theirs = [v for k, v in headers.items() if header_key(k) == "cookie"]
    ours = [k for k in secret if header_key(k) == "cookie"]
    if theirs and ours:
        merged[ours[0]] = "; ".join([secret[ours[0]], *theirs])
    return merged


def _with_query(url: httpx.URL, pairs: list[tuple[str, str]]) -> httpx.URL:
    """``url`` with the configured query credentials, replacing same-named parameters."""
    if not pairs:
        return url
    names = {k.lower() for k, _ in pairs}
    if any(k.lower() in names for k in url.params):
        kept = [(k, v) for k, v in url.params.multi_items() if k.lower() not in names]
        url = url.copy_with(query=str(httpx.QueryParams(tuple(kept))).encode("ascii") or None)
    added = str(httpx.QueryParams(tuple(pairs))).encode("ascii")
    return url.copy_with(query=url.query + b"&" + added if url.query else added)
