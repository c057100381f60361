"""Tokens, client identities, and the token endpoint exchange.

A token response is untrusted input: its fields are type-checked, its error
codes are repeated only when they are registered OAuth codes, and its
descriptions go only into ``AuthError.detail``.
"""

from __future__ import annotations

import base64
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any
from urllib.parse import quote

from .._errors import AuthError
from .._redact import Redacted
from ._fetch import Fetcher, Reply

__all__ = ["ClientAuth", "TokenSet", "token_request"]

_VISIBLE = re.compile(r"[\x21-\x7e]+\Z")
MAX_TOKEN_CHARS = 16 * 1024
MAX_EXPIRES_IN = 10 * 365 * 24 * 3600
EARLY_REFRESH = 60.0
"""Seconds before expiry at which a token is refreshed ahead of use."""

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


def choose_method(has_secret: bool, supported: tuple[str, ...] | None, server: str) -> str:
    """The token endpoint auth method for a client with (or without) a secret,
    among those the authorization server supports (RFC 8414 default: basic)."""
    if not has_secret:
        return "none"
    offered = supported if supported is not None else ("client_secret_basic",)
    for method in ("client_secret_basic", "client_secret_post"):
        if method in offered:
            return method
    raise AuthError(
        f"server {server!r}: the authorization server accepts none of the client "
        "authentication methods this client can use (client_secret_basic, client_secret_post)"
    )


def oauth_failure(reply: Reply, server: str, what: str) -> AuthError:
    """The error for a refused token, registration or exchange request."""
    body = reply.body if isinstance(reply.body, dict) else {}
    code = body.get("error")
    code = code if isinstance(code, str) else None
    error = AuthError("", code)
    named = f" ({error.oauth_error})" if error.oauth_error else ""
    return AuthError(
        f"server {server!r}: {what} was refused with HTTP {reply.status}{named}",
        code,
        Redacted({"error": code, "error_description": body.get("error_description")}),
    )


def parse_token_response(reply: Reply, server: str, what: str, now: float | None = None) -> TokenSet:
    body = reply.body
    if reply.status != 200 or not isinstance(body, dict):
        raise oauth_failure(reply, server, what)
    access = body.get("access_token")
    if not isinstance(access, str) or not access or len(access) > MAX_TOKEN_CHARS or not _VISIBLE.match(access):
        raise AuthError(f"server {server!r}: {what} returned no usable access_token")
    kind = body.get("token_type")
    if not isinstance(kind, str) or kind.lower() not in ("bearer", "dpop"):
        raise AuthError(f"server {server!r}: {what} returned a token_type other than Bearer or DPoP")
    expires_in = body.get("expires_in")
    expires_at: float | None = None
    refresh_at: float | None = None
    if isinstance(expires_in, str) and expires_in.isdigit() and len(expires_in) < 12:
        expires_in = int(expires_in)  # seen in the wild
    if isinstance(expires_in, (int, float)) and not isinstance(expires_in, bool) and expires_in >= 0:
        lifetime = min(float(expires_in), MAX_EXPIRES_IN)
        expires_at = (time.time() if now is None else now) + lifetime
        # Refresh a little early: a tenth of the lifetime, at most a minute.
        refresh_at = expires_at - min(EARLY_REFRESH, lifetime / 10)
    refresh = body.get("refresh_token")
    refresh_token = None
    if isinstance(refresh, str) and refresh and len(refresh) <= MAX_TOKEN_CHARS and _VISIBLE.match(refresh):
        refresh_token = Redacted(refresh)
    scope = body.get("scope")
    return TokenSet(
        Redacted(access),
        "DPoP" if kind.lower() == "dpop" else "Bearer",
        expires_at,
        refresh_token,
        scope if isinstance(scope, str) else None,
        refresh_at,
    )


def keep_refresh(new: TokenSet, old: TokenSet | None) -> TokenSet:
    """A refresh answer may omit the refresh token: keep the old one (RFC 6749 §6)."""
    if new.refresh_token is None and old is not None and old.refresh_token is not None:
        return replace(new, refresh_token=old.refresh_token)
    return new


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
    """POST to a token endpoint; ``proof(nonce)`` makes a DPoP proof, and one
    ``use_dpop_nonce`` challenge is answered (RFC 9449 §8)."""
    nonce: str | None = None
    for _attempt in range(2):
        body = dict(form)
        headers: dict[str, str] = {}
        if client is not None:
            client.apply(body, headers, audience)
        if proof is not None:
            headers["DPoP"] = proof(nonce)
        reply = fetcher.request("POST", token_endpoint, deadline, what=what, form=body, headers=headers)
        offered = reply.headers.get("dpop-nonce")
        if (
            proof is not None
            and reply.status in (400, 401)
            and isinstance(reply.body, dict)
            and reply.body.get("error") == "use_dpop_nonce"
            and offered
            and _VISIBLE.match(offered)
            and offered != nonce
        ):
            nonce = offered
            continue
        return parse_token_response(reply, fetcher.server, what)
    raise AuthError(f"server {fetcher.server!r}: {what} kept asking for a new DPoP nonce")
