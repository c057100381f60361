"""Flows: a tool catalog projected into declarations a host can bind.

A *flow* is a declaration (a name, a description a model reads, a parameter
document, a capability and effect envelope) plus the code that runs it.
:func:`project` turns each tool of a session into one flow; :func:`function`
turns a plain Python function into one; :func:`catalog` composes any number
of sources into one, refusing duplicate names.

Every projected MCP flow declares the same envelope, and it is the widest one
there is (:data:`MCP_CAPABILITIES`, :data:`MCP_EFFECTS`): a remote tool is
code this process does not control, so a narrower claim would be a guess. A
host may narrow a flow with :meth:`Flow.narrow`; nothing can widen one.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeAlias, overload

from .protocol.catalog import CallToolResult, Tool, freeze, thaw
from .protocol.errors import McpError
from .protocol.flow_declarations import (
    MCP_CAPABILITIES,
    MCP_EFFECTS,
    MODES,
    ON_CONFLICT,
    TIERS,
    Action,
    Capability,
    DeclarationError,
    DuplicateFlowError,
    Effects,
    FlowFailed,
    HostAction,
    Mode,
    NarrowingError,
    OnConflict,
    ProjectionError,
    Tier,
    capabilities_for,
    check_flow_name,
    check_label,
    escape_label,
    pattern_covers,
    unescape_label,
)
from .protocol.text import for_model

if TYPE_CHECKING:
    import httpx

    from .auth._base import Auth, TokenProvider
    from .protocol.limits import Limits
    from .protocol.redaction import Diagnostics, MessageHook
    from .protocol.secret import Secret
    from .session.handlers import Handlers
    from .session.options import ConnectOptions, HttpConnectOptions, SseConnectOptions

__all__ = [
    "Action",
    "Capability",
    "ConnectedFlows",
    "DeclarationError",
    "DuplicateFlowError",
    "Effects",
    "Flow",
    "FlowFailed",
    "FlowResult",
    "FlowSource",
    "HostAction",
    "MCP_CAPABILITIES",
    "MCP_EFFECTS",
    "MODES",
    "Mode",
    "NarrowingError",
    "ON_CONFLICT",
    "OnConflict",
    "ProjectionError",
    "TIERS",
    "Tier",
    "ToolSession",
    "capabilities_for",
    "catalog",
    "check_flow_name",
    "check_label",
    "connect_and_project",
    "describe_tool",
    "escape_label",
    "function",
    "pattern_covers",
    "project",
    "unescape_label",
]


# --------------------------------------------------------------------------
# Flows


@dataclass(frozen=True, slots=True)
class FlowResult:
    """What a flow returns: MCP ``content`` blocks, the tool's own error flag,
    and optional structured content. ``is_error=True`` is still a result:
    the tool ran and reported a problem, which is data for the caller.
    ``meta`` is an MCP result's ``_meta``, frozen."""

    content: tuple[Mapping[str, Any], ...]
    is_error: bool = False
    structured_content: Mapping[str, Any] | None = None
    meta: Mapping[str, Any] | None = None

    @classmethod
    def from_call(cls, result: CallToolResult) -> FlowResult:
        return cls(result.content, result.is_error, result.structured_content, result.meta)

    @property
    def text(self) -> str:
        """The text of every ``text`` content block, joined by newlines."""
        return "\n".join(
            block["text"]
            for block in self.content
            if block.get("type") == "text" and isinstance(block.get("text"), str)
        )

    def to_dict(self) -> dict[str, Any]:
        """The result as plain, mutable MCP JSON (camelCase keys)."""
        out: dict[str, Any] = {"content": thaw(self.content), "isError": self.is_error}
        if self.structured_content is not None:
            out["structuredContent"] = thaw(self.structured_content)
        if self.meta is not None:
            out["_meta"] = thaw(self.meta)
        return out


# run(arguments) or run(arguments, timeout_ms=...): an MCP flow passes the
# deadline to its session; a Python flow takes and ignores it.
Runner: TypeAlias = Callable[..., FlowResult]


@dataclass(frozen=True, slots=True, eq=False)
class Flow:
    """One flow: its declaration and the code that runs it.

    ``input_document`` is the parameter document disclosed to a model; it is
    *not* used to validate arguments (for an MCP flow the server is the
    authority on its own schema). ``capabilities`` and ``effects`` are the
    envelope the flow declares. ``server`` and ``tool`` are set for a flow
    projected from MCP. Build flows with :func:`project` and
    :func:`function`; ``run`` is called by :meth:`invoke` after the argument
    check.
    """

    name: str
    description: str
    input_document: Mapping[str, Any]
    capabilities: tuple[str, ...]
    effects: Effects
    run: Runner = field(repr=False)
    output_document: Mapping[str, Any] | None = None
    server: str | None = None
    tool: Tool | None = field(default=None, repr=False)

    def invoke(
        self, arguments: Mapping[str, Any] | None = None, *, timeout_ms: int | None = None
    ) -> FlowResult:
        """Run the flow. ``arguments`` may be any mapping with str keys.

        ``timeout_ms`` bounds an MCP flow's call (it overrides the session's
        ``request_timeout_ms``); a Python flow runs on the caller's thread
        and ignores it. Raises :class:`FlowFailed` when the flow could not
        produce a result.
        """
        checked = _arguments(self.name, arguments)
        if timeout_ms is None:
            return self.run(checked)
        return self.run(checked, timeout_ms=timeout_ms)

    def narrow(
        self,
        *,
        capabilities: Iterable[str] | None = None,
        effects: Effects | None = None,
    ) -> Flow:
        """A copy of this flow declaring less. ``None`` keeps a field as it is.

        Every new capability must be covered by an old one (same action, a
        resource pattern inside the old one). Every new ``reads``/``writes``
        pattern must be inside an old one. ``mode``, ``on_conflict`` and
        ``tier`` may stay or move toward caution (``expected``,
        ``serialize``, ``irreversible``), never away from it. Anything else
        raises :class:`NarrowingError`: a declaration can only shrink.
        """
        new_caps = self.capabilities
        if capabilities is not None:
            if isinstance(capabilities, str):
                raise NarrowingError("capabilities must be a sequence of strings, not one string")
            old = [Capability.parse(c) for c in self.capabilities]
            parsed = []
            for text in capabilities:
                try:
                    cap = Capability.parse(text)
                except ValueError as exc:
                    raise NarrowingError(str(exc)) from None
                if not any(o.covers(cap) for o in old):
                    raise NarrowingError(
                        f"flow {self.name!a} does not declare {text!a}; "
                        "narrowing cannot add authority"
                    )
                parsed.append(str(cap))
            new_caps = tuple(parsed)
        new_effects = self.effects
        if effects is not None:
            if not isinstance(effects, Effects):
                raise NarrowingError("effects must be an Effects")
            _check_narrower(self.name, self.effects, effects)
            new_effects = effects
        return replace(self, capabilities=new_caps, effects=new_effects)

    def to_dict(self) -> dict[str, Any]:
        """The declaration as plain JSON (no ``run``)."""
        out: dict[str, Any] = {
            "name": self.name,
            "description": self.description,
            "inputDocument": thaw(self.input_document),
            "capabilities": list(self.capabilities),
            "effects": self.effects.to_dict(),
        }
        if self.output_document is not None:
            out["outputDocument"] = thaw(self.output_document)
        if self.server is not None:
            out["server"] = self.server
        if self.tool is not None:
            out["tool"] = self.tool.name
        return out


def _check_narrower(name: str, old: Effects, new: Effects) -> None:
    for label in ("reads", "writes"):
        olds: tuple[str, ...] = getattr(old, label)
        for pattern in getattr(new, label):
            if not any(pattern_covers(o, pattern) for o in olds):
                raise NarrowingError(
                    f"flow {name!a} does not declare {label} {pattern!a}; "
                    "narrowing cannot widen effects"
                )
    for label, ladder in (("mode", MODES), ("on_conflict", ON_CONFLICT), ("tier", TIERS)):
        was, now = getattr(old, label), getattr(new, label)
        if ladder.index(now) < ladder.index(was):
            raise NarrowingError(
                f"flow {name!a} declares {label} {was!r}; narrowing cannot relax it to {now!r}"
            )


def _arguments(flow: str, arguments: object) -> dict[str, Any]:
    # The only input check a flow makes: a str-keyed mapping. The schema is
    # disclosed, not enforced; for MCP the server validates its own inputs.
    if arguments is None:
        return {}
    if not isinstance(arguments, Mapping):
        raise FlowFailed(
            f"flow {flow!a} takes an object of arguments, got {type(arguments).__name__}",
            flow=flow,
            cause_kind="invalid_arguments",
        )
    for key in arguments:
        if not isinstance(key, str):
            raise FlowFailed(
                f"flow {flow!a} got an argument key of type {type(key).__name__}; "
                "keys must be strings",
                flow=flow,
                cause_kind="invalid_arguments",
            )
    return arguments if isinstance(arguments, dict) else dict(arguments)


# --------------------------------------------------------------------------
# Sources and composition


class FlowSource(Mapping[str, Flow]):
    """An ordered, immutable set of flows, looked up by name.

    Iterating gives names (it is a ``Mapping``); :attr:`flows` gives the
    flows in order. Made by :func:`project` and :func:`catalog`.
    """

    __slots__ = ("_by_name", "flows")

    def __init__(self, flows: Iterable[Flow]) -> None:
        ordered = tuple(flows)
        by_name: dict[str, Flow] = {}
        for flow in ordered:
            if not isinstance(flow, Flow):
                raise TypeError(f"a flow source holds Flow objects, got {type(flow).__name__}")
            if flow.name in by_name:
                raise DuplicateFlowError(
                    f"flow name {flow.name!a} is declared twice "
                    f"({_origin(by_name[flow.name])} and {_origin(flow)})"
                )
            by_name[flow.name] = flow
        self.flows: tuple[Flow, ...] = ordered
        self._by_name = by_name

    def __getitem__(self, name: str) -> Flow:
        return self._by_name[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._by_name)

    def __len__(self) -> int:
        return len(self.flows)

    def invoke(self, name: str, arguments: Mapping[str, Any] | None = None) -> FlowResult:
        """Invoke the flow called ``name`` (``KeyError`` if there is none)."""
        return self._by_name[name].invoke(arguments)

    def narrow(
        self,
        name: str,
        *,
        capabilities: Iterable[str] | None = None,
        effects: Effects | None = None,
    ) -> FlowSource:
        """A copy with the flow ``name`` narrowed (see :meth:`Flow.narrow`)."""
        narrowed = self._by_name[name].narrow(capabilities=capabilities, effects=effects)
        return FlowSource(narrowed if f.name == name else f for f in self.flows)

    def __repr__(self) -> str:
        return f"<FlowSource {len(self.flows)} flows>"


def _origin(flow: Flow) -> str:
    if flow.server is not None:
        return f"MCP server {flow.server!r}"
    return "a Python flow"


def catalog(*sources: FlowSource | Flow | Iterable[Flow]) -> FlowSource:
    """Compose flow sources (projected servers, :func:`function` flows,
    other catalogs) into one. Two flows with one name raise
    :class:`DuplicateFlowError`: a name must never dispatch to the wrong code.
    """
    flows: list[Flow] = []
    for source in sources:
        if isinstance(source, Flow):
            flows.append(source)
        elif isinstance(source, FlowSource):
            flows.extend(source.flows)
        elif callable(source):
            raise TypeError(
                f"{getattr(source, '__name__', 'a callable')} is a plain function; declare it "
                "with flows.function(name=..., description=..., capabilities=..., effects=...)"
            )
        elif isinstance(source, Iterable) and not isinstance(source, (str, bytes, Mapping)):
            for item in source:
                if not isinstance(item, Flow):
                    raise TypeError(f"a flow source yielded a {type(item).__name__}, not a Flow")
                flows.append(item)
        else:
            raise TypeError(f"cannot compose a {type(source).__name__} into a flow catalog")
    return FlowSource(flows)


# --------------------------------------------------------------------------
# Python functions as flows

_EMPTY_OBJECT: Mapping[str, Any] = freeze({"type": "object"})


def _result_of(value: object) -> FlowResult:
    if isinstance(value, FlowResult):
        return value
    if value is None:
        return FlowResult(content=())
    if isinstance(value, str):
        return FlowResult(content=(freeze({"type": "text", "text": value}),))
    data = thaw(value)
    text = json.dumps(data, ensure_ascii=False, allow_nan=False)
    structured = freeze(data) if isinstance(data, dict) else None
    return FlowResult(
        content=(freeze({"type": "text", "text": text}),), structured_content=structured
    )


PyFunc: TypeAlias = Callable[[dict[str, Any]], object]


@overload
def function(
    fn: PyFunc,
    /,
    *,
    name: str,
    description: str,
    capabilities: Iterable[str],
    effects: Effects,
    input_document: Mapping[str, Any] | None = None,
) -> Flow: ...


@overload
def function(
    fn: None = None,
    /,
    *,
    name: str,
    description: str,
    capabilities: Iterable[str],
    effects: Effects,
    input_document: Mapping[str, Any] | None = None,
) -> Callable[[PyFunc], Flow]: ...


def function(
    fn: PyFunc | None = None,
    /,
    *,
    name: str,
    description: str,
    capabilities: Iterable[str],
    effects: Effects,
    input_document: Mapping[str, Any] | None = None,
) -> Flow | Callable[[PyFunc], Flow]:
    """Declare a Python function as a flow (a decorator, or call it with ``fn``).

    The function takes the arguments dict. It may return a :class:`FlowResult`,
    a ``str`` (one text block), ``None`` (no content), or any JSON value (a
    text block of its JSON; a dict is also the structured content). To fail
    in the way a harness catches, raise :class:`FlowFailed`; any other
    exception propagates unchanged, as a bug in host code should.
    ``input_document`` defaults to ``{"type": "object"}``.
    """
    check_flow_name(name)
    if not isinstance(description, str) or not description:
        raise DeclarationError(f"flow {name!a} needs a non-empty description")
    if isinstance(capabilities, str):
        raise DeclarationError("capabilities must be a sequence of strings, not one string")
    caps = tuple(str(Capability.parse(c)) for c in capabilities)
    if not isinstance(effects, Effects):
        raise DeclarationError("effects must be an Effects")
    if input_document is None:
        document = _EMPTY_OBJECT
    elif isinstance(input_document, Mapping) and input_document.get("type") == "object":
        document = freeze(thaw(input_document))
    else:
        raise DeclarationError(f'flow {name!a}: input_document must be a schema of type "object"')

    def declare(body: PyFunc) -> Flow:
        if not callable(body):
            raise TypeError("flows.function wraps a callable")

        def run(arguments: dict[str, Any], timeout_ms: int | None = None) -> FlowResult:
            return _result_of(body(arguments))

        return Flow(
            name=name,
            description=description,
            input_document=document,
            capabilities=caps,
            effects=effects,
            run=run,
        )

    return declare(fn) if fn is not None else declare


# --------------------------------------------------------------------------
# Projection of an MCP session


class ToolSession(Protocol):
    """What :func:`project` needs from a session (a :class:`mcp_sync.Session`)."""

    @property
    def server(self) -> str: ...

    @property
    def tools(self) -> tuple[Tool, ...]: ...

    def call_tool(
        self, name: str, arguments: dict[str, Any] | None = None, *, timeout_ms: int | None = None
    ) -> CallToolResult: ...


def describe_tool(server: str, tool: str, description: str | None) -> str:
    """The model-facing description of a projected tool.

    The server's own text is fenced off behind a fixed preamble, so a model
    reads it as what the server says, not as the host's instructions, and
    cleaned as every server text bound for a model is (``protocol.text.for_model``:
    hidden tag characters dropped, bidi and zero-width characters escaped).
    An absent or empty server description adds nothing.
    """
    text = f'MCP tool "{tool}" on server "{server}"'
    if description:
        text += f". Server-supplied description: {for_model(description)}"
    return text


def _names(value: Iterable[str] | None, label: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        raise ProjectionError(f"{label} must be a list of tool names, not one string")
    names = tuple(value)
    for item in names:
        if not isinstance(item, str):
            raise ProjectionError(f"{label} holds a {type(item).__name__}; tool names are strings")
    return names


def _mcp_runner(session: ToolSession, flow: str, tool: str) -> Runner:
    def run(arguments: dict[str, Any], timeout_ms: int | None = None) -> FlowResult:
        try:
            if timeout_ms is None:
                result = session.call_tool(tool, arguments)
            else:
                result = session.call_tool(tool, arguments, timeout_ms=timeout_ms)
        except McpError as exc:
            # The session's message is already model-safe: publish it as is.
            raise FlowFailed(str(exc), flow=flow, cause_kind=exc.kind) from exc
        return FlowResult.from_call(result)

    return run


def project(
    session: ToolSession,
    *,
    name_prefix: str | None = None,
    include: Iterable[str] | None = None,
    exclude: Iterable[str] | None = None,
) -> FlowSource:
    """One flow per tool of ``session``, in the server's order.

    Flow names are ``<name_prefix>/<tool>``; the prefix defaults to
    ``mcp/<server>``, the server's label escaped by :func:`escape_label`
    (``@scope/name`` is ``mcp/@scope%2Fname``). ``include`` keeps only the named tools (``None`` or
    empty keeps all), then ``exclude`` drops tools. An empty prefix or an
    ``include`` name the catalog lacks raises :class:`ProjectionError`; an
    ``exclude`` name the catalog lacks is ignored.
    """
    server = session.server
    if name_prefix is None:
        prefix = check_flow_name(f"mcp/{escape_label(server)}", what="the default name prefix")
    else:
        prefix = check_flow_name(name_prefix, what="name_prefix")
    tools = session.tools
    known = {tool.name for tool in tools}
    wanted = _names(include, "include")
    dropped = set(_names(exclude, "exclude"))
    unknown = [name for name in wanted if name not in known]
    if unknown:
        raise ProjectionError(
            f"include names {', '.join(ascii(n) for n in unknown)}, "
            f"not in the catalog of server {server!r}"
        )
    keep = set(wanted) if wanted else known
    flows = []
    for tool in tools:
        if tool.name not in keep or tool.name in dropped:
            continue
        name = f"{prefix}/{tool.name}"
        flows.append(
            Flow(
                name=name,
                description=describe_tool(server, tool.name, tool.description),
                input_document=tool.input_schema,
                capabilities=MCP_CAPABILITIES,
                effects=MCP_EFFECTS,
                run=_mcp_runner(session, name, tool.name),
                output_document=tool.output_schema,
                server=server,
                tool=tool,
            )
        )
    return FlowSource(flows)


# --------------------------------------------------------------------------
# Connect and project in one step


class ConnectedFlows(FlowSource):
    """A flow source that owns the session its flows call.

    Made by :func:`connect_and_project`. Use it as a context manager (or
    call :meth:`close`) to end the session; it composes with
    :func:`catalog` like any other source.
    """

    __slots__ = ("session",)

    def __init__(self, flows: Iterable[Flow], session: Any) -> None:
        super().__init__(flows)
        self.session = session
        """The :class:`mcp_sync.Session` the flows call."""

    def close(self) -> None:
        """Close the session (idempotent)."""
        self.session.close()

    def __enter__(self) -> ConnectedFlows:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<ConnectedFlows {len(self.flows)} flows of {self.session!r}>"


def connect_and_project(
    options: ConnectOptions | HttpConnectOptions | SseConnectOptions | None = None,
    /,
    *,
    name_prefix: str | None = None,
    include: Iterable[str] | None = None,
    exclude: Iterable[str] | None = None,
    server: str | None = None,
    command: str | Secret | None = None,
    args: Sequence[str | Secret] | None = None,
    url: str | Secret | None = None,
    transport: Literal["stdio", "http", "sse"] | None = None,
    protocol: Literal["auto", "legacy", "modern"] | None = None,
    protocol_version: str | None = None,
    cwd: str | Secret | os.PathLike[str] | None = None,
    env: Mapping[str, str | Secret] | None = None,
    inherit_env: bool | None = None,
    bearer_token_env: str | None = None,
    headers: Mapping[str, str | Secret] | None = None,
    allow_insecure_http: bool | None = None,
    http_client: httpx.Client | None = None,
    auth: Auth | TokenProvider | Callable[[], str] | None = None,
    secrets: Collection[str] | None = None,
    limits: Limits | None = None,
    handshake_timeout_ms: int | None = None,
    start_timeout_ms: int | None = None,
    request_timeout_ms: int | None = None,
    queue_capacity: int | None = None,
    max_frame_bytes: int | None = None,
    max_outbound_frame_bytes: int | None = None,
    max_tools: int | None = None,
    max_tool_name_bytes: int | None = None,
    max_tool_document_bytes: int | None = None,
    max_catalog_pages: int | None = None,
    max_stderr_bytes: int | None = None,
    handlers: Handlers | None = None,
    diagnostics: Diagnostics | None = None,
    auto_refresh: bool | None = None,
    validate_output: bool | None = None,
    cache: bool | None = None,
    on_message: MessageHook | None = None,
) -> ConnectedFlows:
    """Connect a server and project its tools, checking the projection first.

    ``options`` and the keywords after ``exclude`` are :func:`mcp_sync.connect`'s,
    described there; a config entry's own ``namePrefix``/``include``/``exclude`` apply
    unless given here. The prefix (or the default ``mcp/<server>``) and the
    shape of ``include``/``exclude`` are checked *before* anything is
    spawned or dialled, so a bad projection raises :class:`ProjectionError`
    with no server started. An ``include`` name the catalog lacks can only
    be found after connecting: the session is closed and the error raised.
    """
    from .session.connect import connect

    from_entry: dict[str, Any] = {}
    if options is not None and callable(getattr(options, "projection_kwargs", None)):
        from_entry = options.projection_kwargs()
    prefix = name_prefix if name_prefix is not None else from_entry.get("name_prefix")
    wanted = include if include is not None else from_entry.get("include")
    dropped = exclude if exclude is not None else from_entry.get("exclude")
    if server is None:
        server = getattr(options, "server", None)
    if prefix is not None:
        check_flow_name(prefix, what="name_prefix")
    elif isinstance(server, str) and server:
        check_flow_name(f"mcp/{escape_label(server)}", what="the default name prefix")
    kept, left_out = _names(wanted, "include"), _names(dropped, "exclude")
    session = connect(
        options, server=server, command=command, args=args, url=url, transport=transport,
        protocol=protocol, protocol_version=protocol_version, cwd=cwd, env=env,
        inherit_env=inherit_env, bearer_token_env=bearer_token_env, headers=headers,
        allow_insecure_http=allow_insecure_http, http_client=http_client, auth=auth,
        secrets=secrets, limits=limits, handshake_timeout_ms=handshake_timeout_ms,
        start_timeout_ms=start_timeout_ms, request_timeout_ms=request_timeout_ms, queue_capacity=queue_capacity,
        max_frame_bytes=max_frame_bytes, max_outbound_frame_bytes=max_outbound_frame_bytes,
        max_tools=max_tools, max_tool_name_bytes=max_tool_name_bytes,
        max_tool_document_bytes=max_tool_document_bytes, max_catalog_pages=max_catalog_pages,
        max_stderr_bytes=max_stderr_bytes, handlers=handlers, diagnostics=diagnostics,
        auto_refresh=auto_refresh, validate_output=validate_output, cache=cache, on_message=on_message,
    )  # fmt: skip
    try:
        source = project(session, name_prefix=prefix, include=kept, exclude=left_out)
    except BaseException:
        session.close()
        raise
    return ConnectedFlows(source.flows, session)
