"""Tokens, client identities, and the token endpoint exchange.

A token response is untrusted input: its fields are type-checked, its error
codes are repeated only when they are registered OAuth codes, and its
``error_description`` is shown escaped, redacted and cut short (the whole of
it stays in ``AuthError.detail``).

The DPoP nonce an authorization server hands out (RFC 9449 §8) is kept per
authorization server in :data:`NONCES`, so the next token request to it sends
the nonce at once instead of paying a ``use_dpop_nonce`` round trip.
"""

from __future__ import annotations

import base64
import re
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any, TypeGuard
from urllib.parse import quote

from ..protocol.errors import AuthError
from ..protocol.redaction import Redacted, redact
from ..protocol.text import escape
from ._fetch import Fetcher, Reply

__all__ = ["NONCES", "ClientAuth", "NonceBook", "TokenSet", "describe", "token_request"]

_VISIBLE = re.compile(r"[\x21-\x7e]+\Z")
MAX_TOKEN_CHARS = 16 * 1024
MAX_EXPIRES_IN = 10 * 365 * 24 * 3600
EARLY_REFRESH = 60.0
"""Seconds before expiry at which a token is refreshed ahead of use."""

MAX_DESCRIPTION_CHARS = 300
"""How much of a provider's ``error_description`` a message shows."""
CLIENT_AUTH_METHODS = ("client_secret_basic", "client_secret_post", "private_key_jwt")
"""The values of the ``token_endpoint_auth_method`` option."""
_KNOWN_METHODS = (
    "none", *CLIENT_AUTH_METHODS, "client_secret_jwt", "tls_client_auth", "self_signed_tls_client_auth"
)

ASSERTION_TYPE = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer"


@dataclass(frozen=True)
class TokenSet:
    """An access token and what came with it. The secrets are :class:`Redacted`."""

    access_token: Redacted[str]
    token_type: str
    """``"Bearer"`` or ``"DPoP"``."""
    expires_at: float | None = None
    """Wall-clock time (``time.time()``) after which it is no longer valid."""
    refresh_token: Redacted[str] | None = None
    scope: str | None = None

    refresh_at: float | None = None
    """Wall-clock time from which it is refreshed ahead of use."""

    def fresh(self, now: float | None = None) -> bool:
        """Usable now without refreshing first."""
        if self.refresh_at is None:
            return True
        return (time.time() if now is None else now) < self.refresh_at

    def to_record(self) -> dict[str, Any]:
        return {
            "access_token": self.access_token.reveal(),
            "token_type": self.token_type,
            "expires_at": self.expires_at,
            "refresh_token": None if self.refresh_token is None else self.refresh_token.reveal(),
            "scope": self.scope,
            "refresh_at": self.refresh_at,
        }

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> TokenSet | None:
        access = record.get("access_token")
        kind = record.get("token_type")
        if not isinstance(access, str) or not _VISIBLE.match(access) or kind not in ("Bearer", "DPoP"):
            return None
        expires = record.get("expires_at")
        refresh = record.get("refresh_token")
        scope = record.get("scope")
        refresh_at = record.get("refresh_at")
        return cls(
            Redacted(access),
            kind,
            _number(expires),
            Redacted(refresh) if isinstance(refresh, str) and _VISIBLE.match(refresh) else None,
            scope if isinstance(scope, str) else None,
            _number(refresh_at),
        )

    def __repr__(self) -> str:
        return f"TokenSet(token_type={self.token_type!r}, scope={self.scope!r})"


def _number(value: object) -> float | None:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    return None


@dataclass(frozen=True)
class ClientAuth:
    """How the client identifies itself at a token endpoint.

    ``method`` is ``none``, ``client_secret_basic``, ``client_secret_post``
    or ``private_key_jwt`` (``sign`` makes the assertion for an audience).
    """

    client_id: str
    method: str = "none"
    secret: Redacted[str] | None = None
    sign: Callable[[str], str] | None = None

    def apply(self, form: dict[str, str], headers: dict[str, str], audience: str) -> None:
        if self.method == "client_secret_basic" and self.secret is not None:
            # RFC 6749 §2.3.1: both parts form-urlencoded before base64.
            pair = f"{quote(self.client_id, safe='')}:{quote(self.secret.reveal(), safe='')}"
            headers["Authorization"] = "Basic " + base64.b64encode(pair.encode()).decode("ascii")
            # client_id is an identifier, not a second credential: some servers need it.
            form["client_id"] = self.client_id
        elif self.method == "client_secret_post" and self.secret is not None:
            form["client_id"] = self.client_id
            form["client_secret"] = self.secret.reveal()
        elif self.method == "private_key_jwt" and self.sign is not None:
            form["client_id"] = self.client_id
            form["client_assertion_type"] = ASSERTION_TYPE
            form["client_assertion"] = self.sign(audience)
        elif self.client_id:
            form["client_id"] = self.client_id

    def __repr__(self) -> str:
        return f"ClientAuth(client_id={self.client_id!r}, method={self.method!r})"


def choose_method(
    has_secret: bool, supported: tuple[str, ...] | None, server: str, wanted: str | None = None
) -> str:
    """The token endpoint auth method for a client with (or without) a secret,
    among those the authorization server supports (RFC 8414 default: basic).
    ``wanted`` is the method the client was registered with, when the caller
    said (the option ``token_endpoint_auth_method``)."""
    if not has_secret:
        return "none"
    if wanted is not None:
        return check_offered(wanted, supported, server)
    offered = supported if supported is not None else ("client_secret_basic",)
    for method in ("client_secret_basic", "client_secret_post"):
        if method in offered:
            return method
    raise AuthError(
        f"server {server!r}: the authorization server accepts none of the client "
        "authentication methods this client can use (client_secret_basic, client_secret_post)"
    )


def check_offered(method: str, supported: tuple[str, ...] | None, server: str) -> str:
    """``method`` (the caller's ``token_endpoint_auth_method``) when the
    authorization server's metadata does not rule it out."""
    if supported is not None and method not in supported:
        # Only registered method names are repeated, never other server text.
        listed = [item for item in _KNOWN_METHODS if item in supported]
        raise AuthError(
            f"server {server!r}: its authorization server does not accept {method} "
            f"(its metadata lists {', '.join(listed) or 'no method this client knows'})"
        )
    return method


def describe(value: object) -> str | None:
    """A provider's ``error_description`` made fit for a message: redacted
    (a provider may echo what it was sent), escaped, and cut short; None
    when there is none."""
    if not isinstance(value, str) or not value.strip():
        return None
    # Cut before redacting (bounded work), and again after escaping.
    text = escape(redact(value.strip()[: MAX_DESCRIPTION_CHARS * 4]))
    if len(text) > MAX_DESCRIPTION_CHARS:
        text = text[: MAX_DESCRIPTION_CHARS - 1] + "…"
    return text


def refusal(server: str, what: str, code: object, description: object) -> tuple[str, str | None]:
    """The message of a refusal, and the OAuth code as the error keeps it."""
    code = code if isinstance(code, str) else None
    named = AuthError("", code).oauth_error
    said = describe(description)
    text = f"server {server!r}: {what}" + (f" ({named})" if named else "")
    if said is not None:
        text += f': the authorization server says "{said}"'
    return text, code


def oauth_failure(reply: Reply, server: str, what: str) -> AuthError:
    """The error for a refused token, registration or exchange request."""
    body = reply.body if isinstance(reply.body, dict) else {}
    description = body.get("error_description")
    message, code = refusal(server, f"{what} was refused with HTTP {reply.status}", body.get("error"), description)
    return AuthError(message, code, Redacted({"error": code, "error_description": description}))


def parse_token_response(reply: Reply, server: str, what: str, now: float | None = None) -> TokenSet:
    body = reply.body
    if reply.status != 200 or not isinstance(body, dict):
        raise oauth_failure(reply, server, what)
    access = body.get("access_token")
    if not _usable_token(access):
        raise AuthError(f"server {server!r}: {what} returned no usable access_token")
    kind = body.get("token_type")
    if not isinstance(kind, str) or kind.lower() not in ("bearer", "dpop"):
        raise AuthError(f"server {server!r}: {what} returned a token_type other than Bearer or DPoP")
    expires_at, refresh_at = _expiry(body.get("expires_in"), now)
    refresh = body.get("refresh_token")
    scope = body.get("scope")
    return TokenSet(
        Redacted(access),
        "DPoP" if kind.lower() == "dpop" else "Bearer",
        expires_at,
        Redacted(refresh) if _usable_token(refresh) else None,
        scope if isinstance(scope, str) else None,
        refresh_at,
    )


def _usable_token(value: object) -> TypeGuard[str]:
    """A non-empty visible-ASCII string of at most MAX_TOKEN_CHARS."""
    return isinstance(value, str) and bool(value) and len(value) <= MAX_TOKEN_CHARS and bool(_VISIBLE.match(value))


def _expiry(expires_in: object, now: float | None) -> tuple[float | None, float | None]:
    """When a token given ``expires_in`` expires, and when to refresh it (``None``: not said)."""
    if isinstance(expires_in, str) and expires_in.isdigit() and len(expires_in) < 12:
        expires_in = int(expires_in)  # seen in the wild
    if isinstance(expires_in, (int, float)) and not isinstance(expires_in, bool) and expires_in >= 0:
        lifetime = min(float(expires_in), MAX_EXPIRES_IN)
        expires_at = (time.time() if now is None else now) + lifetime
        # Refresh a little early: a tenth of the lifetime, at most a minute.
        return expires_at, expires_at - min(EARLY_REFRESH, lifetime / 10)
    return None, None  # absent, or not a usable number (NaN included)


def keep_refresh(new: TokenSet, old: TokenSet | None) -> TokenSet:
    """A refresh answer may omit the refresh token: keep the old one (RFC 6749 §6)."""
    if new.refresh_token is None and old is not None and old.refresh_token is not None:
        return replace(new, refresh_token=old.refresh_token)
    return new


MAX_NONCE_CHARS = 1024
MAX_NONCE_SERVERS = 256


class NonceBook:
    """The last DPoP nonce each authorization server sent, by issuer."""

    def __init__(self) -> None:
        # Guards _nonces; held only for a dict read or write, by any thread
        # making a token request (never across a network exchange).
        self._lock = threading.Lock()
        self._nonces: dict[str, str] = {}

    def get(self, issuer: str) -> str | None:
        with self._lock:
            return self._nonces.get(issuer)

    def offer(self, issuer: str, nonce: str | None) -> str | None:
        """Keep ``nonce`` (from a ``DPoP-Nonce`` header) when it is usable;
        return it, or None."""
        if not nonce or len(nonce) > MAX_NONCE_CHARS or not _VISIBLE.match(nonce):
            return None
        with self._lock:
            self._nonces.pop(issuer, None)
            if len(self._nonces) >= MAX_NONCE_SERVERS:
                del self._nonces[next(iter(self._nonces))]  # the oldest
            self._nonces[issuer] = nonce
        return nonce

    def clear(self) -> None:
        with self._lock:
            self._nonces.clear()


NONCES = NonceBook()
"""Authorization servers' DPoP nonces, shared by every auth object: a nonce
belongs to the server that sent it, not to a client."""


def token_request(
    fetcher: Fetcher,
    token_endpoint: str,
    form: dict[str, str],
    client: ClientAuth | None,
    deadline: float,
    *,
    audience: str,
    what: str,
    proof: Callable[[str | None], str] | None = None,
) -> TokenSet:
    """POST to a token endpoint; ``proof(nonce)`` makes a DPoP proof with the
    nonce this authorization server last sent, and one ``use_dpop_nonce``
    challenge is answered (RFC 9449 §8)."""
    nonce = NONCES.get(audience) if proof is not None else None
    for _attempt in range(2):
        body = dict(form)
        headers: dict[str, str] = {}
        if client is not None:
            client.apply(body, headers, audience)
        if proof is not None:
            headers["DPoP"] = proof(nonce)
        reply = fetcher.request("POST", token_endpoint, deadline, what=what, form=body, headers=headers)
        offered = NONCES.offer(audience, reply.headers.get("dpop-nonce")) if proof is not None else None
        if (
            offered is not None
            and reply.status in (400, 401)
            and isinstance(reply.body, dict)
            and reply.body.get("error") == "use_dpop_nonce"
            and offered != nonce
        ):
            nonce = offered
            continue
        return parse_token_response(reply, fetcher.server, what)
    raise AuthError(f"server {fetcher.server!r}: {what} kept asking for a new DPoP nonce")
