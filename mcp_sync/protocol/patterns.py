"""The one place a server's regular expression is compiled and matched.

JSON Schema's ``pattern`` and ``patternProperties`` come from the server. The
standard library's ``re`` backtracks: ``^(a+)+$`` against 28 characters runs
for tens of seconds in one C call that keeps the GIL, so every thread of the
host stops with it. Here they run on RE2 (the ``google-re2`` package, part of
the ``validation`` extra), whose automata take time linear in the text and
which lets go of the GIL while it matches. What RE2 cannot take
(backreferences, lookaround, repetition counts over 1000, programs over the
memory bound) is refused as an invalid pattern, never skipped.

JSON Schema patterns are ECMA-262 regular expressions. The translation below
keeps ECMA's meaning where RE2's syntax differs: ``\\uXXXX`` (surrogate pairs
joined) and ``\\u{...}``, ``\\cX``, ``\\0``, ``[\\b]``, ``\\p{...}`` with Unicode's
long category names or ``Script=``, ``\\s``/``\\S`` (ECMA's
whitespace, wider than RE2's), ``.`` (not any line terminator), ``[]`` and
``[^]``, and a ``[`` inside a class (a character, not the start of a POSIX
class). ``\\d``, ``\\w`` and ``\\b`` are ASCII in both. Inline flags such as
``(?i)``, which ECMA lacks, are accepted as RE2 reads them.

Linear is not free: a pattern whose automaton has many states costs up to
some 15 ns per byte of text and position of the pattern (measured: a
position is a character or class, counted repetitions unrolled; a simple
pattern costs under 2 ns per byte). :meth:`ServerPattern.search` is given
the seconds its caller has left, and refuses, without starting, a match whose
worst case (:data:`WORST_SECONDS_PER_UNIT` times positions times bytes)
would not fit in them: no match outlives its caller's deadline.
"""

from __future__ import annotations

import functools
from typing import Any

__all__ = [
    "MAX_PROGRAM_MEMORY",
    "WORST_SECONDS_PER_UNIT",
    "PatternRefused",
    "ServerPattern",
    "TooCostly",
    "server_pattern",
]

MAX_PROGRAM_MEMORY = 2 << 20
"""RE2's memory bound for one compiled pattern (its program and its DFA cache).
RE2's default, 8 MiB, let 200 patterns grow the process by 570 MiB in a
measurement; at 2 MiB they took 143 MiB and matched as fast. (At 1 MiB
RE2 refused ``(?:\\p{L}|\\p{N}){50}``: Unicode classes make big programs.)"""

WORST_SECONDS_PER_UNIT = 25e-9
"""The most one byte of text times one position of a pattern may cost RE2.
The worst of 16 patterns built to defeat its DFA cache cost 14.5 ns (such
as ``(?:a{0,30}b?){30}c`` over ``aaa...``, ``a[^x]{0,900}b``, or
``(?:a|b)*a(?:a|b){200}c`` over random ``ab``); this leaves headroom."""


# ECMA-262's WhiteSpace and LineTerminator code points (what ``\s`` means there).
_SPACE = r"\t\n\x0b\x0c\r \x{a0}\x{1680}\x{2000}-\x{200a}\x{2028}\x{2029}\x{202f}\x{205f}\x{3000}\x{feff}"
# Their complement, for ``\S`` inside a class (where ``[^...]`` cannot nest).
_NOT_SPACE = (
    r"\x00-\x08\x0e-\x1f\x21-\x{9f}\x{a1}-\x{167f}\x{1681}-\x{1fff}\x{200b}-\x{2027}"
    r"\x{202a}-\x{202e}\x{2030}-\x{205e}\x{2060}-\x{2fff}\x{3001}-\x{d7ff}\x{e000}-\x{fefe}\x{ff00}-\x{10ffff}"
)
_DOT = r"[^\n\r\x{2028}\x{2029}]"
# Unicode's long names (and ECMA's other aliases) of the general categories, for RE2's short ones.
_CATEGORIES = {
    "Other": "C", "Control": "Cc", "cntrl": "Cc", "Format": "Cf", "Private_Use": "Co", "Surrogate": "Cs",
    "Letter": "L", "Lowercase_Letter": "Ll", "Modifier_Letter": "Lm", "Other_Letter": "Lo",
    "Titlecase_Letter": "Lt", "Uppercase_Letter": "Lu", "Mark": "M", "Combining_Mark": "M",
    "Spacing_Mark": "Mc", "Enclosing_Mark": "Me", "Nonspacing_Mark": "Mn", "Number": "N",
    "Decimal_Number": "Nd", "digit": "Nd", "Letter_Number": "Nl", "Other_Number": "No",
    "Punctuation": "P", "punct": "P", "Connector_Punctuation": "Pc", "Dash_Punctuation": "Pd",
    "Close_Punctuation": "Pe", "Final_Punctuation": "Pf", "Initial_Punctuation": "Pi",
    "Other_Punctuation": "Po", "Open_Punctuation": "Ps", "Symbol": "S", "Currency_Symbol": "Sc",
    "Modifier_Symbol": "Sk", "Math_Symbol": "Sm", "Other_Symbol": "So", "Separator": "Z",
    "Line_Separator": "Zl", "Paragraph_Separator": "Zp", "Space_Separator": "Zs",
}  # fmt: skip
# Escapes whose RE2 text depends on where they stand: (inside a class, outside one).
_SHORTHANDS = {
    "b": ("\\x08", "\\b"),  # a backspace in a class, a word boundary outside
    "s": (_SPACE, f"[{_SPACE}]"),
    "S": (_NOT_SPACE, f"[^{_SPACE}]"),
}
_HEX = frozenset("0123456789abcdefABCDEF")
_LOOKAROUND = ("(?=", "(?!", "(?<=", "(?<!")


class PatternRefused(ValueError):
    """A pattern RE2 cannot run; ``reason`` says why, in a few words."""

    def __init__(self, pattern: str, reason: str) -> None:
        super().__init__(reason)
        self.pattern = pattern
        self.reason = reason


class TooCostly(ValueError):
    """One match could take longer than its caller has left."""

    def __init__(self, pattern: str, size: int, length: int) -> None:
        super().__init__(f"{length} bytes against a pattern of {size} positions")
        self.pattern = pattern
        self.size = size
        self.length = length
        self.seconds = size * length * WORST_SECONDS_PER_UNIT


class ServerPattern:
    """A compiled server pattern: :meth:`search` says whether it matches
    anywhere in a string (JSON Schema patterns are not anchored). RE2 lets go
    of the GIL while it matches: other threads run meanwhile."""

    __slots__ = ("_regexp", "size", "source")

    def __init__(self, source: str, regexp: Any, size: int) -> None:
        self.source = source
        self._regexp = regexp
        self.size = size

    def search(self, text: str, seconds: float) -> bool:
        """Whether the pattern matches in ``text``; :class:`TooCostly`, before
        any work, when the match could take more than ``seconds``."""
        try:
            data = text.encode("utf-8")
        except UnicodeEncodeError:  # a lone surrogate (the json module lets "\ud800" through)
            data = text.encode("utf-8", "surrogatepass")
        if self.size * len(data) * WORST_SECONDS_PER_UNIT > seconds:
            raise TooCostly(self.source, self.size, len(data))
        return self._regexp.search(data) is not None


@functools.lru_cache(maxsize=64)
def server_pattern(pattern: str) -> ServerPattern:
    """``pattern`` compiled for RE2 (cached: a tool's patterns are matched
    against every result), or :class:`PatternRefused`."""
    import re2  # type: ignore[import-untyped]  # the optional extra, imported on first use

    translated = translate(pattern)
    options = re2.Options()
    options.log_errors = False
    options.max_mem = MAX_PROGRAM_MEMORY
    try:
        encoded = translated.encode("utf-8")
    except UnicodeEncodeError:
        raise PatternRefused(pattern, "it contains a lone surrogate") from None
    try:
        regexp = re2.compile(encoded, options)
    except re2.error as exc:
        detail = exc.args[0] if exc.args else ""
        if isinstance(detail, bytes):
            detail = detail.decode("utf-8", "replace")
        raise PatternRefused(pattern, f"RE2 refuses it: {str(detail)[:120]}") from None
    return ServerPattern(pattern, regexp, positions(translated))


def positions(pattern: str) -> int:
    """How many character positions the RE2 ``pattern`` (one RE2 compiled)
    has with its counted repetitions unrolled: the size of its position
    automaton, which bounds how many states one byte of text can keep alive.
    A character class is one position however many ranges it lists."""
    stack = [[0, 0]]  # per open group: [positions so far, positions of the last atom]
    n = len(pattern)
    i = 0

    def atom(count: int) -> None:
        stack[-1][0] += count
        stack[-1][1] = count

    while i < n:
        ch = pattern[i]
        if ch == "\\":
            i = _escape_end(pattern, i)
            atom(1)
        elif ch == "[":
            i = _class_end(pattern, i)
            atom(1)
        elif ch == "(":
            i, opens = _group_start(pattern, i)
            if opens:
                stack.append([0, 0])
        elif ch == ")":
            i += 1
            atom(stack.pop()[0] if len(stack) > 1 else 0)
        elif ch == "{" and (bounds := _repeat(pattern, i)) is not None:
            times, i = bounds
            stack[-1][0] += stack[-1][1] * (times - 1)
            stack[-1][1] *= times
        else:
            i += 1
            if ch not in "*+?^$|":  # a literal, or a "{" that is no repetition
                atom(1)
    return max(1, sum(group[0] for group in stack))


def _escape_end(pattern: str, i: int) -> int:
    """The index after the RE2 escape whose backslash is at ``i``."""
    end = pattern.find("}", i) if pattern.startswith(("x{", "p{", "P{"), i + 1) else -1
    return end + 1 if end > 0 else i + 2


def _class_end(pattern: str, i: int) -> int:
    """The index after the character class whose ``[`` is at ``i``."""
    j = i + 1
    j += pattern.startswith("^", j)
    j += pattern.startswith("]", j)
    while j < len(pattern) and pattern[j] != "]":
        j += 2 if pattern[j] == "\\" else 1
    return j + 1


def _group_start(pattern: str, i: int) -> tuple[int, bool]:
    """The index after the ``(`` at ``i`` and its ``?...`` prefix, and whether
    it opens a group (flags alone, such as ``(?i)``, do not)."""
    i += 1
    if pattern.startswith("?", i):
        while i < len(pattern) and pattern[i] not in ":)>":
            i += 1
        if pattern.startswith(")", i):
            return i + 1, False
        i += 1
    return i, True


def _repeat(pattern: str, i: int) -> tuple[int, int] | None:
    """The most times ``{m}``, ``{m,}`` or ``{m,n}`` at ``i`` repeats (one
    more than ``m`` when open), and the index after it; None for a literal ``{``."""
    end = pattern.find("}", i)
    low, comma, high = pattern[i + 1 : end].partition(",") if end > 0 else ("", "", "")
    if not low.isdigit() or not (high.isdigit() or high == ""):
        return None
    return (int(high) if high else int(low) + (1 if comma else 0)), end + 1


def translate(pattern: str) -> str:
    """``pattern``, an ECMA-262 regular expression, in RE2's syntax; or
    :class:`PatternRefused` for what RE2 cannot run."""
    out: list[str] = []
    n = len(pattern)
    i = 0
    in_class = False
    while i < n:
        ch = pattern[i]
        if ch == "\\":
            text, i = _escape(pattern, i + 1, in_class)
            out.append(text)
            continue
        if in_class:
            if ch == "]":
                in_class = False
            elif ch == "[":
                ch = "\\["
            out.append(ch)
            i += 1
            continue
        if ch == "[":
            if pattern.startswith("[]", i):
                out.append(r"[^\x00-\x{10ffff}]")
                i += 2
            elif pattern.startswith("[^]", i):
                out.append(r"[\x00-\x{10ffff}]")
                i += 3
            else:
                in_class = True
                out.append("[^" if pattern.startswith("[^", i) else "[")
                i += 2 if pattern.startswith("[^", i) else 1
            continue
        if ch == "(" and pattern.startswith(_LOOKAROUND, i):
            raise PatternRefused(pattern, "it has a lookahead or lookbehind, which a linear-time engine cannot run")
        out.append(_DOT if ch == "." else ch)
        i += 1
    return "".join(out)


def _escape(pattern: str, i: int, in_class: bool) -> tuple[str, int]:
    """The RE2 text for the escape whose letter is at ``i`` (just past the
    backslash), and the index after the escape."""
    if i >= len(pattern):
        raise PatternRefused(pattern, "it ends with a lone backslash")
    nxt = pattern[i]
    i += 1
    _refuse_escape(pattern, nxt, i, in_class)
    if nxt == "u":
        code, i = _unicode_escape(pattern, i)
        return f"\\x{{{code:x}}}", i
    if nxt == "c":
        return _control_escape(pattern, i)
    if nxt == "0" and not (i < len(pattern) and pattern[i].isdigit()):
        return "\\x00", i
    if nxt in "pP" and pattern.startswith("{", i):
        return _property_escape(pattern, nxt, i)
    if nxt in _SHORTHANDS:
        inside, outside = _SHORTHANDS[nxt]
        return (inside if in_class else outside), i
    return "\\" + nxt, i


def _refuse_escape(pattern: str, nxt: str, i: int, in_class: bool) -> None:
    """Refuse the escapes RE2 cannot run as ECMA-262 means them (letter ``nxt``, body at ``i``)."""
    if not in_class and (nxt in "123456789" or (nxt == "k" and pattern.startswith("<", i))):
        raise PatternRefused(pattern, "it has a backreference, which a linear-time engine cannot run")
    if nxt in "QEC":  # RE2's quoting and any-byte escapes; ECMA has neither
        raise PatternRefused(pattern, f"it has the escape \\{nxt}, which ECMA-262 does not define")


def _control_escape(pattern: str, i: int) -> tuple[str, int]:
    """``\\c`` and the control letter at ``i``."""
    if i < len(pattern) and pattern[i].isascii() and pattern[i].isalpha():
        return f"\\x{{{ord(pattern[i]) % 32:x}}}", i + 1
    raise PatternRefused(pattern, "it has a \\c escape without a control letter")


def _property_escape(pattern: str, nxt: str, i: int) -> tuple[str, int]:
    """``\\p{...}`` or ``\\P{...}`` whose brace is at ``i``."""
    end = pattern.find("}", i)
    if end < 0:
        raise PatternRefused(pattern, "it has an unclosed \\p{...}")
    return f"\\{nxt}{{{_property(pattern, pattern[i + 1 : end])}}}", end + 1


def _property(pattern: str, name: str) -> str:
    """RE2's name for the Unicode property ``name`` of a ``\\p{...}``: a
    general category (long or short), or a script."""
    key, _, value = name.rpartition("=")
    if key in ("", "General_Category", "gc"):
        return _CATEGORIES.get(value, value)
    if key in ("Script", "sc"):
        return value
    raise PatternRefused(pattern, f"RE2 has no Unicode property {name[:40]!a}")


def _unicode_escape(pattern: str, i: int) -> tuple[int, int]:
    """The code point of the ``\\u`` escape whose body starts at ``i``, and
    the index after it (a surrogate pair written as two escapes is one)."""
    if pattern.startswith("{", i):
        end = pattern.find("}", i)
        body = pattern[i + 1 : end] if end > 0 else ""
        if not body or len(body) > 6 or not _HEX.issuperset(body) or int(body, 16) > 0x10FFFF:
            raise PatternRefused(pattern, "it has a malformed \\u{...} escape")
        code, i = int(body, 16), end + 1
    else:
        body = pattern[i : i + 4]
        if len(body) != 4 or not _HEX.issuperset(body):
            raise PatternRefused(pattern, "it has a malformed \\u escape")
        code, i = int(body, 16), i + 4
    if 0xD800 <= code < 0xDC00 and pattern.startswith("\\u", i):
        low = pattern[i + 2 : i + 6]
        if len(low) == 4 and _HEX.issuperset(low) and 0xDC00 <= int(low, 16) < 0xE000:
            return 0x10000 + ((code - 0xD800) << 10) + (int(low, 16) - 0xDC00), i + 6
    if 0xD800 <= code < 0xE000:
        raise PatternRefused(pattern, "it has a lone surrogate escape")
    return code, i
