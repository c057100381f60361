"""Message hygiene (SPEC §2): no failure mode puts private text in a message."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from support import connect_fake, mcp_records

import mcp_sync
from mcp_sync.testing import server_command

SECRET_ENV = "sk-envsecret-0123456789abcdef"
STDERR_TEXT = "stderr-private-words"
REMOTE_TEXT = "remote-private-message"
RAW_MARKER = "raw-frame-marker"


def _failures(tmp_path: Path) -> list[mcp_sync.McpError]:
    errors: list[mcp_sync.McpError] = []
    stderr = ("--stderr", STDERR_TEXT)

    def attempt(action: object) -> None:
        try:
            action()  # type: ignore[operator]
        except mcp_sync.McpError as exc:
            errors.append(exc)

    env = {"SECRET": SECRET_ENV}
    attempt(lambda: mcp_sync.connect(server="s", command=str(tmp_path / "missing"), env=env))
    attempt(lambda: connect_fake(*stderr, "--exit-on", "initialize", env=env))
    attempt(lambda: connect_fake(*stderr, "--hang-on", "initialize", handshake_timeout_ms=100))
    attempt(lambda: connect_fake(*stderr, "--capabilities", "{}"))
    attempt(lambda: connect_fake(*stderr, "--tools", '[{"name": "a/b", "inputSchema": {"type": "object"}}]'))
    attempt(lambda: connect_fake(*stderr, "--stdout-flood", "2000000"))
    with connect_fake(*stderr, "--misbehave", env=env) as session:
        attempt(lambda: session.call_tool("hang", timeout_ms=100))
        attempt(lambda: session.call_tool("nope"))
        attempt(lambda: session.call_tool("echo", {"message": float("nan")}))
        attempt(lambda: session.call_tool("echo", {RAW_MARKER: "x" * 2_000_000}))
        attempt(
            lambda: session.call_tool(
                "raw",
                {"lines": ['{"jsonrpc":"2.0","error":{"code":-32001,"message":"'
                           + REMOTE_TEXT + '","data":"' + SECRET_ENV + '"},"id":{id}}'],
                 "reply": False},
            )
        )
        attempt(
            lambda: session.call_tool(
                "raw",
                {"lines": ['{"jsonrpc":"2.0","result":{"' + RAW_MARKER + '":1},"id":{id},"error":1}'],
                 "reply": False},
            )
        )
        attempt(lambda: session.call_tool("echo", {"message": "after"}))
    with connect_fake(*stderr, "--misbehave") as session:
        attempt(lambda: session.call_tool("crash", {"code": 9}))
    return errors


def test_no_message_or_log_record_carries_private_text(tmp_path: Path) -> None:
    with mcp_records() as handler:
        errors = _failures(tmp_path)
        _servers_failures(tmp_path, errors)
    kinds = {e.kind for e in errors}
    assert kinds == {
        "spawn_failed", "connection_closed", "timeout", "protocol_error",
        "invalid_response", "tool_not_found", "remote_error", "server_unavailable",
    }
    command = " ".join(server_command())
    forbidden = [SECRET_ENV, STDERR_TEXT, REMOTE_TEXT, RAW_MARKER, command, str(tmp_path),
                 str(os.getpid()), '"jsonrpc"']
    # A command that cannot be started is named as the caller gave it (its
    # arguments and environment never are).
    named = f"command {str(tmp_path / 'missing')!r} not found"
    spawn = next(e for e in errors if e.kind == "spawn_failed")
    assert str(spawn) == f"server 's' could not be started: {named}"
    for error in errors:
        for text in (str(error), repr(error)):
            for private in forbidden:
                assert private not in text.replace(named, "<command>"), (error.kind, text)
    # Every event of the logger hierarchy, at DEBUG: its message and its fields.
    events = {getattr(record, "mcp_event", None) for record in handler.records}
    assert {"connect", "era", "call_start", "call_end", "cancel", "end", "teardown",
            "connect_failed", "respawn", "backoff"} <= events
    for record in handler.records:
        shown = [record.getMessage(), *(repr(v) for k, v in vars(record).items() if k.startswith("mcp_"))]
        assert record.exc_info is None
        for text in shown:
            for private in forbidden:
                assert private not in text.replace(named, "<command>"), (record.name, text)
    remote = next(e for e in errors if isinstance(e, mcp_sync.RemoteError))
    assert remote.code == -32001
    assert remote.detail.reveal()["message"] == REMOTE_TEXT
    assert REMOTE_TEXT not in repr(remote.detail)


def _servers_failures(tmp_path: Path, errors: list[mcp_sync.McpError]) -> None:
    """A crash loop under Servers: respawn and back-off records, ServerUnavailable."""
    from mcp_sync.config import ConnectOptions

    command, *args = server_command("--stderr", STDERR_TEXT, "--misbehave")
    options = ConnectOptions(server="s", command=command, args=args, env={"SECRET": SECRET_ENV})
    with mcp_sync.Servers(options, respawn=mcp_sync.RespawnPolicy(immediate=1, first_delay_ms=600_000)) as servers:
        for _ in range(3):
            try:
                servers.call_tool("s", "crash", {RAW_MARKER: SECRET_ENV},
                                  traceparent="00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
            except mcp_sync.McpError as exc:
                errors.append(exc)


def test_timeout_is_a_builtin_timeout_error() -> None:
    assert issubclass(mcp_sync.Timeout, TimeoutError)
    with connect_fake("--misbehave") as session, pytest.raises(TimeoutError):
        session.call_tool("hang", timeout_ms=50)


def test_modern_era_messages_carry_no_server_text() -> None:
    # What a 2026-07-28 server says is untrusted too: its version lists, result
    # types, input request methods and error texts stay out of messages.
    secret = SECRET_ENV
    errors: list[mcp_sync.McpError] = []

    def attempt(action: object) -> None:
        try:
            action()  # type: ignore[operator]
        except mcp_sync.McpError as exc:
            errors.append(exc)

    listing = ('server/discover={"jsonrpc":"2.0","id":{id},"error":{"code":-32022,"message":"'
               + REMOTE_TEXT + '","data":{"supported":["' + secret + '","2027-01-01"]}}}')
    attempt(lambda: connect_fake("--era", "modern", "--answer", listing))
    with connect_fake("--era", "modern", "--input-tools", "--result-type", secret) as session:
        attempt(lambda: session.call_tool("echo", {"message": "x"}))
        attempt(lambda: session.call_tool("ask_input", {"method": secret}))
    assert {e.kind for e in errors} == {"protocol_error", "invalid_response", "input_required"}
    for error in errors:
        for text in (str(error), repr(error)):
            assert secret not in text and REMOTE_TEXT not in text, (error.kind, text)


def test_every_kind_has_its_own_class() -> None:
    classes = [mcp_sync.SpawnFailed, mcp_sync.ProtocolError, mcp_sync.InvalidResponse,
               mcp_sync.ConnectionClosed, mcp_sync.Timeout, mcp_sync.ToolNotFound,
               mcp_sync.RemoteError, mcp_sync.InputRequired, mcp_sync.ServerUnavailable]
    assert len({c.kind for c in classes}) == 9
    assert all(issubclass(c, mcp_sync.McpError) and c.__doc__ for c in classes)


def test_expanded_config_values_stay_private(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Values a config's variables expand to (SPEC §10.3): never in a message,
    a repr, a log record or the command's output; masked in the stderr tail."""
    import json
    import logging
    import subprocess
    import sys

    from mcp_sync.config import ConfigError, parse_config

    secret, header = "sk-expanded-0123456789abcdef", "hdr-expanded-98765fedcba"
    monkeypatch.setenv("HYGIENE_KEY", secret)
    monkeypatch.setenv("HYGIENE_HEADER", header)
    command, *args = server_command("--stderr", "argv: ${HYGIENE_KEY}", "--misbehave")
    document = {
        "mcpServers": {
            "local": {"command": command, "args": args, "env": {"TOKEN": "${HYGIENE_KEY}"}},
            "remote": {"url": "http://127.0.0.1:9/mcp", "headers": {"X-Key": "${HYGIENE_HEADER}"}},
        }
    }
    caplog.set_level(logging.DEBUG)
    local, remote = parse_config(document)
    texts = [repr(local), str(local), repr(remote), str(remote)]
    errors: list[BaseException] = []
    events: list[mcp_sync.DiagnosticEvent] = []
    with mcp_sync.connect(local, diagnostics=events.append) as session:
        for action in (
            lambda: session.call_tool("hang", timeout_ms=100),
            lambda: session.call_tool("echo", {"message": float("nan")}),
            lambda: session.call_tool("crash", {"code": 9}),
        ):
            try:
                action()
            except mcp_sync.McpError as exc:
                errors.append(exc)
    for bad in (remote, local):
        try:
            mcp_sync.connect(bad, handshake_timeout_ms=2000, max_tools=1)
        except mcp_sync.McpError as exc:
            errors.append(exc)
    broken = json.loads(json.dumps(document))
    broken["mcpServers"]["local"]["maxTools"] = 0
    try:
        parse_config(broken)
    except ConfigError as exc:
        errors.append(exc)
    assert {e.kind for e in errors if isinstance(e, mcp_sync.McpError)} >= {
        "timeout", "protocol_error", "connection_closed", "invalid_response", "config_error"
    }
    tails = [str(e.detail.reveal()) for e in events]
    assert any("argv: [REDACTED]" in tail for tail in tails), tails
    config_file = tmp_path / ".mcp.json"
    config_file.write_text(json.dumps(broken))
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
    done = subprocess.run(
        [sys.executable, "-m", "mcp_sync", "--mcp-config", str(config_file), "tools"],
        capture_output=True, text=True, env=env, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 2
    logged = [record.getMessage() for record in caplog.records]
    everything = texts + tails + logged + [done.stdout, done.stderr]
    everything += [text for e in errors for text in (str(e), repr(e))]
    for private in (secret, header):
        for text in everything:
            assert private not in text


def test_no_auth_secret_in_any_message_repr_or_log(caplog: pytest.LogCaptureFixture) -> None:
    """Tokens, codes, verifiers, client secrets and private keys (issue 16):
    every failure mode of the auth flows, with their objects' reprs, and
    whatever the library logs meanwhile."""
    import logging

    from joserfc.jwk import ECKey
    from oauth_fake import SECRET_DESCRIPTION, fake_oauth_server, stand_in_browser

    from mcp_sync import auth

    caplog.set_level(logging.DEBUG)
    client_secret = "client-secret-value-0123456789"
    private_key = ECKey.generate_key("P-256").as_pem(private=True).decode()
    key_body = private_key.splitlines()[1]
    errors: list[mcp_sync.McpError] = []
    objects: list[object] = []
    with fake_oauth_server() as fake:
        url = f"{fake.url}/mcp"

        def attempt(flow: object, **kwargs: object) -> None:
            objects.append(flow)
            try:
                with mcp_sync.connect_http(server="s", url=url, auth=flow, **kwargs) as session:  # type: ignore[arg-type]
                    objects.append(session)
                    session.call_tool("echo", {"message": "m"})
                    fake.insufficient_scope_for_call = "never"
                    session.call_tool("echo", {"message": "m"})
            except mcp_sync.McpError as exc:
                errors.append(exc)

        code_flow = auth.AuthorizationCode(redirect_handler=stand_in_browser(fake))
        attempt(code_flow)
        fake.insufficient_scope_for_call = None
        attempt(auth.ClientCredentials("svc", client_secret=client_secret))
        attempt(auth.ClientCredentials("svc", private_key=private_key))
        fake.token_status = 400  # every token request refused, with a description
        attempt(auth.ClientCredentials("svc", client_secret=client_secret))
        fake.token_status = 200
        fake.redirect_extra = {"state": "forged"}
        attempt(auth.AuthorizationCode(redirect_handler=stand_in_browser(fake)))
        fake.redirect_extra = {}
        attempt(lambda: "provider-token-not-accepted")
        secrets = [client_secret, key_body, SECRET_DESCRIPTION, "provider-token-not-accepted"]
        secrets += list(fake.tokens) + list(fake.refresh_tokens)
        secrets += [r.form.get("code_verifier", "") for r in fake.seen("/token")]
        secrets += [r.form.get("code", "") for r in fake.seen("/token")]
        grant = code_flow._grant(url)
        objects += [grant, grant.token, grant.client, grant.dpop]
    secrets = [s for s in secrets if s]
    assert {e.kind for e in errors} == {"auth_failed"}
    texts = [str(e) for e in errors] + [repr(e) for e in errors] + [repr(o) for o in objects]
    # The library's own records and httpx's request lines (httpcore's traces also
    # show this test's stand-in browser following the redirect that carries the code).
    texts += [r.getMessage() for r in caplog.records if r.name.startswith("mcp_sync") or r.name == "httpx"]
    for text in texts:
        for secret in secrets:
            assert secret not in text, text
