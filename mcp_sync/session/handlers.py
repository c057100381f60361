"""Server-to-client requests: ``connect(handlers=Handlers(...))``.

A server may ask its client for things: to elicit input from the user
(``elicitation/create``, form or URL mode), to sample a language model
(``sampling/createMessage``), for the filesystem roots it may use
(``roots/list``), or just whether it is alive (``ping``). Each is served only
when the caller gave what serves it, and declared as a client capability only
then; any other method is answered ``-32601`` "Method not
found", as before.

This module holds the public types, the ``Handlers`` options and what turns
a request into a handler's argument and its answer into a result. Where and
how a handler runs (the bounded pool, the timeout, the failure rules, in both
eras) is :mod:`._answering`.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from ..protocol.catalog import freeze, thaw
from ..protocol.errors import InvalidOption, ProtocolError
from ..protocol.limits import check_limit, seconds
from ..protocol.roots import Root, RootsProvider, normalize_roots
from ..protocol.text import valid_url

if TYPE_CHECKING:
    from .feature_contract import Core

__all__ = [
    "ElicitationRequest",
    "ElicitationResult",
    "HandlerError",
    "Handlers",
    "Root",
    "SamplingRequest",
    "SamplingResult",
    "roots_changed",
    "set_roots",
]

DEFAULT_MAX_CONCURRENCY = 4
MAX_FORM_FIELDS = 100
"""An elicitation form with more fields than this is refused (-32602)."""

# JSON-RPC codes of our error replies.
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603



# --------------------------------------------------------------------- public types


@dataclass(frozen=True, slots=True)
class ElicitationRequest:
    """A server asks for input from the user.

    Form mode: show ``message`` and a form built from ``requested_schema``
    (a flat object of string, number, integer, boolean and enum fields),
    pre-filled with ``defaults``. URL mode: show ``message`` and the full
    ``url`` and ask for consent before opening it; never open or fetch it
    without that consent. All text here came from the server: untrusted.
    """

    server: str
    mode: Literal["form", "url"]
    message: str
    requested_schema: Mapping[str, Any] | None = None
    defaults: Mapping[str, Any] = field(default_factory=lambda: freeze({}))
    url: str | None = None
    elicitation_id: str | None = None
    cancelled: threading.Event = field(default_factory=threading.Event, compare=False, repr=False)
    """Set when the server cancels the request (the answer will be dropped)."""


@dataclass(frozen=True, slots=True)
class ElicitationResult:
    """The user's answer: ``accept`` (with the form's ``content``), ``decline``
    or ``cancel``. Accepted form content that omits a field with a default
    gets the default, as if the user left the pre-filled value (SEP-1034)."""

    action: Literal["accept", "decline", "cancel"]
    content: Mapping[str, Any] | None = None

    @classmethod
    def accept(cls, content: Mapping[str, Any] | None = None) -> ElicitationResult:
        return cls("accept", freeze(dict(content)) if content is not None else None)

    @classmethod
    def decline(cls) -> ElicitationResult:
        return cls("decline")

    @classmethod
    def cancel(cls) -> ElicitationResult:
        return cls("cancel")

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"action": self.action}
        if self.content is not None:
            out["content"] = thaw(self.content)
        return out


@dataclass(frozen=True, slots=True)
class SamplingRequest:
    """A server asks for a model's completion of ``messages`` (frozen MCP
    JSON, untrusted). ``params`` holds the whole request."""

    server: str
    messages: tuple[Mapping[str, Any], ...]
    max_tokens: int
    system_prompt: str | None = None
    temperature: float | None = None
    stop_sequences: tuple[str, ...] | None = None
    model_preferences: Mapping[str, Any] | None = None
    tools: tuple[Mapping[str, Any], ...] | None = None
    tool_choice: Mapping[str, Any] | None = None
    params: Mapping[str, Any] = field(default_factory=lambda: freeze({}))
    cancelled: threading.Event = field(default_factory=threading.Event, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class SamplingResult:
    """The model's answer to a :class:`SamplingRequest`."""

    content: Mapping[str, Any] | Sequence[Mapping[str, Any]]
    model: str
    role: Literal["assistant", "user"] = "assistant"
    stop_reason: str | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"role": self.role, "content": thaw(self.content), "model": self.model}
        if self.stop_reason is not None:
            out["stopReason"] = self.stop_reason
        return out


class HandlerError(Exception):
    """Raise in a handler to answer the server with this JSON-RPC error
    (e.g. ``HandlerError("User rejected sampling request", code=-1)``).
    ``message`` goes to the server as is."""

    def __init__(self, message: str, code: int = INTERNAL_ERROR) -> None:
        super().__init__(message)
        self.message = message
        self.code = code


ElicitationHandler = Callable[[ElicitationRequest], ElicitationResult | Mapping[str, Any]]
SamplingHandler = Callable[[SamplingRequest], SamplingResult | Mapping[str, Any]]


@dataclass(frozen=True)
class Handlers:
    """What a session answers when its server asks. Each one given is also
    declared to the server as a client capability; none given, none declared.

    - ``elicitation``: form-mode elicitation (``ElicitationRequest`` ->
      ``ElicitationResult``);
    - ``url_elicitation``: URL-mode elicitation (same types);
    - ``sampling``: ``SamplingRequest`` -> ``SamplingResult``;
      ``sampling_tools=True`` also declares tool use in sampling;
    - ``roots``: a list of roots (``Root``, ``file://`` URIs, absolute paths)
      or a callable returning one; change it later with
      ``session.set_roots(...)``;
    - ``tasks``: also let the server send sampling and elicitation requests
      as tasks (MCP 2025-11-25): the client declares the ``tasks`` capability
      for the handlers given, answers such a request at once with a task id,
      runs the handler and serves its result through ``tasks/get`` and
      ``tasks/result`` (default ``True``; ``False`` declares nothing);
    - ``timeout_ms``: how long a handler may take before the server gets an
      error instead (default: the session's ``request_timeout_ms``; a task's
      handler is bounded by the task's TTL instead);
    - ``max_concurrency``: handler threads per session (default 4).

    Handlers run on the library's threads, never on the one reading the
    server's output, possibly several at once.
    """

    elicitation: ElicitationHandler | None = None
    url_elicitation: ElicitationHandler | None = None
    sampling: SamplingHandler | None = None
    sampling_tools: bool = False
    roots: RootsProvider | None = None
    timeout_ms: int | None = None
    max_concurrency: int = DEFAULT_MAX_CONCURRENCY
    tasks: bool = True

    def __post_init__(self) -> None:
        for name in ("elicitation", "url_elicitation", "sampling"):
            value = getattr(self, name)
            if value is not None and not callable(value):
                raise InvalidOption(f"handler {name} must be callable")
        if type(self.sampling_tools) is not bool:
            raise InvalidOption("option sampling_tools must be a bool")
        if type(self.tasks) is not bool:
            raise InvalidOption("option tasks must be a bool")
        if self.roots is not None and not callable(self.roots):
            object.__setattr__(self, "roots", normalize_roots(self.roots))
        if self.timeout_ms is not None:
            check_limit("timeout_ms", self.timeout_ms)
        check_limit("max_concurrency", self.max_concurrency)

    def capabilities(self) -> dict[str, Any]:
        """The client capabilities these handlers serve."""
        out: dict[str, Any] = {}
        if self.elicitation is not None or self.url_elicitation is not None:
            modes: dict[str, Any] = {}
            if self.elicitation is not None:
                modes["form"] = {}
            if self.url_elicitation is not None:
                modes["url"] = {}
            out["elicitation"] = modes
        if self.sampling is not None:
            out["sampling"] = {"tools": {}} if self.sampling_tools else {}
        if self.roots is not None:
            out["roots"] = {"listChanged": True}
        return out


# --------------------------------------------------------------------- the dispatcher


class _Refused(Exception):
    """An error reply decided while preparing an answer."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


# --------------------------------------------------------------------- elicitation

_STRING_FORMATS = frozenset({"email", "uri", "date", "date-time"})


def parse_elicitation(server: str, params: Mapping[str, Any], cancelled: threading.Event) -> ElicitationRequest:
    mode = params.get("mode", "form")
    if mode not in ("form", "url"):
        raise _Refused(INVALID_PARAMS, "unknown elicitation mode")
    message = params.get("message")
    if not isinstance(message, str):
        raise _Refused(INVALID_PARAMS, "an elicitation needs a message")
    if mode == "url":
        url = params.get("url")
        if not isinstance(url, str) or not valid_url(url):
            raise _Refused(INVALID_PARAMS, "a URL elicitation needs an absolute http(s) url")
        elicitation_id = params.get("elicitationId")
        if elicitation_id is not None and not isinstance(elicitation_id, str):
            raise _Refused(INVALID_PARAMS, "elicitationId must be a string")
        return ElicitationRequest(
            server=server, mode="url", message=message, url=url,
            elicitation_id=elicitation_id, cancelled=cancelled,
        )  # fmt: skip
    schema = params.get("requestedSchema")
    defaults = form_defaults(schema)
    return ElicitationRequest(
        server=server,
        mode="form",
        message=message,
        requested_schema=freeze(schema),
        defaults=freeze(defaults),
        cancelled=cancelled,
    )


def form_defaults(schema: object) -> dict[str, Any]:
    """Check a form's ``requestedSchema`` (a flat object of primitive fields)
    and return the valid ``default`` of each field that has one."""
    if not isinstance(schema, Mapping) or schema.get("type") != "object":
        raise _Refused(INVALID_PARAMS, 'requestedSchema must be a schema of "type": "object"')
    properties = schema.get("properties", {})
    if not isinstance(properties, Mapping):
        raise _Refused(INVALID_PARAMS, "requestedSchema.properties must be an object")
    if len(properties) > MAX_FORM_FIELDS:
        raise _Refused(INVALID_PARAMS, f"requestedSchema has more than {MAX_FORM_FIELDS} fields")
    required = schema.get("required", [])
    if not isinstance(required, list) or not all(isinstance(name, str) for name in required):
        raise _Refused(INVALID_PARAMS, "requestedSchema.required must be a list of names")
    defaults: dict[str, Any] = {}
    for name, prop in properties.items():
        if not isinstance(prop, Mapping):
            raise _Refused(INVALID_PARAMS, "each requestedSchema property must be an object")
        choices = _field_choices(prop)
        if "default" in prop and _fits(prop, choices, prop["default"]):
            defaults[name] = prop["default"]
    return defaults


def _field_choices(prop: Mapping[str, Any]) -> frozenset[str] | None:
    """The allowed values of an enum field (``None``: not an enum); refuses
    anything but the primitive field kinds a form may hold."""
    kind = prop.get("type")
    if kind == "string":
        if "enum" in prop:
            return _choices(prop["enum"])
        if "oneOf" in prop:
            return _titled_choices(prop["oneOf"])
        return None
    if kind in ("number", "integer", "boolean"):
        return None
    if kind == "array":
        items = prop.get("items")
        if not isinstance(items, Mapping):
            raise _Refused(INVALID_PARAMS, "a multi-select field needs items")
        if "enum" in items and items.get("type") == "string":
            return _choices(items["enum"])
        if "anyOf" in items:
            return _titled_choices(items["anyOf"])
        raise _Refused(INVALID_PARAMS, "a multi-select field must list its choices")
    raise _Refused(INVALID_PARAMS, "requestedSchema may hold only string, number, integer, boolean and enum fields")


def _choices(values: object) -> frozenset[str]:
    if not isinstance(values, list) or not all(isinstance(value, str) for value in values):
        raise _Refused(INVALID_PARAMS, "an enum must be a list of strings")
    return frozenset(values)


def _titled_choices(options: object) -> frozenset[str]:
    if not isinstance(options, list) or not all(
        isinstance(option, Mapping) and isinstance(option.get("const"), str) for option in options
    ):
        raise _Refused(INVALID_PARAMS, "titled choices must be objects with a string const")
    return frozenset(option["const"] for option in options)


def _fits(prop: Mapping[str, Any], choices: frozenset[str] | None, value: object) -> bool:
    kind = prop.get("type")
    if kind == "string":
        return isinstance(value, str) and (choices is None or value in choices)
    if kind == "integer":
        return type(value) is int or (type(value) is float and value.is_integer())
    if kind == "number":
        return type(value) in (int, float) and math.isfinite(value)  # type: ignore[arg-type]
    if kind == "boolean":
        return type(value) is bool
    if kind == "array":
        return (
            isinstance(value, list)
            and all(isinstance(item, str) for item in value)
            and (choices is None or all(item in choices for item in value))
        )
    return False


_ACTIONS = ("accept", "decline", "cancel")
_CONTENT_TYPES = (str, int, float, bool)


def _content_value(value: object) -> bool:
    if isinstance(value, _CONTENT_TYPES):
        return True
    return isinstance(value, (list, tuple)) and all(isinstance(item, str) for item in value)


def elicitation_reply(request: ElicitationRequest, answer: object) -> dict[str, Any]:
    """A handler's answer as an ``ElicitResult``, with the form's defaults
    filled in for the fields an accepted answer left out."""
    action: object
    content: object
    if isinstance(answer, ElicitationResult):
        action, content = answer.action, answer.content
    elif isinstance(answer, Mapping):
        action, content = answer.get("action"), answer.get("content")
    else:
        raise TypeError("an elicitation handler must return an ElicitationResult")
    if action not in _ACTIONS:
        raise TypeError("an elicitation result's action must be accept, decline or cancel")
    if action != "accept" or request.mode == "url":
        return {"action": action}
    if content is None:
        content = {}
    if not isinstance(content, Mapping) or not all(
        isinstance(key, str) and _content_value(value) for key, value in content.items()
    ):
        raise TypeError("accepted elicitation content must map names to strings, numbers, booleans or lists of strings")
    filled = {key: thaw(value) for key, value in request.defaults.items()}
    filled.update(thaw(content))
    return {"action": "accept", "content": filled}


# --------------------------------------------------------------------- sampling


def parse_sampling(server: str, params: Mapping[str, Any], cancelled: threading.Event) -> SamplingRequest:
    messages = params.get("messages")
    if not isinstance(messages, list) or not all(
        isinstance(message, Mapping) and message.get("role") in ("user", "assistant") and "content" in message
        for message in messages
    ):
        raise _Refused(INVALID_PARAMS, "messages must be a list of user and assistant messages")
    max_tokens = params.get("maxTokens")
    if type(max_tokens) is not int or max_tokens < 1:
        raise _Refused(INVALID_PARAMS, "maxTokens must be a positive integer")
    system = params.get("systemPrompt")
    temperature = params.get("temperature")
    stops = params.get("stopSequences")
    prefs = params.get("modelPreferences")
    tools = params.get("tools")
    choice = params.get("toolChoice")
    return SamplingRequest(
        server=server,
        messages=freeze(messages),
        max_tokens=max_tokens,
        system_prompt=system if isinstance(system, str) else None,
        temperature=float(temperature) if isinstance(temperature, (int, float)) else None,
        stop_sequences=tuple(stops) if isinstance(stops, list) and all(isinstance(s, str) for s in stops) else None,
        model_preferences=freeze(prefs) if isinstance(prefs, Mapping) else None,
        tools=freeze(tools) if isinstance(tools, list) and all(isinstance(t, Mapping) for t in tools) else None,
        tool_choice=freeze(choice) if isinstance(choice, Mapping) else None,
        params=freeze(dict(params)),
        cancelled=cancelled,
    )


def sampling_reply(answer: object) -> dict[str, Any]:
    if isinstance(answer, SamplingResult):
        out = answer.to_dict()
    elif isinstance(answer, Mapping):
        out = thaw(answer)
    else:
        raise TypeError("a sampling handler must return a SamplingResult")
    content = out.get("content")
    if (
        out.get("role") not in ("assistant", "user")
        or not isinstance(out.get("model"), str)
        or not (isinstance(content, dict) or (isinstance(content, list) and all(isinstance(c, dict) for c in content)))
    ):
        raise TypeError("a sampling result needs a role, a model and content")
    return out



def set_roots(core: Core, roots: RootsProvider) -> None:
    """``Session.set_roots``: replace the roots, then tell the server."""
    core.inbound.requests.set_roots(roots)
    roots_changed(core)


def roots_changed(core: Core) -> None:
    """``Session.roots_changed``: ``notifications/roots/list_changed``."""
    if core.inbound.requests.roots_provider is None:
        raise ProtocolError("roots_changed needs a session connected with Handlers(roots=...)")
    core.notify("notifications/roots/list_changed", seconds(core.limits.request_timeout_ms))
