"""JSON-RPC frame rules: decoding and classifying inbound lines, checking and
encoding outbound messages. Pure functions; no I/O and no session state."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator
from itertools import accumulate, compress, repeat
from operator import eq, sub
from typing import Any

from ._errors import InvalidOption, ProtocolError
from ._limits import MAX_JSON_DEPTH, MAX_JSON_VALUES

__all__ = [
    "TooManyValues",
    "check_arguments",
    "decode_line",
    "encode",
    "error_object",
    "json_depth",
]

# One JSON string literal, or the unterminated rest of the text after a quote.
# Possessive quantifiers and an ending that cannot fail make every match run
# straight ahead: each byte is looked at once, whatever the input, so a
# hostile line (an unterminated string of escaped quotes) costs linear time.
_STRING_BODY = rb'[^"\\]*+(?:\\.[^"\\]*+)*+(?:"|\\?\Z)'


def _letter(code: int) -> bytes:
    """A pattern for one ASCII letter inside a string literal: itself, or its
    ``\\u00XX`` escape (hex digits of either case)."""
    high, low = divmod(code, 16)
    return b"(?:%c|\\\\u00%x[%x%X])" % (code, high, low, low)


# A string literal that decodes to "jsonrpc", spelled plainly or with escapes.
_JSONRPC_KEY = b'"' + b"".join(_letter(code) for code in b"jsonrpc") + b'"'
# Every string literal goes; one that spells "jsonrpc" stays, for the top-level check.
_STRINGS = re.compile(rb"(?P<key>" + _JSONRPC_KEY + rb')|"' + _STRING_BODY, re.DOTALL)
# A kept "jsonrpc" literal followed by a colon is a member name.
_MEMBER = re.compile(rb'"[^"]*+"[ \t\r\n]*+:')
# Brackets become 2 (open) or 0 (close), a member marker (NUL) 1; the rest goes.
# After subtracting 1, a running sum is the nesting depth.
_TRANSLATE = bytes.maketrans(b"[{]}\0", b"\x02\x02\x00\x00\x01")
_DELETE = bytes(b for b in range(256) if b not in b"[]{}\0")
_WHITESPACE = b" \t\r\n"
_SPAN = 65536
# Member markers whose depth is counted before walking the whole frame.
_MARKERS_COUNTED = 8
# The smallest integer that a double cannot hold: float() of it overflows.
_INT_OVERFLOW = 2**1024 - 2**970


def _scan(text: bytes) -> tuple[bytes, int]:
    """``text`` reduced to its brackets and ``jsonrpc`` member markers (see
    :func:`_nesting`), and how many values it holds, counted as the commas and
    opening brackets outside string literals. Linear time, no parsing."""
    kept = _STRINGS.sub(rb"\g<key>", text.replace(b"\0", b""))
    values = kept.count(b",") + kept.count(b"[") + kept.count(b"{")
    return _MEMBER.sub(b"\0", kept).translate(_TRANSLATE, _DELETE), values


def _nesting(stream: bytes, enough: int | None = None) -> tuple[int, bool]:
    """The deepest nesting of a :func:`_scan` stream and whether its
    top-level object has a member named ``jsonrpc``: linear time, no
    recursion. With ``enough``, the walk stops once both answers are known:
    deeper than that, and a top-level ``jsonrpc`` member."""
    deepest, top_member, depth = 0, False, 0
    # A span at a time: one list of depths for a whole frame of brackets
    # cost some 40 bytes per byte (an int object each), gigabytes at the
    # frame limit.
    for start in range(0, len(stream), _SPAN):
        part = stream[start : start + _SPAN]
        depths = list(accumulate(map(sub, part, repeat(1)), initial=depth))
        peak = max(depths)
        deepest = peak if peak > deepest else deepest
        # A member marker adds nothing, so the depth at it is its object's
        # depth (depths[0] is the previous span's last depth: skipped).
        if not top_member:
            top_member = 1 in compress(depths, _markers(part))
        depth = depths[-1]
        if enough is not None and top_member and deepest > enough:
            break
    return deepest, top_member


def _depth_profile(text: bytes, enough: int | None = None) -> tuple[int, bool]:
    """The deepest nesting of ``text`` and whether its top-level object has a
    member named ``jsonrpc``: linear time, no recursion, no parsing.

    Brackets inside string literals are ignored. For invalid JSON the answer
    is meaningless but finite; the parser rejects such text anyway.
    """
    return _nesting(_scan(text)[0], enough)


def _top_member(stream: bytes) -> bool:
    """Whether a :func:`_scan` stream's top-level object has a ``jsonrpc``
    member: the depth at each of the first few markers, by counting (a
    frame holds one or two), else the whole walk."""
    at = stream.find(1)
    for _ in range(_MARKERS_COUNTED):
        if at == -1:
            return False
        if stream.count(2, 0, at) - stream.count(0, 0, at) == 1:
            return True
        at = stream.find(1, at + 1)
    return at != -1 and _nesting(stream)[1]


def _markers(part: bytes) -> Iterator[bool]:
    yield False
    yield from map(eq, part, repeat(1))


def json_depth(text: bytes) -> int:
    """The deepest nesting of objects/arrays in JSON ``text``, without recursion."""
    if text.count(b"[") + text.count(b"{") <= MAX_JSON_DEPTH:
        # Cannot nest deeper than the number of containers it opens.
        return 0
    return _depth_profile(text)[0]


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
    from ._transports._oversize import Oversized

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
# Digits become "0", everything else ".": a run of 19 zeros marks a number
# that may be an integer past 64 bits, which orjson reads as a float.
_DIGITS = bytes(48 if 48 <= b <= 57 else 46 for b in range(256))
_LONG_NUMBER = b"0" * 19


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
    :class:`ProtocolError`. Linear in the line's length for every input.
    """
    # Whether the line could break the bound on values or on depth, counted
    # cheaply: it holds no more values than bytes (commas are only counted
    # past MAX_JSON_VALUES bytes), and nests no deeper than the brackets it
    # opens (a line no longer than the depth limit is not counted at all).
    size = len(line)
    costly = False
    if size > MAX_JSON_DEPTH:
        opened = line.count(b"[") + line.count(b"{")
        costly = opened > MAX_JSON_DEPTH or (
            size > MAX_JSON_VALUES and opened + line.count(b",") > MAX_JSON_VALUES
        )
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
    if not line.lstrip(_WHITESPACE).startswith(b"{"):
        return None  # not an object: noise, whatever else it holds
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError:
        return None
    if costly:
        stream, values = _scan(line)
        if values > MAX_JSON_VALUES:
            # Too costly to parse (memory per value): refused unparsed, a
            # message only if its top-level object names jsonrpc.
            if _top_member(stream):
                raise TooManyValues(
                    f"an inbound frame holds more than {MAX_JSON_VALUES} JSON values "
                    "(the limit on values per message)",
                    _reply_id(line),
                )
            return None
        depth, has_jsonrpc = _nesting(stream, MAX_JSON_DEPTH)
        del stream
        if depth > MAX_JSON_DEPTH:
            # Too deep to parse without recursion: a message only if its
            # top-level object names jsonrpc (else it is noise).
            if has_jsonrpc:
                raise ProtocolError(
                    f"a frame nests deeper than the JSON depth limit of {MAX_JSON_DEPTH}"
                )
            return None
    try:
        value = _loads(text)
    except json.JSONDecodeError:
        return None
    except ValueError as exc:  # a refused number
        try:
            lenient = _lenient_parse(text)
        except ValueError:
            return None
        if isinstance(lenient, dict) and "jsonrpc" in lenient:
            raise ProtocolError(str(exc)) from None
        return None
    if isinstance(value, dict) and "jsonrpc" in value:
        return value
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
