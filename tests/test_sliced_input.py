"""Server-controlled work is sliced or linear: a frame of tens of MiB that is
costly to look at (tens of millions of values, commas inside a string) is
looked at a slice at a time, so the host's other threads and other sessions
keep running while it is refused or read; a frame within the bounds takes
orjson's one parse. An over-long reply line whose id could only show at its
end ends the session once no request that could own it is left."""

from __future__ import annotations

import json
import re
import sys
import threading
import time
import tracemalloc
from collections.abc import Callable
from typing import Any

import orjson
import pytest
from support import alive, connect_fake, fake_pid, library_threads, peak_rss_growth, starvation, wait_gone

import mcp_sync
from mcp_sync.protocol import frames as _jsonrpc
from mcp_sync.protocol.frames import TooManyValues, decode_line, load_fast_json
from mcp_sync.protocol.limits import MAX_JSON_VALUES

MIB = 2**20
# Under the default 64 MiB frame limit, as in the attack.
FRAME = 63 * MIB
# The longest a 10 ms ticker may wait for the GIL while a frame is looked
# at. Sliced, the worst seen here was some 30 ms of work at a time; the rest
# is room for a loaded 2-core machine.
GAP = 0.5
# How late the other session's 300 ms call may be: room for a loaded 2-core machine
# (before slicing it came back 7.8-13 s late).
LATE = 1.0
REFUSED = rf"^an inbound frame holds more than {MAX_JSON_VALUES} JSON values \(the limit on values per message\)$"






def _fill(head: bytes, unit: bytes, tail: bytes, size: int) -> bytes:
    return head + unit * ((size - len(head) - len(tail)) // len(unit)) + tail


# Frames over the bound on values: refused unparsed, charged to request 7.
def _values_id_first(size: int) -> bytes:
    return _fill(b'{"jsonrpc":"2.0","id":7,"result":{"content":[],"x":[', b"0,", b"0]}}", size)


def _values_id_last(size: int) -> bytes:
    # The TypeScript SDK's order: nothing lets the scan stop early.
    return _fill(b'{"result":{"content":[],"x":[', b"0,", b'0]},"jsonrpc":"2.0","id":7}', size)


def _strings(size: int) -> bytes:
    return _fill(b'{"jsonrpc":"2.0","id":7,"result":{"content":[],"x":[', b'"a",', b'"a"]}}', size)


def _empty_arrays(size: int) -> bytes:
    return _fill(b'{"jsonrpc":"2.0","id":7,"result":{"content":[],"x":[', b"[],", b"[]]}}", size)


# Frames within the bounds.
def _csv(size: int) -> bytes:
    head = b'{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"'
    return _fill(head, b"ab,cd,", b'"}]}}', size)


def _records(size: int) -> bytes:
    record = {
        "id": 123456,
        "name": "item 123456",
        "tags": ["alpha", "beta"],
        "score": 61728.5,
        "seen_ns": "1700000000000000000",  # 19 digits, inside a string
        "text": "lorem ipsum, dolor sit amet [1] {2}",
        "ok": True,
    }
    unit = json.dumps(record, separators=(",", ":")).encode() + b","
    head = b'{"jsonrpc":"2.0","id":7,"result":{"content":[],"structuredContent":{"items":['
    return _fill(head, unit, b"{}]}}}", size)


def _records_as_text(size: int) -> bytes:
    inner = _records(size - 100).decode()
    return json.dumps({"jsonrpc": "2.0", "id": 7, "result": {"content": [{"type": "text", "text": inner}]}}).encode()


def _escaped_quotes(size: int) -> bytes:
    # Deeper than 128, then one unterminated string of escaped quotes.
    return _fill(b'{"jsonrpc":"2.0","result":' + b"[" * 129 + b'"', b'\\"', b"", size)


def _keys(size: int) -> bytes:
    # Many "jsonrpc" literals, spelled with escapes, none at the top level.
    return _fill(b'{"x":[', b'{"json\\u0072pc":"jsonrpc"},', b"{}]}", size)


# ---------------------------------------------------------------- each C call gets one slice


class _Spy(bytes):
    """A line that notes how many of its bytes each look at it covers."""

    looks: list[tuple[str, int]]

    def _note(self, name: str, start: Any = None, end: Any = None) -> None:
        first, last, _ = slice(start, end).indices(len(self))
        self.looks.append((name, max(0, last - first)))

    def count(self, sub: Any, start: Any = None, end: Any = None) -> int:  # type: ignore[override]
        self._note("count", start, end)
        return bytes.count(self, sub, start, end)

    def find(self, sub: Any, start: Any = None, end: Any = None) -> int:  # type: ignore[override]
        self._note("find", start, end)
        return bytes.find(self, sub, start, end)

    def translate(self, *args: Any) -> bytes:  # type: ignore[override]
        self._note("translate")
        return bytes.translate(self, *args)

    def replace(self, *args: Any) -> bytes:  # type: ignore[override]
        self._note("replace")
        return bytes.replace(self, *args)

    def decode(self, *args: Any) -> str:  # type: ignore[override]
        self._note("decode")
        return bytes.decode(self, *args)

    def lstrip(self, *args: Any) -> bytes:  # type: ignore[override]
        self._note("lstrip")
        return bytes.lstrip(self, *args)

    def rstrip(self, *args: Any) -> bytes:  # type: ignore[override]
        self._note("rstrip")
        return bytes.rstrip(self, *args)

    def __contains__(self, item: Any) -> bool:
        self._note("in")
        return bytes.__contains__(self, item)

    def __getitem__(self, key: Any) -> Any:
        if isinstance(key, slice):
            self._note("slice", key.start, key.stop)
        return bytes.__getitem__(self, key)


class _Pattern:
    """A compiled pattern that notes how many bytes each call was given."""

    def __init__(self, pattern: re.Pattern[bytes], looks: list[tuple[str, int]]) -> None:
        self._pattern = pattern
        self._looks = looks

    def _note(self, name: str, string: bytes, pos: int = 0, endpos: int = sys.maxsize) -> None:
        self._looks.append((f"{name} {self._pattern.pattern[:20]!r}", max(0, min(endpos, len(string)) - pos)))

    def sub(self, repl: bytes, string: bytes) -> bytes:
        self._note("sub", string)
        return self._pattern.sub(repl, string)

    def search(self, string: bytes, pos: int = 0, endpos: int = sys.maxsize) -> re.Match[bytes] | None:
        self._note("search", string, pos, endpos)
        return self._pattern.search(string, pos, endpos)

    def match(self, string: bytes, pos: int = 0, endpos: int = sys.maxsize) -> re.Match[bytes] | None:
        self._note("match", string, pos, endpos)
        return self._pattern.match(string, pos, endpos)


def _spied(monkeypatch: pytest.MonkeyPatch, looks: list[tuple[str, int]]) -> None:
    for name, value in list(vars(_jsonrpc).items()):
        if isinstance(value, re.Pattern) and isinstance(value.pattern, bytes):
            monkeypatch.setattr(_jsonrpc, name, _Pattern(value, looks))
    load_fast_json()

    def parse(data: bytes) -> Any:
        looks.append(("orjson", len(data)))
        return orjson.loads(bytes(data))

    def standard(text: str) -> Any:
        raise AssertionError("a long frame went to the standard-library parser")

    monkeypatch.setattr(_jsonrpc, "_fast_loads", parse)
    monkeypatch.setattr(_jsonrpc, "_loads", standard)


# Each slice may carry the start of a string from the one before.
BOUND = _jsonrpc._SLICE + _jsonrpc._CARRY + len(_jsonrpc._KEY_TOKEN)


@pytest.mark.hostile
@pytest.mark.parametrize(
    ("make", "outcome"),
    [
        (_values_id_first, "refused"),
        (_values_id_last, "refused"),
        (_empty_arrays, "refused"),
        (_strings, "read"),  # 2.6 M values at 10 MiB: within the bound
        (_csv, "read"),
        (_records, "read"),
        (_records_as_text, "read"),
        (_escaped_quotes, "too deep"),
        (_keys, "noise"),  # no top-level jsonrpc member
    ],
)
def test_a_long_line_is_looked_at_one_slice_per_call(
    monkeypatch: pytest.MonkeyPatch, make: Callable[[int], bytes], outcome: str
) -> None:
    looks: list[tuple[str, int]] = []
    _spied(monkeypatch, looks)
    line = _Spy(make(10 * MIB))
    line.looks = looks
    if outcome == "refused":
        with pytest.raises(TooManyValues, match=REFUSED) as info:
            decode_line(line)
        assert info.value.request_id == 7
    elif outcome == "too deep":
        with pytest.raises(mcp_sync.ProtocolError, match="JSON depth limit"):
            decode_line(line)
    elif outcome == "noise":
        assert decode_line(line) is None
    else:
        message = decode_line(line)
        assert message is not None and message["id"] == 7
    parsed = [size for name, size in looks if name == "orjson"]
    # Only a frame within the bounds is parsed, once, by orjson.
    assert parsed == ([len(line)] if outcome in ("read", "noise") else [])
    widest = max((look for look in looks if look[0] != "orjson"), key=lambda look: look[1])
    assert widest[1] <= BOUND, f"{widest[0]} over {widest[1]} bytes at once"


# ---------------------------------------------------------------- a 63 MiB frame stalls no one


@pytest.mark.hostile
@pytest.mark.parametrize("make", [_values_id_first, _values_id_last, _strings, _empty_arrays])
def test_refusing_a_63_mib_value_heavy_frame_starves_no_thread(make: Callable[[int], bytes]) -> None:
    line = make(FRAME)
    tracemalloc.start()
    try:
        with starvation() as gaps, pytest.raises(TooManyValues, match=REFUSED) as info:
            decode_line(line)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert info.value.request_id == 7
    print(f"longest gap {gaps[0] * 1000:.0f} ms, peak allocation {peak / MIB:.1f} MiB")
    assert gaps[0] < GAP
    # A few slices' worth, whatever the frame's size (it was about 4 times
    # the line, stripped copies of all of it; 45 times for the strings).
    assert peak < FRAME // 4


# Not a hostile-server test: orjson's one parse of 3 M values, and the
# collections of the garbage collector their objects set off, keep the GIL
# for most of a second (see docs/internals.md).
@pytest.mark.parametrize("make", [_records, _records_as_text, _csv])
def test_an_ordinary_large_result_takes_the_orjson_path(
    monkeypatch: pytest.MonkeyPatch, make: Callable[[int], bytes]
) -> None:
    # More than 128 brackets, or commas in a string, or 19 digits in a
    # string: none of it sent a 61 MiB result to the standard parser.
    line = make(61 * MIB)
    load_fast_json()

    def standard(text: str) -> Any:
        raise AssertionError("an ordinary result went to the standard-library parser")

    monkeypatch.setattr(_jsonrpc, "_loads", standard)
    message = decode_line(line)
    assert message is not None and message["id"] == 7


# ---------------------------------------------------------------- the same over stdio


def _pids(*sessions: mcp_sync.Session) -> list[int]:
    return [fake_pid(session) for session in sessions]


def _closed_and_gone(sessions: list[mcp_sync.Session], pids: list[int]) -> None:
    for session in sessions:
        session.close()
    assert library_threads() == []
    for pid in pids:
        wait_gone(pid, timeout=10.0)
        assert not alive(pid)


@pytest.mark.hostile
def test_a_value_heavy_reply_fails_its_call_alone_and_stalls_no_other_session() -> None:
    item = {
        "prefix": '{"jsonrpc":"2.0","id":{id},"result":{"content":[],"x":[',
        "repeat": "0,",
        "times": (FRAME - 64) // 2,
        "suffix": "0]}}",
    }
    hostile = connect_fake("--misbehave")
    other = connect_fake("--misbehave")
    sessions = [hostile, other]
    pids = _pids(hostile, other)
    outcome: list[BaseException] = []

    def call() -> None:
        try:
            hostile.call_tool("raw", {"lines": [item], "reply": False}, timeout_ms=60_000)
        except BaseException as exc:
            outcome.append(exc)

    try:
        latencies: list[float] = []
        with starvation() as gaps, peak_rss_growth() as peak:
            caller = threading.Thread(target=call)
            caller.start()
            while caller.is_alive():
                start = time.monotonic()
                with pytest.raises(mcp_sync.Timeout):
                    other.call_tool("hang", {}, timeout_ms=300)
                latencies.append(time.monotonic() - start)
            caller.join()
        print(
            f"longest gap {gaps[0] * 1000:.0f} ms; other session's 300 ms calls back in "
            f"{max(latencies) * 1000:.0f} ms at most ({len(latencies)} calls); "
            f"RSS growth seen {peak[0] / MIB:.0f} MiB"
        )
        assert len(outcome) == 1 and type(outcome[0]) is mcp_sync.ProtocolError
        assert re.match(REFUSED, str(outcome[0]))
        assert gaps[0] < GAP
        # Its deadline, and room for a loaded machine (it was seconds).
        assert max(latencies) < 0.3 + LATE
        # The line as read (its chunks, then joined) and no copy of it after:
        # it was some 5 times the line.
        assert peak[0] < 3 * FRAME
        assert not hostile.closed
        assert hostile.call_tool("echo", {"message": "after"}).content[0]["text"] == "after"
        assert other.call_tool("echo", {"message": "after"}).content[0]["text"] == "after"
    finally:
        _closed_and_gone(sessions, pids)


# ---------------------------------------------------------------- an endless reply line


@pytest.mark.hostile
def test_an_endless_reply_without_an_id_in_its_head_ends_the_session_once_nobody_can_own_it() -> None:
    # The head is a reply's ({"result":...) with no id: its id could only
    # show at its end, which never comes.
    session = connect_fake("--misbehave", max_frame_bytes=65536)
    pids = _pids(session)
    first: list[BaseException] = []

    def owner() -> None:
        try:
            session.call_tool("huge_reply", {"bytes": 2**40}, timeout_ms=1500)
        except BaseException as exc:
            first.append(exc)

    try:
        caller = threading.Thread(target=owner)
        caller.start()
        transport: Any = session._core.transport  # type: ignore[attr-defined]
        cap = time.monotonic() + 30
        while transport._lines.skipping is None and caller.is_alive():
            assert time.monotonic() < cap, "the line was never skipped"
            time.sleep(0.01)
        # A call made while the line streams cannot be what it answers.
        start = time.monotonic()
        with pytest.raises(
            mcp_sync.ProtocolError, match=r"^an inbound frame is longer than max_frame_bytes=65536$"
        ):
            session.call_tool("echo", {"message": "late"}, timeout_ms=20_000)
        took = time.monotonic() - start
        caller.join(timeout=30)
        assert not caller.is_alive()
        print(f"the later call failed after {took:.2f} s")
        # The owner's deadline (1.5 s), then the session ends: not the
        # later call's own 20 s.
        assert took < 8.0
        assert len(first) == 1 and type(first[0]) is mcp_sync.Timeout
        assert session.closed
    finally:
        _closed_and_gone([session], pids)


@pytest.mark.hostile
def test_an_over_long_reply_still_fails_only_its_call_while_its_owner_waits() -> None:
    # The TypeScript SDK's order (id last) over the limit, read to its end.
    with connect_fake("--misbehave", max_frame_bytes=65536) as session:
        with pytest.raises(mcp_sync.ProtocolError, match=r"sent a reply of \d+ bytes, over max_frame_bytes=65536$"):
            session.call_tool("huge_reply", {"bytes": 8 * MIB}, timeout_ms=30_000)
        assert not session.closed
        assert session.call_tool("echo", {"message": "on"}).content[0]["text"] == "on"


@pytest.mark.hostile
def test_a_flood_of_small_lines_starves_no_thread_and_no_waiting_caller(tmp_path: Any) -> None:
    """A server writing log lines faster than they are parsed (64 KiB chunks back to
    back): each read after a long chunk lets go of the GIL, so a caller whose
    500 ms budget ran out gets its Timeout on time and a heartbeat keeps ticking
    (with every read keeping the GIL, callers came back 1-11 s late)."""
    from pathlib import Path

    from mcp_sync.config import ConnectOptions

    hostile = Path(__file__).with_name("hostile_stdio.py")
    for round_ in range(3):
        pidfile = tmp_path / f"pid{round_}"
        options = ConnectOptions(
            server="h",
            command=sys.executable,
            args=[str(hostile), "floods", "handshake", str(pidfile)],
            handshake_timeout_ms=30_000,
        )
        with starvation() as worst, mcp_sync.Servers(options) as servers:
            start = time.monotonic()
            with pytest.raises(mcp_sync.McpError) as caught:
                servers.session("h", timeout_ms=500)
            took = time.monotonic() - start
        assert caught.value.kind == "timeout"
        assert took < 0.5 + LATE, f"round {round_}: back {took:.2f} s after the call (budget 0.5 s)"
        assert worst[0] < GAP, f"round {round_}: a thread was starved for {worst[0]:.2f} s"
        wait_gone(int(pidfile.read_text()))
