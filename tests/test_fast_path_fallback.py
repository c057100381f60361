"""The GIL-keeping pipe I/O (ctypes, ``_transports/_fdio.py``) fails soft.

Any exception from a ctypes call, at load or in any later call, switches the
process to the ``os`` functions with one ``fast_path_off`` record on
``mcp_sync.transport``; the operation that met it is completed by the ``os``
function (nothing lost, nothing sent twice) and no library thread dies.

The sessions run under audit hooks, which cannot be removed: each scenario
runs in a Python process of its own.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from typing import Any

import pytest

# A session on the fake server, calls from one and from several threads,
# the audit hook installed before connecting or after the first calls, a
# second session after the switch, and a report on stdout (one JSON line).
_SCENARIO = textwrap.dedent(
    """
    import json, logging, sys, threading, time
    from concurrent.futures import ThreadPoolExecutor

    import mcp_sync
    from mcp_sync.testing import server_command

    REFUSE, WHEN = sys.argv[1], sys.argv[2]
    refused = []

    # "ctypes.*", an event's name, or name:symbol (ctypes.dlsym of that symbol only)
    EVENT, _, SYMBOL = REFUSE.partition(":")

    def hook(event, args):
        if not event.startswith("ctypes.") or EVENT not in ("ctypes.*", event):
            return
        if SYMBOL and args[-1] != SYMBOL:
            return
        refused.append(event)
        raise RuntimeError("refused by the host: " + event)

    records = []

    class Keep(logging.Handler):
        def emit(self, record):
            records.append({
                "logger": record.name, "level": record.levelname, "message": record.getMessage(),
                "event": getattr(record, "mcp_event", None),
                "operation": getattr(record, "mcp_operation", None),
                "error_kind": getattr(record, "mcp_error_kind", None),
            })

    root = logging.getLogger("mcp_sync")
    root.addHandler(Keep())
    root.setLevel(logging.DEBUG)

    report = {"failures": [], "calls": 0}

    def calls(session, first, count):
        for i in range(first, first + count):
            try:
                result = session.call_tool("echo", {"message": str(i)}, timeout_ms=10_000)
                text = result.content[0]["text"]
            except BaseException as error:  # what a caller would see: the test fails on any
                report["failures"].append(f"call {i}: {type(error).__name__}: {error}")
                return
            if text != str(i):
                report["failures"].append(f"call {i}: answered {text!r}")
                return
            report["calls"] += 1

    def exercise(session, base):
        calls(session, base, 100)
        with ThreadPoolExecutor(8) as pool:
            for n in range(8):
                pool.submit(calls, session, base + 1000 * (n + 1), 60)

    if WHEN == "before":
        sys.addaudithook(hook)
    command, *args = server_command()
    session = mcp_sync.connect(server="fake", command=command, args=args)
    reader = session._core.transport._reader
    calls(session, 0, 20)
    if WHEN == "after":
        sys.addaudithook(hook)
    exercise(session, 10_000)
    report["reader_alive"] = reader.is_alive()
    report["refused_in_session"] = len(refused)
    session.close()
    # A second session after the switch: the os functions from its start,
    # no ctypes call refused again, no second record.
    with mcp_sync.connect(server="fake", command=command, args=args) as again:
        exercise(again, 100_000)
    report["refused"] = sorted(set(refused))
    report["refused_after_switch"] = len(refused) - report["refused_in_session"]
    from mcp_sync.transports import fdio as _fdio
    report["switched"] = _fdio._libc is False
    report["records"] = [r for r in records if r["event"] == "fast_path_off"]
    report["other_warnings"] = [
        r for r in records if r["level"] in ("WARNING", "ERROR") and r["event"] != "fast_path_off"
    ]
    deadline = time.monotonic() + 30
    for thread in threading.enumerate():
        if thread.name.startswith("mcp_sync-"):
            thread.join(max(0.0, deadline - time.monotonic()))
    report["threads_left"] = [t.name for t in threading.enumerate() if t.name.startswith("mcp_sync-")]
    print(json.dumps(report))
    """
)

_CALLS = 2 * (20 + 100 + 8 * 60) - 20  # the second session makes no first 20


def _run(refuse: str, when: str) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-c", _SCENARIO, refuse, when],
        capture_output=True, text=True, timeout=240, check=False,
    )  # fmt: skip
    lines = done.stdout.strip().splitlines()
    assert done.returncode == 0 and lines, f"exit {done.returncode}\n{done.stdout}\n{done.stderr[-4000:]}"
    report: dict[str, Any] = json.loads(lines[-1])
    # No thread of the library died with a traceback on the way.
    assert "Traceback" not in done.stderr, done.stderr[-4000:]
    return report


def _assert_soft(report: dict[str, Any], operation: str | None = None) -> None:
    assert report["failures"] == [], report["failures"][:5]
    assert report["calls"] == _CALLS
    assert report["reader_alive"]
    assert report["switched"]
    assert report["refused_after_switch"] == 0, report  # switched for good: ctypes is not tried again
    assert len(report["records"]) == 1, report["records"]
    record = report["records"][0]
    assert record["logger"] == "mcp_sync.transport" and record["level"] == "INFO"
    assert record["error_kind"] == "RuntimeError"
    assert "the os functions stand in" in record["message"]
    assert "refused by the host" not in record["message"]  # the hook's text stays out
    if operation is not None:
        assert record["operation"] == operation
    assert report["other_warnings"] == []  # no session ended, nothing failed
    assert report["threads_left"] == []


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the ctypes fast path is Linux's (epoll)")
def test_a_hook_refusing_ctypes_after_the_first_calls_switches_to_os() -> None:
    # A sandbox or notebook extension turning ctypes off in a live process:
    # the running session's next empty read meets a refused ctypes.get_errno
    # (from one thread or from several at once); the second session, set up
    # after the switch, never tries ctypes.
    report = _run("ctypes.*", "after")
    assert report["refused_in_session"] >= 1, "the hook never met a ctypes call: nothing was tested"
    _assert_soft(report)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the ctypes fast path is Linux's (epoll)")
@pytest.mark.parametrize(
    ("refuse", "operation"),
    [
        # Load and buffers pass: the first read to find
        # stdout empty (during the handshake) is refused after read(2) failed.
        ("ctypes.get_errno", "read"),
        ("ctypes.cdata/buffer", "read buffer"),  # the reader's buffer, at connect
        ("ctypes.dlopen", "loading libc"),
        ("ctypes.*", "loading libc"),
    ],
)
def test_a_hook_refusing_ctypes_before_connect_gets_the_os_functions(refuse: str, operation: str) -> None:
    report = _run(refuse, "before")
    assert report["refused"] == ([refuse.partition(":")[0]] if refuse != "ctypes.*" else ["ctypes.dlopen"])
    _assert_soft(report, operation=operation)


# In this process: ctypes stand-ins that raise where the real ones can, to see
# that the os function completes the operation exactly once.


class _Refusing:
    """A libc whose every function raises, as under a hook refusing the call."""

    def __getattr__(self, name: str) -> Any:
        def refuse(*args: Any) -> int:
            raise RuntimeError(f"refused: {name}")

        return refuse


@pytest.fixture
def fdio(monkeypatch: pytest.MonkeyPatch) -> Any:
    from mcp_sync.transports import fdio as _fdio

    # Restored afterwards: sessions of other tests in this process keep theirs.
    monkeypatch.setattr(_fdio, "_told", False, raising=False)
    monkeypatch.setattr(_fdio, "_libc", _fdio._load())
    return _fdio


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the ctypes fast path is Linux's")
def test_a_refused_write_is_written_once_by_os_write(fdio: Any, monkeypatch: pytest.MonkeyPatch, caplog: Any) -> None:
    monkeypatch.setattr(fdio, "_libc", _Refusing())
    write = fdio.held_write()
    assert write is not fdio.plain_write
    r, w = os.pipe()
    try:
        os.set_blocking(r, False)
        os.set_blocking(w, False)
        with caplog.at_level("INFO", logger="mcp_sync.transport"):
            assert write(w, b"one\n", 4) == 4
            assert write(w, b"two\n", 4) == 4  # straight to os.write now
        assert os.read(r, 64) == b"one\ntwo\n"  # each once, in order
        assert fdio._libc is False
        records = [r for r in caplog.records if getattr(r, "mcp_event", None) == "fast_path_off"]
        assert len(records) == 1 and records[0].mcp_operation == "write"
        while write(w, b"y" * 4096, 4096) > 0:
            pass
        assert write(w, b"y", 1) < 0  # full: still the Write contract
    finally:
        os.close(r)
        os.close(w)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the ctypes fast path is Linux's")
def test_a_refused_errno_after_an_empty_read_reads_through_os(fdio: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    import ctypes

    def refused() -> int:
        raise RuntimeError("refused: ctypes.get_errno")

    monkeypatch.setattr(ctypes, "get_errno", refused)
    read = fdio.held_reader(64)
    r, w = os.pipe()
    try:
        os.set_blocking(r, False)
        with pytest.raises(BlockingIOError):  # empty: os.read's own error, not RuntimeError
            read(r, 64)
        assert fdio._libc is False
        os.write(w, b"hello\n")
        assert read(r, 64) == b"hello\n"
    finally:
        os.close(r)
        os.close(w)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the ctypes fast path is Linux's")
def test_a_reader_refused_mid_stream_loses_and_repeats_nothing(fdio: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    read = fdio.held_reader(4)
    r, w = os.pipe()
    try:
        os.set_blocking(r, False)
        os.write(w, b"abcdefgh")
        assert read(r, 4) == b"abcd"  # through libc
        fdio._give_up("test", RuntimeError("refused"))  # (any session's failure switches this reader too)
        assert read(r, 64) == b"efgh"
        with pytest.raises(BlockingIOError):
            read(r, 64)
    finally:
        os.close(r)
        os.close(w)
