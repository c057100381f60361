"""DPoP proofs (RFC 9449) with the MCP profile's ``content_digest`` claim.

One ES256 key per grant, made by ``joserfc`` and kept with the tokens it
binds (a DPoP-bound refresh token is useless without it). A proof is made
fresh for every request: ``htm``, ``htu`` (without query and fragment),
``iat``, a random ``jti``, ``ath`` when a token is presented, the server's
``nonce`` when it asked for one, and for a request with a body, the
``content_digest`` of that body.
"""

from __future__ import annotations

import base64
import hashlib
import secrets
import time
from typing import Any

from ._jwt import joserfc, signer
from ._urls import without_query

__all__ = ["DPOP_ALGORITHM", "DpopKey"]

DPOP_ALGORITHM = "ES256"


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


class DpopKey:
    """A DPoP key pair and the proofs it signs. The private half never
    leaves except through :meth:`to_record`, for a token store."""

    __slots__ = ("_key", "_public", "_sign")

    def __init__(self, private_jwk: dict[str, Any] | None = None) -> None:
        _, jwk = joserfc()
        key = jwk.ECKey.generate_key("P-256") if private_jwk is None else jwk.ECKey.import_key(private_jwk)
        self._key = key
        self._public: dict[str, Any] = key.as_dict(private=False)
        self._sign = signer(key, DPOP_ALGORITHM)

    def proof(
        self,
        method: str,
        url: str,
        *,
        access_token: str | None = None,
        nonce: str | None = None,
        body: bytes | None = None,
    ) -> str:
        claims: dict[str, Any] = {
            "jti": secrets.token_urlsafe(16),
            "htm": method,
            "htu": without_query(url),
            "iat": int(time.time()),
        }
        if access_token is not None:
            claims["ath"] = _b64url(hashlib.sha256(access_token.encode("ascii")).digest())
        if nonce is not None:
            claims["nonce"] = nonce
        if body is not None:
            digest = base64.b64encode(hashlib.sha256(body).digest()).decode("ascii")
            claims["content_digest"] = f"sha-256=:{digest}:"
        return self._sign({"typ": "dpop+jwt", "jwk": self._public}, claims)

    def to_record(self) -> dict[str, Any]:
        private: dict[str, Any] = self._key.as_dict(private=True)
        return private

    def __repr__(self) -> str:
        return "DpopKey(...)"

    def __reduce__(self) -> Any:
        raise TypeError("a DPoP key cannot be pickled")
