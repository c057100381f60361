"""The tool catalog: entry and name rules, deep freezing, result shapes."""

from __future__ import annotations

import json
import logging
import re
import unicodedata
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from .errors import InvalidResponse
from .limits import Limits

if TYPE_CHECKING:
    from pydantic import BaseModel

__all__ = [
    "CallToolResult",
    "CatalogWalk",
    "Icon",
    "PageWalk",
    "ServerInfo",
    "Snapshot",
    "Tool",
    "Tools",
    "bounded_instructions",
    "check_tool_name",
    "entry_extras",
    "forbidden_char",
    "freeze",
    "parse_call_result",
    "parse_icons",
    "result_meta",
    "thaw",
    "ui_uri",
]

# A tool name may not contain "/", a Unicode Cc control (C0, DEL, C1), a Cf
# format character (zero-width marks, bidi overrides and isolates, soft hyphen,
# BOM, tags...), U+2028/U+2029 or a lone surrogate. ASCII names, the common
# case, are checked by one regex; others character by character.
# The same rule, without "/", holds for a session's label and for each
# segment of a flow name or pattern (protocol.flow_declarations).
_ASCII_FORBIDDEN = re.compile(r"[\x00-\x1f\x7f/]")
_ASCII_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def forbidden_char(text: str, *, allow_slash: bool = False) -> str | None:
    """The first character of ``text`` a tool name may not hold, if any
    (``/`` counted only when ``allow_slash`` is false)."""
    if text.isascii():
        found = (_ASCII_CONTROL if allow_slash else _ASCII_FORBIDDEN).search(text)
        return found.group() if found else None
    for ch in text:
        if (
            (ch == "/" and not allow_slash)
            or ch in "\u2028\u2029"
            or "\ud800" <= ch <= "\udfff"
            or unicodedata.category(ch) in ("Cc", "Cf")
        ):
            return ch
    return None


def check_tool_name(name: object, max_bytes: int) -> str:
    """``name`` if it is an acceptable tool name, else :class:`InvalidResponse`."""
    if not isinstance(name, str):
        raise InvalidResponse("a tool name is not a string")
    if not name:
        raise InvalidResponse("a tool name is empty")
    if name in (".", ".."):
        raise InvalidResponse(f"tool name {name!a} is a path segment")
    bad = forbidden_char(name)
    if bad is not None:
        raise InvalidResponse(
            f"tool name {name!a} contains the forbidden character U+{ord(bad):04X}"
        )
    size = len(name.encode("utf-8", "surrogatepass"))
    if size > max_bytes:
        raise InvalidResponse(
            f"tool name {name[:40]!a}... is {size} bytes, over max_tool_name_bytes={max_bytes}"
        )
    return name


_ATOMS = frozenset({str, int, float, bool, type(None)})


def freeze(value: Any) -> Any:
    """A deep read-only copy: dicts become mappingproxies, lists tuples.

    Recursive, but only ever given decoded JSON, whose depth the frame rules
    already bounded (128).
    """
    # Plain loops, not comprehensions: each comprehension is a function call
    # of its own, and every call's result content comes through here.
    atoms = _ATOMS
    if isinstance(value, dict):
        copy: dict[Any, Any] = {}
        for k, v in value.items():
            copy[k] = v if type(v) in atoms else freeze(v)
        return MappingProxyType(copy)
    if isinstance(value, (list, tuple)):
        items: list[Any] = []
        for v in value:
            items.append(v if type(v) in atoms else freeze(v))
        return tuple(items)
    return value


def freeze_decoded(value: Any) -> Any:
    """:func:`freeze` for JSON just decoded, which nothing else holds: its
    dicts are wrapped in place (no copy), its lists become tuples."""
    # (Plain loops: for the few values of a content block they cost less
    # than a C-level pass such as issuperset(map(type, ...)), and than enumerate.)
    atoms = _ATOMS
    kind = type(value)
    if kind is dict:
        for k, v in value.items():  # (replacing a value does not resize the dict)
            if type(v) not in atoms:
                value[k] = freeze_decoded(v)
        return MappingProxyType(value)
    if kind is list:
        i = 0
        for v in value:
            if type(v) is dict:
                for item in v.values():
                    if type(item) not in atoms:
                        value[i] = freeze_decoded(v)
                        break
                else:
                    value[i] = MappingProxyType(v)  # the common content block, without a call
            elif type(v) not in atoms:
                value[i] = freeze_decoded(v)
            i += 1  # noqa: SIM113 - enumerate costs an object per call
        return tuple(value)
    return value


def thaw(value: Any) -> Any:
    """A plain, mutable deep copy of a frozen value (dicts and lists), e.g. for ``json.dumps``."""
    if isinstance(value, Mapping):
        return {k: thaw(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [thaw(v) for v in value]
    return value


# An icon's src is kept only with one of the schemes the specification names
# (an http(s) URL or an image as a data: URI): a javascript:, file: or ui: src
# is not an icon, and a host that shows icons must never be handed one.
_ICON_SCHEMES = ("https://", "http://", "data:image/")


@dataclass(frozen=True, slots=True)
class Icon:
    """One icon the server offers for itself, a tool, a resource, a template
    or a prompt. ``src`` is an ``https:``/``http:`` URL or a ``data:image/...``
    URI: data, never fetched by the library (a host that shows it decides
    whether to load it; an SVG can carry script). ``sizes`` are ``"48x48"``-style
    strings or ``"any"``; ``theme`` is ``"light"`` or ``"dark"`` (the
    background the icon is drawn for), ``None`` for any."""

    src: str
    mime_type: str | None = None
    sizes: tuple[str, ...] | None = None
    theme: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The icon as MCP JSON (``src``, ``mimeType``, ``sizes``, ``theme``)."""
        out: dict[str, Any] = {"src": self.src}
        if self.mime_type is not None:
            out["mimeType"] = self.mime_type
        if self.sizes is not None:
            out["sizes"] = list(self.sizes)
        if self.theme is not None:
            out["theme"] = self.theme
        return out


def _icon(item: object) -> Icon | None:
    if not isinstance(item, dict):
        return None
    src = item.get("src")
    # A URI has no control, format or space character; the scheme is checked
    # on a short prefix, so a long data: URI costs one pass of isprintable.
    if (
        not isinstance(src, str)
        or not src[:16].lower().startswith(_ICON_SCHEMES)
        or not src.isprintable()
        or " " in src
    ):
        return None
    mime, sizes, theme = item.get("mimeType"), item.get("sizes"), item.get("theme")
    return Icon(
        src=src,
        mime_type=mime if isinstance(mime, str) else None,
        sizes=tuple(size for size in sizes if isinstance(size, str)) if isinstance(sizes, list) else None,
        theme=theme if theme in ("light", "dark") else None,
    )


def parse_icons(value: object) -> tuple[Icon, ...]:
    """The server's ``icons`` array as :class:`Icon` values: an entry that is
    not an object with an acceptable ``src`` is left out, anything but an
    array counts as none."""
    if not isinstance(value, list):
        return ()
    icons = []
    for item in value:
        icon = _icon(item)
        if icon is not None:
            icons.append(icon)
    return tuple(icons)


def _json_bytes(value: object) -> int:
    return len(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "surrogatepass"))


def entry_extras(
    entry: Mapping[str, Any], limit: int, server: str, what: Callable[[], str]
) -> tuple[tuple[Icon, ...], Mapping[str, Any] | None]:
    """The ``icons`` and ``_meta`` of a listed entry (a tool, resource,
    template, prompt, or the server's own description), frozen. Kept only
    when together they fit in ``limit`` (``max_tool_document_bytes``) bytes of
    JSON: past it both are dropped, with a warning naming ``what()``, and the
    entry is kept without them."""
    raw_icons, meta = entry.get("icons"), entry.get("_meta")
    if raw_icons is None and meta is None:
        return (), None  # the common entry: nothing to measure
    if not isinstance(meta, dict):
        meta = None
    icons = parse_icons(raw_icons)
    if not icons and meta is None:
        return (), None
    size = (_json_bytes(raw_icons) if icons else 0) + (_json_bytes(meta) if meta is not None else 0)
    if size > limit:
        logging.getLogger("mcp_sync.session").warning(
            "server %r sent %d bytes of icons and _meta for %s, over max_tool_document_bytes=%d; "
            "the entry is kept without them",
            server, size, what(), limit,
            extra={"mcp_event": "metadata_dropped", "mcp_server": server},
        )  # fmt: skip
        return (), None
    return icons, freeze(meta) if meta is not None else None


def result_meta(result: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """A result's ``_meta`` object, frozen (a copy), or ``None``. Bounded like
    the rest of the result, by the frame rules."""
    meta = result.get("_meta")
    return freeze(meta) if type(meta) is dict else None


def ui_uri(meta: Mapping[str, Any] | None) -> str | None:
    """The ``ui://`` URI of an MCP App in a tool's ``_meta``: ``ui.resourceUri``,
    or the older flat key ``"ui/resourceUri"``; ``None`` when neither is a
    ``ui://`` URI without control, format or space characters."""
    if meta is None:
        return None
    nested = meta.get("ui")
    uri = nested.get("resourceUri") if isinstance(nested, Mapping) else None
    if not isinstance(uri, str):
        uri = meta.get("ui/resourceUri")
    if (
        isinstance(uri, str)
        and uri[:5].lower() == "ui://"
        and len(uri) > 5
        and uri.isprintable()
        and " " not in uri
    ):
        return uri
    return None


@dataclass(frozen=True, slots=True)
class ServerInfo:
    """What the server disclosed about itself in ``initialize`` (or
    ``server/discover``): untrusted text. ``instructions`` is what the server
    asks a model to know about using it, at most ``max_tool_document_bytes``
    UTF-8 bytes. ``icons``, ``description`` and ``website_url`` are its
    ``serverInfo``'s; ``meta`` is the ``_meta`` of the result that opened the
    session (frozen)."""

    name: str
    version: str
    title: str | None = None
    instructions: str | None = None
    icons: tuple[Icon, ...] = ()
    description: str | None = None
    website_url: str | None = None
    meta: Mapping[str, Any] | None = None


def bounded_instructions(server: str, limits: Limits, value: object) -> str | None:
    """The ``instructions`` of an opening result: a string (anything else is
    ignored) of at most ``max_tool_document_bytes`` UTF-8 bytes, cut at a
    character boundary past it (a warning says so). Logged only redacted."""
    if not isinstance(value, str) or not value:
        return None
    log = logging.getLogger("mcp_sync.session")
    limit = limits.max_tool_document_bytes
    encoded = value.encode("utf-8", "surrogatepass")
    if len(encoded) > limit:
        value = encoded[:limit].decode("utf-8", "ignore")
        log.warning(
            "server %r sent %d bytes of instructions; kept the first %d (max_tool_document_bytes)",
            server, len(encoded), limit,
            extra={"mcp_event": "instructions_cut", "mcp_server": server},
        )  # fmt: skip
    if log.isEnabledFor(logging.DEBUG):
        from .redaction import redact  # only when debugging: the common path imports nothing

        log.debug(
            "server %r sent instructions: %s", server, redact(value[:200]),
            extra={"mcp_event": "instructions", "mcp_server": server},
        )  # fmt: skip
    return value


@dataclass(frozen=True, slots=True)
class Tool:
    """One catalog entry. Schemas are deep-frozen; :meth:`to_dict` thaws a copy."""

    name: str
    description: str | None
    input_schema: Mapping[str, Any]
    output_schema: Mapping[str, Any] | None = None
    title: str | None = None
    annotations: Mapping[str, Any] | None = None
    execution: Mapping[str, Any] | None = None
    """The server's ``execution`` object (``taskSupport`` lives here), frozen."""
    icons: tuple[Icon, ...] = ()
    meta: Mapping[str, Any] | None = None
    """The entry's ``_meta`` object, frozen (vendor data, an MCP App's ``ui``)."""

    @property
    def ui_resource_uri(self) -> str | None:
        """Where the tool's MCP App lives: the ``ui://`` resource named by
        ``_meta.ui.resourceUri`` (or the older ``_meta["ui/resourceUri"]``),
        to read with ``read_resource``; ``None`` when the tool has none."""
        return ui_uri(self.meta)

    @property
    def task_support(self) -> str:
        """``"required"``, ``"optional"`` or ``"forbidden"`` (the default when
        the server said nothing or something unknown)."""
        value = self.execution.get("taskSupport") if self.execution is not None else None
        return value if value in ("required", "optional") else "forbidden"

    def output_model(self) -> type[BaseModel]:
        """A pydantic model class built from :attr:`output_schema`, for
        ``call_tool(..., result_type=...)``: plain objects, arrays, primitives,
        string enums, ``T | null`` and local ``$defs`` refs. Raises
        :class:`NotSupported` naming the keyword and place it cannot build
        (``oneOf``, a recursive ``$ref``...), or when there is no schema.
        Builds a new class each call: keep the one you use."""
        from .typed_results import output_model

        return output_model(self)  # type: ignore[no-any-return]

    def to_dict(self) -> dict[str, Any]:
        """The entry as plain, mutable MCP JSON (camelCase keys)."""
        out: dict[str, Any] = {"name": self.name, "inputSchema": thaw(self.input_schema)}
        if self.title is not None:
            out["title"] = self.title
        if self.description is not None:
            out["description"] = self.description
        if self.output_schema is not None:
            out["outputSchema"] = thaw(self.output_schema)
        if self.annotations is not None:
            out["annotations"] = thaw(self.annotations)
        if self.execution is not None:
            out["execution"] = thaw(self.execution)
        if self.icons:
            out["icons"] = [icon.to_dict() for icon in self.icons]
        if self.meta is not None:
            out["_meta"] = thaw(self.meta)
        return out

    def _repr_mimebundle_(self, include: object = None, exclude: object = None) -> dict[str, str]:
        """Jupyter's display: the entry, its parameters and its schemas."""
        from .display import bundle

        return bundle(self)


class Tools(tuple[Tool, ...]):
    """A catalog snapshot's tools, in the server's order: a plain tuple that
    Jupyter shows as a table of each tool's parameters."""

    __slots__ = ()

    def _repr_mimebundle_(self, include: object = None, exclude: object = None) -> dict[str, str]:
        """Jupyter's display: a table of the tools and their parameters."""
        from .display import bundle

        return bundle(self)

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        # IPython's plain text (its printer for tuples would win over the bundle's).
        from .display import bundle

        printer.text(bundle(self)["text/plain"])


@dataclass(frozen=True, slots=True)
class CallToolResult:
    """A ``tools/call`` result. ``is_error`` is the tool's own failure report:
    the call itself succeeded. ``structured_content`` is a frozen object, or in
    the modern era (2026-07-28) any frozen JSON value. ``meta`` is the
    result's ``_meta`` (related task ids, costs, vendor data), frozen."""

    content: tuple[Mapping[str, Any], ...]
    is_error: bool = False
    structured_content: Any = None
    meta: Mapping[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"content": thaw(self.content), "isError": self.is_error}
        if self.structured_content is not None:
            out["structuredContent"] = thaw(self.structured_content)
        if self.meta is not None:
            out["_meta"] = thaw(self.meta)
        return out

    def _repr_mimebundle_(self, include: object = None, exclude: object = None) -> dict[str, str]:
        """Jupyter's display: text as text, images and audio inline, embedded
        resources by MIME type, structured content as a table or JSON."""
        from .display import bundle

        return bundle(self)


def parse_call_result(result: object, tool: str, any_structured: bool = False) -> CallToolResult:
    # Runs once per call: the message is built only when a check fails.
    # (any_structured may come positionally: cheaper than a keyword-only default.)
    if not isinstance(result, dict):
        raise InvalidResponse(f"the result of tool {tool!a} is not an object")
    content = result.get("content")
    if not isinstance(content, list):
        raise InvalidResponse(f"the result of tool {tool!a} has no content array")
    is_error = result.get("isError")
    if is_error is None:  # absent, or null: both mean a success
        is_error = False
    elif not isinstance(is_error, bool):
        raise InvalidResponse(f"the result of tool {tool!a} has a non-boolean isError")
    structured = result.get("structuredContent")
    # Since 2026-07-28 structured content may be any JSON value.
    if structured is not None and not any_structured and not isinstance(structured, dict):
        raise InvalidResponse(f"the result of tool {tool!a} has a structuredContent that is not an object")
    # The result was decoded for this call alone: frozen in place, and put
    # straight into the slots (the frozen dataclass's __init__ would make
    # three object.__setattr__ calls).
    call: CallToolResult = _new_result(CallToolResult)
    _set_content(call, freeze_decoded(content))
    _set_is_error(call, is_error)
    _set_structured(call, None if structured is None else freeze_decoded(structured))
    meta = result.get("_meta")
    _set_meta(call, None if meta is None else freeze_decoded(meta) if type(meta) is dict else None)
    return call


_new_result: Any = object.__new__
_set_content: Any = vars(CallToolResult)["content"].__set__
_set_is_error: Any = vars(CallToolResult)["is_error"].__set__
_set_structured: Any = vars(CallToolResult)["structured_content"].__set__
_set_meta: Any = vars(CallToolResult)["meta"].__set__


class PageWalk(ABC):
    """The cursor rules of every paginated list (``tools/list``,
    ``resources/list``, ``prompts/list``...): at most ``max_catalog_pages``
    pages, each ``nextCursor`` a non-empty string not seen before in the walk.
    A subclass checks and keeps the entries (:meth:`entry`)."""

    method = "tools/list"
    key = "tools"

    def __init__(self, limits: Limits, server: str = "") -> None:
        self._limits = limits
        self.server = server  # for the warnings about an entry
        self._cursors: set[str] = set()
        self.pages = 0
        self.freshness: list[dict[str, object]] = []
        """Each page's ``ttlMs`` and ``cacheScope``, as the server sent them."""

    def page(self, result: object) -> str | None:
        """Validate and keep one page on its own; return its ``nextCursor``
        (a non-empty string), or ``None`` on the last page."""
        method = self.method
        self.pages += 1
        if not isinstance(result, dict):
            raise InvalidResponse(f"a {method} result is not an object")
        entries = result.get(self.key)
        if not isinstance(entries, list):
            raise InvalidResponse(f"a {method} result has no {self.key} array")
        self.entries(entries)
        self.freshness.append({"ttlMs": result.get("ttlMs"), "cacheScope": result.get("cacheScope")})
        cursor = result.get("nextCursor")
        if cursor is not None and (not isinstance(cursor, str) or not cursor):
            raise InvalidResponse(f"a {method} page has an empty or non-string nextCursor")
        return cursor

    def add_page(self, result: object) -> str | None:
        """Validate one page of a walk; return the cursor to follow, or ``None`` when done."""
        limits = self._limits
        method = self.method
        cursor = self.page(result)
        if cursor is None:
            return None
        if cursor in self._cursors:
            raise InvalidResponse(f"a {method} page repeats an earlier cursor")
        if self.pages >= limits.max_catalog_pages:
            raise InvalidResponse(
                f"{self.what} has more than max_catalog_pages={limits.max_catalog_pages} pages"
            )
        self._cursors.add(cursor)
        return cursor

    @property
    def what(self) -> str:
        return f"the {self.method} listing"

    @abstractmethod
    def entries(self, entries: list[Any]) -> None:
        """Check and keep one page's entries."""


class CatalogWalk(PageWalk):
    """Validates ``tools/list`` pages one at a time and builds the snapshot."""

    def __init__(self, limits: Limits, server: str = "") -> None:
        super().__init__(limits, server)
        self._tools: list[Tool] = []
        self._names: set[str] = set()

    @property
    def what(self) -> str:
        return "the catalog"

    def entries(self, entries: list[Any]) -> None:
        limits = self._limits
        if len(self._tools) + len(entries) > limits.max_tools:
            raise InvalidResponse(
                f"the catalog has more than max_tools={limits.max_tools} tools"
            )
        for entry in entries:
            tool = self._entry(entry)
            if tool.name in self._names:
                raise InvalidResponse(f"the catalog names tool {tool.name!a} twice")
            self._names.add(tool.name)
            self._tools.append(tool)

    def tools(self) -> tuple[Tool, ...]:
        return tuple(self._tools)

    def _entry(self, entry: object) -> Tool:
        limits = self._limits
        if not isinstance(entry, dict):
            raise InvalidResponse("a catalog entry is not an object")
        name = check_tool_name(entry.get("name"), limits.max_tool_name_bytes)
        shown = ascii(name)
        schema = entry.get("inputSchema")
        if not isinstance(schema, dict) or schema.get("type") != "object":
            raise InvalidResponse(f"tool {shown} has no inputSchema of type \"object\"")
        output = entry.get("outputSchema")
        if output is not None and not isinstance(output, dict):
            raise InvalidResponse(f"tool {shown} has an outputSchema that is not an object")
        description = entry.get("description")
        if description is not None and not isinstance(description, str):
            raise InvalidResponse(f"tool {shown} has a description that is not a string")
        title = entry.get("title")
        if title is not None and not isinstance(title, str):
            title = None
        annotations = entry.get("annotations")
        if annotations is not None and not isinstance(annotations, dict):
            annotations = None
        execution = entry.get("execution")
        if execution is not None and not isinstance(execution, dict):
            execution = None
        size = len(
            json.dumps(schema, ensure_ascii=False, separators=(",", ":")).encode(
                "utf-8", "surrogatepass"
            )
        )
        if description:
            size += len(description.encode("utf-8", "surrogatepass"))
        if size > limits.max_tool_document_bytes:
            raise InvalidResponse(
                f"tool {shown} has a description and inputSchema of {size} bytes, "
                f"over max_tool_document_bytes={limits.max_tool_document_bytes}"
            )
        icons, meta = entry_extras(entry, limits.max_tool_document_bytes, self.server, lambda: f"tool {shown}")
        return Tool(
            name=name,
            description=description,
            input_schema=freeze(schema),
            output_schema=freeze(output) if output is not None else None,
            title=title,
            annotations=freeze(annotations) if annotations is not None else None,
            execution=freeze(execution) if execution is not None else None,
            icons=icons,
            meta=meta,
        )



class Snapshot:
    """One frozen catalog: the tools in the server's order and an index by
    name. A refresh builds a new one and swaps it in whole, so a reader sees
    either the old catalog or the new one, never a mix."""

    __slots__ = ("by_name", "tools", "validators")

    def __init__(self, tools: tuple[Tool, ...]) -> None:
        self.tools = Tools(tools)
        self.by_name: Mapping[str, Tool] = MappingProxyType({tool.name: tool for tool in tools})
        # Compiled outputSchema validators, built on first use (_validate.py).
        self.validators: dict[str, Any] = {}
