"""A message over max_frame_bytes fails its own request when it can be charged
to one, and ends the session only when it cannot (issue 20, item 1); memory
stays bounded by one frame whatever the line's length; closing a session that
has already failed takes milliseconds (item 7)."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time

import pytest
from support import alive, connect_fake, fake_pid, library_threads, timed, wait_gone
from support import peak_rss_growth as peak_rss

import mcp_sync
from mcp_sync.protocol.oversize import KEEP, Oversized

pytestmark = pytest.mark.hostile

MIB = 2**20


def _ends(line: bytes) -> Oversized:
    kept = Oversized()
    for start in range(0, len(line), 65536):
        kept.feed(line[start : start + 65536])
    return kept


def _attributed(line: bytes) -> int | bool | None:
    """The id an over-long ``line`` is charged to; False when it ends the session."""
    kept = _ends(line)
    if not kept.head_says(ended=True):
        return False
    if kept.request_id is not None:
        return kept.request_id
    found = kept.tail_id()
    return False if found is None else found


PAD = "x" * (3 * KEEP)


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        # The TypeScript SDK: id last.
        ('{"result":{"content":[{"type":"text","text":"@"}]},"jsonrpc":"2.0","id":5}', 5),
        # The Python SDK: id first.
        ('{"jsonrpc":"2.0","id":7,"result":{"text":"@"}}', 7),
        ('{"id":8,"jsonrpc":"2.0","error":{"code":1,"message":"@"}}', 8),
        ('{"jsonrpc": "2.0", "result": {"t": "@"}, "id": 9}\r', 9),
        ('{"result":{"t":"@"},"id":10,"jsonrpc":"2.0"}', 10),
        (' { "error" : {"message":"@"} , "id" : 11 }', 11),
        # Not attributable: no id, a null or string id, no reply at all.
        ('{"jsonrpc":"2.0","result":{"t":"@"}}', False),
        ('{"jsonrpc":"2.0","id":null,"error":{"message":"@"}}', False),
        ('{"jsonrpc":"2.0","result":{"t":"@"},"id":"5"}', False),
        ('{"jsonrpc":"2.0","method":"notifications/message","params":{"t":"@"}}', False),
        ('{"method":"sampling/createMessage","params":{"t":"@"},"jsonrpc":"2.0","id":5}', False),
        ('{"jsonrpc":"2.0","id":5,"method":"roots/list","params":{"t":"@"}}', False),
        ("x" * (3 * KEEP), False),
        # An id inside the result is not the reply's.
        ('{"jsonrpc":"2.0","result":{"t":"@","id":4}}', False),
        ('{"jsonrpc":"2.0","result":{"t":"@\\",\\"id\\":4}"}}', False),
        ('{"result":{"item":{"id":3,"t":"@"}},"jsonrpc":"2.0","id":6}', 6),
    ],
)
def test_the_id_is_read_only_from_the_top_level_ends(line: str, expected: object) -> None:
    assert _attributed(line.replace("@", PAD).encode()) == expected


def test_only_the_ends_are_kept() -> None:
    kept = _ends(b'{"result":"' + b"y" * (5 * MIB) + b'","jsonrpc":"2.0","id":3}')
    assert kept.size == 5 * MIB + 36
    assert len(kept._head) == len(kept._tail) == KEEP
    assert kept.head_says(ended=False) is True and kept.request_id is None
    assert kept.tail_id() == 3


def test_a_short_head_waits_for_more() -> None:
    kept = Oversized()
    kept.feed(b'{"res')
    assert kept.head_says(ended=False) is None and not kept.decided


# ---------------------------------------------------------------- with the fake server


@pytest.mark.parametrize("id_first", [False, True], ids=["id-last", "id-first"])
def test_an_oversized_reply_fails_only_its_call(id_first: bool) -> None:
    with connect_fake("--misbehave", max_frame_bytes=4096) as session:
        refused = r"^server 'fake' sent a reply of .*bytes, over max_frame_bytes=4096$"
        with pytest.raises(mcp_sync.ProtocolError, match=refused):
            session.call_tool("huge_reply", {"bytes": 200_000, "id_first": id_first}, timeout_ms=10_000)
        assert not session.closed
        assert session.call_tool("echo", {"message": "still"}).content[0]["text"] == "still"
        assert session.ping() is None
        # A reply just under the limit is still read whole.
        assert len(session.call_tool("huge_reply", {"bytes": 3000}).content[0]["text"]) == 3000


def test_concurrent_calls_are_untouched_by_an_oversized_reply() -> None:
    with connect_fake("--misbehave", max_frame_bytes=8192) as session:
        failures: list[BaseException] = []

        def echo(n: int) -> None:
            try:
                for _ in range(20):
                    assert session.call_tool("echo", {"message": str(n)}).content[0]["text"] == str(n)
            except BaseException as exc:
                failures.append(exc)

        threads = [threading.Thread(target=echo, args=(n,)) for n in range(4)]
        for thread in threads:
            thread.start()
        for _ in range(5):
            with pytest.raises(mcp_sync.ProtocolError, match="max_frame_bytes=8192"):
                session.call_tool("huge_reply", {"bytes": 300_000}, timeout_ms=10_000)
        for thread in threads:
            thread.join()
        assert failures == []
        assert not session.closed


def test_a_late_oversized_reply_is_dropped_like_any_late_reply() -> None:
    with connect_fake("--misbehave", max_frame_bytes=4096) as session:
        # The reply names a request nobody waits for: the call that caused it times out.
        with timed(10.0), pytest.raises(mcp_sync.Timeout):
            session.call_tool("huge_reply", {"bytes": 100_000, "id": 999_999}, timeout_ms=500)
        assert session.call_tool("echo", {"message": "on"}).content[0]["text"] == "on"


@pytest.mark.parametrize(
    "args",
    [
        {"id": None},
        {"id": "text-id"},
        {"method": "notifications/message"},
        {"method": "sampling/createMessage", "id": 1},
        {"id_first": True, "id": None},
    ],
    ids=["null-id", "string-id", "notification", "server-request", "null-id-first"],
)
def test_an_unattributable_oversized_line_ends_the_session_as_before(args: dict[str, object]) -> None:
    session = connect_fake("--misbehave", max_frame_bytes=4096)
    try:
        with pytest.raises(mcp_sync.ProtocolError, match=r"^an inbound frame is longer than max_frame_bytes=4096$"):
            session.call_tool("huge_reply", {"bytes": 100_000, **args}, timeout_ms=10_000)
        assert session.closed
        with pytest.raises(mcp_sync.ProtocolError, match="max_frame_bytes=4096"):
            session.ping()
    finally:
        session.close()




def test_a_1_gib_reply_costs_one_frame_of_memory_and_fails_alone() -> None:
    with connect_fake("--misbehave") as session:  # the default limit: 64 MiB
        limit = session.limits.max_frame_bytes
        with peak_rss() as peak, timed(120.0), pytest.raises(
            mcp_sync.ProtocolError, match=rf"sent a reply of 107374189\d bytes, over max_frame_bytes={limit}$"
        ):
            session.call_tool("huge_reply", {"bytes": 2**30}, timeout_ms=110_000)
        print(f"peak RSS growth skipping 1 GiB: {peak[0] / MIB:.1f} MiB")
        # The partial line up to the limit, one read, and the interpreter's slack.
        assert peak[0] < limit + 48 * MIB
        assert session.call_tool("echo", {"message": "after"}).content[0]["text"] == "after"


def test_a_reply_at_the_new_maximum_is_read_with_bounded_memory() -> None:
    with connect_fake("--misbehave") as session:
        limit = session.limits.max_frame_bytes
        overhead = len(json.dumps({"result": {"content": [{"type": "text", "text": ""}]}, "jsonrpc": "2.0", "id": 99}))
        with peak_rss() as peak, timed(120.0):
            result = session.call_tool("huge_reply", {"bytes": limit - overhead - 64}, timeout_ms=110_000)
        assert len(result.content[0]["text"]) == limit - overhead - 64
        del result
        print(f"peak RSS growth reading a {limit // MIB} MiB reply: {peak[0] / MIB:.1f} MiB")
        # The assembled line, its decoding and the text: a few frames, not more.
        assert peak[0] < 5 * limit


def test_a_hostile_line_at_the_new_maximum_with_no_newline_ends_with_memory_flat() -> None:
    with connect_fake("--misbehave") as session:
        limit = session.limits.max_frame_bytes
        with peak_rss() as peak, timed(60.0), pytest.raises(
            mcp_sync.ProtocolError, match=rf"^an inbound frame is longer than max_frame_bytes={limit}$"
        ):
            session.call_tool("flood", {"bytes": limit + 10 * MIB}, timeout_ms=50_000)
        print(f"peak RSS growth under a {limit // MIB + 10} MiB flood: {peak[0] / MIB:.1f} MiB")
        assert peak[0] < limit + 48 * MIB


# ---------------------------------------------------------------- closing a failed session


def _check_closed_fast(session: mcp_sync.Session) -> None:
    pid = fake_pid(session)
    start = time.monotonic()
    session.close()
    took = time.monotonic() - start
    assert took < 0.3, f"close took {took:.3f}s"
    assert library_threads() == []
    wait_gone(pid, timeout=1.0)
    assert not alive(pid)


def test_a_session_whose_server_died_closes_in_milliseconds() -> None:
    session = connect_fake("--misbehave")
    with pytest.raises(mcp_sync.ConnectionClosed, match="exited with code 3"):
        session.call_tool("crash", {})
    _check_closed_fast(session)


def test_a_session_that_failed_with_its_server_alive_closes_in_milliseconds() -> None:
    # The server is still writing a line nobody reads: it never sees stdin end.
    session = connect_fake("--misbehave", max_frame_bytes=4096)
    with pytest.raises(mcp_sync.ProtocolError, match="max_frame_bytes=4096"):
        session.call_tool("flood", {"bytes": 50 * MIB}, timeout_ms=10_000)
    _check_closed_fast(session)



# ---------------------------------------------------------------- the depth scan at the new maximum


_SCAN = """
import contextlib, resource, sys
import mcp_sync
from mcp_sync.protocol.frames import decode_line
body = sys.argv[1].encode()
line = b'{"result":' + body * (4 * 2**20 // len(body)) + b',"jsonrpc":"2.0","id":1}'
text = line.decode()  # the size of decode_line's own copy, reserved first
del text
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
with contextlib.suppress(mcp_sync.ProtocolError):
    decode_line(line)
print((resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) * 1024)
"""


@pytest.mark.parametrize("body", ["[", "[]"], ids=["opening", "pairs"])
def test_the_depth_scan_holds_no_per_byte_list(body: str) -> None:
    # jsonrpc last: nothing lets the scan stop early. It once built one int
    # object per bracket: some 40 bytes per byte, gigabytes at 64 MiB.
    done = subprocess.run([sys.executable, "-c", _SCAN, body], capture_output=True, text=True, check=True)
    grown = int(done.stdout)
    assert grown < 5 * 4 * MIB, f"{grown / MIB:.0f} MiB for a 4 MiB line"
