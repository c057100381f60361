"""Redaction (SPEC §4 "stderr and the diagnostic observer"): every credential shape
is masked, and every pattern stays linear on the hostile near-misses a server can
write at the stderr line bound, so the stderr thread never holds the GIL for long."""

from __future__ import annotations

import threading
import time

import pytest
from support import connect_fake, timed

import mcp_sync
from mcp_sync.protocol.redaction import MAX_STDERR_LINE_BYTES, redact
from mcp_sync.protocol.stderr_tail import StderrTail

# Each case: a line, and the secret in it that must not survive.
SHAPES = [
    ("GITHUB_TOKEN=ghp_" + "a" * 36, "ghp_" + "a" * 36),
    ("gitlab glpat-" + "b" * 20, "glpat-" + "b" * 20),
    ("stripe sk_live_" + "c" * 24, "sk_live_" + "c" * 24),
    ("restricted rk_test_" + "d" * 24, "rk_test_" + "d" * 24),
    ("google AIza" + "E" * 35, "AIza" + "E" * 35),
    ("npm npm_" + "f" * 36, "npm_" + "f" * 36),
    ("hf hf_" + "g" * 34, "hf_" + "g" * 34),
    ("twilio SK" + "0123456789abcdef" * 2, "SK" + "0123456789abcdef" * 2),
    ("sendgrid SG." + "h" * 22 + "." + "i" * 43, "SG." + "h" * 22 + "." + "i" * 43),
    ("Authorization: token gho-opaque-credential-1", "gho-opaque-credential-1"),
    ("authorization=Digest abcdef123456", "abcdef123456"),
    ("DB_PASS=correct-horse-battery", "correct-horse-battery"),
    ("MYSQL_PASSWORD: tr0ub4dor", "tr0ub4dor"),
    ("DefaultEndpointsProtocol=https;AccountName=x;AccountKey=QUJDREVG+/==;EndpointSuffix=y", "QUJDREVG+/=="),
    ("Endpoint=sb://x/;SharedAccessKeyName=r;SharedAccessKey=S3cr3tKey=", "S3cr3tKey="),
    ("Cookie: session=abc123; csrftoken=def456", "abc123"),
    ("Set-Cookie: sid=zyx987; HttpOnly; Secure", "zyx987"),
    ("key -----BEGIN RSA PRIVATE KEY-----MIIEpAIBAAKCAQEA-----END RSA PRIVATE KEY-----", "MIIEpAIBAAKCAQEA"),
    ("jwt eyJhbGciOiJI.eyJzdWIiOiIx.c2lnbmF0dXJl", "eyJhbGciOiJI.eyJzdWIiOiIx.c2lnbmF0dXJl"),
    ("url https://alice:pw0rd@example.org/x", "pw0rd"),
    ("Bearer abc.def-ghi", "abc.def-ghi"),
]


@pytest.mark.parametrize(("line", "secret"), SHAPES, ids=[s[0][:18] for s in SHAPES])
def test_each_credential_shape_is_masked(line: str, secret: str) -> None:
    out = redact(line)
    assert secret not in out
    assert "[REDACTED]" in out


def test_plain_text_is_left_alone() -> None:
    text = "INFO server started on port 8080 serving /tmp with 14 tools; passes=3 sigma ok"
    assert redact(text) == text


def test_a_pem_key_over_several_lines_is_withheld_line_by_line() -> None:
    tail = StderrTail(4096)
    tail.feed(
        b"before\n-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjE\nAAAABG5vbmUAAAAE\n"
        b"-----END OPENSSH PRIVATE KEY-----\nafter\n-----BEGIN CERTIFICATE-----\nMIIpublic\n"
    )
    text = tail.text()
    assert "b3BlbnNzaC1rZXktdjE" not in text and "AAAABG5vbmUAAAAE" not in text
    # Outside the key nothing is withheld, certificates included.
    assert text.startswith("before\n") and "after" in text and "MIIpublic" in text


# Near-misses: a trigger repeated up to the line bound, each a prefix a pattern
# starts on and never completes. A pattern that backtracks over its run, or that
# restarts inside it, is quadratic on these (the JWT one took ~1.8 s a line).
NEAR_MISSES = [
    "eyJ-", "eyJa.", "eyJa.eyJb", "eyJ", "://a:", "://a", "://", "sk-", "ghp_", "github_pat_",
    "glpat-", "AIza", "npm_", "hf_", "SG.", "SG.aaaaaaaaaaaaaaaa.", "AKIA", "SK",
    "aws_secret_access_key= ", "Bearer ", "Basic ", "authorization: ", "Authorization: token ",
    "cookie: ", "password=", "pass ", "token:  ", '"password": "', "sig", "-----BEGIN ",
    "-----BEGIN PRIVATE KEY-----", "PRIVATE KEY-----", "xoxb-", "sk_live_", " ", "=", "a",
]


def test_every_pattern_is_linear_on_near_misses_at_the_line_bound() -> None:
    size = MAX_STDERR_LINE_BYTES - 1
    lines = [(p * (size // len(p) + 1))[:size] for p in NEAR_MISSES]
    # A deadline, not a speed claim: linear patterns do all of these in well
    # under a second; a single quadratic one takes seconds per line.
    with timed(10.0):
        for line in lines:
            redact(line)


def test_a_hostile_stderr_never_stalls_callers() -> None:
    """Lines built to make redaction slow, written while another thread calls:
    every call answers within its deadline and no thread stalls."""
    size = MAX_STDERR_LINE_BYTES - 1
    hostile = "\n".join(
        (p * (size // len(p) + 1))[:size] for p in ("eyJ-", "://a:", "eyJa.eyJb", "Bearer ")
    )
    gaps: list[float] = []
    stop = threading.Event()

    def heartbeat() -> None:
        last = time.monotonic()
        while not stop.wait(0.005):
            now = time.monotonic()
            gaps.append(now - last)
            last = now

    beat = threading.Thread(target=heartbeat)
    beat.start()
    try:
        with connect_fake("--misbehave") as session:
            for _ in range(3):
                session.call_tool("stderr", {"text": hostile + "\n"}, timeout_ms=5_000)
                with timed(2.0):
                    assert session.call_tool("echo", {"message": "hi"}, timeout_ms=1_000).content
    finally:
        stop.set()
        beat.join()
    # Generous against a loaded CI machine; a quadratic pattern stalls for seconds.
    assert max(gaps) < 1.0


def test_redaction_of_a_diagnostic_uses_the_same_rules() -> None:
    events: list[mcp_sync.DiagnosticEvent] = []
    with connect_fake("--misbehave", diagnostics=events.append, max_stderr_bytes=65536) as session:
        session.call_tool("stderr", {"text": "\n".join(line for line, _ in SHAPES) + "\n"})
        with pytest.raises(mcp_sync.ConnectionClosed):
            session.call_tool("crash")
    tail = events[-1].detail.reveal()
    assert tail.count("[REDACTED]") >= len(SHAPES)
    for _, secret in SHAPES:
        assert secret not in tail
