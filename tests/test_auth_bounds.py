"""What an authorization server chooses never reaches the terminal raw, and
secrets go only where the caller meant (tests/oauth_fake.py plays the server)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from oauth_fake import Fake, fake_oauth_server, stand_in_browser

import mcp_sync
from mcp_sync import auth
from mcp_sync.auth._urls import check_oauth_url


@pytest.fixture
def fake() -> Iterator[Fake]:
    with fake_oauth_server() as server:
        yield server


def connect(fake: Fake, auth_object: object, **kwargs: object) -> mcp_sync.Session:
    return mcp_sync.connect_http(server="fake", url=f"{fake.url}/mcp", auth=auth_object, **kwargs)  # type: ignore[arg-type]


# ------------------------------------------------------------------ the login URL

_UNSHOWABLE = ["\u202e", "\u009b", "\u2066", "\u200b", "\u2028", "\u0085"]


@pytest.mark.parametrize("char", _UNSHOWABLE)
def test_a_url_with_a_control_or_bidi_character_is_refused(char: str) -> None:
    # (U+2028 and U+0085 are white space, refused as such.)
    with pytest.raises(mcp_sync.AuthError, match=r"bidirectional-formatting|not a usable") as info:
        check_oauth_url(f"https://as.example/author{char}ize", "the authorization_endpoint", "s")
    assert char not in str(info.value)
    # Letters from any script are still fine.
    assert check_oauth_url("https://as.example/café", "x", "s") == "https://as.example/café"


@pytest.mark.parametrize("char", ["\u202e", "\u009b"])
def test_the_login_url_with_a_control_never_reaches_the_terminal(
    fake: Fake, char: str, capfd: pytest.CaptureFixture[str]
) -> None:
    fake.metadata_override = {"authorization_endpoint": f"{fake.url}/authorize{char}31m"}
    shown: list[str] = []

    def browser(url: str) -> bool:
        shown.append(url)
        return False  # no browser: the URL would be printed

    with pytest.raises(mcp_sync.AuthError, match="authorization_endpoint contains a control"):
        connect(fake, auth.AuthorizationCode(browser=browser))
    out, err = capfd.readouterr()
    assert char not in out + err and shown == []
    assert fake.seen("/authorize") == []


def test_the_printed_login_url_is_escaped(capsys: pytest.CaptureFixture[str]) -> None:
    # A URL that reached this line some other way (a pending login read back
    # from a store) is still shown escaped.
    flow = auth.AuthorizationCode(browser=lambda url: False)
    flow._show("https://as.example/a\u202eb\u009b31m", "s")
    err = capsys.readouterr().err
    assert "\u202e" not in err and "\u009b" not in err
    assert "https://as.example/a\\u202eb\\x9b31m" in err


def test_the_login_still_works_with_a_browser(fake: Fake) -> None:
    flow = auth.AuthorizationCode(redirect_handler=stand_in_browser(fake))
    with connect(fake, flow) as session:
        session.call_tool("echo", {"message": "m"})


# ------------------------------------------------------------------ where secrets go


@pytest.fixture
def elsewhere(fake: Fake) -> Iterator[Fake]:
    """A second authorization server, on another origin, that the MCP server
    names in its resource metadata; its tokens are good at the MCP server."""
    with fake_oauth_server() as other:
        other.tokens = fake.tokens
        fake.prm_override = {"authorization_servers": [other.url]}
        yield other


def _credential_flows(tmp_path: Path) -> dict[str, Callable[..., auth.Auth]]:
    jwt_file = tmp_path / "token"
    jwt_file.write_text("header.payload.sig\n")
    return {
        "client secret": lambda **kw: auth.ClientCredentials("svc", client_secret="s3cr3t", **kw),
        "workload assertion": lambda **kw: auth.WorkloadIdentity(jwt_file, **kw),
        "login with a client secret": lambda **kw: auth.AuthorizationCode(
            client_id="app", client_secret="s3cr3t", redirect_handler=lambda url: url, **kw
        ),
    }


@pytest.mark.parametrize("kind", ["client secret", "workload assertion", "login with a client secret"])
def test_a_credential_is_not_sent_to_an_authorization_server_on_another_origin(
    fake: Fake, elsewhere: Fake, kind: str, tmp_path: Path
) -> None:
    flow = _credential_flows(tmp_path)[kind]()
    with pytest.raises(mcp_sync.AuthError, match="another origin and was not named") as info:
        connect(fake, flow)
    assert "any_issuer=True" in str(info.value) and "issuer=" in str(info.value)
    assert elsewhere.seen("/token") == [] and elsewhere.seen("/authorize") == []


@pytest.mark.parametrize("how", ["issuer", "any_issuer"])
def test_a_credential_goes_to_an_authorization_server_the_caller_allowed(
    fake: Fake, elsewhere: Fake, how: str
) -> None:
    option: dict[str, object] = {"issuer": elsewhere.url} if how == "issuer" else {"any_issuer": True}
    flow = auth.ClientCredentials("svc", client_secret="s3cr3t", **option)  # type: ignore[arg-type]
    with connect(fake, flow) as session:
        session.call_tool("echo", {"message": "m"})
    assert elsewhere.seen("/token")[-1].headers["authorization"].startswith("Basic ")


def test_a_login_without_a_secret_still_uses_the_named_authorization_server(
    fake: Fake, elsewhere: Fake
) -> None:
    # Nothing of the caller's is sent: dynamic registration there is fine.
    flow = auth.AuthorizationCode(redirect_handler=stand_in_browser(elsewhere))
    with connect(fake, flow) as session:
        session.call_tool("echo", {"message": "m"})
    assert len(elsewhere.seen("/token")) == 1


def test_any_issuer_must_be_a_bool() -> None:
    with pytest.raises(mcp_sync.ProtocolError, match="any_issuer"):
        auth.ClientCredentials("svc", client_secret="s", any_issuer="yes")  # type: ignore[arg-type]


def test_the_config_file_can_pin_or_widen_the_issuer(monkeypatch: pytest.MonkeyPatch) -> None:
    from mcp_sync.auth._config import ClientCredentialsConfig

    monkeypatch.setenv("SVC_SECRET", "s3cr3t")
    built = ClientCredentialsConfig.model_validate(
        {"type": "client_credentials", "clientId": "svc", "clientSecretEnv": "SVC_SECRET",
         "issuer": "https://as.example", "anyIssuer": True}
    ).build("s")  # fmt: skip
    assert built.issuer == "https://as.example" and built.any_issuer is True


# ------------------------------------------------------------------ the token store file


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        (b"[" * 100_000 + b"]" * 100_000, "nests deeper"),  # 200 KB of nesting
        (b'{"records": {"a": ' + b"[" * 129 + b"]" * 129 + b"}}", "nests deeper"),
        (b'{"records": {"a": "' + b"x" * (4 * 1024 * 1024) + b'"}}', "larger than"),
        (b'{"records": [1, 2]}', "not a token store file"),
        (b"\xff\xfe", "invalid JSON"),
    ],
    ids=["200k-deep", "129-deep", "too-large", "not-records", "not-utf8"],
)
def test_a_broken_token_store_file_is_a_typed_error(
    tmp_path: Path, content: bytes, problem: str
) -> None:
    path = tmp_path / "tokens.json"
    path.write_bytes(content)
    path.chmod(0o600)
    store = auth.FileTokenStore(str(path))
    with pytest.raises(mcp_sync.AuthError, match=problem):
        store.get("https://mcp.example/mcp")


def test_a_token_store_file_at_the_depth_limit_still_reads(tmp_path: Path) -> None:
    path = tmp_path / "tokens.json"
    path.write_bytes(b'{"records": {"a": ' + b"[" * 126 + b"]" * 126 + b"}}")
    path.chmod(0o600)
    assert auth.FileTokenStore(str(path)).get("b") is None
