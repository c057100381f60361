"""mcp_sync.auth against a real OAuth-protected MCP server: the official Python
SDK's authorization server and resource server (tests/peers/oauth_peer.py,
uvicorn on 127.0.0.1), logged into the way a notebook or a script would."""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import httpx
import pytest
from conftest import REPO_ROOT, _serve

import mcp_sync
from mcp_sync import auth

pytestmark = pytest.mark.peer

PEER = REPO_ROOT / "tests" / "peers" / "oauth_peer.py"


@pytest.fixture(scope="module")
def peer_url() -> Iterator[str]:
    with _serve(lambda port: [sys.executable, str(PEER), "--port", str(port)]) as url:
        yield url


def person(landing_prefix: str) -> object:
    """What a person does in a browser: open the URL, approve, and end up at
    the redirect URI (returned, as a notebook user would paste it)."""

    def handler(url: str) -> str:
        with httpx.Client() as client:
            response = client.get(url)
            while response.status_code in (302, 303, 307):
                location = response.headers["location"]
                if location.startswith(landing_prefix):
                    return str(location)
                response = client.get(location)
        raise AssertionError("the login did not come back")

    return handler


def test_notebook_login_with_a_redirect_handler(peer_url: str) -> None:
    redirect = "http://127.0.0.1:8765/callback"
    flow = auth.AuthorizationCode(
        client_name="notebook", redirect_uri=redirect, redirect_handler=person(redirect)  # type: ignore[arg-type]
    )
    with mcp_sync.connect_http(server="peer", url=peer_url, auth=flow) as session:
        assert [tool.name for tool in session.tools] == ["whoami", "echo"]
        who = session.call_tool("whoami").content[0]["text"]
        assert who.endswith(" mcp:tools") and who != "anonymous"
        token = flow._grant(peer_url).token
        assert token is not None and token.access_token.reveal() not in repr(session)


def test_script_login_through_the_loopback_listener(peer_url: str, tmp_path: Path) -> None:
    opened: list[str] = []

    def browser(url: str) -> bool:
        # A real browser would follow every redirect, the last one to our listener.
        opened.append(url)
        threading.Thread(target=lambda: httpx.get(url, follow_redirects=True, timeout=10)).start()
        return True

    store = auth.FileTokenStore(tmp_path / "tokens.json")
    flow = auth.AuthorizationCode(client_name="script", browser=browser, store=store)
    with mcp_sync.connect_http(server="peer", url=peer_url, auth=flow) as session:
        assert session.call_tool("echo", {"message": "via listener"}).content[0]["text"] == "via listener"
    assert len(opened) == 1 and "code_challenge_method=S256" in opened[0]
    # The next run of the script logs in with what the store kept.
    again = auth.AuthorizationCode(
        client_name="script",
        browser=lambda url: pytest.fail("logged in again"),
        store=auth.FileTokenStore(tmp_path / "tokens.json"),
    )
    with mcp_sync.connect_http(server="peer", url=peer_url, auth=again) as session:
        assert session.call_tool("whoami").content[0]["text"] != "anonymous"


def test_refresh_against_the_sdk_authorization_server(peer_url: str) -> None:
    redirect = "http://127.0.0.1:8766/callback"
    flow = auth.AuthorizationCode(redirect_uri=redirect, redirect_handler=person(redirect))  # type: ignore[arg-type]
    with mcp_sync.connect_http(server="peer", url=peer_url, auth=flow) as session:
        grant = flow._grant(peer_url)
        assert grant.token is not None
        before = grant.token.access_token.reveal()
        grant.token = replace(grant.token, refresh_at=0.0)
        session.call_tool("whoami")
        assert grant.token.access_token.reveal() != before  # refreshed (and rotated)


def test_a_denied_login_is_an_auth_error(peer_url: str) -> None:
    def deny(url: str) -> str:
        consent = httpx.get(url).headers["location"]
        return str(httpx.get(consent + "&deny=1").headers["location"])

    flow = auth.AuthorizationCode(redirect_uri="http://127.0.0.1:8767/callback", redirect_handler=deny)
    with pytest.raises(mcp_sync.AuthError) as info:
        mcp_sync.connect_http(server="peer", url=peer_url, auth=flow)
    assert info.value.oauth_error == "access_denied"


def test_web_application_login_in_two_requests(peer_url: str) -> None:
    callback = "http://127.0.0.1:8768/oauth/callback"
    flow = auth.AuthorizationCode(redirect_uri=callback, interactive=False)
    with pytest.raises(mcp_sync.LoginRequired):
        mcp_sync.connect_http(server="peer", url=peer_url, auth=flow)
    pending = flow.begin_login(peer_url)
    saved = pending.to_json()  # kept server-side between the two requests
    landed = person(callback)(pending.authorization_url)  # type: ignore[operator]
    flow.complete_login(auth.PendingLogin.from_json(saved), landed)
    with mcp_sync.connect_http(server="peer", url=peer_url, auth=flow) as session:
        assert session.call_tool("whoami").content[0]["text"] != "anonymous"
