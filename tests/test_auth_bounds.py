"""What an authorization server chooses never reaches the terminal raw, and
secrets go only where the caller meant (tests/oauth_fake.py plays the server)."""

from __future__ import annotations

from collections.abc import Iterator

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
