"""mcp_sync.auth against a scriptable OAuth server on 127.0.0.1 (tests/oauth_fake.py),
plus the pure parts: challenges, resource matching, scopes, redirects, stores."""

from __future__ import annotations

import os
import socket
import stat
import threading
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import httpx
import pytest
from oauth_fake import DESCRIPTION, SECRET_DESCRIPTION, Fake, fake_oauth_server, stand_in_browser
from support import timed

import mcp_sync
from mcp_sync import auth
from mcp_sync.auth._code import PendingLogin, _check_redirect
from mcp_sync.auth._discovery import parse_challenges
from mcp_sync.auth._grant import union_scopes
from mcp_sync.auth._loopback import LoopbackListener, free_loopback_uri
from mcp_sync.auth._urls import resource_matches
from mcp_sync.protocol.redaction import Redacted


@pytest.fixture
def fake() -> Iterator[Fake]:
    with fake_oauth_server() as server:
        yield server


def login(fake: Fake, **options: object) -> auth.AuthorizationCode:
    return auth.AuthorizationCode(redirect_handler=stand_in_browser(fake), **options)  # type: ignore[arg-type]


def connect(fake: Fake, auth_object: object, **kwargs: object) -> mcp_sync.Session:
    return mcp_sync.connect_http(server="fake", url=f"{fake.url}/mcp", auth=auth_object, **kwargs)  # type: ignore[arg-type]


# ------------------------------------------------------------------ pure parts


def test_challenges_are_parsed_from_every_scheme() -> None:
    found = parse_challenges(
        ['Basic realm="x", DPoP error="use_dpop_nonce", Bearer scope="a b", '
         'resource_metadata="https://rs.example/.well-known/oauth-protected-resource"']
    )
    assert found.schemes == {"basic", "dpop", "bearer"}
    assert found.scope == "a b"
    assert found.error == "use_dpop_nonce"
    assert found.resource_metadata == "https://rs.example/.well-known/oauth-protected-resource"
    assert parse_challenges(['Bearer abc123==, Bearer scope="s"']).scope == "s"
    assert parse_challenges(["Bearer " + "x" * 10_000]).schemes == frozenset()
    assert parse_challenges(['Bearer scope="bad\x01scope"']).scope is None
    assert parse_challenges(['Bearer realm="unterminated']).schemes == {"bearer"}


@pytest.mark.parametrize(
    ("resource", "server", "match"),
    [
        ("https://a.example/mcp", "https://a.example/mcp", True),
        ("https://a.example", "https://a.example/mcp", True),
        ("https://A.EXAMPLE:443/", "https://a.example/mcp", True),
        ("https://a.example/mcp", "https://a.example/mcp/sub", True),
        ("https://a.example/m", "https://a.example/mcp", False),
        ("https://evil.example/mcp", "https://a.example/mcp", False),
        ("http://a.example/mcp", "https://a.example/mcp", False),
        ("https://a.example:8443/mcp", "https://a.example/mcp", False),
        ("https://a.example/mcp#x", "https://a.example/mcp", False),
    ],
)
def test_resource_matching(resource: str, server: str, match: bool) -> None:
    assert resource_matches(resource, server) is match


def test_scopes_union_keeps_order_without_repeats() -> None:
    assert union_scopes("a b", "b c") == "a b c"
    assert union_scopes(None, "x") == "x"
    assert union_scopes(None, None) is None


def pending(**changes: object) -> PendingLogin:
    base = PendingLogin(
        authorization_url="https://as.example/authorize?x=1",
        redirect_uri="http://127.0.0.1:9999/callback",
        server_url="https://rs.example/mcp",
        resource="https://rs.example/mcp",
        issuer="https://as.example",
        token_endpoint="https://as.example/token",
        iss_required=False,
        client_id="c",
        client_method="none",
        scope=None,
        dpop=False,
        state=Redacted("the-state"),
        verifier=Redacted("the-verifier"),
    )
    return replace(base, **changes)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("redirect", "problem"),
    [
        ("http://127.0.0.1:9999/callback?code=c&state=other", "state does not match"),
        ("http://127.0.0.1:9999/callback?code=c", "state does not match"),
        ("http://127.0.0.1:9998/callback?code=c&state=the-state", "redirect_uri"),
        ("http://127.0.0.1:9999/other?code=c&state=the-state", "redirect_uri"),
        ("http://127.0.0.1:9999/callback?code=c&code=d&state=the-state", "repeats"),
        ("http://127.0.0.1:9999/callback?state=the-state", "no authorization code"),
        ("http://127.0.0.1:9999/callback?code=c&state=the-state&iss=https://evil.example", "issuer"),
        ("http://127.0.0.1:9999/callback?code=c&state=the-state&iss=https://as.example/", "issuer"),
        ("http://127.0.0.1:9999/callback?error=access_denied&state=the-state", "refused (access_denied)"),
    ],
)
def test_redirects_that_do_not_answer_this_login_are_refused(redirect: str, problem: str) -> None:
    with pytest.raises(mcp_sync.AuthError) as info:
        _check_redirect(pending(), redirect, "s")
    assert problem in str(info.value)
    assert "the-state" not in str(info.value) and "the-verifier" not in repr(info.value)


def test_iss_is_required_when_promised_and_checked_when_present() -> None:
    ok = "http://127.0.0.1:9999/callback?code=c&state=the-state"
    assert _check_redirect(pending(), ok, "s") == "c"
    assert _check_redirect(pending(iss_required=True), ok + "&iss=https%3A%2F%2Fas.example", "s") == "c"
    with pytest.raises(mcp_sync.AuthError, match="lacks the iss"):
        _check_redirect(pending(iss_required=True), ok, "s")


def test_pending_login_round_trips_and_hides_its_secrets() -> None:
    one = pending()
    again = PendingLogin.from_json(one.to_json())
    assert again.state.reveal() == "the-state" and again.verifier.reveal() == "the-verifier"
    assert "the-verifier" not in repr(one)
    with pytest.raises(mcp_sync.ProtocolError):
        PendingLogin.from_json("{}")


# ------------------------------------------------------------------ loopback listener


def test_loopback_listener_takes_one_redirect_and_closes() -> None:
    uri = free_loopback_uri()
    listener = LoopbackListener(uri)
    got: list[str] = []
    thread = threading.Thread(target=lambda: got.append(listener.wait(time.monotonic() + 5)))
    thread.start()
    base = uri.rsplit("/", 1)[0]
    assert httpx.get(base + "/favicon.ico").status_code == 404  # does not count
    page = httpx.get(uri + "?code=abc&state=xyz")
    thread.join(5)
    listener.close()
    assert page.status_code == 200 and "abc" not in page.text
    assert got == [uri + "?code=abc&state=xyz"]
    port = int(uri.rsplit(":", 1)[1].split("/")[0])
    with socket.socket() as probe:
        assert probe.connect_ex(("127.0.0.1", port)) != 0  # nobody listens any more


def test_loopback_listener_is_bounded_and_loopback_only() -> None:
    with pytest.raises(mcp_sync.ProtocolError):
        LoopbackListener("http://0.0.0.0:9/callback")
    with pytest.raises(mcp_sync.ProtocolError):
        LoopbackListener("https://app.example/callback")
    with LoopbackListener(free_loopback_uri()) as listener, timed(2.0), pytest.raises(mcp_sync.Timeout):
        listener.wait(time.monotonic() + 0.2)


# ------------------------------------------------------------------ stores


def test_file_store_is_owner_only_and_refuses_a_shared_file(tmp_path: Path) -> None:
    path = tmp_path / "dir" / "tokens.json"
    store = auth.FileTokenStore(path)
    store.put("k", {"token": "secret-value"})
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert auth.FileTokenStore(path).get("k") == {"token": "secret-value"}
    store.delete("k")
    assert store.get("k") is None
    os.chmod(path, 0o644)
    with pytest.raises(mcp_sync.AuthError, match="other users"):
        store.get("k")
    assert "secret-value" not in repr(store)


def test_tokens_survive_in_a_file_store(fake: Fake, tmp_path: Path) -> None:
    store = auth.FileTokenStore(tmp_path / "tokens.json")
    with connect(fake, login(fake, store=store)) as session:
        assert session.call_tool("echo", {"message": "one"}).content[0]["text"] == "one"
    logins = len(fake.seen("/authorize"))

    def no_login(url: str) -> str:
        raise AssertionError("a second login was started")

    again = auth.AuthorizationCode(redirect_handler=no_login, store=auth.FileTokenStore(tmp_path / "tokens.json"))
    with connect(fake, again) as session:
        assert session.call_tool("echo", {"message": "two"}).content[0]["text"] == "two"
    assert len(fake.seen("/authorize")) == logins


# ------------------------------------------------------------------ flows


def test_authorization_code_flow_with_pkce_and_resource(fake: Fake) -> None:
    fake.scopes_supported = ["mcp:a", "offline_access"]
    with connect(fake, login(fake)) as session:
        assert session.call_tool("echo", {"message": "hi"}).content[0]["text"] == "hi"
    authorize = fake.seen("/authorize")[-1]
    query = dict(httpx.URL(authorize.path).params)
    assert query["code_challenge_method"] == "S256"
    assert query["resource"] == f"{fake.url}/mcp"
    assert query["scope"] == "mcp:a offline_access"
    # OpenID Connect Core §11: offline_access is honoured only with prompt=consent.
    assert query["prompt"] == "consent"
    token = fake.seen("/token")[-1].form
    assert token["resource"] == f"{fake.url}/mcp" and token["code_verifier"]
    registration = fake.seen("/register")[-1]
    assert b'"application_type":"native"' in registration.body


def test_expiring_token_is_refreshed_once_for_many_threads(fake: Fake) -> None:
    flow = login(fake)
    with connect(fake, flow) as session:
        grant = flow._grant(f"{fake.url}/mcp")
        assert grant.token is not None
        grant.token = replace(grant.token, refresh_at=0.0)  # due for refresh now
        errors: list[BaseException] = []

        def call() -> None:
            try:
                session.call_tool("echo", {"message": "x"})
            except BaseException as exc:
                errors.append(exc)

        threads = [threading.Thread(target=call) for _ in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(10)
        assert errors == []
    refreshes = [r for r in fake.seen("/token") if r.form.get("grant_type") == "refresh_token"]
    assert len(refreshes) == 1


def test_a_revoked_token_is_refreshed_after_a_401(fake: Fake) -> None:
    flow = login(fake)
    with connect(fake, flow) as session:
        fake.tokens.clear()  # the server forgets every access token
        assert session.call_tool("echo", {"message": "again"}).content[0]["text"] == "again"
    grants = [r.form.get("grant_type") for r in fake.seen("/token")]
    assert grants == ["authorization_code", "refresh_token"]


def test_step_up_asks_for_the_union_of_scopes(fake: Fake) -> None:
    fake.challenge_scope = "mcp:read"
    fake.insufficient_scope_for_call = "mcp:write"
    with connect(fake, login(fake)) as session:
        assert session.call_tool("echo", {"message": "w"}).content[0]["text"] == "w"
    scopes = [dict(httpx.URL(r.path).params).get("scope") for r in fake.seen("/authorize")]
    assert scopes == ["mcp:read", "mcp:read mcp:write"]


def test_step_up_that_cannot_help_fails_only_that_call(fake: Fake) -> None:
    fake.challenge_scope = "mcp:read"
    fake.insufficient_scope_for_call = "mcp:admin"
    original = fake.issue

    def never_admin(scope: str) -> dict[str, object]:
        return original(scope.replace("mcp:admin", "").strip())

    fake.issue = never_admin  # type: ignore[method-assign]
    with connect(fake, login(fake)) as session:
        with pytest.raises(mcp_sync.AuthError) as info:
            session.call_tool("echo", {"message": "w"})
        assert info.value.oauth_error == "insufficient_scope"
        assert "did not grant that scope" in str(info.value)
        assert not session.closed
    # The login, then one step-up the authorization server answered with the same scope.
    assert len(fake.seen("/authorize")) == 2
    assert len(fake.seen("/token")) == 2


def test_client_credentials_with_a_secret(fake: Fake) -> None:
    flow = auth.ClientCredentials("svc", client_secret="s3cr3t-value", scope="jobs")
    with connect(fake, flow) as session:
        assert session.call_tool("echo", {"message": "m"}).content[0]["text"] == "m"
    request = fake.seen("/token")[-1]
    assert request.form["grant_type"] == "client_credentials"
    assert request.form["scope"] == "jobs"
    assert request.headers["authorization"].startswith("Basic ")
    assert "s3cr3t-value" not in repr(flow)


def test_workload_identity_reads_its_assertion_file_each_time(fake: Fake, tmp_path: Path) -> None:
    jwt_file = tmp_path / "token"
    jwt_file.write_text("header.payload.sig\n")
    with connect(fake, auth.WorkloadIdentity(jwt_file)) as session:
        session.call_tool("echo", {"message": "m"})
    form = fake.seen("/token")[-1].form
    assert form["grant_type"] == "urn:ietf:params:oauth:grant-type:jwt-bearer"
    assert form["assertion"] == "header.payload.sig"


def test_token_provider_is_asked_again_after_a_401(fake: Fake) -> None:
    fake.tokens["good-token"] = ""
    calls: list[str] = []

    def provider() -> str:
        calls.append("x")
        return "stale-token" if len(calls) == 1 else "good-token"

    with connect(fake, provider) as session:
        session.call_tool("echo", {"message": "m"})
    assert len(calls) >= 3  # once per request, and once more after the 401
    with pytest.raises(mcp_sync.AuthError, match="token provider"):
        connect(fake, lambda: "stale-token")


def test_token_provider_exceptions_are_not_repeated(fake: Fake) -> None:
    def broken() -> str:
        raise RuntimeError("secret-in-exception")

    with pytest.raises(mcp_sync.AuthError) as info:
        connect(fake, broken)
    assert "secret-in-exception" not in str(info.value)
    assert "RuntimeError" in str(info.value)


# ------------------------------------------------------------------ hostile servers


def test_metadata_for_another_resource_stops_before_any_login(fake: Fake) -> None:
    fake.prm_override = {"resource": "https://evil.example/mcp"}
    with pytest.raises(mcp_sync.AuthError, match="different resource"):
        connect(fake, login(fake))
    assert fake.seen("/authorize") == [] and fake.seen("/token") == []


def test_metadata_naming_another_issuer_is_not_used(fake: Fake) -> None:
    fake.metadata_override = {"issuer": "https://attacker.example"}
    with pytest.raises(mcp_sync.AuthError, match="issuer"):
        connect(fake, login(fake))
    assert fake.seen("/register") == [] and fake.seen("/authorize") == []


def test_no_pkce_no_login(fake: Fake) -> None:
    fake.metadata_override = {"code_challenge_methods_supported": ["plain"]}
    with pytest.raises(mcp_sync.AuthError, match="PKCE"):
        connect(fake, login(fake))
    assert fake.seen("/authorize") == []


def test_oversized_metadata_fails_at_the_frame_limit(fake: Fake) -> None:
    fake.metadata_body = b'{"issuer": "' + b"x" * 300_000 + b'"}'
    with pytest.raises(mcp_sync.AuthError, match="max_frame_bytes=100000"):
        connect(fake, login(fake), max_frame_bytes=100_000)


def test_a_hanging_token_endpoint_is_bounded_by_the_deadline(fake: Fake) -> None:
    fake.token_hang = True
    flow = auth.ClientCredentials("svc", client_secret="s")
    with timed(5.0), pytest.raises(mcp_sync.Timeout):
        connect(fake, flow, handshake_timeout_ms=500)


def test_token_endpoint_errors_show_the_description_escaped_and_bounded(fake: Fake) -> None:
    fake.token_status = 400
    with pytest.raises(mcp_sync.AuthError) as info:
        connect(fake, auth.ClientCredentials("svc", client_secret="s"))
    assert info.value.oauth_error == "invalid_grant"
    message = str(info.value)
    assert "(invalid_grant): the authorization server says \"client \\x1b[2Jauthentication failed" in message
    assert "\x1b" not in message and message.endswith("…\"")
    assert len(message) < 500
    assert SECRET_DESCRIPTION not in message and SECRET_DESCRIPTION not in repr(info.value)
    assert info.value.detail.reveal()["error_description"] == DESCRIPTION


def test_prompt_consent_only_with_offline_access(fake: Fake) -> None:
    fake.scopes_supported = ["mcp:a"]
    with connect(fake, login(fake)) as session:
        session.call_tool("echo", {"message": "hi"})
    query = dict(httpx.URL(fake.seen("/authorize")[-1].path).params)
    assert query["scope"] == "mcp:a" and "prompt" not in query
    fake.scopes_supported = ["mcp:a", "offline_access"]
    with connect(fake, login(fake, scope="mcp:b")) as session:
        session.call_tool("echo", {"message": "hi"})
    query = dict(httpx.URL(fake.seen("/authorize")[-1].path).params)
    assert query["scope"] == "mcp:b offline_access" and query["prompt"] == "consent"


def test_the_authorization_servers_dpop_nonce_is_kept(fake: Fake) -> None:
    fake.token_nonces = ["nonce-one", "nonce-two"]
    fake.token_lifetime = 3600
    flow = auth.ClientCredentials("svc", client_secret="s", dpop=True)
    with connect(fake, flow) as session:
        session.call_tool("echo", {"message": "m"})
        grant = flow._grant(f"{fake.url}/mcp")
        for _ in range(2):  # two more token requests (refreshes) with the nonce kept
            assert grant.token is not None
            grant.token = replace(grant.token, refresh_at=0.0)
            session.call_tool("echo", {"message": "m"})
        assert fake.nonce_refusals == 1
        fake.token_nonces.pop(0)  # the server moves on: one more round trip, then kept again
        for _ in range(2):
            assert grant.token is not None
            grant.token = replace(grant.token, refresh_at=0.0)
            session.call_tool("echo", {"message": "m"})
    assert fake.nonce_refusals == 2
    assert len(fake.seen("/token")) == 5 + 2


@pytest.mark.parametrize(
    ("method", "in_body"), [("client_secret_post", True), ("client_secret_basic", False)]
)
def test_token_endpoint_auth_method_is_the_registered_one(fake: Fake, method: str, in_body: bool) -> None:
    fake.metadata_override = {
        "token_endpoint_auth_methods_supported": ["client_secret_basic", "client_secret_post"]
    }
    flow = auth.ClientCredentials("svc", client_secret="s3cr3t-value", token_endpoint_auth_method=method)
    with connect(fake, flow) as session:
        session.call_tool("echo", {"message": "m"})
    request = fake.seen("/token")[-1]
    assert (request.form.get("client_secret") == "s3cr3t-value") is in_body
    assert ("authorization" in request.headers) is not in_body


def test_token_endpoint_auth_method_the_provider_does_not_list(fake: Fake) -> None:
    flow = auth.ClientCredentials("svc", client_secret="s", token_endpoint_auth_method="client_secret_post")
    with pytest.raises(mcp_sync.AuthError, match="does not accept client_secret_post"):
        connect(fake, flow)
    assert fake.seen("/token") == []
    code = auth.AuthorizationCode(
        client_id="app", client_secret="s", token_endpoint_auth_method="client_secret_post",
        redirect_handler=stand_in_browser(fake),
    )  # fmt: skip
    with pytest.raises(mcp_sync.AuthError, match="does not accept client_secret_post"):
        connect(fake, code)


@pytest.mark.parametrize(
    ("options", "problem"),
    [
        ({"client_secret": "s", "token_endpoint_auth_method": "client_secret_jwt"}, "must be one of"),
        ({"client_secret": "s", "token_endpoint_auth_method": "private_key_jwt"}, "needs private_key"),
        ({"client_secret": "s", "token_endpoint_auth_method": 3}, "must be one of"),
    ],
)
def test_token_endpoint_auth_method_is_checked(options: dict[str, object], problem: str) -> None:
    with pytest.raises(mcp_sync.ProtocolError, match=problem):
        auth.ClientCredentials("svc", **options)  # type: ignore[arg-type]
    with pytest.raises(mcp_sync.ProtocolError, match="needs client_secret"):
        auth.AuthorizationCode(client_id="app", token_endpoint_auth_method="client_secret_basic")
    with pytest.raises(mcp_sync.ProtocolError, match="client_secret_basic or client_secret_post"):
        auth.AuthorizationCode(client_id="app", client_secret="s", token_endpoint_auth_method="private_key_jwt")


def test_a_pinned_issuer_never_listed_is_not_said_to_be_gone(fake: Fake) -> None:
    flow = auth.ClientCredentials("svc", client_secret="s", issuer="https://other.example")
    with pytest.raises(mcp_sync.AuthError) as info:
        connect(fake, flow)
    assert "does not list the authorization server this auth is pinned to" in str(info.value)
    assert "no longer" not in str(info.value)
    fake.issue_refresh = False
    pinned = auth.ClientCredentials("svc", client_secret="s", issuer=fake.url)
    with connect(fake, pinned) as session:
        session.call_tool("echo", {"message": "m"})
        fake.prm_override = {"authorization_servers": ["https://other.example"]}
        fake.tokens.clear()  # a 401: discovery again, and the pinned server is gone
        with pytest.raises(mcp_sync.AuthError, match="no longer lists"):
            session.call_tool("echo", {"message": "m"})


def test_plain_http_to_a_remote_host_is_refused_before_any_request() -> None:
    with pytest.raises(mcp_sync.ProtocolError, match="https"):
        mcp_sync.connect_http(
            server="x", url="http://mcp.example/mcp", auth=auth.ClientCredentials("c", client_secret="s")
        )


def test_auth_and_bearer_token_env_are_exclusive(fake: Fake, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SOME_TOKEN", "t")
    with pytest.raises(mcp_sync.ProtocolError, match="at most one"):
        connect(fake, lambda: "t", bearer_token_env="SOME_TOKEN")


def test_authorization_never_follows_a_redirect_to_another_origin(fake: Fake) -> None:
    # The MCP endpoint redirects (307) to another origin, and the caller's own
    # client follows redirects: the token must not travel with it.
    with fake_oauth_server() as other, httpx.Client(follow_redirects=True) as client:
        with fake_redirecting_server(f"{other.url}/mcp") as url, pytest.raises(mcp_sync.McpError):
            mcp_sync.connect_http(server="r", url=url, auth=lambda: "tok", http_client=client)
        assert other.seen("/mcp"), "the redirect was followed"
        assert all("authorization" not in r.headers for r in other.seen("/mcp"))


def fake_redirecting_server(target: str):  # type: ignore[no-untyped-def]
    """A loopback server answering every POST with 307 to ``target``."""
    import contextlib
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: object) -> None:
            pass

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            self.send_response(307)
            self.send_header("Location", target)
            self.send_header("Content-Length", "0")
            self.end_headers()

    @contextlib.contextmanager
    def run():  # type: ignore[no-untyped-def]
        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        try:
            yield f"http://127.0.0.1:{server.server_address[1]}/mcp"
        finally:
            server.shutdown()
            server.server_close()
            thread.join(5)

    return run()


# ------------------------------------------------------------------ config


def test_config_auth_entry_builds_the_flow_when_connecting(
    fake: Fake, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from mcp_sync.config import ConfigError, parse_config

    entry = {
        "server": "fake",
        "url": f"{fake.url}/mcp",
        "auth": {"type": "client_credentials", "clientId": "svc", "clientSecretEnv": "SVC_SECRET",
                 "scope": "jobs", "tokenStore": str(tmp_path / "t.json")},
    }  # fmt: skip
    (config,) = parse_config([entry])
    monkeypatch.delenv("SVC_SECRET", raising=False)
    with pytest.raises(mcp_sync.ProtocolError, match="SVC_SECRET"):
        mcp_sync.connect(config)
    monkeypatch.setenv("SVC_SECRET", "from-the-environment")
    with mcp_sync.connect(config) as session:
        session.call_tool("echo", {"message": "m"})
    assert fake.seen("/token")[-1].form["scope"] == "jobs"
    with pytest.raises(ConfigError, match="auth"):
        parse_config([{**entry, "auth": {"type": "client_credentials", "clientId": "svc", "clientSecret": "x"}}])
    with pytest.raises(ConfigError, match="auth"):
        parse_config([{**entry, "auth": {"type": "password"}}])


def test_config_auth_entry_names_the_token_endpoint_auth_method(
    fake: Fake, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mcp_sync.config import ConfigError, parse_config

    fake.metadata_override = {"token_endpoint_auth_methods_supported": ["client_secret_basic", "client_secret_post"]}
    auth_entry = {"type": "client_credentials", "clientId": "svc", "clientSecretEnv": "SVC_SECRET",
                  "tokenEndpointAuthMethod": "client_secret_post"}  # fmt: skip
    entry = {"server": "fake", "url": f"{fake.url}/mcp", "auth": auth_entry}
    (config,) = parse_config([entry])
    monkeypatch.setenv("SVC_SECRET", "from-the-environment")
    with mcp_sync.connect(config) as session:
        session.call_tool("echo", {"message": "m"})
    assert fake.seen("/token")[-1].form["client_secret"] == "from-the-environment"
    with pytest.raises(ConfigError, match="auth"):
        parse_config([{**entry, "auth": {**auth_entry, "tokenEndpointAuthMethod": "client_secret_jwt"}}])
