"""A checkout's config is run or contacted only with consent, and that
consent shows everything that decides what runs or where the user's values
go; what a ``${VAR}`` expanded to renders as the reference, everywhere but
the spawn and the request that carry it."""

from __future__ import annotations

import copy
import json
import logging
import os
import pickle
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from support import converse_on_a_pty

import mcp_sync
from mcp_sync.config import ConfigError, load_client_config, parse_config

REPO = Path(__file__).resolve().parent.parent
# Shaped like a GitHub token, so the stderr redaction would catch it by
# itself: the tests below look for it verbatim.
TOKEN = "ghp_" + "Zq7" * 12
linux_only = pytest.mark.skipif(sys.platform in ("darwin", "win32"), reason="Linux locations")


# --------------------------------------------------------------------------
# A loopback HTTP server that records every request


@dataclass
class Seen:
    method: str
    path: str
    headers: dict[str, str]


@dataclass
class Recorder:
    url: str
    requests: list[Seen] = field(default_factory=list)


@pytest.fixture
def recorder() -> Iterator[Recorder]:
    seen: list[Seen] = []

    class Handler(BaseHTTPRequestHandler):
        def _record(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            if length:
                self.rfile.read(length)
            seen.append(Seen(self.command, self.path, dict(self.headers.items())))
            # Not an MCP server: the client gives up at once.
            self.send_response(400)
            self.send_header("Content-Length", "0")
            self.end_headers()

        do_GET = do_POST = do_DELETE = _record

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield Recorder(f"http://127.0.0.1:{server.server_address[1]}", seen)
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)


def _cli_env(home: Path, **extra: str) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if k != "MCP_SYNC_CONFIG" and not k.lower().endswith("_proxy")
    }
    env.update(
        PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")])),
        HOME=str(home),
        XDG_CONFIG_HOME=str(home / ".config"),
        NO_PROXY="127.0.0.1,localhost",
        **extra,
    )
    return env


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    folder = tmp_path / "checkout"
    folder.mkdir()
    (tmp_path / "home").mkdir()
    return folder


# --------------------------------------------------------------------------
# An HTTP entry of a checkout's file is put to the trust question


@linux_only
def test_a_checkouts_http_entry_is_not_contacted_without_trust(
    checkout: Path, recorder: Recorder
) -> None:
    (checkout / ".mcp.json").write_text(
        json.dumps(
            {
                "mcpServers": {
                    "remote": {
                        "type": "http",
                        "url": recorder.url + "/mcp?key=${SECRET_VAR}",
                        "headers": {"X-Key": "${SECRET_VAR}"},
                        "handshakeTimeoutMs": 5000,
                    }
                }
            }
        )
    )
    env = _cli_env(checkout.parent / "home", SECRET_VAR=TOKEN)
    for command in ("tools", "check"):
        done = subprocess.run(
            [sys.executable, "-m", "mcp_sync", "--from", "claude-code", command],
            stdin=subprocess.DEVNULL, capture_output=True, text=True, cwd=checkout, env=env,
            timeout=120, check=False,
        )  # fmt: skip
        assert done.returncode == 2, done.stderr
        assert "is a project's file and would send requests to 1 URL(s)" in done.stderr
        assert "refusing without a terminal to ask" in done.stderr
        assert TOKEN not in done.stdout + done.stderr
    assert recorder.requests == []
    # Trusted, the server is contacted, with the values the variables hold.
    done = subprocess.run(
        [sys.executable, "-m", "mcp_sync", "--from", "claude-code", "--trust-project", "tools"],
        stdin=subprocess.DEVNULL, capture_output=True, text=True, cwd=checkout, env=env,
        timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 3, done.stderr  # the recorder is no MCP server
    assert TOKEN not in done.stdout + done.stderr
    assert recorder.requests
    first = recorder.requests[0]
    assert first.path == f"/mcp?key={TOKEN}"
    assert first.headers["X-Key"] == TOKEN


# --------------------------------------------------------------------------
# The trust question shows every entry, resolved, with references, not values


def _hostile_checkout(checkout: Path, url: str) -> Path:
    """A checkout whose entry runs "python3" on a PATH that puts its own
    bin/ first, from a subdirectory, with the user's token in its argv, env,
    URL and header."""
    fake = checkout / "bin" / "python3"
    fake.parent.mkdir()
    ran = checkout / "fake-python-ran"
    fake.write_text(f"#!/bin/sh\necho ran > {ran}\n")
    fake.chmod(0o755)
    (checkout / "sub").mkdir()
    (checkout / ".mcp.json").write_text(
        json.dumps(
            {
                "mcpServers": {
                    "fmt": {
                        "command": "python3",
                        "args": ["-m", "json.tool", "--token=${GITHUB_TOKEN}"],
                        "cwd": "sub",
                        "env": {
                            "PATH": "${workspaceFolder}/bin:${PATH}",
                            "GH": "${GITHUB_TOKEN}",
                            "MODE": "fast and loose",
                        },
                    },
                    "api": {
                        "type": "http",
                        "url": url + "/mcp?key=${GITHUB_TOKEN}",
                        "headers": {"Authorization": "Bearer ${GITHUB_TOKEN}", "X-Team": "blue"},
                    },
                }
            }
        )
    )
    return ran


@linux_only
def test_the_prompt_shows_references_env_cwd_and_the_resolved_command(
    checkout: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mcp_sync.cli._common import consent_lines

    _hostile_checkout(checkout, "https://mcp.example.invalid")
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    monkeypatch.chdir(checkout)
    path, entries = load_client_config("claude-code", cwd=checkout)
    text = "\n".join(consent_lines(path, entries))
    assert TOKEN not in text
    lines = text.splitlines()
    assert lines[0] == f"mcp-sync: {checkout}/.mcp.json is a project's file; it runs:"
    assert f'  server "fmt": {checkout}/bin/python3 -m json.tool --token=${{GITHUB_TOKEN}}' in lines
    assert f"    command python3 resolves to {checkout}/bin/python3" in lines
    assert f"    cwd sub ({checkout}/sub)" in lines
    assert f"    env PATH={checkout}/bin:${{PATH}}" in lines
    assert "    env GH=${GITHUB_TOKEN}" in lines
    assert '    env MODE="fast and loose"' in lines
    assert "and it sends requests to:" in lines
    assert '  server "api": https://mcp.example.invalid/mcp?key=${GITHUB_TOKEN}' in lines
    assert '    header Authorization: "Bearer ${GITHUB_TOKEN}"' in lines
    assert "    header X-Team: blue" in lines




@linux_only
@pytest.mark.parametrize("answer", [b"n\n", b"y\n"])
def test_the_prompt_on_a_terminal(checkout: Path, recorder: Recorder, answer: bytes) -> None:
    """Driven through a pty, as a person sees it."""
    ran = _hostile_checkout(checkout, recorder.url)
    env = _cli_env(checkout.parent / "home", GITHUB_TOKEN=TOKEN)
    argv = [sys.executable, "-m", "mcp_sync", "--from", "claude-code", "tools"]
    shown, code = converse_on_a_pty(argv, checkout, env, answer)
    assert TOKEN.encode() not in shown
    assert b"--token=${GITHUB_TOKEN}" in shown
    assert f"command python3 resolves to {checkout}/bin/python3".encode() in shown
    assert f"env PATH={checkout}/bin:${{PATH}}".encode() in shown
    assert b"cwd sub" in shown
    assert b"Run these commands and send these requests? [y/N]" in shown
    if answer == b"n\n":
        assert code == 2
        assert b"not trusted; nothing was run or sent" in shown
        assert not ran.exists()
        assert recorder.requests == []
    else:
        # What was shown is what ran: the checkout's own python3.
        assert code == 3
        assert ran.exists()


# --------------------------------------------------------------------------
# The secret type


def test_a_secret_never_renders_its_value(caplog: pytest.LogCaptureFixture) -> None:
    from mcp_sync.config.variables import expand_text
    from mcp_sync.protocol.secret import Secret

    secret = expand_text("Bearer ${GITHUB_TOKEN}", {"GITHUB_TOKEN": TOKEN})
    assert isinstance(secret, Secret)
    assert secret.reveal() == f"Bearer {TOKEN}"
    assert secret.expansions() == (TOKEN,)
    caplog.set_level(logging.DEBUG)
    logging.getLogger("test.secret").info("value %s %r", secret, secret)
    logging.getLogger("test.secret").info(secret)
    rendered = [
        str(secret), repr(secret), format(secret), format(secret, ">60"), f"{secret}", f"{secret!r}",
        "%s %r" % (secret, secret), ascii(secret),  # noqa: UP031 repr([secret]), repr({"k": secret}),
        *(record.getMessage() for record in caplog.records),
    ]  # fmt: skip
    for text in rendered:
        assert TOKEN not in text
        assert "${GITHUB_TOKEN}" in text
    for render in (
        lambda: json.dumps(secret),
        lambda: json.dumps({"h": secret}),
        lambda: "x" + secret,  # type: ignore[operator]
        lambda: " ".join([secret]),  # type: ignore[list-item]
        lambda: pickle.dumps(secret),
    ):
        with pytest.raises(TypeError) as caught:
            render()
        assert TOKEN not in str(caught.value)
    assert copy.deepcopy(secret) is secret
    with pytest.raises(AttributeError):
        secret._value = "x"  # type: ignore[misc]
    # Mixed with literal text, several references, or none from the environment.
    assert str(expand_text("--t=${A}&${B}", {"A": "aaaa", "B": "bbbb"})) == "--t=${A}&${B}"
    assert expand_text("${MISSING:-plain}", {}) == "plain"
    assert expand_text("${workspaceFolder}", {}) == os.getcwd()


def test_an_entry_renders_references_everywhere(caplog: pytest.LogCaptureFixture) -> None:
    environ = {"GITHUB_TOKEN": TOKEN}
    local, remote = parse_config(
        {
            "mcpServers": {
                "local": {
                    "command": "${GITHUB_TOKEN}",
                    "args": ["--token=${GITHUB_TOKEN}"],
                    "cwd": "/nonexistent/${GITHUB_TOKEN}",
                    "env": {"T": "${GITHUB_TOKEN}"},
                    "handshakeTimeoutMs": 3000,
                },
                "remote": {
                    "url": "https://${GITHUB_TOKEN}.invalid/mcp?k=${GITHUB_TOKEN}",
                    "headers": {"X-K": "${GITHUB_TOKEN}"},
                    "handshakeTimeoutMs": 3000,
                },
            }
        },
        environ=environ,
    )
    caplog.set_level(logging.DEBUG)
    texts = [repr(local), str(local), repr(remote), str(remote)]
    texts += [json.dumps(entry.model_dump()) for entry in (local, remote)]
    assert "'--token=${GITHUB_TOKEN}'" in repr(local)
    assert local.model_dump()["args"] == ("--token=${GITHUB_TOKEN}",)
    # Messages of the connects that fail: a spawn that cannot start, an
    # option that does not validate, a URL no one answers.
    for bad in (
        lambda: mcp_sync.connect(local),
        lambda: mcp_sync.connect(local, max_tools=0),
        lambda: mcp_sync.connect(remote, max_tools=0),
        lambda: mcp_sync.connect(remote, url="ftp://${GITHUB_TOKEN}/"),
    ):
        with pytest.raises(mcp_sync.McpError) as caught:
            bad()
        texts += [str(caught.value), repr(caught.value)]
    # A broken file after an expansion: the message names the field only.
    with pytest.raises(ConfigError) as broken:
        parse_config({"mcpServers": {"x": {"command": "${GITHUB_TOKEN}", "maxTools": 0}}}, environ=environ)
    texts += [str(broken.value)]
    texts += [record.getMessage() for record in caplog.records]
    texts += [repr(record.__dict__) for record in caplog.records]
    for text in texts:
        assert TOKEN not in text


def test_the_spawned_server_receives_the_values(tmp_path: Path) -> None:
    """Only the spawn reveals: the server gets the real argv, env and cwd,
    and what it prints of them comes back masked."""
    out = tmp_path / "seen.json"
    where = tmp_path / f"dir-{TOKEN}"
    where.mkdir()
    script = (
        "import json, os, sys; "
        "seen = {'argv': sys.argv[1:], 'env': os.environ.get('T'), 'cwd': os.getcwd()}; "
        f"json.dump(seen, open({str(out)!r}, 'w')); "
        "print('leaking', sys.argv[1], file=sys.stderr); sys.stderr.flush()"
    )
    (entry,) = parse_config(
        [
            {
                "server": "echo",
                "command": sys.executable,
                "args": ["-c", script, "--token=${GITHUB_TOKEN}"],
                "cwd": str(tmp_path / "dir-${GITHUB_TOKEN}"),
                "env": {"T": "${GITHUB_TOKEN}"},
                "handshakeTimeoutMs": 10000,
            }
        ],
        environ={"GITHUB_TOKEN": TOKEN},
    )
    events: list[mcp_sync.DiagnosticEvent] = []
    with pytest.raises(mcp_sync.McpError) as caught:
        mcp_sync.connect(entry, diagnostics=events.append)
    assert TOKEN not in str(caught.value)
    seen = json.loads(out.read_text())
    assert seen == {"argv": [f"--token={TOKEN}"], "env": TOKEN, "cwd": str(where)}
    tails = [str(event.detail.reveal()) for event in events if event.kind == "stderr"]
    assert tails and all(TOKEN not in tail for tail in tails), tails
    assert any("leaking --token=[REDACTED]" in tail for tail in tails), tails


def test_the_http_server_receives_the_values(recorder: Recorder) -> None:
    (entry,) = parse_config(
        [
            {
                "server": "remote",
                "url": recorder.url + "/mcp?key=${GITHUB_TOKEN}",
                "headers": {"Authorization": "Bearer ${GITHUB_TOKEN}"},
                "handshakeTimeoutMs": 5000,
            }
        ],
        environ={"GITHUB_TOKEN": TOKEN},
    )
    with pytest.raises(mcp_sync.McpError) as caught:
        mcp_sync.connect(entry, http_client=None)
    assert TOKEN not in str(caught.value)
    assert recorder.requests
    assert recorder.requests[0].path == f"/mcp?key={TOKEN}"
    assert recorder.requests[0].headers["Authorization"] == f"Bearer {TOKEN}"
