"""JSON-RPC frame rules: decoding and classifying inbound lines, checking and
encoding outbound messages. Pure functions; no I/O and no session state."""

from __future__ import annotations

import codecs
import json
import math
import re
from collections.abc import Callable, Iterator
from itertools import accumulate, compress, repeat
from operator import eq, sub
from typing import Any

from .errors import InvalidOption, ProtocolError
from .limits import MAX_JSON_DEPTH, MAX_JSON_VALUES

__all__ = [
    "TooManyValues",
    "check_arguments",
    "decode_line",
    "encode",
    "error_object",
    "json_depth",
]

# Everything below that looks at a frame's bytes does it a slice at a time:
# no single C call (a regex pass, a count, a translation) is given more than
# _SLICE bytes, and between slices the interpreter may hand the GIL to other
# threads. A frame of any size therefore stalls them for one slice's work at
# most (some milliseconds), however long the whole scan takes.
_SLICE = 262_144

# The inside of a JSON string literal, from after its opening quote up to its
# closing quote (or a lone trailing backslash, or the end). Possessive
# quantifiers make every match run straight ahead: each byte is looked at
# once, whatever the input.
_BODY = rb'[^"\\]*+(?:\\.[^"\\]*+)*+'


def _letter(code: int) -> bytes:
    """A pattern for one ASCII letter inside a string literal: itself, or its
    ``\\u00XX`` escape (hex digits of either case)."""
    high, low = divmod(code, 16)
    return b"(?:%c|\\\\u00%x[%x%X])" % (code, high, low, low)


# A string literal that decodes to "jsonrpc", spelled plainly or with escapes.
# It is rewritten to _KEY_TOKEN before strings are stripped. Where the text is
# valid JSON such a match is always a whole string token (no letter follows a
# closing quote), and the rewrite keeps it one, so it changes no token's
# bounds. NUL bytes are dropped from the text first (no valid frame has one):
# every NUL is then part of a _KEY_TOKEN.
_KEY = re.compile(b'"' + b"".join(_letter(code) for code in b"jsonrpc") + b'"')
_KEY_TOKEN = b'"\0"'
# An opening quote: not escaped (no valid frame has a backslash outside a
# string), and neither end of a _KEY_TOKEN. (The quote comes first, so the
# regex engine can look for it quickly.) Inside an unterminated string
# every later quote is escaped, so a failed match is never retried there:
# stripping strings is linear whatever the input (a frame of escaped quotes).
_OPENER = rb'"(?<![\0\\]")(?!\0")'
# Every string literal but the kept keys.
_STRINGS = re.compile(_OPENER + _BODY + b'"', re.DOTALL)
# What is left of a string that the slice ends inside.
_UNTERMINATED = re.compile(_OPENER)
# The rest of a string a previous slice ended inside.
_STRING_REST = re.compile(_BODY, re.DOTALL)
# A kept "jsonrpc" followed by a colon is a member name: it becomes one NUL.
_MEMBER = re.compile(rb'"\0"[ \t\r\n]*+:')
# Brackets become 2 (open) or 0 (close), a member marker (NUL) 1; the rest goes.
# After subtracting 1, a running sum is the nesting depth.
_TRANSLATE = bytes.maketrans(b"[{]}\0", b"\x02\x02\x00\x00\x01")
_DELETE = bytes(b for b in range(256) if b not in b"[]{}\0")
_WHITESPACE = b" \t\r\n"
_LEADING_SPACE = re.compile(rb"[ \t\r\n]*+")
_SPAN = 65536
# The most of a string literal carried into the next slice when a slice ends
# inside it (a "jsonrpc" key, escapes and all, is 44 bytes); a longer one is
# no key, and the next slice only looks for its end.
_CARRY = 64
# Digits become "0", everything else ".": a run of 19 zeros marks a number
# that may be an integer past 64 bits, which orjson reads as a float.
_DIGITS = bytes(48 if 48 <= b <= 57 else 46 for b in range(256))
_LONG_NUMBER = b"0" * 19
# The smallest integer that a double cannot hold: float() of it overflows.
_INT_OVERFLOW = 2**1024 - 2**970


class _Profile:
    """What one pass over a frame's text found outside its string literals:
    how many values it holds (commas and opening brackets), how deep it
    nests (exact up to ``floor``; past it, only that it is deeper), whether
    its top-level object has a member named ``jsonrpc``, and whether a number
    there has 19 digits or more. Fed a slice at a time (:meth:`take`)."""

    __slots__ = (
        "_carry",
        "_depth",
        "_digits",
        "_floor",
        "_in_string",
        "_pending",
        "deepest",
        "long_number",
        "top_member",
        "values",
    )

    def __init__(self, floor: int) -> None:
        self.values = 0
        self.deepest = 0
        self.top_member = False
        self.long_number = False
        self._floor = floor
        self._depth = 0
        self._digits = b""  # the last digits seen, for a number cut by a slice's end
        self._carry = b""  # the start of a short string the last slice ended inside
        self._in_string = False  # the last slice ended inside a long string...
        self._pending = False  # ...right after a backslash

    def take(self, piece: bytes, last: bool) -> None:
        """The next slice of the text (``last``: the text ends with it)."""
        if piece.find(0) >= 0:
            piece = piece.replace(b"\0", b"")
        if self._carry:
            piece, self._carry = self._carry + piece, b""
        if not piece:
            return
        piece = _KEY.sub(_KEY_TOKEN, piece)
        if self._in_string:
            end = _end_of(_STRING_REST.match(piece, 1 if self._pending else 0))
            if end >= len(piece) or piece[end] != 0x22:
                # Still inside: it stopped at the end, or at a lone backslash.
                self._pending = end < len(piece)
                return
            self._in_string = False
            piece = piece[end + 1 :]
        kept = self._strip(piece, last)
        del piece
        self.values += kept.count(b",") + kept.count(b"[") + kept.count(b"{")
        if not self.long_number:
            digits = self._digits + kept.translate(_DIGITS)
            self.long_number = digits.find(_LONG_NUMBER) >= 0
            self._digits = digits[-18:]
        if kept.find(0) >= 0:
            kept = _MEMBER.sub(b"\0", kept).replace(_KEY_TOKEN, b"")
        self._measure(kept.translate(_TRANSLATE, _DELETE))

    def _strip(self, piece: bytes, last: bool) -> bytes:
        """``piece`` without its string literals, bar kept keys. A string it
        ends inside is carried into the next slice when short (it may be a
        key), else only its end is looked for there; so is a key it ends
        with (its colon may open the next slice)."""
        kept = _STRINGS.sub(b"", piece)
        opener = _UNTERMINATED.search(kept)
        if opener is not None:
            tail = kept[opener.start() :]
            kept = kept[: opener.start()]
            if not last:
                if len(tail) <= _CARRY:
                    self._carry = tail
                else:
                    self._in_string = True
                    self._pending = (len(tail) - len(tail.rstrip(b"\\"))) % 2 == 1
        elif not last:
            trimmed = kept.rstrip(_WHITESPACE)
            if trimmed.endswith(_KEY_TOKEN):
                kept, self._carry = trimmed[: -len(_KEY_TOKEN)], _KEY_TOKEN
        return kept

    def _measure(self, stream: bytes) -> None:
        """Depth and top-level members from a slice's brackets and markers,
        walked only where they could change the answer."""
        opens = stream.count(2)
        marked = not self.top_member and stream.find(1) >= 0
        bar = self.deepest if self.deepest > self._floor else self._floor
        if marked or self._depth + opens > bar:
            peak, member, self._depth = _nesting(stream, self._depth, marked)
            self.deepest = peak if peak > self.deepest else self.deepest
            self.top_member = self.top_member or member
        else:
            self._depth += opens - stream.count(0)


def _end_of(match: re.Match[bytes] | None) -> int:
    assert match is not None  # (a pattern that matches the empty string)
    return match.end()


def _profile(text: bytes, enough: int | None = MAX_JSON_DEPTH, *, values_bound: bool = False) -> _Profile:
    """Strip ``text``'s string literals and measure what is left (see
    :class:`_Profile`), a slice at a time: linear time, no parsing, no
    recursion, and a few slices of memory. ``enough``: the depth up to which
    ``deepest`` must be exact (``None``: all of it). With ``values_bound``
    the pass stops once the text is known to be a message over
    :data:`MAX_JSON_VALUES`.

    For text that is not valid JSON the answers are meaningless but finite;
    the parser refuses such text anyway. (Up to the first byte that makes it
    invalid they are exact, so a parser never holds more values than the
    bound allows.)
    """
    found = _Profile(0 if enough is None else enough)
    size = len(text)
    for start in range(0, size, _SLICE):
        found.take(text[start : start + _SLICE], start + _SLICE >= size)
        if values_bound and found.top_member and found.values > MAX_JSON_VALUES:
            break
    return found


def _nesting(stream: bytes, depth: int, marked: bool) -> tuple[int, bool, int]:
    """The deepest nesting in a slice's stream (see :func:`_profile`) that
    starts at ``depth``, whether (when ``marked``) a member marker in it is at
    the top level of the outermost object, and the depth at its end. No
    recursion, a span at a time: one list of depths for a whole frame of
    brackets would cost some 40 bytes per byte (an int object each)."""
    deepest, top_member = depth, False
    for start in range(0, len(stream), _SPAN):
        part = stream[start : start + _SPAN]
        depths = list(accumulate(map(sub, part, repeat(1)), initial=depth))
        peak = max(depths)
        deepest = peak if peak > deepest else deepest
        # A member marker adds nothing, so the depth at it is its object's
        # depth (depths[0] is the previous span's last depth: skipped).
        if marked and not top_member:
            top_member = 1 in compress(depths, _markers(part))
        depth = depths[-1]
    return deepest, top_member, depth


def _markers(part: bytes) -> Iterator[bool]:
    yield False
    yield from map(eq, part, repeat(1))


def _opened(text: bytes) -> int:
    """How many objects and arrays ``text`` opens, strings included: more
    than it nests. A slice at a time."""
    return sum(
        text.count(b"[", start, start + _SLICE) + text.count(b"{", start, start + _SLICE)
        for start in range(0, len(text), _SLICE)
    )


def json_depth(text: bytes) -> int:
    """The deepest nesting of objects/arrays in JSON ``text``, without recursion."""
    if _opened(text) <= MAX_JSON_DEPTH:
        # Cannot nest deeper than the number of containers it opens.
        return 0
    return _profile(text, None).deepest


class TooManyValues(ProtocolError):
    """An inbound message over :data:`MAX_JSON_VALUES`. ``request_id`` is the
    request it answers when its ends say so (a reply with an integer id, read
    the way an over-long stdio line is): that request fails alone. Else
    ``None``: the session ends."""

    def __init__(self, message: str, request_id: int | None = None) -> None:
        super().__init__(message)
        self.request_id = request_id


def _reply_id(line: bytes) -> int | None:
    """The id of the request ``line`` answers, read off its ends only."""
    from .oversize import Oversized

    ends = Oversized()
    ends.feed(line)
    if not ends.head_says(True):
        return None
    return ends.request_id if ends.request_id is not None else ends.tail_id()


class _NumberRefused(ValueError):
    pass


def _refuse_constant(name: str) -> Any:
    raise _NumberRefused(f"a frame contains the non-JSON number {name}")


def _finite_float(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        raise _NumberRefused("a frame contains a number that overflows to infinity")
    return value


# An integer literal shorter than this (below 1e308) is always inside a
# double's range.
_SAFE_INT_CHARS = 309


def _finite_int(text: str) -> int:
    if len(text) < _SAFE_INT_CHARS:
        return int(text)
    try:
        value = int(text)
    except ValueError:  # past the interpreter's digit limit: far past a double
        value = _INT_OVERFLOW
    if not -_INT_OVERFLOW < value < _INT_OVERFLOW:
        raise _NumberRefused("a frame contains a number that overflows to infinity")
    return value


def _lenient_parse(text: str) -> Any:
    """Parse only to classify a line whose numbers were refused."""
    return json.loads(text, parse_constant=float, parse_int=lambda _: 0, parse_float=float)


# Built once: json.loads/json.dumps with options build a new codec per call.
# Both decoders refuse the same non-finite numbers.
_STRICT_NUMBERS: dict[str, Any] = {"parse_constant": _refuse_constant, "parse_float": _finite_float}
_DECODER = json.JSONDecoder(**_STRICT_NUMBERS, parse_int=_finite_int)
_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)
_SCAN: Any = getattr(_DECODER, "scan_once")  # noqa: B009 - untyped in typeshed
# A text shorter than _SAFE_INT_CHARS cannot hold an integer that overflows,
# so the scanner's own int (no Python call per integer) is exact for it.
_SCAN_SHORT: Any = getattr(json.JSONDecoder(**_STRICT_NUMBERS), "scan_once")  # noqa: B009


def _unencodable(value: object) -> Any:
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


# orjson (a dependency, loaded by the first session rather than by ``import
# mcp_sync``): a fast first try at both ends, taken only where its answer is
# the one the rules here would give. Anything it refuses, and anything it
# would read or write differently, goes the standard way below. (Except an
# enum.Enum member or a uuid.UUID, which orjson writes by value where json
# refuses it: the argument walk refuses both before anything is encoded.)
_fast_tried = False
_fast_loads: Any = None
_fast_dumps: Any = None
_fast_error: Any = ValueError
_fast_options = 0


def load_fast_json() -> None:
    """Turn on the orjson first try, if orjson is installed (the first call
    only). Each global is set before the one that enables its use."""
    global _fast_tried, _fast_loads, _fast_dumps, _fast_error, _fast_options
    if _fast_tried:
        return
    _fast_tried = True
    try:
        import orjson
    except ImportError:
        return
    # Subclasses of str, int, dict and list (an IntEnum...), dataclasses and
    # datetimes go to ``_unencodable``, so they take the standard way too.
    _fast_options = (
        orjson.OPT_APPEND_NEWLINE
        | orjson.OPT_PASSTHROUGH_SUBCLASS
        | orjson.OPT_PASSTHROUGH_DATACLASS
        | orjson.OPT_PASSTHROUGH_DATETIME
    )
    _fast_error = orjson.JSONDecodeError
    _fast_dumps = orjson.dumps
    _fast_loads = orjson.loads


# The C encoder JSONEncoder.encode builds on every call, built once. Without
# circular-reference markers: arguments were already walked with a depth
# bound (check_arguments), and the envelope is ours.
_c_make_encoder: Any = getattr(json.encoder, "c_make_encoder", None)
_C_ENCODE: Any = (
    _c_make_encoder(
        None, _unencodable, json.encoder.encode_basestring, None, ":", ",", False, False, False
    )
    if _c_make_encoder is not None
    else None
)


def _loads(text: str) -> Any:
    # The common case, a frame with no surrounding whitespace, straight to
    # the C scanner; anything else through the full decoder, which also
    # raises the proper errors.
    try:
        value, end = (_SCAN_SHORT if len(text) < _SAFE_INT_CHARS else _SCAN)(text, 0)
    except StopIteration:
        return _DECODER.decode(text)
    if end != len(text):
        return _DECODER.decode(text)
    return value


def decode_line(line: bytes) -> dict[str, Any] | None:
    """One inbound line as a protocol message, or ``None`` if it is noise.

    Noise is a blank line, text that is not UTF-8 JSON, or JSON that is not an
    object with an own ``jsonrpc`` key. A line that is (or, when it cannot be
    parsed safely, looks like) a protocol message but breaks a rule raises
    :class:`ProtocolError`. Linear in the line's length for every input, and
    a line longer than one slice is looked at a slice at a time (see
    ``_SLICE``), bar the one parse of a frame that passed every bound.
    """
    if len(line) > _SLICE:
        return _decode_long(line)
    # Whether the line could nest past the depth bound, counted cheaply: no
    # deeper than the brackets it opens (a line no longer than the depth limit
    # is not counted at all). It holds fewer values than bytes, so well under
    # the bound on values.
    costly = len(line) > MAX_JSON_DEPTH and line.count(b"[") + line.count(b"{") > MAX_JSON_DEPTH
    if (
        not costly
        and _fast_loads is not None
        # (find, not "in": for bytes, "in" tries the operand as an integer first)
        and line.translate(_DIGITS).find(_LONG_NUMBER) < 0
    ):
        try:
            value = _fast_loads(line)
        except _fast_error:
            pass  # not JSON to orjson (or a number it reads another way): the full rules decide
        else:
            return value if type(value) is dict and "jsonrpc" in value else None
    return _decode_short_slow(line, costly)


def _decode_short_slow(line: bytes, costly: bool) -> dict[str, Any] | None:
    """:func:`decode_line` for a line of one slice that orjson did not
    settle: one that might nest too deep (``costly``), holds a long run of
    digits, or that orjson refused."""
    if not line.lstrip(_WHITESPACE).startswith(b"{"):
        return None  # not an object: noise, whatever else it holds
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError:
        return None
    if costly:
        found = _profile(line)
        if _over_bounds(line, found):
            return None
        if not found.long_number and _fast_loads is not None:
            try:
                value = _fast_loads(line)
            except _fast_error:
                pass
            else:
                return value if type(value) is dict and "jsonrpc" in value else None
    return _standard_message(text, lambda: _names_jsonrpc(text))


def _names_jsonrpc(text: str) -> bool:
    """Whether ``text``, read leniently (any number), is an object naming jsonrpc."""
    try:
        lenient = _lenient_parse(text)
    except ValueError:
        return False
    return isinstance(lenient, dict) and "jsonrpc" in lenient


def _standard_message(text: str, looks_like_message: Callable[[], bool]) -> dict[str, Any] | None:
    """``text`` parsed by the standard parser, if it is a protocol message. A
    number the rules refuse raises :class:`ProtocolError` when
    ``looks_like_message()`` (the frame is noise otherwise)."""
    try:
        value = _loads(text)
    except json.JSONDecodeError:
        return None
    except ValueError as exc:  # a refused number
        if looks_like_message():
            raise ProtocolError(str(exc)) from None
        return None
    if isinstance(value, dict) and "jsonrpc" in value:
        return value
    return None


def _decode_long(line: bytes) -> dict[str, Any] | None:
    """:func:`decode_line` for a line longer than one slice. Every look at
    its bytes is sliced; the one parse is orjson's where its answer is the
    rules' (the standard parser's otherwise: a lone surrogate escape, an
    integer orjson would read as a float), and a frame orjson refuses is
    told apart from noise by where it stopped, not by parsing it again."""
    if _first_byte(line) != b"{":
        return None  # not an object: noise, whatever else it holds
    opened, commas, long_number = _gate(line)
    found: _Profile | None = None
    if opened > MAX_JSON_DEPTH or opened + commas > MAX_JSON_VALUES or long_number:
        # It might break a bound, or hold a long integer: only what lies
        # outside its strings tells.
        found = _profile(line, values_bound=True)
        if _over_bounds(line, found):
            return None
        long_number = found.long_number

    def top_member() -> bool:
        # Whether its top-level object names jsonrpc (profiled once, when asked).
        return (found or _profile(line, values_bound=True)).top_member

    if not long_number and _fast_loads is not None:
        try:
            value = _fast_loads(line)
        except _fast_error as exc:
            refused = _refused_at(line, exc.pos)
            if refused is None:
                return None  # not JSON to either parser
            if refused:
                if top_member():
                    raise ProtocolError(refused) from None
                return None
            # Else the standard parser decides.
        else:
            return value if type(value) is dict and "jsonrpc" in value else None
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError:
        return None
    return _standard_message(text, top_member)


def _over_bounds(line: bytes, found: _Profile) -> bool:
    """Raise if a frame over the bound on values or on depth is a message
    (its top-level object names jsonrpc, and it is UTF-8); True if it is
    noise; False if it is within both bounds."""
    if found.values > MAX_JSON_VALUES:
        # Too costly to parse (memory per value): refused unparsed.
        if found.top_member and _utf8(line):
            raise TooManyValues(
                f"an inbound frame holds more than {MAX_JSON_VALUES} JSON values "
                "(the limit on values per message)",
                _reply_id(line),
            )
        return True
    if found.deepest > MAX_JSON_DEPTH:
        # Too deep to parse without recursion.
        if found.top_member and _utf8(line):
            raise ProtocolError(f"a frame nests deeper than the JSON depth limit of {MAX_JSON_DEPTH}")
        return True
    return False


def _first_byte(line: bytes) -> bytes:
    """The first byte of ``line`` that is not JSON whitespace (empty if none)."""
    size = len(line)
    for start in range(0, size, _SLICE):
        end = _end_of(_LEADING_SPACE.match(line, start, start + _SLICE))
        if end < size and end < start + _SLICE:
            return line[end : end + 1]
    return b""


def _gate(line: bytes) -> tuple[int, int, bool]:
    """The brackets a line opens and its commas, strings included (no fewer
    than it has outside them), and whether it holds a run of 19 digits
    anywhere: the cheap look that spares most frames the full profile."""
    opened = commas = 0
    long_number = False
    tail = b""
    for start in range(0, len(line), _SLICE):
        end = start + _SLICE
        opened += line.count(b"[", start, end) + line.count(b"{", start, end)
        commas += line.count(b",", start, end)
        if not long_number:
            digits = tail + line[start:end].translate(_DIGITS)
            long_number = digits.find(_LONG_NUMBER) >= 0
            tail = digits[-18:]
    return opened, commas, long_number


def _utf8(line: bytes) -> bool:
    """Whether ``line`` is UTF-8, a slice at a time."""
    decoder = codecs.getincrementaldecoder("utf-8")()
    view = memoryview(line)
    try:
        for start in range(0, len(line), _SLICE):
            decoder.decode(view[start : start + _SLICE])
        decoder.decode(b"", True)
    except UnicodeDecodeError:
        return False
    finally:
        view.release()
    return True


# A number as JSON writes it, where orjson stopped: one too large for a
# double is refused as the standard parser's _finite_float refuses it.
_NUMBER = re.compile(rb"-?(?:0|[1-9][0-9]*+)(?:\.[0-9]++)?(?:[eE][-+]?[0-9]++)?")


def _refused_at(line: bytes, pos: int) -> str | None:
    """Why orjson refused ``line`` at ``pos``, in the rules' terms: the
    message for a number the rules refuse too; ``""`` where the standard
    parser reads the text another way (a lone surrogate escape, a number) and
    must decide; ``None`` where both refuse it as JSON (noise)."""
    head = line[pos : pos + 9]
    sign = pos > 0 and line[pos - 1] == 0x2D
    if head.startswith(b"NaN") and not sign:
        return "a frame contains the non-JSON number NaN"
    if head.startswith(b"Infinity"):
        return f"a frame contains the non-JSON number {'-' if sign else ''}Infinity"
    if head.startswith(b"\\u"):
        return ""
    if head[:1] and head[0] in b"-0123456789":
        number = _NUMBER.match(line, pos, pos + 1024)
        if number is not None and number.end() < pos + 1024 and math.isinf(float(number.group())):
            return "a frame contains a number that overflows to infinity"
        return ""
    return None


def error_object(message: dict[str, Any]) -> dict[str, Any] | None:
    """A reply's ``error`` member if it is a well-formed JSON-RPC error
    object (an integer ``code``, a string ``message``), else ``None``."""
    error = message.get("error")
    if (
        isinstance(error, dict)
        and type(error.get("code")) is int
        and isinstance(error.get("message"), str)
    ):
        return error
    return None


def encode(message: dict[str, Any], max_bytes: int) -> bytes:
    """The message as one UTF-8 line, after checking its exact size."""
    if _fast_dumps is not None:
        try:
            data: bytes = _fast_dumps(message, _unencodable, _fast_options)
        except TypeError:
            pass  # a value orjson leaves to us (a big integer, a surrogate...)
        else:
            # orjson writes NaN and the infinities as null, which the rules
            # here refuse: a frame with a null in it is encoded again below.
            if data.find(b"null") < 0:
                if len(data) > max_bytes + 1:
                    raise _frame_too_large(len(data) - 1, max_bytes)
                return data
    try:
        # The C encoder where there is one (every request comes through here).
        text = _ENCODER.encode(message) if _C_ENCODE is None else "".join(_C_ENCODE(message, 0))
        data = text.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidOption("an outgoing string contains a lone surrogate") from None
    except ValueError as exc:
        # NaN and infinities, or an integer past the interpreter's digit limit
        # for int-to-text conversion.
        if "digit" in str(exc):
            raise InvalidOption(
                "an outgoing integer is too large to encode (beyond the range of a JSON number)"
            ) from None
        raise InvalidOption("an outgoing number is NaN or infinite") from None
    if len(data) > max_bytes:
        raise _frame_too_large(len(data), max_bytes)
    return data + b"\n"


def _frame_too_large(size: int, max_bytes: int) -> InvalidOption:
    return InvalidOption(f"an outbound frame of {size} bytes is over max_outbound_frame_bytes={max_bytes}")


_SCALARS = (str, int, float, bool, type(None))
# Values a flat argument dict may hold without the full walk (no float: NaN).
_FLAT = frozenset({str, int, bool, type(None)})


def _too_deep() -> InvalidOption:
    return InvalidOption(f"tool arguments nest deeper than the JSON depth limit of {MAX_JSON_DEPTH}")


def _too_large(max_bytes: int) -> InvalidOption:
    return InvalidOption(f"tool arguments encode to more than max_outbound_frame_bytes={max_bytes}")


def _int_too_large() -> InvalidOption:
    return InvalidOption(
        "tool arguments contain an integer beyond the range of a JSON number (it overflows a double)"
    )


def check_arguments(arguments: object, max_bytes: int) -> None:
    """Refuse tool arguments that cannot be sent, before any copying.

    The root must be a dict with str keys; it sits at depth 3 (envelope,
    ``params``, arguments). Walks iteratively, keeping a lower bound of the
    encoded size and stopping as soon as it passes ``max_bytes``: a small
    graph whose children are shared can expand exponentially when encoded,
    and one huge string must not be encoded only to be refused.
    """
    if not isinstance(arguments, dict):
        raise InvalidOption(
            f"tool arguments must be a dict with str keys, got {type(arguments).__name__}"
        )
    if len(arguments) > 16:
        _walk(arguments, max_bytes)
        return
    # The common flat case, inline (this runs on every call): str, int, bool
    # or None values are checked here; anything else takes the walk.
    size = 0
    for key, value in arguments.items():
        kind = type(value)
        if type(key) is not str or kind not in _FLAT:
            _walk(arguments, max_bytes)
            return
        if kind is str:
            size += len(key) + len(value)
        elif kind is int and not -_INT_OVERFLOW < value < _INT_OVERFLOW:
            raise _int_too_large()
    if size > max_bytes:
        raise _too_large(max_bytes)
    # encode() checks the exact size


def _walk(arguments: dict[Any, Any], max_bytes: int) -> None:
    budget = max_bytes
    stack: list[tuple[object, int]] = [(arguments, 3)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, str):
            budget -= len(value) + 2
        elif isinstance(value, dict):
            if depth > MAX_JSON_DEPTH:
                raise _too_deep()
            budget -= 2 + len(value)
            for key, item in value.items():
                if not isinstance(key, str):
                    raise InvalidOption(
                        f"tool arguments have a key of type {type(key).__name__}; keys must be str"
                    )
                budget -= len(key) + 3
                stack.append((item, depth + 1))
        elif isinstance(value, (list, tuple)):
            if depth > MAX_JSON_DEPTH:
                raise _too_deep()
            budget -= 2 + len(value)
            stack.extend((item, depth + 1) for item in value)
        elif isinstance(value, float):
            if not math.isfinite(value):
                raise InvalidOption("tool arguments contain NaN or an infinite number")
            budget -= 1
        elif isinstance(value, int) and not isinstance(value, bool):
            if not -_INT_OVERFLOW < value < _INT_OVERFLOW:
                raise _int_too_large()
            budget -= 1
        elif isinstance(value, _SCALARS):
            budget -= 1
        else:
            raise InvalidOption(
                f"tool arguments contain a value of type {type(value).__name__}, "
                "which JSON cannot carry"
            )
        if budget < 0:
            raise _too_large(max_bytes)
