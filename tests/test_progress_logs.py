"""Progress callbacks and server logs."""

from __future__ import annotations

import contextlib
import logging
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from support import captured_logs, connect_fake, logged

import mcp_sync

# ----------------------------------------------------------------------- progress


def test_progress_reaches_the_callback_of_its_own_call_only(tmp_path: Path) -> None:
    log = tmp_path / "log"
    events: list[tuple[str, float, float | None, str | None]] = []

    def callback(progress: float, total: float | None, message: str | None) -> None:
        events.append((threading.current_thread().name, progress, total, message))

    with connect_fake("--features", "--log", str(log)) as session:
        result = session.call_tool("progress", {"steps": 4, "foreign": True, "repeat": True}, on_progress=callback)
        # A call without a callback is sent no token, and gets nothing.
        session.call_tool("progress", {"steps": 2})
    assert result.content[0]["text"] == "done after 4 steps"
    me = threading.current_thread().name
    assert events == [(me, float(step), 4.0, f"step {step}") for step in range(1, 5)]
    calls = [f for f in logged(log) if f.get("method") == "tools/call"]
    assert isinstance(calls[0]["params"]["_meta"]["progressToken"], int)
    assert "_meta" not in calls[1]["params"]


def test_progress_can_extend_the_deadline_up_to_a_hard_maximum() -> None:
    seen: list[float] = []
    with connect_fake("--features") as session:
        # 6 steps 100 ms apart: 600 ms in all, past a 250 ms timeout unless
        # progress extends it.
        result = session.call_tool(
            "progress", {"steps": 6, "ms": 100}, timeout_ms=250,
            on_progress=lambda p, t, m: seen.append(p), progress_extends_deadline=True,
        )  # fmt: skip
        assert result.content[0]["text"] == "done after 6 steps"
        # Without the extension the same call times out.
        with pytest.raises(mcp_sync.Timeout, match="timeout_ms=250"):
            session.call_tool("progress", {"steps": 6, "ms": 100}, timeout_ms=250, on_progress=lambda p, t, m: None)
        # And the hard maximum holds however much progress comes.
        with pytest.raises(mcp_sync.Timeout, match="up to 300 ms"):
            session.call_tool(
                "progress", {"steps": 20, "ms": 50}, timeout_ms=200, max_timeout_ms=300,
                on_progress=lambda p, t, m: None, progress_extends_deadline=True,
            )  # fmt: skip
    assert seen[:6] == [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]


def test_a_callback_that_raises_ends_its_call_and_only_its_call() -> None:
    class Stop(Exception):
        pass

    def stop(progress: float, total: float | None, message: str | None) -> None:
        raise Stop

    with connect_fake("--features") as session:
        with pytest.raises(Stop):
            session.call_tool("progress", {"steps": 3, "ms": 20}, on_progress=stop)
        assert session.call_tool("echo", {"message": "fine"}).content[0]["text"] == "fine"


def test_on_progress_must_be_callable() -> None:
    with connect_fake("--features") as session, pytest.raises(mcp_sync.ProtocolError, match="callable"):
        session.call_tool("progress", on_progress=42)  # type: ignore[arg-type]


# ----------------------------------------------------------------------- logs


@pytest.fixture
def records() -> Iterator[list[logging.LogRecord]]:
    with captured_logs("mcp_sync.server.fake") as got:
        yield got


def _logged(session: mcp_sync.Session, records: list[logging.LogRecord], count: int, **args: object) -> None:
    before = len(records)
    session.call_tool("log", {"count": count, **args})
    session.close()  # the log thread is joined: every record is out
    assert len(records) >= before


@pytest.mark.parametrize(
    ("level", "expected"),
    [("debug", logging.DEBUG), ("info", logging.INFO), ("notice", logging.INFO), ("warning", logging.WARNING),
     ("error", logging.ERROR), ("critical", logging.CRITICAL), ("alert", logging.CRITICAL),
     ("emergency", logging.CRITICAL), ("loud", logging.WARNING)],
)  # fmt: skip
def test_server_logs_go_to_the_servers_logger(
    records: list[logging.LogRecord], level: str, expected: int
) -> None:
    session = connect_fake("--features")
    _logged(session, records, 1, level=level, data="hello", logger="db")
    (record,) = records
    assert record.name == "mcp_sync.server.fake"
    assert record.levelno == expected
    assert record.getMessage() == "[db] hello"
    assert record.mcp_level == (level if level != "loud" else "unknown")  # type: ignore[attr-defined]
    assert record.mcp_logger == "db"  # type: ignore[attr-defined]
    assert record.threadName.startswith("mcp_sync-fake-log")


def test_server_log_text_is_redacted_escaped_and_bounded(records: list[logging.LogRecord]) -> None:
    session = connect_fake("--features")
    secret = "ghp_" + "a" * 36
    data = f"token {secret}\nFAKE LINE \u202e evil " + "x" * 10_000
    session.call_tool("log", {"data": data, "logger": "a\nb"})
    session.call_tool("log", {"data": {"nested": [1, {"password": "hunter2hunter2"}]}})
    session.call_tool("log", {"data": "y" * 70_000})
    session.close()
    first, second, third = (record.getMessage() for record in records)
    assert secret not in first and "[REDACTED]" in first
    assert "\n" not in first and "\\x0a" in first and "\u202e" not in first and "\\u202e" in first
    assert first.startswith("[a\\x0ab] ") and len(first) <= 4096 + 16
    assert "hunter2" not in second and second.startswith('{"nested"')
    assert third == "[a log message over 65536 bytes was withheld]"


@contextlib.contextmanager
def _log_thread_held(seconds: float) -> Iterator[threading.Event]:
    """A handler on the fake server's logger that holds the library's log
    thread on each record until the yielded event is set (at most
    ``seconds`` per record); removed, and the event set, on the way out."""
    release = threading.Event()

    class Held(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            release.wait(seconds)

    logger = logging.getLogger("mcp_sync.server.fake")
    held = Held()
    logger.addHandler(held)
    try:
        yield release
    finally:
        release.set()
        logger.removeHandler(held)


def test_records_queued_when_the_session_closes_are_still_emitted(records: list[logging.LogRecord]) -> None:
    with _log_thread_held(10) as release:
        session = connect_fake("--features")
        # The log thread is held on the first record; the other two wait in
        # its queue while close() begins.
        session.call_tool("log", {"count": 3, "level": "info"})
        closing = threading.Thread(target=session.close)
        closing.start()
        events = session._core.inbound._events
        deadline = time.monotonic() + 15
        while not events._closed and time.monotonic() < deadline:
            time.sleep(0.01)
        assert events._closed
        release.set()
        closing.join(15)
        assert not closing.is_alive()
    assert len(records) == 3, [r.getMessage() for r in records]


def test_a_log_flood_is_dropped_and_counted_not_buffered(records: list[logging.LogRecord]) -> None:
    with _log_thread_held(5) as release, connect_fake("--features") as session:
        # The logging thread is stuck on the first record: the rest pile up
        # to the backlog, then are dropped, while calls still go through.
        session.call_tool("log", {"count": 5000, "level": "info"})
        assert session.call_tool("echo", {"message": "alive"}).content[0]["text"] == "alive"
        release.set()
        session.call_tool("log", {"count": 1, "data": "after"})
    messages = [record.getMessage() for record in records]
    dropped = [m for m in messages if "were dropped" in m]
    assert len(records) < 1000 and dropped, messages[-3:]


def test_nothing_listens_nothing_is_queued() -> None:
    logger = logging.getLogger("mcp_sync.server.fake")
    old = logger.level
    logger.setLevel(logging.CRITICAL + 1)
    try:
        with connect_fake("--features") as session:
            session.call_tool("log", {"count": 100, "level": "emergency"})
            assert session._core.inbound._events.busy == 0
    finally:
        logger.setLevel(old)


def test_set_log_level(tmp_path: Path, records: list[logging.LogRecord]) -> None:
    log = tmp_path / "log"
    with connect_fake("--features", "--log", str(log)) as session:
        session.set_log_level("error")
        assert session.call_tool("log", {"level": "info"}).content[0]["text"] == "sent 0"
        with pytest.raises(mcp_sync.ProtocolError, match="log level"):
            session.set_log_level("verbose")
    assert [f["params"] for f in logged(log) if f.get("method") == "logging/setLevel"] == [{"level": "error"}]
    with connect_fake("--capabilities", '{"tools": {}}') as session, pytest.raises(
        mcp_sync.NotSupported, match="logging capability"
    ):
        session.set_log_level("info")


def test_without_logging_configured_server_warnings_do_not_reach_stderr() -> None:
    script = (
        "import mcp_sync\n"
        "from mcp_sync.testing import server_command\n"
        "c, *a = server_command('--features')\n"
        "with mcp_sync.connect(server='quiet', command=c, args=a) as s:\n"
        "    s.call_tool('log', {'level': 'emergency', 'data': 'PANIC'})\n"
    )
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True)
    assert "PANIC" not in proc.stderr


def test_progress_token_and_trace_context_share_the_meta(tmp_path: Path) -> None:
    log = tmp_path / "log"
    trace = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
    with connect_fake("--features", "--log", str(log)) as session:
        session.call_tool("progress", {"steps": 1}, traceparent=trace, on_progress=lambda p, t, m: None)
    call = next(f for f in logged(log) if f.get("method") == "tools/call")
    assert call["params"]["_meta"]["traceparent"] == trace
    assert isinstance(call["params"]["_meta"]["progressToken"], int)


def test_the_modern_era_carries_the_log_level_and_delivers_progress(tmp_path: Path) -> None:
    log = tmp_path / "log"
    seen: list[float] = []
    with connect_fake("--era", "modern", "--features", "--log", str(log)) as session:
        assert session.era == "modern"
        session.set_log_level("error")
        result = session.call_tool("progress", {"steps": 3}, on_progress=lambda p, t, m: seen.append(p))
    assert result.content[0]["text"] == "done after 3 steps"
    assert seen == [1.0, 2.0, 3.0]
    frames = logged(log)
    assert "logging/setLevel" not in [f.get("method") for f in frames]  # the era has none
    call = next(f for f in frames if f.get("method") == "tools/call")
    assert call["params"]["_meta"]["io.modelcontextprotocol/logLevel"] == "error"
    assert isinstance(call["params"]["_meta"]["progressToken"], int)
