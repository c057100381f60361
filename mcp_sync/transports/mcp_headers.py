"""HTTP request headers of the 2026-07-28 Streamable HTTP transport (SEP-2243).

Every POST mirrors parts of its JSON-RPC body into headers, so that load
balancers and gateways can route without parsing the body:

- ``Mcp-Method``: the request's ``method``;
- ``Mcp-Name``: ``params.name`` (``tools/call``, ``prompts/get``),
  ``params.uri`` (``resources/read``) or ``params.taskId`` (the tasks
  extension's ``tasks/get``, ``tasks/update``, ``tasks/cancel``);
- ``Mcp-Param-{Name}``: each tool argument whose property schema declares
  ``"x-mcp-header": "{Name}"``.

A value that is not plain, printable ASCII without surrounding whitespace is
sent as ``=?base64?{UTF-8, base64}?=``. A tool whose ``x-mcp-header``
declarations break the revision's rules is left out of the catalog
(:func:`header_bindings` says why); the rest of the catalog is kept.

Pure functions; nothing here does I/O.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Mapping
from typing import Any

from ..protocol.errors import ProtocolError
from ..protocol.limits import MAX_SAFE_INTEGER

__all__ = [
    "Binding",
    "InvalidHeaders",
    "encode_value",
    "header_bindings",
    "param_headers",
    "standard_headers",
]

# RFC 9110 §5.6.2 token characters.
_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+\Z")
# Printable ASCII: what a header value may carry as it is.
_PLAIN = re.compile(r"[\x20-\x7e]*\Z")
_SENTINEL = re.compile(r"=\?base64\?.*\?=\Z", re.DOTALL)
_PRIMITIVE = ("string", "integer", "boolean")
# Keywords whose values are data, never schemas: an "x-mcp-header" key inside
# them is not a declaration.
_DATA_KEYWORDS = frozenset({"enum", "const", "default", "examples"})
_NAME_SOURCE = {
    "tools/call": "name",
    "prompts/get": "name",
    "resources/read": "uri",
    # The tasks extension (SEP-2663): routed by task, so a task's requests
    # reach the instance holding it.
    "tasks/get": "taskId",
    "tasks/update": "taskId",
    "tasks/cancel": "taskId",
}

Binding = tuple[tuple[str, ...], str]
"""Where an argument lives (the chain of ``properties`` keys) and its header name."""


class InvalidHeaders(ValueError):
    """A tool's ``x-mcp-header`` declarations break the rules; the message says how."""


def encode_value(value: str) -> str:
    """``value`` as a header value: as it is when that is safe, else the
    ``=?base64?...?=`` form (which a plain value that looks like it gets too)."""
    if (
        _PLAIN.match(value)
        and value == value.strip(" ")
        and not _SENTINEL.match(value)
    ):
        return value
    encoded = base64.b64encode(value.encode("utf-8", "surrogatepass")).decode("ascii")
    return f"=?base64?{encoded}?="


def standard_headers(version: str, method: str, params: Mapping[str, Any]) -> dict[str, str]:
    """``MCP-Protocol-Version``, ``Mcp-Method`` and, where the method names
    something, ``Mcp-Name``."""
    headers = {"MCP-Protocol-Version": version, "Mcp-Method": method}
    source = _NAME_SOURCE.get(method)
    if source is not None:
        name = params.get(source)
        if isinstance(name, str):
            headers["Mcp-Name"] = encode_value(name)
    return headers


def header_bindings(schema: Mapping[str, Any]) -> tuple[Binding, ...]:
    """Every ``x-mcp-header`` declaration of a tool's ``inputSchema``, or
    :class:`InvalidHeaders` when one of them breaks the rules: a name that is
    empty or not an HTTP token, the same name twice (ignoring case), a
    property that is not a string, integer or boolean, or a declaration not
    reachable from the root through ``properties`` alone.

    Iterative: a schema nests at most as deep as its frame (128).
    """
    found: list[Binding] = []
    # (node, path from the root through "properties", or None once off that chain)
    stack: list[tuple[Any, tuple[str, ...] | None]] = [(schema, ())]
    while stack:
        node, path = stack.pop()
        if isinstance(node, (list, tuple)):
            stack.extend((item, None) for item in node)
            continue
        if not isinstance(node, Mapping):
            continue
        for key, value in node.items():
            if key == "x-mcp-header":
                found.append(_declaration(node, value, path))
            elif key == "properties" and isinstance(value, Mapping):
                for name, sub in value.items():
                    stack.append((sub, None if path is None else (*path, name)))
            elif key not in _DATA_KEYWORDS:
                stack.append((value, None))
    seen: set[str] = set()
    for _, name in found:
        folded = name.lower()
        if folded in seen:
            raise InvalidHeaders(f"x-mcp-header {name} is declared twice (names ignore case)")
        seen.add(folded)
    return tuple(found)


def _declaration(node: Mapping[str, Any], value: object, path: tuple[str, ...] | None) -> Binding:
    if not isinstance(value, str) or not value:
        raise InvalidHeaders("an x-mcp-header value is empty or not a string")
    if not _TOKEN.match(value):
        raise InvalidHeaders("an x-mcp-header value is not an HTTP field-name token")
    if path is None or not path:
        raise InvalidHeaders(
            f"x-mcp-header {value} is not on a property reached through properties alone"
        )
    kind = node.get("type")
    if kind not in _PRIMITIVE:
        raise InvalidHeaders(
            f"x-mcp-header {value} is on a property whose type is not string, integer or boolean"
        )
    return path, value


def param_headers(bindings: tuple[Binding, ...], arguments: Mapping[str, Any]) -> dict[str, str]:
    """The ``Mcp-Param-*`` headers of one call. An argument that is absent or
    ``null`` sends no header; one that no header can carry (an object, a
    non-integral number, an integer beyond 2**53-1) is refused before
    anything is sent."""
    headers: dict[str, str] = {}
    for path, name in bindings:
        value: Any = arguments
        for step in path:
            value = value.get(step) if isinstance(value, Mapping) else None
            if value is None:
                break
        if value is None:
            continue
        headers[f"Mcp-Param-{name}"] = _header_value(value, name)
    return headers


def _header_value(value: object, name: str) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, int):
        if abs(value) > MAX_SAFE_INTEGER:
            raise ProtocolError(
                f"the argument mirrored into header Mcp-Param-{name} is an integer "
                "beyond 2**53-1"
            )
        return str(value)
    if isinstance(value, str):
        return encode_value(value)
    raise ProtocolError(
        f"the argument mirrored into header Mcp-Param-{name} is a {type(value).__name__}; "
        "it must be a string, an integer or a boolean"
    )
