"""An MCP server on the official Python SDK (``mcp==2.3.0``) that trusts an
independent authorization server (node-oidc-provider, tests/peers/oidc_provider.mjs):
the SDK's resource server (protected resource metadata, bearer checks,
``WWW-Authenticate``) with a token verifier that checks the provider's JWT access
tokens against its JWKS (signature, ``iss``, ``aud`` = this server, ``exp``). A test
peer only, run as a subprocess on 127.0.0.1.

Usage::

    python oidc_mcp_server.py --port N --issuer URL

In front of the SDK, a small ASGI layer does what the SDK's resource server does not:
it takes ``Authorization: DPoP`` with a proof (RFC 9449 §7: signature, ``htm``,
``htu``, ``ath``, and the key thumbprint the token's ``cnf.jkt`` names) and refuses a
DPoP-bound token presented as a bearer token; and it answers a ``tools/call`` whose
tool needs more scope with 403 ``insufficient_scope`` naming the scopes wanted.

Tools: ``whoami()`` -> the client id and scopes of the calling token; ``admin()``
needs ``mcp:admin``; ``root()`` needs ``mcp:root``, which the provider never grants.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import time
from typing import Any

import httpx
import uvicorn
from joserfc import jwk, jwt
from joserfc.jwk import KeySet
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import MCPServer
from starlette.types import ASGIApp, Message, Receive, Scope, Send

SCOPE = "mcp:tools"
NEEDS = {"admin": "mcp:admin", "root": "mcp:root"}
ALGORITHMS = ["ES256", "RS256"]


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


class Verifier:
    """Checks the provider's JWT access tokens for this resource."""

    def __init__(self, issuer: str, resource: str) -> None:
        self.issuer = issuer
        self.resource = resource
        config = httpx.get(f"{issuer}/.well-known/openid-configuration", timeout=30).json()
        self.keys = KeySet.import_key_set(httpx.get(config["jwks_uri"], timeout=30).json())

    def claims(self, token: str) -> dict[str, Any] | None:
        try:
            decoded = jwt.decode(token, self.keys, algorithms=ALGORITHMS)
        except Exception:
            return None
        claims = dict(decoded.claims)
        audience = claims.get("aud")
        audiences = audience if isinstance(audience, list) else [audience]
        if claims.get("iss") != self.issuer or self.resource not in audiences:
            return None
        if not isinstance(claims.get("exp"), int) or claims["exp"] < time.time():
            return None
        return claims

    async def verify_token(self, token: str) -> AccessToken | None:
        claims = self.claims(token)
        if claims is None:
            return None
        return AccessToken(
            token=token,
            client_id=str(claims.get("client_id")),
            scopes=str(claims.get("scope") or "").split(),
            expires_at=claims["exp"],
            resource=self.resource,
        )


def dpop_ok(proof: str, token: str, method: str, url: str, jkt: str) -> bool:
    try:
        header = json.loads(base64.urlsafe_b64decode(proof.split(".", maxsplit=1)[0] + "=="))
        key = jwk.import_key(header["jwk"])
        decoded = jwt.decode(proof, key, algorithms=["ES256", "RS256", "PS256", "EdDSA"])
    except Exception:
        return False
    claims = decoded.claims
    return (
        header.get("typ") == "dpop+jwt"
        and jwk.thumbprint(header["jwk"]) == jkt
        and claims.get("htm") == method
        and claims.get("htu") == url
        and claims.get("ath") == b64url(hashlib.sha256(token.encode()).digest())
        and abs(time.time() - int(claims.get("iat", 0))) < 120
    )


class Gate:
    """The ASGI layer in front of the SDK app (see the module doc)."""

    def __init__(self, app: ASGIApp, verifier: Verifier, resource: str, metadata_url: str) -> None:
        self.app = app
        self.verifier = verifier
        self.resource = resource
        self.metadata_url = metadata_url

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] != "/mcp":
            await self.app(scope, receive, send)
            return
        headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
        authorization = headers.get("authorization", "")
        scheme, _, token = authorization.partition(" ")
        claims = self.verifier.claims(token) if token else None
        jkt = (claims or {}).get("cnf", {}).get("jkt")
        if scheme.lower() == "dpop":
            if claims is None or not jkt or not dpop_ok(
                headers.get("dpop", ""), token, scope["method"], self.resource, jkt
            ):
                await self.refuse(send, 401, "invalid_token")
                return
            # The SDK's bearer middleware checks the rest.
            scope = {**scope, "headers": [
                (k, v) for k, v in scope["headers"] if k.lower() != b"authorization"
            ] + [(b"authorization", f"Bearer {token}".encode())]}  # fmt: skip
        elif jkt:
            await self.refuse(send, 401, "invalid_token")  # a DPoP-bound token as a bearer token
            return
        body = b""
        more = True
        while more:
            message = await receive()
            body += message.get("body", b"")
            more = message.get("more_body", False)
        needed = self.needs(body)
        if claims is not None and needed and needed not in str(claims.get("scope") or "").split():
            await self.refuse(send, 403, "insufficient_scope", f"{SCOPE} {needed}")
            return
        sent = False

        async def replay() -> Message:
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)

    @staticmethod
    def needs(body: bytes) -> str | None:
        try:
            message = json.loads(body)
        except ValueError:
            return None
        if isinstance(message, dict) and message.get("method") == "tools/call":
            return NEEDS.get(str((message.get("params") or {}).get("name")))
        return None

    async def refuse(self, send: Send, status: int, error: str, scope: str | None = None) -> None:
        challenge = f'Bearer error="{error}", resource_metadata="{self.metadata_url}"'
        if scope:
            challenge += f', scope="{scope}"'
        data = json.dumps({"error": error}).encode()
        await send({"type": "http.response.start", "status": status, "headers": [
            (b"content-type", b"application/json"), (b"content-length", str(len(data)).encode()),
            (b"www-authenticate", challenge.encode()),
        ]})  # fmt: skip
        await send({"type": "http.response.body", "body": data})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--issuer", required=True)
    args = parser.parse_args()
    base = f"http://127.0.0.1:{args.port}"
    resource = f"{base}/mcp"
    verifier = Verifier(args.issuer, resource)
    server = MCPServer(
        name="oidc-peer",
        version="1.0.0",
        log_level="WARNING",
        token_verifier=verifier,
        auth=AuthSettings(
            issuer_url=args.issuer,
            resource_server_url=resource,
            validate_token_resource=True,
            required_scopes=[SCOPE],
        ),
    )

    @server.tool(description="The client id and scopes of the calling token.")
    def whoami() -> str:
        token = get_access_token()
        return "anonymous" if token is None else f"{token.client_id} {' '.join(token.scopes)}"

    @server.tool(description="Needs mcp:admin.")
    def admin() -> str:
        return "admin ok"

    @server.tool(description="Needs mcp:root, which no one is granted.")
    def root() -> str:
        return "root ok"

    app = Gate(
        server.streamable_http_app(host="127.0.0.1"),
        verifier,
        resource,
        f"{base}/.well-known/oauth-protected-resource/mcp",
    )
    config = uvicorn.Config(app, host="127.0.0.1", port=args.port, log_level="warning", access_log=False)
    uvicorn.Server(config).run()


if __name__ == "__main__":
    main()
