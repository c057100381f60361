"""Resources, prompts and completion: what a server offers besides tools.

The value types, how each list's pages are checked (``PageWalk``: the tool
catalog's page and cursor rules), and reading a resource, getting a prompt
and completing an argument. The lists themselves, whole or a page at a time,
are walked by ``session.paging``. A server that did not declare the
capability a method needs gets :class:`NotSupported` before anything is
sent. Everything in a result is untrusted text.
"""

from __future__ import annotations

import base64
import binascii
from abc import abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..protocol.catalog import Icon, PageWalk, entry_extras, freeze, result_meta, thaw
from ..protocol.errors import InvalidResponse, ProtocolError
from ..protocol.limits import request_budget, seconds

if TYPE_CHECKING:
    from ..protocol.limits import Limits
    from .feature_contract import Core

__all__ = [
    "MAX_COMPLETION_VALUES",
    "MAX_LIST_ITEMS",
    "PROMPTS",
    "RESOURCES",
    "RESOURCE_TEMPLATES",
    "Completion",
    "GetPromptResult",
    "Listing",
    "Prompt",
    "PromptArgument",
    "PromptMessage",
    "ReadResourceResult",
    "Resource",
    "ResourceContents",
    "ResourceTemplate",
    "complete",
    "get_prompt",
    "read_resource",
    "with_meta",
]

MAX_LIST_ITEMS = 10_000
"""Entries one resource, template or prompt listing may hold across its pages
(past it: ``invalid_response``, never a silently short list)."""
MAX_COMPLETION_VALUES = 100
"""The spec's bound on the values of one completion."""


def _text(value: object) -> str | None:
    """An optional display string: a wrong type counts as absent."""
    return value if isinstance(value, str) else None


def _mapping(value: object) -> Mapping[str, Any] | None:
    return freeze(value) if isinstance(value, dict) else None


@dataclass(frozen=True, slots=True)
class Resource:
    """One entry of ``resources/list``."""

    uri: str
    name: str
    title: str | None = None
    description: str | None = None
    mime_type: str | None = None
    size: int | None = None
    annotations: Mapping[str, Any] | None = None
    icons: tuple[Icon, ...] = ()
    meta: Mapping[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"uri": self.uri, "name": self.name}
        _put(out, title=self.title, description=self.description, mimeType=self.mime_type,
             size=self.size, annotations=self.annotations)  # fmt: skip
        return _extras(out, self.icons, self.meta)

    def _repr_mimebundle_(self, include: object = None, exclude: object = None) -> dict[str, str]:
        """Jupyter's display (``text/plain``, ``text/html``: server text escaped)."""
        from ..protocol.display import bundle

        return bundle(self)


@dataclass(frozen=True, slots=True)
class ResourceTemplate:
    """One entry of ``resources/templates/list`` (an RFC 6570 URI template)."""

    uri_template: str
    name: str
    title: str | None = None
    description: str | None = None
    mime_type: str | None = None
    annotations: Mapping[str, Any] | None = None
    icons: tuple[Icon, ...] = ()
    meta: Mapping[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"uriTemplate": self.uri_template, "name": self.name}
        _put(out, title=self.title, description=self.description, mimeType=self.mime_type,
             annotations=self.annotations)  # fmt: skip
        return _extras(out, self.icons, self.meta)

    def _repr_mimebundle_(self, include: object = None, exclude: object = None) -> dict[str, str]:
        """Jupyter's display (``text/plain``, ``text/html``: server text escaped)."""
        from ..protocol.display import bundle

        return bundle(self)


@dataclass(frozen=True, slots=True)
class ResourceContents:
    """One item of a read resource: ``text``, or ``blob`` (the decoded bytes
    of the server's base64)."""

    uri: str
    mime_type: str | None = None
    text: str | None = None
    blob: bytes | None = None
    meta: Mapping[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"uri": self.uri}
        _put(out, mimeType=self.mime_type, text=self.text)
        if self.blob is not None:
            out["blob"] = base64.b64encode(self.blob).decode("ascii")
        return _extras(out, (), self.meta)

    def _repr_mimebundle_(self, include: object = None, exclude: object = None) -> dict[str, str]:
        """Jupyter's display (``text/plain``, ``text/html``: server text escaped)."""
        from ..protocol.display import bundle

        return bundle(self)


@dataclass(frozen=True, slots=True)
class ReadResourceResult:
    """The result of ``resources/read``; ``meta`` is its ``_meta``, frozen."""

    contents: tuple[ResourceContents, ...]
    meta: Mapping[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        return _extras({"contents": [item.to_dict() for item in self.contents]}, (), self.meta)

    def _repr_mimebundle_(self, include: object = None, exclude: object = None) -> dict[str, str]:
        """Jupyter's display (``text/plain``, ``text/html``: server text escaped)."""
        from ..protocol.display import bundle

        return bundle(self)


@dataclass(frozen=True, slots=True)
class PromptArgument:
    name: str
    description: str | None = None
    required: bool = False
    title: str | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "required": self.required}
        _put(out, title=self.title, description=self.description)
        return out


@dataclass(frozen=True, slots=True)
class Prompt:
    """One entry of ``prompts/list``."""

    name: str
    title: str | None = None
    description: str | None = None
    arguments: tuple[PromptArgument, ...] = ()
    icons: tuple[Icon, ...] = ()
    meta: Mapping[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name}
        _put(out, title=self.title, description=self.description)
        out["arguments"] = [argument.to_dict() for argument in self.arguments]
        return _extras(out, self.icons, self.meta)

    def _repr_mimebundle_(self, include: object = None, exclude: object = None) -> dict[str, str]:
        """Jupyter's display (``text/plain``, ``text/html``: server text escaped)."""
        from ..protocol.display import bundle

        return bundle(self)


@dataclass(frozen=True, slots=True)
class PromptMessage:
    role: str
    content: Mapping[str, Any]

    def to_dict(self) -> dict[str, Any]:
        return {"role": self.role, "content": thaw(self.content)}


@dataclass(frozen=True, slots=True)
class GetPromptResult:
    """The result of ``prompts/get``; ``meta`` is its ``_meta``, frozen."""

    messages: tuple[PromptMessage, ...]
    description: str | None = None
    meta: Mapping[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"messages": [message.to_dict() for message in self.messages]}
        _put(out, description=self.description)
        return _extras(out, (), self.meta)

    def _repr_mimebundle_(self, include: object = None, exclude: object = None) -> dict[str, str]:
        """Jupyter's display (``text/plain``, ``text/html``: server text escaped)."""
        from ..protocol.display import bundle

        return bundle(self)


@dataclass(frozen=True, slots=True)
class Completion:
    """The result of ``completion/complete``; ``meta`` is the result's
    ``_meta``, frozen (``to_dict()`` gives the ``completion`` object alone)."""

    values: tuple[str, ...]
    total: int | None = None
    has_more: bool = False
    meta: Mapping[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"values": list(self.values), "hasMore": self.has_more}
        _put(out, total=self.total)
        return out


def _put(out: dict[str, Any], **fields: Any) -> None:
    for key, value in fields.items():
        if value is not None:
            out[key] = thaw(value)


def _extras(out: dict[str, Any], icons: tuple[Icon, ...], meta: Mapping[str, Any] | None) -> dict[str, Any]:
    """``out`` with ``icons`` and ``_meta`` as MCP JSON, where there are any."""
    if icons:
        out["icons"] = [icon.to_dict() for icon in icons]
    if meta is not None:
        out["_meta"] = thaw(meta)
    return out


# --------------------------------------------------------------------- listing


class _ListWalk(PageWalk):
    def __init__(self, limits: Limits, server: str = "") -> None:
        super().__init__(limits, server)
        self.items: list[Any] = []

    def entries(self, entries: list[Any]) -> None:
        if len(self.items) + len(entries) > MAX_LIST_ITEMS:
            raise InvalidResponse(f"{self.what} has more than {MAX_LIST_ITEMS} entries")
        for entry in entries:
            if not isinstance(entry, dict):
                raise InvalidResponse(f"a {self.method} entry is not an object")
            self.items.append(self.entry(entry))

    @abstractmethod
    def entry(self, entry: dict[str, Any]) -> Any:
        """One checked, frozen entry of the listing."""

    def _named(self, entry: dict[str, Any], key: str) -> tuple[str, str]:
        ident, name = entry.get(key), entry.get("name")
        if not isinstance(ident, str) or not ident:
            raise InvalidResponse(f"a {self.method} entry has no {key} string")
        if not isinstance(name, str):
            raise InvalidResponse(f"a {self.method} entry has no name string")
        return ident, name

    def extras(self, entry: dict[str, Any], what: str) -> tuple[tuple[Icon, ...], Mapping[str, Any] | None]:
        """The entry's icons and ``_meta``, bounded like a tool's (``entry_extras``)."""
        limit = self._limits.max_tool_document_bytes
        return entry_extras(entry, limit, self.server, lambda: f"{self.method} entry {what[:200]!a}")


class _Resources(_ListWalk):
    method, key = "resources/list", "resources"

    def entry(self, entry: dict[str, Any]) -> Resource:
        uri, name = self._named(entry, "uri")
        size = entry.get("size")
        icons, meta = self.extras(entry, uri)
        return Resource(
            uri=uri, name=name, title=_text(entry.get("title")),
            description=_text(entry.get("description")), mime_type=_text(entry.get("mimeType")),
            size=size if type(size) is int and size >= 0 else None,
            annotations=_mapping(entry.get("annotations")), icons=icons, meta=meta,
        )  # fmt: skip


class _Templates(_ListWalk):
    method, key = "resources/templates/list", "resourceTemplates"

    def entry(self, entry: dict[str, Any]) -> ResourceTemplate:
        template, name = self._named(entry, "uriTemplate")
        icons, meta = self.extras(entry, template)
        return ResourceTemplate(
            uri_template=template, name=name, title=_text(entry.get("title")),
            description=_text(entry.get("description")), mime_type=_text(entry.get("mimeType")),
            annotations=_mapping(entry.get("annotations")), icons=icons, meta=meta,
        )  # fmt: skip


class _Prompts(_ListWalk):
    method, key = "prompts/list", "prompts"

    def entry(self, entry: dict[str, Any]) -> Prompt:
        name = entry.get("name")
        if not isinstance(name, str) or not name:
            raise InvalidResponse("a prompts/list entry has no name string")
        arguments = entry.get("arguments")
        if arguments is None:
            arguments = []
        if not isinstance(arguments, list):
            raise InvalidResponse(f"prompt {name!a} has arguments that are not an array")
        parsed = []
        for argument in arguments:
            if not isinstance(argument, dict) or not isinstance(argument.get("name"), str):
                raise InvalidResponse(f"prompt {name!a} has an argument without a name")
            parsed.append(
                PromptArgument(
                    name=argument["name"],
                    description=_text(argument.get("description")),
                    required=argument.get("required") is True,
                    title=_text(argument.get("title")),
                )
            )
        icons, meta = self.extras(entry, name)
        return Prompt(
            name=name, title=_text(entry.get("title")),
            description=_text(entry.get("description")), arguments=tuple(parsed),
            icons=icons, meta=meta,
        )  # fmt: skip


RESOURCES, RESOURCE_TEMPLATES, PROMPTS = _Resources, _Templates, _Prompts
"""How the pages of ``resources/list``, ``resources/templates/list`` and
``prompts/list`` are checked and kept (``session.paging`` walks them)."""


def parse_contents(result: object, uri: str) -> ReadResourceResult:
    where = f"the resources/read result for {uri[:200]!a}"
    if not isinstance(result, dict) or not isinstance(result.get("contents"), list):
        raise InvalidResponse(f"{where} has no contents array")
    items = []
    for item in result["contents"]:
        if not isinstance(item, dict) or not isinstance(item.get("uri"), str):
            raise InvalidResponse(f"{where} has an item without a uri")
        text, blob = item.get("text"), item.get("blob")
        if (text is None) == (blob is None):
            raise InvalidResponse(f"{where} has an item with neither or both of text and blob")
        data: bytes | None = None
        if blob is not None:
            if not isinstance(blob, str):
                raise InvalidResponse(f"{where} has a blob that is not a string")
            try:
                data = base64.b64decode(blob, validate=True)
            except (binascii.Error, ValueError):
                raise InvalidResponse(f"{where} has a blob that is not valid base64") from None
        elif not isinstance(text, str):
            raise InvalidResponse(f"{where} has a text that is not a string")
        items.append(
            ResourceContents(
                uri=item["uri"], mime_type=_text(item.get("mimeType")), text=text, blob=data, meta=result_meta(item)
            )
        )
    return ReadResourceResult(tuple(items), result_meta(result))


def parse_prompt(result: object, name: str) -> GetPromptResult:
    where = f"the prompts/get result for prompt {name!a}"
    if not isinstance(result, dict) or not isinstance(result.get("messages"), list):
        raise InvalidResponse(f"{where} has no messages array")
    messages = []
    for message in result["messages"]:
        if (
            not isinstance(message, dict)
            or message.get("role") not in ("user", "assistant")
            or not isinstance(message.get("content"), dict)
            or not isinstance(message["content"].get("type"), str)
        ):
            raise InvalidResponse(f"{where} has a message without a role and typed content")
        messages.append(PromptMessage(role=message["role"], content=freeze(message["content"])))
    return GetPromptResult(
        messages=tuple(messages), description=_text(result.get("description")), meta=result_meta(result)
    )


def parse_completion(result: object) -> Completion:
    completion = result.get("completion") if isinstance(result, dict) else None
    if not isinstance(completion, dict):
        raise InvalidResponse("a completion/complete result has no completion object")
    values = completion.get("values")
    if not isinstance(values, list) or not all(isinstance(value, str) for value in values):
        raise InvalidResponse("a completion has no values array of strings")
    if len(values) > MAX_COMPLETION_VALUES:
        raise InvalidResponse(f"a completion has more than {MAX_COMPLETION_VALUES} values")
    total = completion.get("total")
    return Completion(
        values=tuple(values),
        total=total if type(total) is int and total >= 0 else None,
        has_more=completion.get("hasMore") is True,
        meta=result_meta(result) if isinstance(result, dict) else None,
    )


# --------------------------------------------------------------------- outgoing


def _string(value: object, what: str) -> str:
    if not isinstance(value, str) or not value:
        raise ProtocolError(f"{what} must be a non-empty string")
    return value


def _string_map(value: object, what: str) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, Mapping) or not all(
        isinstance(key, str) and isinstance(item, str) for key, item in value.items()
    ):
        raise ProtocolError(f"{what} must map strings to strings")
    return dict(value)


def completion_ref(ref: object) -> dict[str, str]:
    """``ref`` as a ``ref/prompt`` or ``ref/resource`` object."""
    if isinstance(ref, Prompt):
        return {"type": "ref/prompt", "name": ref.name}
    if isinstance(ref, ResourceTemplate):
        return {"type": "ref/resource", "uri": ref.uri_template}
    if isinstance(ref, Mapping):
        kind = ref.get("type")
        if kind == "ref/prompt":
            return {"type": kind, "name": _string(ref.get("name"), "ref name")}
        if kind == "ref/resource":
            return {"type": kind, "uri": _string(ref.get("uri"), "ref uri")}
    raise ProtocolError(
        'ref must be a Prompt, a ResourceTemplate, {"type": "ref/prompt", "name": ...} '
        'or {"type": "ref/resource", "uri": ...}'
    )


# --------------------------------------------------------------------- the session's methods
# (each a function of the narrow core protocol; ``Session`` delegates to them)


class Listing(tuple[Any, ...]):
    """A listing's entries (resources, templates or prompts): a plain tuple
    that Jupyter shows as a table."""

    __slots__ = ()

    def _repr_mimebundle_(self, include: object = None, exclude: object = None) -> dict[str, str]:
        """Jupyter's display (``text/plain``, ``text/html``: server text escaped)."""
        from ..protocol.display import bundle

        return bundle(self)

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        # IPython's plain text (its printer for tuples would win over the bundle's).
        from ..protocol.display import bundle

        printer.text(bundle(self)["text/plain"])


def _ask(core: Core, method: str, params: dict[str, Any], timeout_ms: int | None, what: str) -> Any:
    timeout_ms, option = request_budget(core.limits, timeout_ms)
    server = core.server
    return core.ask(
        method, params, seconds(timeout_ms), lambda: f"{what} on server {server!r} ({option}={timeout_ms})"
    )


def with_meta(core: Core, params: dict[str, Any], meta: Mapping[str, Any] | None) -> dict[str, Any]:
    """``params`` with the caller's ``meta`` (checked) as its ``_meta``;
    the era's own keys win when it adds them."""
    if meta is not None:
        from .extensions import check_meta

        params["_meta"] = check_meta(meta, core.limits.max_outbound_frame_bytes)
    return params


def read_resource(
    core: Core, uri: str, timeout_ms: int | None, meta: Mapping[str, Any] | None = None
) -> ReadResourceResult:
    """``Session.read_resource``: ``resources/read`` of one URI."""
    core.require("resources", "resources/read")
    uri = _string(uri, "uri")
    params = with_meta(core, {"uri": uri}, meta)
    cache = core.inbound.response_cache() if meta is None else None
    if cache is not None:  # answered from it while the server's ttlMs allows
        kept = cache.lookup("resources/read", uri)
        if kept is not None:
            return kept  # type: ignore[no-any-return]
        epoch = cache.epoch
    result = _ask(core, "resources/read", params, timeout_ms, f"resources/read of {uri[:200]!a}")
    contents = parse_contents(result, uri)
    if cache is not None:
        cache.store("resources/read", uri, contents, (result,), epoch)
    return contents


def get_prompt(
    core: Core,
    name: str,
    arguments: Mapping[str, str] | None,
    timeout_ms: int | None,
    meta: Mapping[str, Any] | None = None,
) -> GetPromptResult:
    """``Session.get_prompt``: ``prompts/get`` with string arguments."""
    core.require("prompts", "prompts/get")
    params: dict[str, Any] = {
        "name": _string(name, "prompt name"),
        "arguments": _string_map(arguments, "prompt arguments"),
    }
    with_meta(core, params, meta)
    result = _ask(core, "prompts/get", params, timeout_ms, f"prompts/get of prompt {name!a}")
    return parse_prompt(result, name)


def complete(  # noqa: PLR0913
    core: Core,
    ref: Prompt | ResourceTemplate | Mapping[str, str],
    argument: Mapping[str, str],
    context: Mapping[str, str] | None,
    timeout_ms: int | None,
    *,
    meta: Mapping[str, Any] | None = None,
) -> Completion:
    """``Session.complete``: ``completion/complete`` of one argument."""
    core.require("completions", "completion/complete")
    arg = _string_map(argument, "argument")
    if set(arg) != {"name", "value"}:
        raise ProtocolError('argument must be {"name": ..., "value": ...}')
    params: dict[str, Any] = {"ref": completion_ref(ref), "argument": arg}
    if context is not None:
        params["context"] = {"arguments": _string_map(context, "context")}
    with_meta(core, params, meta)
    return parse_completion(_ask(core, "completion/complete", params, timeout_ms, "completion/complete"))
