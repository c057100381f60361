"""Tool name rules (SPEC §4): one case per forbidden class, plus a property test."""

from __future__ import annotations

import json
import unicodedata

import pytest
from hypothesis import given
from hypothesis import strategies as st
from support import connect_fake

import mcp_sync
from mcp_sync.protocol.catalog import check_tool_name

FORBIDDEN = {
    "slash": "read/file",
    "nul": "a\x00b",
    "c0 tab": "a\tb",
    "c0 newline": "a\nb",
    "c0 unit separator": "a\x1fb",
    "del": "a\x7fb",
    "c1 first": "a\x80b",
    "c1 next line": "a\x85b",
    "c1 last": "a\x9fb",
    "zero width space": "read\u200bfile",
    "zero width joiner": "a\u200db",
    "left-to-right mark": "a\u200eb",
    "word joiner": "a\u2060b",
    "bidi override rlo": "a\u202eb",
    "bidi embedding lre": "a\u202ab",
    "bidi isolate lri": "a\u2066b",
    "bidi pop isolate": "a\u2069b",
    "soft hyphen": "de\u00adlete",
    "bom": "\ufeffecho",
    "tag character": "a\U000e0041b",
    "line separator": "a\u2028b",
    "paragraph separator": "a\u2029b",
    "lone high surrogate": "a\ud800b",
    "lone low surrogate": "a\udfffb",
    "dot": ".",
    "dot dot": "..",
    "empty": "",
    "too long": "n" * 129,
}


@pytest.mark.parametrize("name", list(FORBIDDEN.values()), ids=list(FORBIDDEN))
def test_forbidden_name_fails_the_connection(name: str) -> None:
    # json.dumps writes a lone surrogate as a \ud800 escape, as a server would.
    catalog = json.dumps([{"name": name, "inputSchema": {"type": "object"}}])
    with pytest.raises(mcp_sync.InvalidResponse) as caught:
        connect_fake("--tools", catalog)
    message = str(caught.value)
    assert message.isascii() and message.isprintable()


@pytest.mark.parametrize("name", ["echo", "get-sum", "read_file", "ünïcödé", "日本語", "a.b", "...", "n" * 128])
def test_acceptable_names(name: str) -> None:
    assert check_tool_name(name, 128) == name


def _forbidden(ch: str) -> bool:
    cp = ord(ch)
    return (
        ch == "/"
        or unicodedata.category(ch) in ("Cc", "Cf")
        or cp in (0x2028, 0x2029)
        or 0xD800 <= cp <= 0xDFFF
    )


@given(st.text(alphabet=st.characters(codec=None, min_codepoint=0, max_codepoint=0x10FFFF), max_size=40))
def test_any_accepted_name_has_no_forbidden_character(name: str) -> None:
    try:
        accepted = check_tool_name(name, 128)
    except mcp_sync.InvalidResponse:
        return
    assert accepted not in ("", ".", "..")
    assert not any(_forbidden(ch) for ch in accepted)
    assert len(accepted.encode("utf-8")) <= 128


_EVERY_FORBIDDEN = [
    chr(c) for c in range(0x110000) if _forbidden(chr(c)) and not 0xD800 <= c <= 0xDFFF
] + ["\ud800", "\udbff", "\udc00", "\udfff"]


@given(st.sampled_from(_EVERY_FORBIDDEN), st.text(max_size=5))
def test_every_forbidden_character_is_refused(bad: str, rest: str) -> None:
    with pytest.raises(mcp_sync.InvalidResponse):
        check_tool_name(rest + bad + rest, 128)
