"""The MCP authorization extensions for workloads and enterprises.

* :class:`WorkloadIdentity` (``io.modelcontextprotocol/auth/wif``): a workload
  presents a JWT its platform issued (Kubernetes, SPIFFE, a cloud) with the
  RFC 7523 JWT-bearer grant. A refused assertion is reported, never retried
  and never traded for another grant type.
* :class:`EnterpriseManagedAuthorization`
  (``io.modelcontextprotocol/enterprise-managed-authorization``): the user's
  ID token from the enterprise identity provider is exchanged there (RFC 8693)
  for an identity assertion grant (ID-JAG) for the MCP server's authorization
  server, which the client then presents with the JWT-bearer grant.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable

from ..protocol.errors import AuthError, ProtocolError
from ..protocol.redaction import Redacted
from ._base import Auth, DpopSetting, call_source, source_text
from ._client_credentials import _ClientSecretOrKey, check_client_id, client_auth_for
from ._grant import Grant, Run, check_credential_destination
from ._store import TokenStore
from ._tokens import JWT_BEARER, ClientAuth, TokenSet, oauth_failure
from ._urls import check_oauth_url

__all__ = ["EnterpriseManagedAuthorization", "WorkloadIdentity"]

TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange"
ID_JAG = "urn:ietf:params:oauth:token-type:id-jag"
ID_TOKEN = "urn:ietf:params:oauth:token-type:id_token"
_VISIBLE = re.compile(r"[\x21-\x7e]+\Z")

TextSource = str | Callable[[], str] | os.PathLike[str]


def _needs_jwt_bearer(run: Run) -> None:
    grants = run.ctx.server.grant_types_supported
    if grants is not None and JWT_BEARER not in grants:
        raise AuthError(
            f"server {run.server!r}: its authorization server does not offer the JWT-bearer grant"
        )


class WorkloadIdentity(Auth):
    """A workload's own JWT (``assertion``: the token, a callable returning
    it, or a path to the file the platform keeps it in, read at each use)
    traded for an access token with the JWT-bearer grant."""

    def __init__(
        self,
        assertion: TextSource,
        *,
        client_id: str | None = None,
        scope: str | None = None,
        store: TokenStore | None = None,
        dpop: DpopSetting = "auto",
        issuer: str | None = None,
        any_issuer: bool = False,
    ) -> None:
        super().__init__(scope=scope, store=store, dpop=dpop, issuer=issuer, any_issuer=any_issuer)
        self._assertion = source_text(assertion, "assertion")
        self.client_id = None if client_id is None else check_client_id(client_id)

    def __repr__(self) -> str:
        return "<WorkloadIdentity>"

    def _acquire(self, run: Run, scope: str | None) -> TokenSet:
        _needs_jwt_bearer(run)
        check_credential_destination(run, "the workload's assertion")
        form = {"grant_type": JWT_BEARER, "assertion": call_source(self._assertion, "assertion")}
        if scope:
            form["scope"] = scope
        client = ClientAuth(self.client_id) if self.client_id is not None else None
        return run.token(form, client, "the workload identity token request")

    def _refresh_client(self, grant: Grant) -> ClientAuth | None:
        return ClientAuth(self.client_id) if self.client_id is not None else None


class EnterpriseManagedAuthorization(Auth):
    """Enterprise-managed authorization: ``id_token`` (a string, a callable
    or a path) is exchanged at ``idp_token_endpoint`` (as ``idp_client_id``,
    with ``idp_client_secret`` if the identity provider wants one) for an
    identity assertion grant, which this client (``client_id`` with
    ``client_secret`` or ``private_key``) presents to the MCP server's
    authorization server."""

    def __init__(
        self,
        *,
        client_id: str,
        idp_token_endpoint: str,
        id_token: TextSource,
        client_secret: str | None = None,
        private_key: str | bytes | None = None,
        signing_algorithm: str = "ES256",
        idp_client_id: str | None = None,
        idp_client_secret: str | None = None,
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
        try:
            self.idp_token_endpoint = check_oauth_url(idp_token_endpoint, "idp_token_endpoint", "-")
        except AuthError:
            raise ProtocolError(
                "option idp_token_endpoint must be an https URL (http only to a loopback host)"
            ) from None
        self._id_token = source_text(id_token, "id_token")
        self.idp_client_id = None if idp_client_id is None else check_client_id(idp_client_id)
        if idp_client_secret is not None and (idp_client_id is None or not idp_client_secret):
            raise ProtocolError("option idp_client_secret needs idp_client_id and must not be empty")
        self._idp_secret = None if idp_client_secret is None else Redacted(idp_client_secret)

    def __repr__(self) -> str:
        return f"<EnterpriseManagedAuthorization client_id={self.client_id!r}>"

    def _acquire(self, run: Run, scope: str | None) -> TokenSet:
        _needs_jwt_bearer(run)
        grant = self._exchange(run, scope)
        client = client_auth_for(self._credential, run)
        form = {"grant_type": JWT_BEARER, "assertion": grant}
        if scope:
            form["scope"] = scope
        token = run.token(form, client, "the identity assertion grant")
        run.grant.client = client
        return token

    def _exchange(self, run: Run, scope: str | None) -> str:
        """RFC 8693 token exchange at the identity provider: ID token -> ID-JAG."""
        form = {
            "grant_type": TOKEN_EXCHANGE,
            "requested_token_type": ID_JAG,
            "audience": run.ctx.issuer,
            "resource": run.ctx.resource,
            "subject_token": call_source(self._id_token, "id_token"),
            "subject_token_type": ID_TOKEN,
        }
        if scope:
            form["scope"] = scope
        headers: dict[str, str] = {}
        if self.idp_client_id is not None:
            method = "client_secret_basic" if self._idp_secret is not None else "none"
            ClientAuth(self.idp_client_id, method, self._idp_secret).apply(form, headers, self.idp_token_endpoint)
        what = "the token exchange at the identity provider"
        reply = run.fetcher.request(
            "POST", self.idp_token_endpoint, run.deadline, what=what, form=form, headers=headers
        )
        body = reply.body
        if reply.status != 200 or not isinstance(body, dict):
            raise oauth_failure(reply, run.server, what)
        jag = body.get("access_token")
        if body.get("issued_token_type") != ID_JAG or not isinstance(jag, str) or not _VISIBLE.match(jag):
            raise AuthError(f"server {run.server!r}: {what} returned no identity assertion grant")
        return jag

    def _refresh_client(self, grant: Grant) -> ClientAuth | None:
        return self._credential.client_auth(grant.ctx.server if grant.ctx else None, "(refresh)")
