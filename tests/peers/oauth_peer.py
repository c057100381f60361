"""An OAuth-protected MCP server on the official Python SDK (``mcp==2.3.0``): its
authorization server (metadata, dynamic registration, authorize, token with PKCE,
refresh) and its resource server (protected resource metadata, bearer checks,
``WWW-Authenticate``), on 127.0.0.1. A test peer only, run as a subprocess.

Usage::

    python oauth_peer.py --port N [--token-lifetime S]

The SDK leaves the user-facing part of an authorization server to the provider:
here ``authorize`` sends the browser to this server's own ``/consent`` page, which
approves at once (``?deny=1`` refuses) and redirects to the client with the code.
Tokens last ``--token-lifetime`` seconds (default 3600); refresh tokens rotate.

Tools: ``whoami()`` -> the client id and scopes of the token that called it;
``echo(message)``.
"""

from __future__ import annotations

import argparse
import secrets
import time
from typing import Any

import uvicorn
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    RefreshToken,
    construct_redirect_uri,
)
from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions
from mcp.server.mcpserver import MCPServer
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

SCOPE = "mcp:tools"


class Provider:
    """An in-memory ``OAuthAuthorizationServerProvider`` that approves every request."""

    def __init__(self, lifetime: int) -> None:
        self.lifetime = lifetime
        self.clients: dict[str, OAuthClientInformationFull] = {}
        self.pending: dict[str, tuple[str, AuthorizationParams]] = {}
        self.codes: dict[str, AuthorizationCode] = {}
        self.access: dict[str, AccessToken] = {}
        self.refresh: dict[str, RefreshToken] = {}

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        return self.clients.get(client_id)

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        assert client_info.client_id is not None
        self.clients[client_info.client_id] = client_info

    async def authorize(self, client: OAuthClientInformationFull, params: AuthorizationParams) -> str:
        request_id = secrets.token_urlsafe(16)
        assert client.client_id is not None
        self.pending[request_id] = (client.client_id, params)
        return f"{ISSUER}/consent?request={request_id}"

    def approve(self, request_id: str, deny: bool) -> str:
        client_id, params = self.pending.pop(request_id)
        if deny:
            return construct_redirect_uri(
                str(params.redirect_uri), error="access_denied", state=params.state
            )
        code = secrets.token_urlsafe(24)
        self.codes[code] = AuthorizationCode(
            code=code,
            scopes=params.scopes or [SCOPE],
            expires_at=time.time() + 300,
            client_id=client_id,
            code_challenge=params.code_challenge,
            redirect_uri=params.redirect_uri,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly,
            resource=params.resource,
        )
        return construct_redirect_uri(str(params.redirect_uri), code=code, state=params.state)

    async def load_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: str
    ) -> AuthorizationCode | None:
        return self.codes.get(authorization_code)

    def _issue(self, client_id: str, scopes: list[str], resource: str | None) -> OAuthToken:
        access = "peer-at-" + secrets.token_urlsafe(24)
        refresh = "peer-rt-" + secrets.token_urlsafe(24)
        self.access[access] = AccessToken(
            token=access, client_id=client_id, scopes=scopes,
            expires_at=int(time.time()) + self.lifetime, resource=resource,
        )  # fmt: skip
        self.refresh[refresh] = RefreshToken(
            token=refresh, client_id=client_id, scopes=scopes, resource=resource
        )
        return OAuthToken(
            access_token=access, token_type="Bearer", expires_in=self.lifetime,
            refresh_token=refresh, scope=" ".join(scopes),
        )  # fmt: skip

    async def exchange_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: AuthorizationCode
    ) -> OAuthToken:
        self.codes.pop(authorization_code.code, None)
        assert client.client_id is not None
        return self._issue(client.client_id, authorization_code.scopes, authorization_code.resource)

    async def load_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: str
    ) -> RefreshToken | None:
        return self.refresh.get(refresh_token)

    async def exchange_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: RefreshToken, scopes: list[str]
    ) -> OAuthToken:
        self.refresh.pop(refresh_token.token, None)  # rotation: each refresh token works once
        assert client.client_id is not None
        return self._issue(client.client_id, scopes or refresh_token.scopes, refresh_token.resource)

    async def load_access_token(self, token: str) -> AccessToken | None:
        found = self.access.get(token)
        if found is None or (found.expires_at is not None and found.expires_at < time.time()):
            return None
        return found

    async def revoke_token(self, token: Any) -> None:
        self.access.pop(getattr(token, "token", ""), None)


ISSUER = ""


def main() -> None:
    global ISSUER
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--token-lifetime", type=int, default=3600)
    args = parser.parse_args()
    ISSUER = f"http://127.0.0.1:{args.port}"
    provider = Provider(args.token_lifetime)
    server = MCPServer(
        name="oauth-peer",
        version="1.0.0",
        log_level="WARNING",
        auth_server_provider=provider,
        auth=AuthSettings(
            issuer_url=ISSUER,
            resource_server_url=f"{ISSUER}/mcp",
            validate_token_resource=True,
            required_scopes=[SCOPE],
            client_registration_options=ClientRegistrationOptions(
                enabled=True, valid_scopes=[SCOPE], default_scopes=[SCOPE]
            ),
        ),
    )

    @server.custom_route("/consent", methods=["GET"])
    async def consent(request: Request) -> Response:
        request_id = request.query_params.get("request", "")
        if request_id not in provider.pending:
            return Response("unknown request", status_code=400)
        target = provider.approve(request_id, deny=request.query_params.get("deny") == "1")
        return RedirectResponse(target, status_code=302)

    @server.tool(description="The client id and scopes of the calling token.")
    def whoami() -> str:
        token = get_access_token()
        return "anonymous" if token is None else f"{token.client_id} {' '.join(token.scopes)}"

    @server.tool(description="Return the message unchanged.")
    def echo(message: str) -> str:
        return message

    app = server.streamable_http_app(host="127.0.0.1")
    config = uvicorn.Config(app, host="127.0.0.1", port=args.port, log_level="warning", access_log=False)
    uvicorn.Server(config).run()


if __name__ == "__main__":
    main()
