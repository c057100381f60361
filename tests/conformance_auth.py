"""The conformance client's auth mapping: the harness's context
(``MCP_CONFORMANCE_CONTEXT``) onto :mod:`mcp_sync.auth`, nothing more.

Scenarios without a context are a person's login: the suite's authorization
endpoint redirects at once, so the "browser" here is one GET that reads the
``Location`` it answers with (``redirect_handler``). The suite accepts the
fixed Client ID Metadata Document URL it names, which is given as this
client's ``client_metadata_url``.
"""

from __future__ import annotations

import json
import os
from typing import Any

import httpx

from mcp_sync import auth

CIMD_URL = "https://conformance-test.local/client-metadata.json"
REDIRECT_URI = "http://localhost:3000/callback"


def follow_once(url: str) -> str:
    """The browser stand-in: GET the authorization URL, return where it redirects."""
    response = httpx.get(url, follow_redirects=False, timeout=10.0)
    location = response.headers.get("location")
    if response.status_code not in (301, 302, 303, 307, 308) or not location:
        raise RuntimeError(f"the authorization endpoint answered HTTP {response.status_code}")
    return str(response.url.join(location))


def context() -> dict[str, Any]:
    raw = os.environ.get("MCP_CONFORMANCE_CONTEXT")
    return json.loads(raw) if raw else {}


def auth_for(scenario: str) -> auth.Auth | None:
    """The auth object for an ``auth/*`` scenario (None for other scenarios)."""
    if not scenario.startswith("auth/"):
        return None
    ctx = context()
    # The scenarios run their authorization server on another port (another
    # origin) that the context does not name: trust the one the server names.
    if "private_key_pem" in ctx:
        return auth.ClientCredentials(
            ctx["client_id"],
            private_key=ctx["private_key_pem"],
            signing_algorithm=ctx.get("signing_algorithm") or "ES256",
            any_issuer=True,
        )
    if "idp_id_token" in ctx:
        return auth.EnterpriseManagedAuthorization(
            client_id=ctx["client_id"],
            client_secret=ctx["client_secret"],
            idp_token_endpoint=ctx["idp_token_endpoint"],
            idp_client_id=ctx["idp_client_id"],
            id_token=ctx["idp_id_token"],
            any_issuer=True,
        )
    if "valid_jwt" in ctx:
        return auth.WorkloadIdentity(ctx["valid_jwt"], client_id=ctx["client_id"], any_issuer=True)
    if ctx.get("name") == "auth/client-credentials-basic":
        return auth.ClientCredentials(
            ctx["client_id"], client_secret=ctx["client_secret"], any_issuer=True
        )
    # A person's login: pre-registered when the context says so.
    return auth.AuthorizationCode(
        client_name="mcp-sync conformance client",
        client_id=ctx.get("client_id"),
        client_secret=ctx.get("client_secret"),
        client_metadata_url=CIMD_URL,
        redirect_uri=REDIRECT_URI,
        redirect_handler=follow_once,
        any_issuer=True,
    )
