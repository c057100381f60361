"""orjson, the fast first try at both ends of a frame, changes nothing but the
speed: every line decodes, and every message encodes (or is refused), exactly
as with the standard json module alone."""

from __future__ import annotations

import dataclasses
import datetime
import enum
import json
import math
import subprocess
import sys
import uuid
from collections.abc import Iterator
from typing import Any

import orjson
import pytest
from support import connect_fake

import mcp_sync
from mcp_sync.protocol import frames as _jsonrpc
from mcp_sync.protocol.frames import decode_line, encode, load_fast_json


@pytest.fixture
def without_orjson(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """As if orjson were not installed: its import fails, nothing is loaded yet."""
    monkeypatch.setitem(sys.modules, "orjson", None)
    monkeypatch.setattr(_jsonrpc, "_fast_tried", False)
    monkeypatch.setattr(_jsonrpc, "_fast_loads", None)
    monkeypatch.setattr(_jsonrpc, "_fast_dumps", None)
    yield


def _outcome(run: Any, *args: Any) -> tuple[str, str]:
    """A call's result or error, comparable across the two ways (NaN included)."""
    try:
        return "value", repr(run(*args))
    except Exception as exc:  # the error is the outcome compared
        return type(exc).__name__, str(exc)


def _both_ways(monkeypatch: pytest.MonkeyPatch, run: Any, *args: Any) -> tuple[tuple[str, str], tuple[str, str]]:
    load_fast_json()
    assert _jsonrpc._fast_loads is orjson.loads
    fast = _outcome(run, *args)
    with monkeypatch.context() as patch:
        patch.setattr(_jsonrpc, "_fast_loads", None)
        patch.setattr(_jsonrpc, "_fast_dumps", None)
        standard = _outcome(run, *args)
    return fast, standard


def _frame(member: str) -> bytes:
    return ('{"jsonrpc":"2.0","id":1,"result":{' + member + "}}").encode()


LINES = [
    _frame('"content":[{"type":"text","text":"hello"}],"isError":false'),
    # Integers past 64 bits, which orjson alone would read as floats.
    _frame('"n":18446744073709551616'),
    _frame('"n":-9223372036854775809'),
    _frame('"n":' + "9" * 30),
    _frame('"n":18446744073709551615,"m":-9223372036854775808'),
    _frame('"s":"' + "1" * 40 + '"'),
    # Numbers the rules refuse (a message: a protocol error).
    _frame('"n":NaN'),
    _frame('"n":Infinity'),
    _frame('"n":-1e999'),
    _frame('"n":1E400'),
    _frame('"n":' + "9" * 309),
    _frame('"n":1e-400,"m":-0.0,"k":-0,"f":0.1,"e":1.5e300'),
    # Strings: escapes, surrogate pairs, a lone surrogate, raw control bytes.
    _frame('"s":"\\ud83d\\ude00 \\u00e9 \\/ \\n"'),
    _frame('"s":"\\ud800"'),
    _frame('"s":"x\x01"'),
    '{"jsonrpc":"2.0","id":1,"result":{"s":"\u00e9\U0001f600"}}'.encode(),
    b'{"jsonrpc":"2.0","id":1,"result":{"s":"\xed\xa0\x80"}}',
    b'{"jsonrpc":"2.0","id":1,"result":{"s":"\xff"}}',
    # Framing: whitespace, a BOM, trailing data, duplicate keys, not an object.
    b'  \t{"jsonrpc":"2.0","method":"x"}\r',
    b'\xef\xbb\xbf{"jsonrpc":"2.0","method":"x"}',
    b'{"jsonrpc":"2.0","method":"x"} {"jsonrpc":"2.0"}',
    b'{"jsonrpc":"2.0","method":"x","method":"y"}',
    b'{"jsonrpc":"2.0","method":"x",}',
    b'["jsonrpc"]',
    b'{"jsonrpc_not":"2.0"}',
    b"not json at all",
    b"",
    # Depth: at the bound, past it (a message, and noise), and past orjson's own.
    _frame('"d":' + "[" * 120 + "]" * 120),
    _frame('"d":' + "[" * 200 + "]" * 200),
    b'{"x":' + b"[" * 200 + b"]" * 200 + b"}",
    _frame('"d":' + "[" * 1100 + "]" * 1100),
]


def test_an_integer_past_64_bits_stays_exact() -> None:
    load_fast_json()
    message = decode_line(_frame('"n":18446744073709551616,"m":-9223372036854775809'))
    assert message is not None
    assert message["result"] == {"n": 2**64, "m": -(2**63) - 1}
    assert type(message["result"]["n"]) is int


class Colour(enum.Enum):
    RED = "red"


class Level(enum.IntEnum):
    HIGH = 3


@dataclasses.dataclass
class Point:
    x: int


class Text(str):
    pass


MESSAGES: list[Any] = [
    {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "echo", "arguments": {"a": "b"}}},
    {"jsonrpc": "2.0", "id": 2, "method": "m", "params": {"a": None, "b": [None, True, False]}},
    {"a": "null inside a string"},
    {"a": float("nan")},
    {"a": [1.0, float("inf")]},
    {"a": -math.inf},
    {"a": [True, False, 0, -1, 2**63 - 1], "b": {"c": []}},
    {"a": 2**63, "b": -(2**63)},
    {"a": 2**64},
    {"a": -(2**63) - 1},
    {"a": 10**400},
    {"a": 1e16, "b": 0.1, "c": -0.0, "d": 1.5e-300},
    {"a": "\ud800"},
    {"\ud800": 1},
    {1: "int key"},
    {"a": (1, 2)},
    {"a": "é\U0001f600\x00\x1f\"\\"},
    {"a": Level.HIGH},
    {"a": Text("sub")},
    {"a": Point(1)},
    {"a": datetime.date(2026, 1, 1)},
    {"a": object()},
    {"a": b"bytes"},
]


def _encode_and_read(message: Any) -> Any:
    frame = encode(message, 1 << 20)
    assert frame.endswith(b"\n") and frame.count(b"\n") == 1
    return json.loads(frame)  # the value sent: the two encoders may spell numbers differently


CASES = [(decode_line, line) for line in LINES] + [(_encode_and_read, message) for message in MESSAGES]


@pytest.mark.parametrize(
    ("run", "value"),
    CASES,
    ids=[f"decode-{n}" for n in range(len(LINES))] + [f"encode-{n}" for n in range(len(MESSAGES))],
)
def test_every_line_and_message_is_the_same_with_and_without_orjson(
    monkeypatch: pytest.MonkeyPatch, run: Any, value: Any
) -> None:
    fast, standard = _both_ways(monkeypatch, run, value)
    assert fast == standard


@pytest.mark.parametrize(("value", "sent"), [(Colour.RED, "red"), (uuid.UUID(int=1), str(uuid.UUID(int=1)))])
def test_an_enum_or_uuid_is_refused_before_it_could_reach_orjson(
    monkeypatch: pytest.MonkeyPatch, value: object, sent: str
) -> None:
    # The one difference: orjson writes these by value where json raises.
    # Tool arguments, meta and custom params are walked first and refused
    # either way, so none reaches the encoder.
    fast, standard = _both_ways(monkeypatch, _encode_and_read, {"a": value})
    assert fast == ("value", repr({"a": sent}))
    assert standard[0] == "TypeError"
    with connect_fake() as session:
        with pytest.raises(mcp_sync.InvalidOption, match=f"value of type {type(value).__name__}"):
            session.call_tool("echo", {"message": value})
        with pytest.raises(mcp_sync.InvalidOption, match=f"value of type {type(value).__name__}"):
            session.call_tool("echo", {"message": "x"}, meta={"k": value})


def test_the_outbound_size_bound_is_the_same_either_way(monkeypatch: pytest.MonkeyPatch) -> None:
    message = {"a": "x" * 100}
    size = len(json.dumps(message, separators=(",", ":")))
    for bound in (size - 1, size, size + 1):
        fast, standard = _both_ways(monkeypatch, encode, message, bound)
        assert fast == standard
    assert fast[0] == "value"


def test_a_session_turns_orjson_on_and_import_alone_does_not() -> None:
    script = (
        "import sys, mcp_sync\n"
        "from mcp_sync.protocol import frames as _jsonrpc\n"
        "print('orjson' in sys.modules, _jsonrpc._fast_loads is None)\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "True"]
    with connect_fake() as session:
        assert _jsonrpc._fast_loads is orjson.loads
        assert session.call_tool("echo", {"message": "hi"}).content[0]["text"] == "hi"


def test_a_big_integer_from_a_server_arrives_exact() -> None:
    line = '{"jsonrpc":"2.0","result":{"content":[],"structuredContent":{"n":18446744073709551616}},"id":{id}}'
    with connect_fake("--misbehave") as session:
        result = session.call_tool("raw", {"lines": [line], "reply": False}, timeout_ms=10_000)
        assert result.structured_content == {"n": 2**64}
        assert not session.closed


def test_without_orjson_a_session_still_works(without_orjson: None) -> None:
    with connect_fake() as session:
        assert _jsonrpc._fast_tried and _jsonrpc._fast_loads is None
        assert session.call_tool("echo", {"message": "hi"}).content[0]["text"] == "hi"
        with pytest.raises(mcp_sync.InvalidOption, match="NaN or an infinite number"):
            session.call_tool("echo", {"message": math.nan})
