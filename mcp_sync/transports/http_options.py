"""The HTTP options (checked before any traffic), the static headers every
HTTP request carries, and the client both HTTP transports make for
themselves. ``httpx`` is imported lazily: ``import mcp_sync`` does not need it.

This is where the HTTP transports reveal what a config's ``${VAR}`` expanded
to (a :class:`~.._secret.Secret` in the URL or a header): the URL becomes the
one the transport sends to, the headers go into :class:`StaticHeaders`,
which keeps them private until a request is built.
"""

from __future__ import annotations

import os
import re
from types import ModuleType
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from ..protocol.errors import ProtocolError, missing_extra
from ..protocol.redaction import Redacted
from ..protocol.secret import Secret
from .header_rules import check_headers, plain_http_refused

if TYPE_CHECKING:
    import httpx

__all__ = ["KEEPALIVE_EXPIRY", "StaticHeaders", "check_http_options", "import_httpx", "own_client"]

KEEPALIVE_EXPIRY = 2.0
"""Our own client drops idle connections sooner than servers usually do (5 s),
so a request rarely races the server closing the connection under it."""

_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
VISIBLE_ASCII = re.compile(r"[\x21-\x7e]+\Z")


def import_httpx() -> ModuleType:
    try:
        import httpx
    except ImportError:
        raise missing_extra("the HTTP transport", "httpx", "http") from None
    return httpx


def own_client(max_keepalive: int | None) -> httpx.Client:
    """The client a transport makes when the caller gave none."""
    hx = import_httpx()
    # trust_env: HTTP(S)_PROXY, NO_PROXY, SSL_CERT_FILE... apply as usual.
    limits = (
        hx.Limits(keepalive_expiry=KEEPALIVE_EXPIRY)
        if max_keepalive is None
        else hx.Limits(
            max_connections=None,
            max_keepalive_connections=max_keepalive,
            keepalive_expiry=KEEPALIVE_EXPIRY,
        )
    )
    client: httpx.Client = hx.Client(trust_env=True, follow_redirects=False, limits=limits)
    return client


class StaticHeaders:
    """The headers every request carries: identity encoding (a compressed
    body could expand past every bound before a byte of it was counted), the
    caller's static headers and the bearer token. Private: never in a repr."""

    __slots__ = ("_extra", "_token")

    def __init__(self, token: Redacted[str] | None, extra: Redacted[dict[str, str]] | None) -> None:
        self._token = token
        self._extra = extra

    @property
    def has_token(self) -> bool:
        return self._token is not None

    def build(self, accept: str | None) -> dict[str, str]:
        headers = {"Accept": accept} if accept is not None else {}
        headers["Accept-Encoding"] = "identity"
        if self._extra is not None:
            headers.update(self._extra.reveal())
        if self._token is not None:
            headers["Authorization"] = "Bearer " + self._token.reveal()
        return headers


def check_http_options(
    server: str,
    url: object,
    bearer_token_env: object,
    http_client: object,
    *,
    headers: object = None,
    allow_insecure_http: object = None,
) -> dict[str, Any]:
    """Validate the HTTP options before any traffic; the keyword arguments of
    :class:`HttpTransport` (besides the session and limits)."""
    httpx = import_httpx()
    if isinstance(url, Secret):
        url = url.reveal()
    # The URL is never echoed: its query string may carry a secret.
    if not isinstance(url, str) or not _valid_url(url):
        raise ProtocolError(
            "option url must be an absolute http: or https: URL with a host and "
            "without a user name or password"
        )
    try:
        httpx.URL(url)
    except (httpx.InvalidURL, ValueError, TypeError):
        raise ProtocolError("option url is not a URL httpx can use") from None
    token: Redacted[str] | None = None
    if bearer_token_env is not None:
        if not isinstance(bearer_token_env, str) or not _ENV_NAME.match(bearer_token_env):
            raise ProtocolError(
                "option bearer_token_env must be an environment variable name "
                "(letters, digits and underscores, not starting with a digit)"
            )
        value = os.environ.get(bearer_token_env, "")
        if not value:
            raise ProtocolError(
                f"server {server!r}: the environment variable {bearer_token_env} "
                "named by bearer_token_env is unset or empty"
            )
        if not VISIBLE_ASCII.match(value):
            raise ProtocolError(
                f"server {server!r}: the environment variable {bearer_token_env} "
                "named by bearer_token_env holds characters a bearer token cannot contain"
            )
        token = Redacted(value)
    extra: Redacted[dict[str, str]] | None = None
    if headers is not None:
        try:
            extra = Redacted(check_headers(headers, has_token=token is not None))
        except ValueError as exc:
            raise ProtocolError(f"server {server!r}: option headers {exc}") from None
    if allow_insecure_http is not None and not isinstance(allow_insecure_http, bool):
        raise ProtocolError("option allow_insecure_http must be a bool")
    if plain_http_refused(
        url, sends_credentials=token is not None or bool(extra and extra.reveal()),
        allowed=allow_insecure_http is True,
    ):
        raise ProtocolError(
            f"server {server!r}: refusing to send a bearer token or headers over plain http:// "
            "to a host that is not loopback; use https:, or pass allow_insecure_http=True "
            "to send them unencrypted"
        )
    if http_client is not None and not isinstance(http_client, httpx.Client):
        raise ProtocolError("option http_client must be an httpx.Client (not an AsyncClient)")
    return {
        "server": server, "url": url, "token": token, "http_client": http_client,
        "headers": extra,
    }


def _valid_url(url: str) -> bool:
    if not url or any(ch.isspace() or ord(ch) < 0x20 or ord(ch) == 0x7F for ch in url):
        return False
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError for a bad port
    except ValueError:
        return False
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
        return False
    return "@" not in parts.netloc
