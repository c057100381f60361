"""JWT signing for client assertions (RFC 7523), through ``joserfc``.

``joserfc`` (and ``cryptography`` under it) is imported on first use, so
``import mcp_sync.auth`` stays cheap; without the ``auth`` extra the first
signature fails with a clear message.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable
from types import ModuleType
from typing import Any

from ..protocol.errors import ProtocolError, missing_extra

__all__ = ["SIGNING_ALGORITHMS", "client_assertion_signer", "load_private_key", "signer"]

SIGNING_ALGORITHMS = (
    "ES256", "ES384", "ES512", "RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "EdDSA",
)
ASSERTION_LIFETIME = 60
"""Seconds a client assertion is valid for."""


def joserfc() -> tuple[ModuleType, ModuleType]:
    """The ``joserfc.jwt`` and ``joserfc.jwk`` modules, imported on demand."""
    try:
        from joserfc import jwk, jwt
    except ImportError:
        raise missing_extra("signing JWTs (private_key_jwt, DPoP)", "joserfc", "auth") from None
    return jwt, jwk


def load_private_key(pem: str | bytes, algorithm: str, what: str) -> Any:
    """A joserfc key from a PEM private key; ``ProtocolError`` naming ``what``
    (never the key) when it cannot be used with ``algorithm``."""
    if algorithm not in SIGNING_ALGORITHMS:
        raise ProtocolError(f"option {what}: signing algorithm must be one of {', '.join(SIGNING_ALGORITHMS)}")
    _, jwk = joserfc()
    kind = "EC" if algorithm.startswith("ES") else "OKP" if algorithm == "EdDSA" else "RSA"
    try:
        key = jwk.JWKRegistry.import_key(pem, kind)
    except Exception:  # joserfc/cryptography raise many types for a bad key
        raise ProtocolError(f"option {what} is not a {kind} private key in PEM form") from None
    if not key.is_private:
        raise ProtocolError(f"option {what} is a public key; a private key is needed")
    return key


def signer(key: Any, algorithm: str) -> Callable[[dict[str, Any], dict[str, Any]], str]:
    """``sign(header, claims)`` -> a compact JWS signed with ``key``."""
    jwt, _ = joserfc()

    def sign(header: dict[str, Any], claims: dict[str, Any]) -> str:
        encoded: str = jwt.encode({**header, "alg": algorithm}, claims, key, algorithms=[algorithm])
        return encoded

    return sign


def client_assertion_signer(client_id: str, key: Any, algorithm: str) -> Callable[[str], str]:
    """``assertion(audience)`` -> a fresh RFC 7523 client assertion."""
    sign = signer(key, algorithm)

    def assertion(audience: str) -> str:
        now = int(time.time())
        return sign(
            {"typ": "JWT"},
            {
                "iss": client_id,
                "sub": client_id,
                "aud": audience,
                "iat": now,
                "exp": now + ASSERTION_LIFETIME,
                "jti": secrets.token_urlsafe(16),
            },
        )

    return assertion
