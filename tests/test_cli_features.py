"""mcp-sync resources / read / prompts / prompt, and progress on a terminal."""

from __future__ import annotations

import io
import json
import os
import pty
import subprocess
import sys
from pathlib import Path

import pytest
from test_cli import REPO, config, fake, run

import mcp_sync
from mcp_sync.cli import _common, _progress
from mcp_sync.cli._common import CliExit, call_arguments
from mcp_sync.cli._progress import invoke_with_progress
from mcp_sync.flows import project
from mcp_sync.testing import server_command


def test_resources_read_prompts_prompt(tmp_path: Path) -> None:
    path = config(tmp_path, fake("one", "--features"))
    listed = run("--mcp-config", str(path), "resources")
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.splitlines() == [
        "SERVER  URI                NAME   DESCRIPTION",
        "one     fake://text/hello  hello  A greeting.",
        "one     fake://blob/bytes  bytes",
    ]
    templates = run("--mcp-config", str(path), "resources", "--templates", "--json")
    assert json.loads(templates.stdout) == [
        {"server": "one", "uriTemplate": "fake://text/{name}", "name": "text", "description": "Any text resource."}
    ]
    text = run("--mcp-config", str(path), "read", "fake://text/bob")
    assert (text.returncode, text.stdout) == (0, "Hello, bob!\n")
    blob = run("--mcp-config", str(path), "read", "fake://blob/bytes")
    assert "256 bytes" in blob.stdout
    as_json = json.loads(run("--mcp-config", str(path), "read", "fake://blob/bytes", "--json").stdout)
    assert as_json["contents"][0]["blob"].startswith("AAECAw")
    prompts = run("--mcp-config", str(path), "prompts")
    assert prompts.stdout.splitlines()[1].split() == ["one", "greet", "name", "Greet", "someone."]
    got = run("--mcp-config", str(path), "prompt", "greet", "--args", '{"name": "Ann"}')
    assert (got.returncode, got.stdout) == (0, "user: Please greet Ann.\n")
    # KEY=VALUE keeps VALUE as text for a prompt: its arguments are strings.
    pairs = run("--mcp-config", str(path), "prompt", "greet", "--args", "name=42")
    assert (pairs.returncode, pairs.stdout) == (0, "user: Please greet 42.\n"), pairs.stderr


def test_exit_codes_and_choosing_a_server(tmp_path: Path) -> None:
    two = config(tmp_path, fake("one", "--features"), fake("two", "--features"), name="two.json")
    several = run("--mcp-config", str(two), "read", "fake://text/x")
    assert several.returncode == 2 and "pick one with --server" in several.stderr
    picked = run("--mcp-config", str(two), "read", "fake://text/x", "--server", "two")
    assert (picked.returncode, picked.stdout) == (0, "Hello, x!\n")
    unknown = run("--mcp-config", str(two), "read", "fake://text/x", "--server", "three")
    assert unknown.returncode == 2 and 'no configured server is named "three"' in unknown.stderr
    missing = run("--mcp-config", str(two), "read", "fake://nowhere", "--server", "one")
    assert missing.returncode == 4 and "remote_error" in missing.stderr
    bad_args = run("--mcp-config", str(two), "prompt", "greet", "--args", '{"name": 1}')
    assert bad_args.returncode == 2 and "must all be strings" in bad_args.stderr
    ambiguous = run("--mcp-config", str(two), "prompt", "greet")
    assert ambiguous.returncode == 2 and "several servers have a prompt" in ambiguous.stderr
    plain = config(tmp_path, fake("bare", "--capabilities", '{"tools": {}}'), name="bare.json")
    none = run("--mcp-config", str(plain), "read", "fake://text/x")
    assert none.returncode == 4 and "no configured server offers resources" in none.stderr
    assert run("--mcp-config", str(plain), "resources").stdout.splitlines() == ["SERVER  URI  NAME  DESCRIPTION"]


def test_server_text_is_escaped(tmp_path: Path) -> None:
    hostile = {"resources": [{"uri": "fake://\u001b[2Jx", "name": "evil\u202e", "description": "a\nb"}]}
    path = config(tmp_path, fake("one", "--raw", "resources/list", json.dumps(hostile)))
    listed = run("--mcp-config", str(path), "resources")
    assert "\u001b" not in listed.stdout and "\u202e" not in listed.stdout
    assert "\\x1b[2Jx" in listed.stdout and "\\u202e" in listed.stdout


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_call_shows_progress_on_a_terminal_only() -> None:
    command, *args = server_command("--features")
    with mcp_sync.connect(server="fake", command=command, args=args) as session:
        flow = project(session)["mcp/fake/progress"]
        terminal = _Terminal()
        result = invoke_with_progress(flow, {"steps": 2}, session, terminal)
        assert result.content[0]["text"] == "done after 2 steps"
        shown = terminal.getvalue()
        assert "mcp/fake/progress: 1/2 step 1" in shown and "2/2 step 2" in shown
        assert shown.endswith("\r\x1b[K")
        pipe = io.StringIO()
        invoke_with_progress(flow, {"steps": 2}, session, pipe)
        assert pipe.getvalue() == ""


def test_an_arguments_file_is_read_with_a_bound(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_common, "MAX_ARGS_FILE_BYTES", 10)
    small, large = tmp_path / "small.json", tmp_path / "large.json"
    small.write_text('{"a": 1}')
    large.write_text('{"a": 1234}')
    assert call_arguments([f"@{small}"]) == {"a": 1}
    with pytest.raises(CliExit) as caught:
        call_arguments([f"@{large}"])
    assert caught.value.message == f"mcp-sync: error: --args @{large}: is larger than 10 bytes"


def test_a_call_without_progress_shows_a_spinner_on_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_progress, "SPINNER_AFTER_S", 0.05)
    command, *args = server_command()
    with mcp_sync.connect(server="fake", command=command, args=args) as session:
        flow = project(session)["mcp/fake/sleep"]
        terminal = _Terminal()
        result = invoke_with_progress(flow, {"ms": 600}, session, terminal)
        assert result.content[0]["text"] == "slept"
        shown = terminal.getvalue()
        assert "\r\x1b[Kmcp/fake/sleep: waiting - 0." in shown and "waiting \\ 0." in shown
        assert shown.endswith("\r\x1b[K")
        pipe = io.StringIO()
        invoke_with_progress(flow, {"ms": 300}, session, pipe)
        assert pipe.getvalue() == ""


def test_the_spinner_on_a_real_terminal(tmp_path: Path) -> None:
    path = config(tmp_path, fake())
    leader, follower = pty.openpty()
    with subprocess.Popen(
        [sys.executable, "-m", "mcp_sync", "--mcp-config", str(path), "call", "sleep", "--args", "ms=1500"],
        stdout=subprocess.PIPE, stderr=follower, env={**os.environ, "PYTHONPATH": str(REPO)},
    ) as child:  # fmt: skip
        os.close(follower)
        seen = b""
        while True:
            try:
                chunk = os.read(leader, 4096)
            except OSError:  # EIO: the terminal's last writer is gone
                break
            if not chunk:
                break
            seen += chunk
        assert child.stdout is not None
        assert child.stdout.read() == b"slept\n"
    os.close(leader)
    assert child.returncode == 0
    assert b"mcp/example/sleep: waiting " in seen
    assert seen.endswith(b"\r\x1b[K")


def test_progress_extends_the_calls_deadline(tmp_path: Path) -> None:
    path = config(tmp_path, fake("one", "--features"))
    call = ("--mcp-config", str(path), "call")
    # 8 reports 250 ms apart: 2 s in all, twice the 1 s --timeout (a gap may grow
    # fourfold on a loaded machine before the deadline bites).
    kept = run(*call, "progress", "--args", "steps=8", "--args", "ms=250", "--timeout", "1")
    assert (kept.returncode, kept.stdout) == (0, "done after 8 steps\n"), kept.stderr
    # Without progress the same --timeout holds.
    cut = run("--mcp-config", str(path), "call", "sleep", "--args", "ms=3000", "--timeout", "0.25")
    assert cut.returncode == 4 and "timeout_ms=250" in cut.stderr and cut.stderr.endswith(" (timeout)\n")
    # And progress extends it only up to ten times the timeout.
    capped = run(*call, "progress", "--args", "steps=40", "--args", "ms=100", "--timeout", ".25")
    assert capped.returncode == 4 and "extended by progress up to 2500 ms" in capped.stderr


def test_timeout_must_be_a_positive_number_of_seconds(tmp_path: Path) -> None:
    path = config(tmp_path, fake())
    for value in ("0", "-1", "x", "nan", "1e9"):
        done = run("--mcp-config", str(path), "call", "echo", "--timeout", value)
        assert done.returncode == 2 and "argument --timeout: " in done.stderr, (value, done.stderr)
