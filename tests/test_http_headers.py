"""Static HTTP headers (connect_http(headers=...)) and the plain-http credential rule."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from hostile_http import Hostile, hostile_server

import mcp_sync
from mcp_sync.config import ConfigError, HttpConnectOptions, parse_config

SECRET = "hdr_SECRET_0a1b2c3d4e5f"
TOKEN = "tok_SECRET_9f8e7d6c5b4a"
TOKEN_ENV = "MCP_SYNC_HEADERS_TEST_TOKEN"


@pytest.fixture
def hostile() -> Iterator[Hostile]:
    with hostile_server() as cfg:
        yield cfg


def _clean(error: BaseException) -> None:
    text = str(error) + repr(error)
    assert SECRET not in text and TOKEN not in text


def test_headers_reach_the_server_on_every_request(hostile: Hostile) -> None:
    headers = {"X-Api-Key": SECRET, "X-Client": "mcp-sync tests"}
    with mcp_sync.connect_http(server="h", url=hostile.url, headers=headers) as session:
        assert session.call_tool("echo", {"message": "hi"}).content[0]["text"] == "hi"
        assert SECRET not in repr(session)
    requests = hostile.requests
    assert {r.method for r in requests} >= {"POST", "DELETE"}
    for request in requests:
        assert request.headers.get("x-api-key") == SECRET, request.method
        assert request.headers.get("x-client") == "mcp-sync tests"


def test_headers_beside_a_bearer_token(
    hostile: Hostile, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(TOKEN_ENV, TOKEN)
    with mcp_sync.connect_http(
        server="h", url=hostile.url, bearer_token_env=TOKEN_ENV, headers={"X-Tenant": "t1"}
    ) as session:
        session.call_tool("echo", {"message": "x"})
    first = hostile.requests[0]
    assert first.headers["authorization"] == f"Bearer {TOKEN}"
    assert first.headers["x-tenant"] == "t1"


@pytest.mark.parametrize(
    ("headers", "problem"),
    [
        ({"Bad Name": "x"}, "has a header name that is not an HTTP token"),
        ({"X-Key": SECRET + "\r\nX-Evil: 1"}, "has a value for X-Key that is empty"),
        ({"X-Key": ""}, "has a value for X-Key that is empty"),
        ({"X-Key": " " + SECRET}, "has a value for X-Key that is empty"),
        ({"X-Key": SECRET + "é"}, "has a value for X-Key that is empty"),
        ({"X-Key": 5}, "has a value for X-Key that is not a string"),
        ({"Accept": "text/plain"}, "may not set Accept: the transport sets it"),
        ({"mcp-session-id": "x"}, "may not set mcp-session-id: the transport sets it"),
        ({"X-A": "1", "x-a": "2"}, "names header x-a twice"),
        ("X-Key: 1", "must be a mapping of header names to string values"),
    ],
)
def test_bad_headers_are_refused_before_any_traffic(
    hostile: Hostile, headers: Any, problem: str
) -> None:
    with pytest.raises(mcp_sync.ProtocolError) as caught:
        mcp_sync.connect_http(server="h", url=hostile.url, headers=headers)
    assert str(caught.value).startswith(f"server 'h': option headers {problem}")
    _clean(caught.value)
    assert hostile.requests == []


def test_authorization_header_and_token_variable_conflict(
    hostile: Hostile, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(TOKEN_ENV, TOKEN)
    with pytest.raises(mcp_sync.ProtocolError, match="sets Authorization and a bearer token"):
        mcp_sync.connect_http(
            server="h",
            url=hostile.url,
            bearer_token_env=TOKEN_ENV,
            headers={"Authorization": "Bearer " + SECRET},
        )
    assert hostile.requests == []


def test_headers_are_for_http_servers_only() -> None:
    with pytest.raises(mcp_sync.ProtocolError, match="apply only to an HTTP server"):
        mcp_sync.connect(server="s", command="true", headers={"X-A": "1"})


# ------------------------------------------------------------- plain http


class _Recorder:
    """An httpx transport that records every request and answers 404:
    no request of these tests leaves the process."""

    def __init__(self) -> None:
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        return httpx.Response(404)


def _attempt(url: str, **options: Any) -> tuple[BaseException, _Recorder]:
    recorder = _Recorder()
    client = httpx.Client(transport=httpx.MockTransport(recorder))
    try:
        with pytest.raises(mcp_sync.McpError) as caught:
            mcp_sync.connect_http(server="r", url=url, http_client=client, **options)
    finally:
        client.close()
    return caught.value, recorder


REFUSAL = (
    "server 'r': refusing to send a bearer token or headers over plain http:// to a host "
    "that is not loopback; use https:, or pass allow_insecure_http=True to send them unencrypted"
)


@pytest.mark.parametrize(
    "url",
    ["http://mcp.example.invalid/mcp", "http://192.0.2.7:8080/mcp", "http://[2001:db8::1]/mcp",
     "HTTP://Mcp.Example.Invalid/mcp", "http://127.0.0.1.example.invalid/mcp"],
)
def test_credentials_over_plain_http_are_refused(
    url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(TOKEN_ENV, TOKEN)
    for options in ({"bearer_token_env": TOKEN_ENV}, {"headers": {"X-Api-Key": SECRET}}):
        error, recorder = _attempt(url, **options)
        assert isinstance(error, mcp_sync.ProtocolError)
        assert str(error) == REFUSAL
        _clean(error)
        assert recorder.requests == []


@pytest.mark.parametrize(
    ("url", "options"),
    [
        ("http://127.0.0.1:9/mcp", {}),
        ("http://127.8.9.10:9/mcp", {}),
        ("http://[::1]:9/mcp", {}),
        ("http://localhost:9/mcp", {}),
        ("http://LOCALHOST.:9/mcp", {}),
        ("https://mcp.example.invalid/mcp", {}),
        ("http://mcp.example.invalid/mcp", {"allow_insecure_http": True}),
    ],
)
def test_loopback_https_or_an_explicit_opt_in_may_carry_credentials(
    url: str, options: dict[str, Any]
) -> None:
    error, recorder = _attempt(url, headers={"X-Api-Key": SECRET}, **options)
    assert "refusing" not in str(error)
    assert recorder.requests, "the request should have been attempted"
    assert recorder.requests[0].headers["x-api-key"] == SECRET
    _clean(error)


def test_plain_http_without_credentials_is_fine() -> None:
    error, recorder = _attempt("http://mcp.example.invalid/mcp")
    assert "refusing" not in str(error) and recorder.requests


def test_allow_insecure_http_must_be_a_bool() -> None:
    with pytest.raises(mcp_sync.ProtocolError, match="allow_insecure_http must be a bool"):
        mcp_sync.connect_http(server="r", url="http://127.0.0.1:9/", allow_insecure_http="yes")


# ------------------------------------------------------------- in a config


def _config_error(entry: dict[str, Any]) -> ConfigError:
    with pytest.raises(ConfigError) as caught:
        parse_config({"mcpServers": {"remote": entry}}, path="c.json", environ={"T": TOKEN})
    return caught.value


def test_config_headers_expand_and_stay_private() -> None:
    (entry,) = parse_config(
        {
            "mcpServers": {
                "remote": {
                    "type": "http",
                    "url": "https://mcp.example.invalid/mcp",
                    "headers": {"Authorization": "Bearer ${T}", "X-Plain": "visible"},
                }
            }
        },
        environ={"T": TOKEN},
    )
    assert isinstance(entry, HttpConnectOptions)
    # What ${T} expanded to is a Secret: shown as written, revealed to send.
    assert entry.headers is not None
    assert str(entry.headers["Authorization"]) == "Bearer ${T}"
    assert entry.headers["Authorization"].reveal() == f"Bearer {TOKEN}"  # type: ignore[union-attr]
    assert entry.headers["X-Plain"] == "visible"
    assert TOKEN not in repr(entry) and TOKEN not in str(entry)
    assert "headers={'Authorization': '[REDACTED]', 'X-Plain': '[REDACTED]'}" in repr(entry)
    kwargs = entry.connect_kwargs()
    from mcp_sync.transports.http_options import check_http_options

    sent = check_http_options("remote", entry.url, None, None, headers=kwargs["headers"])
    assert sent["headers"].reveal()["Authorization"] == f"Bearer {TOKEN}"


@pytest.mark.parametrize(
    ("entry", "field", "problem"),
    [
        (
            {"url": "http://mcp.example.invalid/mcp", "headers": {"X-K": "${T}"}},
            "url",
            "is plain http:// to a host that is not loopback",
        ),
        (
            {"url": "http://mcp.example.invalid/mcp", "bearerTokenEnv": "T"},
            "url",
            "is plain http:// to a host that is not loopback",
        ),
        ({"url": "https://x.invalid/", "headers": {"Host": "y"}}, "headers", "may not set Host"),
        ({"url": "https://x.invalid/", "headers": {"X-K": 1}}, "headers.X-K", "must be a string"),
        ({"url": "https://x.invalid/", "headers": ["X-K: 1"]}, "headers", "must be an object"),
        (
            {"url": "https://x.invalid/", "headers": {"Authorization": "x"}, "bearerTokenEnv": "T"},
            "headers",
            "sets Authorization and bearerTokenEnv is also given",
        ),
        (
            {"url": "http://x.invalid/", "bearerTokenEnv": "T", "allowInsecureHttp": "yes"},
            "allowInsecureHttp",
            "must be true or false",
        ),
        ({"command": "x", "headers": {"X-K": "1"}}, "headers", "unknown field (only an HTTP"),
    ],
)
def test_config_header_rules_name_the_field(
    entry: dict[str, Any], field: str, problem: str
) -> None:
    error = _config_error(entry)
    assert (error.entry, error.field) == ("remote", field), str(error)
    assert error.problem.startswith(problem), error.problem
    assert TOKEN not in str(error)


def test_config_opt_in_to_insecure_http() -> None:
    (entry,) = parse_config(
        {"mcpServers": {"r": {"url": "http://mcp.example.invalid/", "bearerTokenEnv": "T",
                              "allowInsecureHttp": True}}}
    )  # fmt: skip
    assert entry.connect_kwargs()["allow_insecure_http"] is True
