"""JSON-RPC frame rules: decoding and classifying inbound lines, checking and
encoding outbound messages. Pure functions; no I/O and no session state."""

from __future__ import annotations

import json
import math
import re
from itertools import accumulate, repeat
from operator import sub
from typing import Any

from ._errors import ProtocolError
from ._limits import MAX_JSON_DEPTH

__all__ = [
    "check_arguments",
    "decode_line",
    "encode",
    "json_depth",
]

# A complete JSON string literal, written as an unrolled loop so the regex
# engine runs in linear time.
_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
# Brackets become 2 (open) or 0 (close); everything else is deleted. After
# subtracting 1, a running sum is the nesting depth.
_OPEN_CLOSE = bytes.maketrans(b"[{]}", b"\x02\x02\x00\x00")
_NOT_BRACKET = bytes(b for b in range(256) if b not in b"[]{}")


def json_depth(text: bytes) -> int:
    """The deepest nesting of objects/arrays in JSON ``text``, without recursion.

    Brackets inside string literals are ignored. For invalid JSON the answer
    is meaningless but finite; the parser rejects such text anyway.
    """
    if text.count(b"[") + text.count(b"{") <= MAX_JSON_DEPTH:
        # Cannot nest deeper than the number of containers it opens.
        return 0
    brackets = _STRING.sub(b"", text).translate(_OPEN_CLOSE, _NOT_BRACKET)
    if not brackets:
        return 0
    depth: int = max(accumulate(map(sub, brackets, repeat(1))))
    return depth


class _NumberRefused(ValueError):
    pass


def _refuse_constant(name: str) -> Any:
    raise _NumberRefused(f"a frame contains the non-JSON number {name}")


def _finite_float(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        raise _NumberRefused("a frame contains a number that overflows to infinity")
    return value


def _lenient_parse(text: str) -> Any:
    """Parse only to classify a line whose numbers were refused."""
    return json.loads(text, parse_constant=float, parse_int=lambda _: 0, parse_float=float)


# Built once: json.loads/json.dumps with options build a new codec per call.
_DECODER = json.JSONDecoder(parse_constant=_refuse_constant, parse_float=_finite_float)
_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)
_SCAN: Any = getattr(_DECODER, "scan_once")  # noqa: B009 - untyped in typeshed


def _unencodable(value: object) -> Any:
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


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


def _dumps(message: dict[str, Any]) -> str:
    if _C_ENCODE is None:
        return _ENCODER.encode(message)
    return "".join(_C_ENCODE(message, 0))


def _loads(text: str) -> Any:
    # The common case, a frame with no surrounding whitespace, straight to
    # the C scanner; anything else through the full decoder, which also
    # raises the proper errors.
    try:
        value, end = _SCAN(text, 0)
    except StopIteration:
        return _DECODER.decode(text)
    if end != len(text):
        return _DECODER.decode(text)
    return value


def decode_line(line: bytes) -> dict[str, Any] | None:
    """One stdout line as a protocol message, or ``None`` if it is noise.

    Noise is a blank line, text that is not UTF-8 JSON, or JSON that is not an
    object with an own ``jsonrpc`` key. A line that is (or, when it cannot be
    parsed safely, looks like) a protocol message but breaks a rule raises
    :class:`ProtocolError`.
    """
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError:
        return None
    if json_depth(line) > MAX_JSON_DEPTH:
        # Too deep to parse without recursion. An object might be a message.
        if text.lstrip().startswith("{"):
            raise ProtocolError(
                f"a frame nests deeper than the JSON depth limit of {MAX_JSON_DEPTH}"
            )
        return None
    try:
        value = _loads(text)
    except json.JSONDecodeError:
        return None
    except ValueError as exc:  # a refused number, or an integer past the digit limit
        try:
            lenient = _lenient_parse(text)
        except ValueError:
            return None
        if isinstance(lenient, dict) and "jsonrpc" in lenient:
            reason = (
                str(exc)
                if isinstance(exc, _NumberRefused)
                else "a frame contains an integer with too many digits"
            )
            raise ProtocolError(reason) from None
        return None
    if isinstance(value, dict) and "jsonrpc" in value:
        return value
    return None


def encode(message: dict[str, Any], max_bytes: int) -> bytes:
    """The message as one UTF-8 line, after checking its exact size."""
    try:
        data = _dumps(message).encode("utf-8")
    except UnicodeEncodeError:
        raise ProtocolError("an outgoing string contains a lone surrogate") from None
    except ValueError:
        raise ProtocolError("an outgoing number is NaN or infinite") from None
    if len(data) > max_bytes:
        raise ProtocolError(
            f"an outbound frame of {len(data)} bytes is over "
            f"max_outbound_frame_bytes={max_bytes}"
        )
    return data + b"\n"


_SCALARS = (str, int, float, bool, type(None))
# Values a flat argument dict may hold without the full walk (no float: NaN).
_FLAT = frozenset({str, int, bool, type(None)})


def check_arguments(arguments: object, max_bytes: int) -> None:
    """Refuse tool arguments that cannot be sent, before any copying.

    The root must be a dict with str keys; it sits at depth 3 (envelope,
    ``params``, arguments). Walks iteratively, keeping a lower bound of the
    encoded size and stopping as soon as it passes ``max_bytes``: a small
    graph whose children are shared can expand exponentially when encoded.
    """
    if not isinstance(arguments, dict):
        raise ProtocolError(
            f"tool arguments must be a dict with str keys, got {type(arguments).__name__}"
        )
    if len(arguments) <= 16 and all(
        type(key) is str and type(value) in _FLAT for key, value in arguments.items()
    ):
        return  # flat: nothing to expand, and encode() checks the exact size
    budget = max_bytes
    stack: list[tuple[object, int]] = [(arguments, 3)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, str):
            budget -= len(value) + 2
        elif isinstance(value, dict):
            if depth > MAX_JSON_DEPTH:
                raise ProtocolError(
                    f"tool arguments nest deeper than the JSON depth limit of {MAX_JSON_DEPTH}"
                )
            budget -= 2 + len(value)
            for key, item in value.items():
                if not isinstance(key, str):
                    raise ProtocolError(
                        f"tool arguments have a key of type {type(key).__name__}; keys must be str"
                    )
                budget -= len(key) + 3
                stack.append((item, depth + 1))
        elif isinstance(value, (list, tuple)):
            if depth > MAX_JSON_DEPTH:
                raise ProtocolError(
                    f"tool arguments nest deeper than the JSON depth limit of {MAX_JSON_DEPTH}"
                )
            budget -= 2 + len(value)
            stack.extend((item, depth + 1) for item in value)
        elif isinstance(value, float):
            if not math.isfinite(value):
                raise ProtocolError("tool arguments contain NaN or an infinite number")
            budget -= 1
        elif isinstance(value, _SCALARS):
            budget -= 1
        else:
            raise ProtocolError(
                f"tool arguments contain a value of type {type(value).__name__}, "
                "which JSON cannot carry"
            )
        if budget < 0:
            raise ProtocolError(
                f"tool arguments encode to more than max_outbound_frame_bytes={max_bytes}"
            )
