"""Client credentials (OAuth 2.1 §4.2, the MCP ``oauth-client-credentials``
extension): a service authenticates as itself, with a client secret (HTTP
Basic or in the body: the method it was registered with when the caller names
it, else whichever the authorization server supports, Basic first) or a
private-key JWT assertion (RFC 7523 §2.2, signed by ``joserfc``)."""

from __future__ import annotations

import re
from collections.abc import Callable

from ..protocol.errors import AuthError, ProtocolError
from ..protocol.redaction import Redacted
from ._base import Auth, DpopSetting, check_auth_method
from ._discovery import ServerMetadata
from ._grant import Grant, Run, check_credential_destination
from ._jwt import SIGNING_ALGORITHMS, client_assertion_signer, load_private_key
from ._store import TokenStore
from ._tokens import ClientAuth, TokenSet, check_offered, choose_method

__all__ = ["ClientCredentials", "client_auth_for"]

_VISIBLE = re.compile(r"[\x21-\x7e]+\Z")


def check_client_id(client_id: object) -> str:
    if not isinstance(client_id, str) or not _VISIBLE.match(client_id):
        raise ProtocolError("option client_id must be a non-empty visible-ASCII string")
    return client_id


class _ClientSecretOrKey:
    """A confidential client's credential: a secret, or a private key."""

    def __init__(
        self,
        client_id: str,
        client_secret: str | None,
        private_key: str | bytes | None,
        algorithm: str,
        method: str | None = None,
    ) -> None:
        if (client_secret is None) == (private_key is None):
            raise ProtocolError("give exactly one of the options client_secret and private_key")
        self.method = check_auth_method(
            method, secret=client_secret is not None, key=private_key is not None
        )
        if client_secret is not None and (not isinstance(client_secret, str) or not client_secret):
            raise ProtocolError("option client_secret must be a non-empty string")
        if algorithm not in SIGNING_ALGORITHMS:
            raise ProtocolError(
                "option signing_algorithm must be one of " + ", ".join(SIGNING_ALGORITHMS)
            )
        self.client_id = client_id
        self.secret = None if client_secret is None else Redacted(client_secret)
        self.algorithm = algorithm
        self._sign: Callable[[str], str] | None = None
        if private_key is not None:
            if not isinstance(private_key, (str, bytes)):
                raise ProtocolError("option private_key must be a PEM string or bytes")
            key = load_private_key(private_key, algorithm, "private_key")
            self._sign = client_assertion_signer(client_id, key, algorithm)

    def client_auth(self, meta: ServerMetadata | None, server: str) -> ClientAuth:
        supported = meta.token_endpoint_auth_methods_supported if meta is not None else None
        if self._sign is not None:
            check_offered("private_key_jwt", supported, server)
            return ClientAuth(self.client_id, "private_key_jwt", sign=self._sign)
        return ClientAuth(self.client_id, choose_method(True, supported, server, self.method), self.secret)


def client_auth_for(credential: _ClientSecretOrKey, run: Run) -> ClientAuth:
    what = "the client secret" if credential.secret is not None else "the private key's assertion"
    check_credential_destination(run, what)
    return credential.client_auth(run.ctx.server, run.server)


class ClientCredentials(Auth):
    """A service's own identity: ``client_id`` with ``client_secret`` or a PEM
    ``private_key`` (signing a JWT assertion with ``signing_algorithm``).

    ``token_endpoint_auth_method`` says how the client was registered to
    authenticate (``client_secret_basic``, ``client_secret_post`` or
    ``private_key_jwt``); by default a secret goes in HTTP Basic unless the
    authorization server lists only ``client_secret_post``.

    Tokens are fetched when the server first asks and again before they
    expire; no person is ever involved.
    """

    def __init__(
        self,
        client_id: str,
        *,
        client_secret: str | None = None,
        private_key: str | bytes | None = None,
        signing_algorithm: str = "ES256",
        scope: str | None = None,
        store: TokenStore | None = None,
        dpop: DpopSetting = "auto",
        issuer: str | None = None,
        token_endpoint_auth_method: str | None = None,
        any_issuer: bool = False,
    ) -> None:
        super().__init__(scope=scope, store=store, dpop=dpop, issuer=issuer, any_issuer=any_issuer)
        self.client_id = check_client_id(client_id)
        self._credential = _ClientSecretOrKey(
            self.client_id, client_secret, private_key, signing_algorithm, token_endpoint_auth_method
        )

    def __repr__(self) -> str:
        return f"<ClientCredentials client_id={self.client_id!r}>"

    def _acquire(self, run: Run, scope: str | None) -> TokenSet:
        grants = run.ctx.server.grant_types_supported
        if grants is not None and "client_credentials" not in grants:
            raise AuthError(
                f"server {run.server!r}: its authorization server does not offer the "
                "client_credentials grant"
            )
        client = client_auth_for(self._credential, run)
        form = {"grant_type": "client_credentials"}
        if scope:
            form["scope"] = scope
        token = run.token(form, client, "the client credentials token request")
        run.grant.client = client
        return token

    def _refresh_client(self, grant: Grant) -> ClientAuth | None:
        return self._credential.client_auth(grant.ctx.server if grant.ctx else None, "(refresh)")
