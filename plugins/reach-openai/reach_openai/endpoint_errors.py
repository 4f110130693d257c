"""Turn OpenAI SDK exceptions into one-line ModelErrors a person can act on.

A run that fails because the model endpoint is down, the key is wrong or the
quota is spent must say *which* endpoint and *what to check*; a traceback from
deep inside httpx says neither.
"""

from __future__ import annotations

import openai

from reach_core.adapter import ModelError

_HOW_TO_SET = "[plugins.reach-openai] {field} in reach.toml or {env}"


def _server_message(exc: openai.APIStatusError) -> str:
    body = exc.body
    if isinstance(body, dict):
        inner = body.get("error", body)
        message = inner.get("message") if isinstance(inner, dict) else inner
        if message:
            return str(message)[:300]
    return (exc.message or "")[:300]


def explain(exc: Exception, *, endpoint: str, model: str, timeout: float) -> ModelError:
    """A ModelError naming ``endpoint`` and the likely fix for ``exc``."""
    where = f"the model endpoint {endpoint}"
    if isinstance(exc, openai.APITimeoutError):
        return ModelError(
            f"{where} did not answer within {timeout:g} s (model {model}); check that the server is "
            f"up and not overloaded, or raise {_HOW_TO_SET.format(field='timeout', env='the run deadline')}",
            kind="timeout",
            endpoint=endpoint,
        )
    if isinstance(exc, openai.APIConnectionError):
        cause = exc.__cause__ or exc.__context__
        detail = f" ({type(cause).__name__}: {cause})" if cause else ""
        return ModelError(
            f"cannot connect to {where}{detail}; check that the server is running and that "
            f"{_HOW_TO_SET.format(field='base_url', env='OPENAI_BASE_URL')} is right",
            kind="connection",
            endpoint=endpoint,
        )
    if isinstance(exc, openai.APIStatusError):
        status = exc.status_code
        said = _server_message(exc)
        if status in (401, 403):
            return ModelError(
                f"{where} refused the API key (HTTP {status}: {said}); check "
                f"{_HOW_TO_SET.format(field='api_key', env='OPENAI_API_KEY')}",
                kind="auth",
                endpoint=endpoint,
                status=status,
            )
        if status == 429:
            return ModelError(
                f"{where} is rate limiting this client or the quota is used up (HTTP 429: {said}); "
                "wait and run again, or check the account's limits and billing",
                kind="rate_limited",
                endpoint=endpoint,
                status=status,
            )
        if status == 404:
            return ModelError(
                f"{where} answered HTTP 404 ({said}); check that the model `{model}` exists there "
                "and that the base URL ends in /v1",
                kind="not_found",
                endpoint=endpoint,
                status=status,
            )
        if status >= 500:
            return ModelError(
                f"{where} failed with HTTP {status} ({said}); the server has a problem: check its "
                "logs or status page and run again later",
                kind="server",
                endpoint=endpoint,
                status=status,
            )
        return ModelError(
            f"{where} rejected the request (HTTP {status}: {said}); if model `{model}` does not "
            'support tool calling, set [plugins.reach-openai] mode = "tagged"',
            kind="bad_request",
            endpoint=endpoint,
            status=status,
        )
    return ModelError(
        f"calling {where} failed: {type(exc).__name__}: {exc}", kind="other", endpoint=endpoint
    )
