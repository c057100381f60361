"""mcp_sync.auth against an independent, OpenID-certified authorization server:
node-oidc-provider 8.8.1 (tests/peers/oidc_provider.mjs, pinned in
tests/peers/package.json) with its default policies, 4 s access tokens and DPoP
nonces it always demands, and an official-SDK MCP server that trusts it
(tests/peers/oidc_mcp_server.py), both on 127.0.0.1. The provider's own request
log (``GET /_log``) is what the tests count exchanges, refreshes and nonce round
trips with; its dev login and consent pages are filled in over HTTP, as a person
would in a browser."""

from __future__ import annotations

import contextlib
import json
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any
from urllib.parse import parse_qs, urljoin, urlsplit

import httpx
import pytest
from conftest import (
    REPO_ROOT,
    SERVER_START_TIMEOUT,
    _stop_process_group,
    _tail,
    _wait_for_port,
    free_port,
    missing_peer,
    node_exe,
    peers_dir,
)

import mcp_sync
from mcp_sync import auth
from mcp_sync.auth._tokens import NONCES

pytestmark = pytest.mark.peer

PROVIDER = REPO_ROOT / "tests" / "peers" / "oidc_provider.mjs"
MCP_SERVER = REPO_ROOT / "tests" / "peers" / "oidc_mcp_server.py"
APP_REDIRECT = "http://127.0.0.1:8790/callback"  # registered for the client "app"
TOKEN_SECONDS = 4.0
START_TIMEOUT = max(SERVER_START_TIMEOUT, 60.0)  # node + an ESM graph, on a loaded machine


@dataclass
class Peer:
    issuer: str
    url: str
    jwt_key_pem: str

    def log(self) -> list[dict[str, Any]]:
        entries: list[dict[str, Any]] = httpx.get(f"{self.issuer}/_log", timeout=30).json()
        return entries

    def tokens(self, since: int, client_id: str | None = None) -> list[dict[str, Any]]:
        return [
            entry for entry in self.log()[since:]
            if entry["route"] == "token" and client_id in (None, entry["client_id"])
        ]  # fmt: skip


def _wait_for_line(proc: subprocess.Popen[bytes], log: IO[bytes]) -> str:
    """The URL of the provider's ``listening URL`` line, once it prints it."""
    deadline = time.monotonic() + START_TIMEOUT
    while True:
        found = re.search(rb"^listening (http://127\.0\.0\.1:\d+)$", _read_all(log), re.M)
        if found:
            return found.group(1).decode()
        if proc.poll() is not None:
            raise RuntimeError(f"oidc-provider exited with {proc.returncode}:\n{_tail(log)}")
        if time.monotonic() > deadline:
            raise TimeoutError(f"oidc-provider did not listen within {START_TIMEOUT:.0f}s:\n{_tail(log)}")
        time.sleep(0.05)


def _read_all(log: IO[bytes]) -> bytes:
    log.flush()
    log.seek(0)
    return log.read()


def _spawn(argv: list[str], log: IO[bytes]) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, cwd=REPO_ROOT,
        start_new_session=True,
    )  # fmt: skip


@pytest.fixture(scope="module")
def peer() -> Iterator[Peer]:
    node = node_exe()
    peers = peers_dir()
    if not (peers / "node_modules" / "oidc-provider" / "package.json").exists():
        missing_peer(f"oidc-provider is not installed in {peers}")
    from joserfc.jwk import ECKey

    key = ECKey.generate_key("P-256")
    public = {**key.as_dict(private=False), "alg": "ES256", "kid": "svc-jwt-1"}
    pem = key.as_pem(private=True).decode()
    with contextlib.ExitStack() as stack:
        last = ""
        for _attempt in range(3):  # the MCP server's port is picked before it binds it
            port = free_port()
            url = f"http://127.0.0.1:{port}/mcp"
            provider_log = stack.enter_context(tempfile.TemporaryFile())
            provider = _spawn(
                [node, str(PROVIDER), "--peers", str(peers), "--resource", url,
                 "--client-jwks", json.dumps({"keys": [public]})],
                provider_log,
            )  # fmt: skip
            stack.callback(_stop_process_group, provider)
            issuer = _wait_for_line(provider, provider_log)
            server_log = stack.enter_context(tempfile.TemporaryFile())
            server = _spawn(
                [sys.executable, str(MCP_SERVER), "--port", str(port), "--issuer", issuer], server_log
            )
            stack.callback(_stop_process_group, server)
            try:
                _wait_for_port(server, port, server_log)
            except RuntimeError as exc:
                last = str(exc)
                continue
            yield Peer(issuer, url, pem)
            return
        raise RuntimeError(f"the OIDC peer failed to start three times; last error: {last}")


def person(logins: list[str]) -> Callable[[str], str]:
    """A redirect_handler doing what a person does in a browser: open the
    authorization URL, log in and consent on the provider's dev pages, and end
    up at the redirect URI (returned)."""

    def handler(url: str) -> str:
        logins.append(url)
        landing = parse_qs(urlsplit(url).query)["redirect_uri"][0]
        with httpx.Client(timeout=30) as browser:
            response = browser.get(url)
            for _step in range(20):
                if response.status_code in (302, 303):
                    location = urljoin(str(response.url), response.headers["location"])
                    if location.startswith(landing):
                        return location
                    response = browser.get(location)
                    continue
                found = re.search(r'name="prompt" value="(\w+)"', response.text)
                assert response.status_code == 200 and found, response.text[:500]
                form = {"prompt": found.group(1)}
                if form["prompt"] == "login":
                    form.update(login="alice", password="any")
                response = browser.post(str(response.url), data=form)
        raise AssertionError("the login did not come back")

    return handler


def wait_for_expiry(flow: auth.Auth, url: str) -> None:
    """Until the access token has expired (4 s lifetime)."""
    token = flow._grant(url).token
    assert token is not None and token.expires_at is not None
    time.sleep(max(0.0, token.expires_at - time.time()) + 0.5)


# ------------------------------------------------------------------ refresh


@pytest.mark.parametrize("dpop", [False, True], ids=["bearer", "dpop"])
def test_code_flow_refreshes_under_the_default_policy(peer: Peer, dpop: bool) -> None:
    NONCES.clear()
    since = len(peer.log())
    logins: list[str] = []
    flow = auth.AuthorizationCode(
        client_id="app", redirect_uri=APP_REDIRECT, redirect_handler=person(logins), dpop=dpop
    )
    with mcp_sync.connect_http(server="oidc", url=peer.url, auth=flow) as session:
        assert session.call_tool("whoami").content[0]["text"] == "app mcp:tools"
        wait_for_expiry(flow, peer.url)
        # Served by a refresh: no second login.
        assert session.call_tool("whoami").content[0]["text"] == "app mcp:tools"
    assert len(logins) == 1
    query = parse_qs(urlsplit(logins[0]).query)
    assert query["prompt"] == ["consent"] and "offline_access" in query["scope"][0].split()
    tokens = [entry for entry in peer.tokens(since, "app") if entry["status"] == 200]
    assert tokens[0]["grant_type"] == "authorization_code" and tokens[0]["refresh_token_issued"]
    later = [entry["grant_type"] for entry in tokens[1:]]
    assert later and set(later) == {"refresh_token"}, peer.log()[since:]
    nonce_answers = [entry for entry in peer.tokens(since, "app") if entry["error"] == "use_dpop_nonce"]
    # Two token requests (or more) cost at most one nonce round trip.
    assert len(nonce_answers) == (1 if dpop else 0), peer.log()[since:]
    if dpop:
        assert flow._grant(peer.url).token.token_type == "DPoP"  # type: ignore[union-attr]


def test_dynamic_registration_is_remembered(peer: Peer, tmp_path: Path) -> None:
    since = len(peer.log())
    logins: list[str] = []
    store = auth.FileTokenStore(tmp_path / "tokens.json")
    flow = auth.AuthorizationCode(client_name="oidc-test", redirect_handler=person(logins), store=store)
    with mcp_sync.connect_http(server="oidc", url=peer.url, auth=flow) as session:
        who = session.call_tool("whoami").content[0]["text"]
    assert who.endswith(" mcp:tools") and not who.startswith("app ")
    again = auth.AuthorizationCode(
        client_name="oidc-test", redirect_handler=person(logins), store=auth.FileTokenStore(tmp_path / "tokens.json")
    )
    wait_for_expiry(flow, peer.url)
    with mcp_sync.connect_http(server="oidc", url=peer.url, auth=again) as session:
        assert session.call_tool("whoami").content[0]["text"] == who
    routes = [entry["route"] for entry in peer.log()[since:]]
    assert routes.count("registration") == 1 and len(logins) == 1
    grants = [entry["grant_type"] for entry in peer.tokens(since) if entry["status"] == 200]
    # (On a slow machine the first token may need a refresh already.)
    assert grants[0] == "authorization_code" and set(grants[1:]) == {"refresh_token"}, grants


# ------------------------------------------------------------------ client credentials


def service(peer: Peer, method: str, **options: Any) -> auth.ClientCredentials:
    if method == "private_key_jwt":
        return auth.ClientCredentials(
            "svc-jwt", private_key=peer.jwt_key_pem, issuer=peer.issuer, **options
        )
    client_id = "svc-" + method.removeprefix("client_secret_")
    return auth.ClientCredentials(
        client_id, client_secret=f"secret-{method}", token_endpoint_auth_method=method,
        issuer=peer.issuer, **options
    )


@pytest.mark.parametrize("method", ["client_secret_basic", "client_secret_post", "private_key_jwt"])
def test_client_credentials_in_each_method(peer: Peer, method: str) -> None:
    since = len(peer.log())
    flow = service(peer, method)
    client_id = flow.client_id
    with mcp_sync.connect_http(server="oidc", url=peer.url, auth=flow) as session:
        assert session.call_tool("whoami").content[0]["text"] == f"{client_id} mcp:tools"
        if method == "client_secret_basic":
            wait_for_expiry(flow, peer.url)  # a new token, no person involved
            assert session.call_tool("whoami").content[0]["text"] == f"{client_id} mcp:tools"
    tokens = peer.tokens(since, client_id)
    assert [entry["status"] for entry in tokens] == [200] * len(tokens)
    assert len(tokens) >= (2 if method == "client_secret_basic" else 1)
    # The provider lists both secret methods: the registered one is what is sent.
    assert {entry["client_auth"] for entry in tokens} == {method}


def test_a_refusal_says_what_the_provider_said(peer: Peer) -> None:
    flow = auth.ClientCredentials("svc-post", client_secret="not-the-secret", issuer=peer.issuer)
    with pytest.raises(mcp_sync.AuthError) as info:
        mcp_sync.connect_http(server="oidc", url=peer.url, auth=flow)
    assert info.value.oauth_error == "invalid_client"
    assert str(info.value).endswith(
        "(invalid_client): the authorization server says \"client authentication failed\""
    )
    assert "not-the-secret" not in str(info.value)


def test_dpop_with_the_providers_nonces(peer: Peer) -> None:
    NONCES.clear()
    since = len(peer.log())
    flow = service(peer, "client_secret_basic", dpop=True)
    with mcp_sync.connect_http(server="oidc", url=peer.url, auth=flow) as session:
        assert session.call_tool("whoami").content[0]["text"] == "svc-basic mcp:tools"
        wait_for_expiry(flow, peer.url)
        assert session.call_tool("whoami").content[0]["text"] == "svc-basic mcp:tools"
        assert flow._grant(peer.url).token.token_type == "DPoP"  # type: ignore[union-attr]
    tokens = peer.tokens(since, "svc-basic")
    assert len([entry for entry in tokens if entry["status"] == 200]) >= 2
    assert [entry["error"] for entry in tokens].count("use_dpop_nonce") == 1, tokens


def test_step_up_and_a_step_up_that_cannot_succeed(peer: Peer) -> None:
    since = len(peer.log())
    # Tokens that outlast the test: every token request counted is a step-up's.
    flow = auth.ClientCredentials("svc-steady", client_secret="secret-steady", issuer=peer.issuer)
    with mcp_sync.connect_http(server="oidc", url=peer.url, auth=flow) as session:
        assert session.call_tool("whoami").content[0]["text"] == "svc-steady mcp:tools"
        assert session.call_tool("admin").content[0]["text"] == "admin ok"
        scopes = [entry["scope"] for entry in peer.tokens(since, "svc-steady")]
        assert scopes == ["mcp:tools", "mcp:tools mcp:admin"]
        with pytest.raises(mcp_sync.AuthError) as info:
            session.call_tool("root")  # mcp:root is never granted
        assert info.value.oauth_error == "insufficient_scope"
        assert not session.closed
        # One token request, answered without the scope, settles it.
        scopes = [entry["scope"] for entry in peer.tokens(since, "svc-steady")]
        assert scopes[2:] == ["mcp:tools mcp:admin mcp:root"]
        assert session.call_tool("admin").content[0]["text"] == "admin ok"
