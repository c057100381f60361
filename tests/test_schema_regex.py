"""A server's regular expressions (``pattern``, ``patternProperties``) run on a
linear-time engine (RE2), and checking a result against an ``outputSchema``
(``validate_output=True``) costs time linear in the schema and the result.

Before, jsonschema ran the server's patterns on ``re``: ``^(a+)+$`` against 28
characters held the caller for half a minute and froze every thread of the
host. The hostile cases below come from the fake server, with a heartbeat
thread beside each call."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import time
from typing import Any

import pytest
from support import connect_fake, heartbeat

import mcp_sync
from mcp_sync.protocol import patterns as _regex
from mcp_sync.protocol.catalog import Snapshot, Tool, freeze, parse_call_result
from mcp_sync.protocol.output_check import check_structured_output

pytestmark = pytest.mark.hostile

pytest.importorskip("jsonschema")
pytest.importorskip("re2")

EVIL = "^(a+)+$"
EVIL_TEXT = "a" * 28 + "!"  # about half a minute for `re`; each added byte doubles it
STALL = 0.5  # the longest a 10 ms ticker may wait for the GIL
# Back by the 1 s deadline; the headroom is for a loaded 2-core CI machine.
BACK_WITHIN = 4.0




def _replying(output_schema: dict[str, Any]) -> str:
    """A catalog of one tool, ``raw``, whose reply the test writes itself."""
    return json.dumps([{"name": "raw", "inputSchema": {"type": "object"}, "outputSchema": output_schema}])


def _call(session: mcp_sync.Session, structured: Any, timeout_ms: int = 1000) -> tuple[Any, float]:
    """Call ``raw`` so that it replies with ``structured``: the result or the
    error, and how long the call took."""
    head = '{"jsonrpc":"2.0","id":{id},"result":{"content":[],"structuredContent":'
    reply = head + json.dumps(structured) + "}}"
    start = time.monotonic()
    try:
        outcome: Any = session.call_tool("raw", {"lines": [reply], "reply": False}, timeout_ms=timeout_ms)
    except mcp_sync.McpError as exc:
        outcome = exc
    return outcome, time.monotonic() - start


def _check(schema: dict[str, Any], structured: Any, deadline: float | None = None) -> None:
    """check_structured_output on its own, with a fresh snapshot."""
    tool = Tool(name="t", description=None, input_schema=freeze({"type": "object"}), output_schema=freeze(schema))
    result = parse_call_result({"content": [], "structuredContent": structured}, "t")
    check_structured_output(Snapshot((tool,)), tool, result, deadline)


# ------------------------------------------------------------------ the attack


def test_an_exponential_pattern_is_answered_at_once_and_stalls_no_thread() -> None:
    schema = {"type": "object", "properties": {"s": {"type": "string", "pattern": EVIL}}}
    with connect_fake("--tools", _replying(schema), validate_output=True) as session, heartbeat() as gaps:
        outcome, took = _call(session, {"s": EVIL_TEXT})
        good, _ = _call(session, {"s": "a" * 28})
    assert isinstance(outcome, mcp_sync.InvalidResponse), outcome
    assert "does not match its outputSchema" in str(outcome) and "'pattern' at '/s'" in str(outcome)
    assert isinstance(good, mcp_sync.CallToolResult), good
    assert took < BACK_WITHIN, took
    assert gaps[0] < STALL, gaps[0]


def test_an_exponential_key_pattern_is_answered_at_once_and_stalls_no_thread() -> None:
    schema = {"type": "object", "patternProperties": {EVIL: {"type": "integer"}}}
    closed = {**schema, "additionalProperties": False}  # (which matches the keys against the patterns too)
    with connect_fake("--tools", _replying(schema), validate_output=True) as session, heartbeat() as gaps:
        passes, took = _call(session, {EVIL_TEXT: "not checked: the key does not match"})
        fails, _ = _call(session, {"a" * 28: "a string where an integer is due"})
    assert isinstance(passes, mcp_sync.CallToolResult), passes
    assert isinstance(fails, mcp_sync.InvalidResponse) and "'type'" in str(fails), fails
    with connect_fake("--tools", _replying(closed), validate_output=True) as session, heartbeat() as more:
        extra, took_closed = _call(session, {EVIL_TEXT: 1})
    assert isinstance(extra, mcp_sync.InvalidResponse) and "'additionalProperties'" in str(extra), extra
    assert max(took, took_closed) < BACK_WITHIN, (took, took_closed)
    assert max(gaps[0], more[0]) < STALL, (gaps[0], more[0])


def test_a_subschema_naming_another_draft_still_runs_on_the_linear_engine() -> None:
    # jsonschema evaluates a subschema with its own "$schema" with that draft's stock class.
    inner = {"$schema": "http://json-schema.org/draft-07/schema#", "type": "string", "pattern": EVIL}
    schema = {"type": "object", "properties": {"s": inner}}
    with connect_fake("--tools", _replying(schema), validate_output=True) as session, heartbeat() as gaps:
        outcome, took = _call(session, {"s": EVIL_TEXT})
    assert isinstance(outcome, mcp_sync.InvalidResponse) and "'pattern'" in str(outcome), outcome
    assert took < BACK_WITHIN and gaps[0] < STALL, (took, gaps[0])


def test_a_backreference_is_refused_as_an_invalid_schema_naming_the_tool_and_the_place() -> None:
    schema = {"type": "object", "properties": {"s": {"type": "string", "pattern": "^(a)\\1$"}}}
    with connect_fake("--tools", _replying(schema), validate_output=True) as session:
        outcome, _ = _call(session, {"s": "aa"})
    assert isinstance(outcome, mcp_sync.InvalidResponse), outcome
    message = str(outcome)
    assert "tool 'raw' has an outputSchema that is not a valid JSON Schema for this client" in message
    assert "'/properties/s/pattern'" in message and "backreference" in message


@pytest.mark.parametrize("pattern", ["^(?=a)a$", "(?<!b)a", "^(?<x>a)\\k<x>$", "\\Q)\\E", "a{1001}"])
def test_lookaround_and_named_backreferences_are_refused(pattern: str) -> None:
    with pytest.raises(mcp_sync.InvalidResponse, match="cannot be evaluated in linear time"):
        _check({"type": "object", "patternProperties": {pattern: {}}}, {"a": 1})


def test_a_match_that_could_outlast_the_check_is_refused_not_run() -> None:
    # Linear, but up to some 15 ns per byte and position of the pattern: this
    # one (404 positions) over a 2 MB string could hold the caller for 12 s.
    hard = "(?:a|b)*a(?:a|b){200}c"
    schema = {"type": "object", "properties": {"s": {"type": "string", "pattern": hard}}}
    reply = {"prefix": '{"jsonrpc":"2.0","id":{id},"result":{"content":[],"structuredContent":{"s":"',
             "repeat": "ab", "times": 1_000_000, "suffix": '"}}}'}  # fmt: skip
    with connect_fake("--tools", _replying(schema), validate_output=True) as session, heartbeat() as gaps:
        start = time.monotonic()
        with pytest.raises(mcp_sync.Timeout, match="matching a string of 2000000 bytes against the pattern"):
            session.call_tool("raw", {"lines": [reply], "reply": False}, timeout_ms=1000)
        took = time.monotonic() - start
    assert took < BACK_WITHIN and gaps[0] < STALL, (took, gaps[0])


def test_a_long_string_is_matched_when_the_time_left_allows() -> None:
    schema = {"type": "object", "properties": {"s": {"type": "string", "pattern": "^.+$"}}}
    _check(schema, {"s": "x" * 2_000_000}, deadline=time.monotonic() + 60)
    with pytest.raises(mcp_sync.Timeout, match="could take up to"):
        _check(schema, {"s": "x" * 2_000_000}, deadline=time.monotonic() + 0.02)
    # The cost is counted in the pattern's positions, not in RE2's instructions:
    # this pattern has 32 positions and 43,000 instructions (its Unicode classes).
    unicode = {"type": "object", "properties": {"s": {"type": "string", "pattern": "^[\\p{L}\\p{N}_ -]{3,}$"}}}
    _check(unicode, {"s": "\u00e9t\u00e9 " * 50_000}, deadline=time.monotonic() + 1)


# ------------------------------------------------------------------ the rest of the check is linear too


def test_unique_items_over_many_objects_is_linear() -> None:
    # jsonschema compares every pair of unhashable items: 40,000 objects made
    # 800 million comparisons.
    schema = {"type": "object", "properties": {"xs": {"type": "array", "uniqueItems": True}}}
    items = [{"n": n} for n in range(40_000)]
    with connect_fake("--tools", _replying(schema), validate_output=True) as session:
        outcome, took = _call(session, {"xs": items}, timeout_ms=10_000)
        repeated, _ = _call(session, {"xs": [*items, {"n": 7}]}, timeout_ms=10_000)
    assert isinstance(outcome, mcp_sync.CallToolResult), outcome
    assert isinstance(repeated, mcp_sync.InvalidResponse) and "'uniqueItems'" in str(repeated), repeated
    assert took < BACK_WITHIN, took


@pytest.mark.parametrize(
    ("values", "unique"),
    [([1, 1.0], False), ([1, True], True), ([0, False], True), ([{"a": [1]}, {"a": [1.0]}], False),
     ([{"a": 1, "b": 2}, {"b": 2, "a": 1}], False), ([[1, 2], [2, 1]], True), ([None, "null"], True)],
)  # fmt: skip
def test_unique_items_keeps_json_schema_equality(values: list[Any], unique: bool) -> None:
    schema = {"type": "object", "properties": {"xs": {"uniqueItems": True}}}
    if unique:
        _check(schema, {"xs": values})
    else:
        with pytest.raises(mcp_sync.InvalidResponse, match="uniqueItems"):
            _check(schema, {"xs": values})


def test_unevaluated_items_over_a_long_array_is_linear() -> None:
    # jsonschema looked each index up in a list of all of them: quadratic.
    schema = {"type": "object", "properties": {"xs": {"type": "array", "items": True, "unevaluatedItems": False}}}
    with connect_fake("--tools", _replying(schema), validate_output=True) as session:
        outcome, took = _call(session, {"xs": [0] * 200_000}, timeout_ms=10_000)
    assert isinstance(outcome, mcp_sync.CallToolResult), outcome
    assert took < BACK_WITHIN, took


def test_unevaluated_properties_keeps_its_meaning() -> None:
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {"a": {}},
        "patternProperties": {"^x-": {"type": "integer"}},
        "allOf": [{"properties": {"b": {}}}],
        "unevaluatedProperties": False,
    }
    _check(schema, {"a": 1, "b": 2, "x-1": 3})
    with pytest.raises(mcp_sync.InvalidResponse, match="unevaluatedProperties"):
        _check(schema, {"a": 1, "c": 2})
    with pytest.raises(mcp_sync.InvalidResponse, match="'type' at '/x-1'"):
        _check(schema, {"x-1": "three"})


def test_the_check_stops_at_its_deadline() -> None:
    # Each "$ref" level doubles the work: 2**40 evaluations unless the deadline stops it.
    defs: dict[str, Any] = {f"d{n}": {"allOf": [{"$ref": f"#/$defs/d{n + 1}"}] * 2} for n in range(40)}
    defs["d40"] = {"type": "string"}
    schema = {"type": "object", "properties": {"s": {"$ref": "#/$defs/d0"}}, "$defs": defs}
    start = time.monotonic()
    with pytest.raises(mcp_sync.Timeout, match="before the call's deadline"):
        _check(schema, {"s": "x"}, deadline=time.monotonic() + 0.3)
    assert time.monotonic() - start < BACK_WITHIN


@pytest.mark.parametrize("how", ["call_tool", "submit_tool"])
def test_a_call_checks_its_result_within_its_own_deadline(how: str) -> None:
    # The same doubling chain through a session: the check stops at the call's
    # 1 s deadline (at least VALIDATION_FLOOR after the reply), not at the 10 s cap.
    defs: dict[str, Any] = {f"d{n}": {"allOf": [{"$ref": f"#/$defs/d{n + 1}"}] * 2} for n in range(40)}
    defs["d40"] = {"type": "string"}
    schema = {"type": "object", "properties": {"s": {"$ref": "#/$defs/d0"}}, "$defs": defs}
    reply = '{"jsonrpc":"2.0","id":{id},"result":{"content":[],"structuredContent":{"s":"x"}}}'
    arguments = {"lines": [reply], "reply": False}
    with connect_fake("--tools", _replying(schema), validate_output=True) as session, heartbeat() as gaps:
        start = time.monotonic()
        with pytest.raises(mcp_sync.Timeout, match="before the call's deadline"):
            if how == "call_tool":
                session.call_tool("raw", arguments, timeout_ms=1000)
            else:
                session.submit_tool("raw", arguments, timeout_ms=1000).result()
        took = time.monotonic() - start
    assert took < BACK_WITHIN and gaps[0] < STALL, (took, gaps[0])


# ------------------------------------------------------------------ the dialect


@pytest.mark.parametrize(
    ("pattern", "text", "matches"),
    [
        ("^\\d+$", "\u0663", False),  # ECMA's \d is ASCII
        ("^\\s$", "\u00a0", True),  # ...its \s is Unicode white space
        ("^\\S$", "\u00a0", False),
        ("^[\\S]$", "\u2028", False),
        ("^[\\s]$", "\x0b", True),
        ("^.$", "\r", False),  # . stops at every line terminator
        ("^.$", "\U0001f600", True),
        ("^\\u00e9$", "\u00e9", True),
        ("^\\ud83d\\ude00$", "\U0001f600", True),
        ("^\\u{1F600}$", "\U0001f600", True),
        ("^\\cJ$", "\n", True),
        ("^[\\b]$", "\b", True),
        ("^[[:alpha:]]$", ":]", True),  # a "[" in a class is a character
        ("^a[]", "a", False),
        ("^a[^]$", "a\n", True),
        ("^\\p{L}+$", "\u00e9t\u00e9", True),
        ("^\\p{Letter}+$", "\u00e9t\u00e9", True),  # Unicode's long names, and ECMA's forms
        ("^\\p{digit}$", "\u09ea", True),
        ("^\\P{gc=Lu}$", "a", True),
        ("^\\p{Script=Greek}$", "\u03b1", True),
        ("b", "abc", True),  # not anchored
        ("^a$", "a\n", False),  # $ is the end of the text
        ("(?<year>\\d{4})", "in 2024", True),
        ("^\\/$", "/", True),
    ],
)
def test_ecma_patterns_keep_their_meaning(pattern: str, text: str, matches: bool) -> None:
    assert _regex.server_pattern(pattern).search(text, 10.0) is matches


def test_a_lone_surrogate_in_the_text_is_matched_not_an_error() -> None:
    assert _regex.server_pattern("^a.b$").search("a\ud800b", 10.0)


# ------------------------------------------------------------------ typed results


def test_output_model_does_not_run_the_servers_pattern() -> None:
    # Tool.output_model() builds plain types: a "pattern" is not enforced there, so
    # the server's regular expression reaches no engine at all.
    schema = {"type": "object", "properties": {"s": {"type": "string", "pattern": EVIL}}, "required": ["s"]}
    tool = Tool(name="t", description=None, input_schema=freeze({"type": "object"}), output_schema=freeze(schema))
    with heartbeat() as gaps:
        start = time.monotonic()
        value = tool.output_model().model_validate({"s": EVIL_TEXT * 4})
        took = time.monotonic() - start
    assert value.model_dump() == {"s": EVIL_TEXT * 4}
    assert took < BACK_WITHIN and gaps[0] < STALL, (took, gaps[0])


# ------------------------------------------------------------------ the extra


def test_validation_without_re2_is_a_missing_extra() -> None:
    script = textwrap.dedent(
        """
        import importlib.util, sys
        real = importlib.util.find_spec
        importlib.util.find_spec = lambda name, *a: None if name == "re2" else real(name, *a)
        sys.modules["re2"] = None
        import mcp_sync
        try:
            mcp_sync.connect(server="s", command=sys.executable, args=["-m", "mcp_sync.testing"], validate_output=True)
        except mcp_sync.MissingExtra as error:
            print(error.extra, str(error), sep="|")
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == (
        "validation|option validate_output needs google-re2: pip install 'mcp-sync-client[validation]'"
    )
