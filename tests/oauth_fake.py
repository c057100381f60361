"""A scriptable OAuth authorization server + MCP resource server on 127.0.0.1,
for the auth tests (standard library only, one thread per connection).

The resource server answers ``initialize``, ``tools/list`` and ``tools/call``
(``echo``) in JSON when the request carries a token it issued, else 401 with a
``WWW-Authenticate`` challenge naming its protected resource metadata. The
authorization server serves metadata, dynamic registration, an authorization
endpoint that redirects at once, and a token endpoint (authorization code with
PKCE, refresh, client credentials, JWT bearer). ``Fake`` fields script
misbehaviour; every request is recorded.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import secrets
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

SECRET_DESCRIPTION = "DESCRIPTION-TEXT-MUST-NOT-LEAK"
# A refusal's error_description: shown in messages escaped, redacted and cut
# short, so the secret it echoes and its terminal escape never appear.
DESCRIPTION = (
    "client \x1b[2Jauthentication failed: client_secret=" + SECRET_DESCRIPTION + " was " + "x" * 1000
)


@dataclass
class Seen:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    @property
    def form(self) -> dict[str, str]:
        return {k: v[0] for k, v in parse_qs(self.body.decode()).items()}


@dataclass
class Fake:
    url: str = ""  # http://127.0.0.1:PORT (set when serving)
    token_lifetime: int = 3600
    scopes_supported: list[str] | None = None
    challenge_scope: str | None = None
    issue_refresh: bool = True
    metadata_override: dict[str, Any] | None = None  # replaces fields of the AS metadata
    prm_override: dict[str, Any] | None = None
    metadata_body: bytes | None = None  # served raw instead of the AS metadata
    token_status: int = 200
    token_hang: bool = False
    redirect_extra: dict[str, str] = field(default_factory=dict)
    insufficient_scope_for_call: str | None = None  # tools/call needs this scope
    token_nonces: list[str] = field(default_factory=list)  # DPoP nonces the token endpoint hands out
    nonce_refusals: int = 0  # use_dpop_nonce answers sent
    requests: list[Seen] = field(default_factory=list)
    tokens: dict[str, str] = field(default_factory=dict)  # access token -> scope
    refresh_tokens: dict[str, str] = field(default_factory=dict)
    codes: dict[str, tuple[str, str]] = field(default_factory=dict)  # code -> (challenge, scope)
    lock: threading.Lock = field(default_factory=threading.Lock)
    release: threading.Event = field(default_factory=threading.Event)

    def seen(self, path: str) -> list[Seen]:
        with self.lock:
            return [r for r in self.requests if urlsplit(r.path).path == path]

    def issue(self, scope: str) -> dict[str, Any]:
        access = "fake-at-" + secrets.token_urlsafe(16)
        self.tokens[access] = scope
        body: dict[str, Any] = {
            "access_token": access, "token_type": "Bearer", "expires_in": self.token_lifetime,
            "scope": scope,
        }  # fmt: skip
        if self.issue_refresh:
            refresh = "fake-rt-" + secrets.token_urlsafe(16)
            self.refresh_tokens[refresh] = scope
            body["refresh_token"] = refresh
        return body

    def metadata(self) -> dict[str, Any]:
        doc: dict[str, Any] = {
            "issuer": self.url,
            "authorization_endpoint": f"{self.url}/authorize",
            "token_endpoint": f"{self.url}/token",
            "registration_endpoint": f"{self.url}/register",
            "response_types_supported": ["code"],
            "grant_types_supported": [
                "authorization_code", "refresh_token", "client_credentials",
                "urn:ietf:params:oauth:grant-type:jwt-bearer",
            ],
            "code_challenge_methods_supported": ["S256"],
            "token_endpoint_auth_methods_supported": ["none", "client_secret_basic"],
        }  # fmt: skip
        if self.scopes_supported is not None:
            doc["scopes_supported"] = self.scopes_supported
        if self.token_nonces:
            doc["dpop_signing_alg_values_supported"] = ["ES256"]
        doc.update(self.metadata_override or {})
        return doc


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        pass

    @property
    def fake(self) -> Fake:
        return self.server.fake

    def _send(self, status: int, body: Any = b"", **headers: str) -> None:
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in headers.items():
            self.send_header(name.replace("_", "-"), value)
        self.end_headers()
        self.wfile.write(data)

    def _read(self) -> bytes:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        with self.fake.lock:
            self.fake.requests.append(
                Seen(self.command, self.path, {k.lower(): v for k, v in self.headers.items()}, body)
            )
        return body

    def do_GET(self) -> None:
        self._read()
        fake = self.fake
        path = urlsplit(self.path).path
        if path == "/.well-known/oauth-protected-resource/mcp":
            doc = {"resource": f"{fake.url}/mcp", "authorization_servers": [fake.url]}
            if fake.scopes_supported is not None:
                doc["scopes_supported"] = fake.scopes_supported
            doc.update(fake.prm_override or {})
            self._send(200, doc)
        elif path == "/.well-known/oauth-authorization-server":
            self._send(200, fake.metadata_body if fake.metadata_body is not None else fake.metadata())
        elif path == "/authorize":
            query = {k: v[0] for k, v in parse_qs(urlsplit(self.path).query).items()}
            code = "fake-code-" + secrets.token_urlsafe(12)
            fake.codes[code] = (query.get("code_challenge", ""), query.get("scope", ""))
            params = {"code": code, "state": query.get("state", ""), **fake.redirect_extra}
            self.send_response(302)
            self.send_header("Location", query["redirect_uri"] + "?" + urlencode(params))
            self.send_header("Content-Length", "0")
            self.end_headers()
        else:
            self._send(404, {"error": "not_found"})

    def do_DELETE(self) -> None:
        self._read()
        self._send(200, b"")

    def do_POST(self) -> None:
        body = self._read()
        path = urlsplit(self.path).path
        if path == "/mcp":
            self._mcp(body)
        elif path == "/register":
            doc = json.loads(body)
            self._send(201, {"client_id": "fake-client-" + secrets.token_urlsafe(6), **doc,
                             "token_endpoint_auth_method": "none"})  # fmt: skip
        elif path == "/token":
            self._token(body)
        else:
            self._send(404, {"error": "not_found"})

    def _token(self, body: bytes) -> None:
        fake = self.fake
        if fake.token_hang:
            fake.release.wait(30)
            return
        form = {k: v[0] for k, v in parse_qs(body.decode()).items()}
        if fake.token_status != 200:
            self._send(fake.token_status, {"error": "invalid_grant", "error_description": DESCRIPTION})
            return
        if fake.token_nonces and not self._nonce_ok():
            return
        grant = form.get("grant_type")
        if grant == "authorization_code":
            challenge, scope = fake.codes.pop(form.get("code", ""), ("", ""))
            verifier = form.get("code_verifier", "")
            computed = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
            if not challenge or computed != challenge:
                self._send(400, {"error": "invalid_grant"})
                return
            self._send(200, fake.issue(scope), Cache_Control="no-store")
        elif grant == "refresh_token":
            scope = fake.refresh_tokens.pop(form.get("refresh_token", ""), None)
            if scope is None:
                self._send(400, {"error": "invalid_grant"})
                return
            self._send(200, fake.issue(scope))
        elif grant in ("client_credentials", "urn:ietf:params:oauth:grant-type:jwt-bearer"):
            self._send(200, fake.issue(form.get("scope", "")))
        else:
            self._send(400, {"error": "unsupported_grant_type"})

    def _nonce_ok(self) -> bool:
        """The token endpoint demands the current DPoP nonce (the first of
        token_nonces; a test rotates it by popping it)."""
        fake = self.fake
        proof = self.headers.get("DPoP", "")
        try:
            payload = proof.split(".")[1]
            claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
        except (IndexError, ValueError):
            claims = {}
        current = fake.token_nonces[0]
        if claims.get("nonce") == current:
            return True
        with fake.lock:
            fake.nonce_refusals += 1
        self._send(400, {"error": "use_dpop_nonce"}, DPoP_Nonce=current)
        return False

    def _mcp(self, body: bytes) -> None:
        fake = self.fake
        message = json.loads(body)
        auth = self.headers.get("Authorization", "")
        token = auth[len("Bearer "):] if auth.startswith("Bearer ") else None
        scope = fake.tokens.get(token or "")
        if scope is None:
            challenge = f'Bearer resource_metadata="{fake.url}/.well-known/oauth-protected-resource/mcp"'
            if fake.challenge_scope:
                challenge += f', scope="{fake.challenge_scope}"'
            self._send(401, {"error": "invalid_token"}, WWW_Authenticate=challenge)
            return
        method = message.get("method")
        needed = fake.insufficient_scope_for_call
        if method == "tools/call" and needed and needed not in scope.split():
            self._send(
                403, {"error": "insufficient_scope"},
                WWW_Authenticate=f'Bearer error="insufficient_scope", scope="{needed}"',
            )  # fmt: skip
            return
        if "id" not in message:
            self._send(202, b"")
            return
        if method == "initialize":
            result: Any = {
                "protocolVersion": message["params"]["protocolVersion"],
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "fake", "version": "1"},
            }
        elif method == "tools/list":
            result = {"tools": [{"name": "echo", "inputSchema": {"type": "object"}}]}
        else:
            text = message.get("params", {}).get("arguments", {}).get("message", "")
            result = {"content": [{"type": "text", "text": text}]}
        self._send(200, {"jsonrpc": "2.0", "id": message["id"], "result": result})


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    fake: Fake


@contextlib.contextmanager
def fake_oauth_server(**fields: Any) -> Iterator[Fake]:
    fake = Fake(**fields)
    server = _Server(("127.0.0.1", 0), _Handler)
    server.fake = fake
    fake.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, name="fake-oauth", daemon=True)
    thread.start()
    try:
        yield fake
    finally:
        fake.release.set()
        server.shutdown()
        server.server_close()
        thread.join(5)


def stand_in_browser(fake: Fake) -> Any:
    """A redirect_handler: 'log in' by following the authorization redirect once."""
    import httpx

    def handler(url: str) -> str:
        response = httpx.get(url, follow_redirects=False, timeout=5)
        return str(response.headers["location"])

    return handler


def wait_until(predicate: Any, timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.01)
    return bool(predicate())
