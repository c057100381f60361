"""The limit on values per inbound message: a frame whose structure would cost
far more memory to parse than its bytes (``[[],[],...]``) is refused unparsed,
its own request failing when it is a reply, else the session ending."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from hostile_http import hostile_server
from support import connect_fake, rss_bytes, timed

import mcp_sync
from mcp_sync.protocol.frames import TooManyValues, decode_line
from mcp_sync.protocol.limits import MAX_JSON_VALUES

pytestmark = pytest.mark.hostile

REFUSED = rf"^an inbound frame holds more than {MAX_JSON_VALUES} JSON values \(the limit on values per message\)$"
# "[]," counts twice (its bracket and its comma): this many go over the limit.
OVER = MAX_JSON_VALUES // 2 + 1000


@contextmanager
def peak_rss_growth(into: list[int]) -> Iterator[None]:
    """Sample this process's RSS while the block runs; append the peak growth."""
    before = rss_bytes()
    peak = [before]
    done = threading.Event()

    def sample() -> None:
        while not done.wait(0.002):
            peak[0] = max(peak[0], rss_bytes())

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        yield
    finally:
        done.set()
        sampler.join()
        into.append(max(peak[0], rss_bytes()) - before)


def _frame(values: int, head: bytes = b'{"jsonrpc":"2.0","id":7,"result":{"x":[') -> bytes:
    return head + b"0," * (values - 1) + b"0]}}"


def test_the_count_is_exact_at_the_limit() -> None:
    # "0," is one value per comma; the envelope adds its own commas and brackets.
    envelope = _frame(1).count(b",") + _frame(1).count(b"[") + _frame(1).count(b"{")
    at_limit = _frame(MAX_JSON_VALUES - envelope + 1)
    message = decode_line(at_limit)
    assert message is not None and len(message["result"]["x"]) == MAX_JSON_VALUES - envelope + 1
    with pytest.raises(TooManyValues, match=REFUSED) as info:
        decode_line(_frame(MAX_JSON_VALUES - envelope + 2))
    assert info.value.request_id == 7


def test_commas_and_brackets_inside_strings_do_not_count() -> None:
    text = "[],{}," * MAX_JSON_VALUES
    message = decode_line(b'{"jsonrpc":"2.0","id":1,"result":{"text":"' + text.encode() + b'"}}')
    assert message is not None and message["result"]["text"] == text


def test_the_request_id_is_read_off_either_end() -> None:
    body = b"[]," * OVER + b"[]"
    with pytest.raises(TooManyValues) as first:
        decode_line(b'{"id":12,"jsonrpc":"2.0","result":{"x":[' + body + b"]}}")
    assert first.value.request_id == 12
    with pytest.raises(TooManyValues) as last:  # the TypeScript SDK writes the id last
        decode_line(b'{"result":{"x":[' + body + b']},"jsonrpc":"2.0","id":13}')
    assert last.value.request_id == 13
    with pytest.raises(TooManyValues) as notification:
        decode_line(b'{"jsonrpc":"2.0","method":"notifications/message","params":{"x":[' + body + b"]}}")
    assert notification.value.request_id is None
    # Not a message (no jsonrpc member): noise, as ever.
    assert decode_line(b'{"x":[' + body + b"]}") is None


def test_a_reply_with_too_many_values_fails_its_call_alone_with_memory_flat() -> None:
    growth: list[int] = []
    with connect_fake("--misbehave") as session:
        hostile = {
            "prefix": '{"jsonrpc":"2.0","id":{id},"result":{"content":[],"x":[',
            "repeat": "[],",
            "times": OVER,
            "suffix": "[]]}}",
        }
        with (
            peak_rss_growth(growth),
            timed(30.0),
            pytest.raises(mcp_sync.ProtocolError, match=REFUSED) as info,
        ):
            session.call_tool("raw", {"lines": [hostile], "reply": False}, timeout_ms=60_000)
        assert type(info.value) is mcp_sync.ProtocolError
        assert not session.closed
        assert session.call_tool("echo", {"message": "after"}).content[0]["text"] == "after"
    print(f"peak RSS growth refusing {OVER} empty arrays ({3 * OVER >> 20} MiB): {growth[0] / 2**20:.1f} MiB")
    # Parsing them would cost some 64 bytes each (about 140 MiB here).
    assert growth[0] < 80 * 2**20


def test_a_notification_with_too_many_values_ends_the_session() -> None:
    with connect_fake("--misbehave") as session:
        hostile = {
            "prefix": '{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":[',
            "repeat": "{},",
            "times": OVER,
            "suffix": "{}]}}",
        }
        with timed(30.0), pytest.raises(mcp_sync.ProtocolError, match=REFUSED):
            session.call_tool("raw", {"lines": [hostile]}, timeout_ms=60_000)
        assert session.closed


@pytest.mark.parametrize("nested", [0, 3, 20])
def test_only_a_top_level_jsonrpc_member_makes_it_a_message(nested: int) -> None:
    # Nested "jsonrpc" members (a few are counted, many walked) do not count.
    body = b'{"jsonrpc":"2.0"},' * nested + b"[]," * OVER + b"[]"
    assert decode_line(b'{"x":[' + body + b"]}") is None
    with pytest.raises(TooManyValues) as info:
        decode_line(b'{"x":[' + body + b'],"jsonrpc":"2.0"}')
    assert info.value.request_id is None


def test_over_http_a_reply_with_too_many_values_fails_its_call_alone() -> None:
    with hostile_server() as cfg, mcp_sync.connect_http(server="hostile", url=cfg.url) as session:
        with timed(30.0), pytest.raises(mcp_sync.ProtocolError, match=REFUSED):
            session.call_tool("wide", {"count": OVER}, timeout_ms=60_000)
        assert not session.closed
        assert session.call_tool("echo", {"message": "after"}).content[0]["text"] == "after"
