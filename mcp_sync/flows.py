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

import enum
import json
import re
import unicodedata
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Any, ClassVar, Literal, Protocol, TypeAlias, overload

from ._catalog import CallToolResult, Tool, freeze, thaw
from ._errors import McpError

__all__ = [
    "Action",
    "Capability",
    "ConnectedFlows",
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
    "connect_and_project",
    "describe_tool",
    "function",
    "pattern_covers",
    "project",
]


# --------------------------------------------------------------------------
# Errors


class FlowFailed(Exception):
    """A flow could not produce a result.

    For an MCP flow this is a failure of the *session* (it closed, timed out,
    sent something unacceptable); a tool that ran and reported a problem is a
    successful :class:`FlowResult` with ``is_error=True`` instead. ``str()``
    is exactly the public, model-safe message of the underlying error, so a
    harness may show it to a model. ``cause_kind`` is that error's ``kind``
    (``"timeout"``, ``"connection_closed"``, ...), or ``"invalid_arguments"``
    when the arguments were not a dict with str keys.
    """

    kind: ClassVar[str] = "flow_failed"

    def __init__(self, message: str, *, flow: str, cause_kind: str) -> None:
        super().__init__(message)
        self.message = message
        self.flow = flow
        self.cause_kind = cause_kind

    def __str__(self) -> str:
        return self.message

    def __repr__(self) -> str:
        return f"FlowFailed({self.message!r}, flow={self.flow!r}, cause_kind={self.cause_kind!r})"


class ProjectionError(ValueError):
    """A projection was asked for something impossible: an empty or malformed
    ``name_prefix``, or an ``include`` name the catalog does not have."""


class DuplicateFlowError(ValueError):
    """Two sources composed into one catalog declare the same flow name."""


class NarrowingError(ValueError):
    """:meth:`Flow.narrow` was given an envelope that is not inside the old one."""


# --------------------------------------------------------------------------
# Names

_ASCII_FORBIDDEN = re.compile(r"[\x00-\x1f\x7f]")


def _forbidden_char(text: str, *, allow_slash: bool) -> str | None:
    # The tool-name rule of the catalog: no Cc, no Cf, no U+2028/U+2029, no
    # lone surrogate. A name reaches a model and an approval screen, where
    # an invisible or reordering character lets one name pass for another.
    if text.isascii():
        found = _ASCII_FORBIDDEN.search(text)
        if found:
            return found.group()
        return None if allow_slash or "/" not in text else "/"
    for ch in text:
        if (
            (ch == "/" and not allow_slash)
            or ch in "\u2028\u2029"
            or "\ud800" <= ch <= "\udfff"
            or unicodedata.category(ch) in ("Cc", "Cf")
        ):
            return ch
    return None


def check_flow_name(name: object, *, what: str = "flow name") -> str:
    """``name`` if it is a usable flow name (or prefix), else :class:`ProjectionError`.

    Non-empty ``/``-separated segments, none ``.`` or ``..``, and none of the
    characters a tool name may not contain.
    """
    if not isinstance(name, str):
        raise ProjectionError(f"{what} must be a string, got {type(name).__name__}")
    if not name:
        raise ProjectionError(f"{what} must not be empty")
    for segment in name.split("/"):
        if not segment:
            raise ProjectionError(f"{what} {name!a} has an empty segment")
        if segment in (".", ".."):
            raise ProjectionError(f"{what} {name!a} has a {segment!r} segment")
        bad = _forbidden_char(segment, allow_slash=False)
        if bad is not None:
            raise ProjectionError(
                f"{what} {name!a} contains the forbidden character U+{ord(bad):04X}"
            )
    return name


# --------------------------------------------------------------------------
# Capabilities


class HostAction(Protocol):
    """Anything that names a host action: a namespace and an operation."""

    @property
    def namespace(self) -> str: ...

    @property
    def operation(self) -> str: ...


class Action(enum.Enum):
    """The actions a host can authorise, each ``namespace:operation``.

    :data:`MCP_CAPABILITIES` is derived from this enumeration, so an action
    added here is automatically part of what an MCP flow declares: it can
    never be silently left out of the ceiling.
    """

    FS_READ = "fs:read"
    FS_WRITE = "fs:write"
    FS_DELETE = "fs:delete"
    NET_CONNECT = "net:connect"
    NET_LISTEN = "net:listen"
    PROCESS_EXEC = "process:exec"
    ENV_READ = "env:read"

    @property
    def namespace(self) -> str:
        return str(self.value).split(":", 1)[0]

    @property
    def operation(self) -> str:
        return str(self.value).split(":", 1)[1]


_WORD = re.compile(r"[a-z][a-z0-9_-]*\Z")


@dataclass(frozen=True, slots=True)
class Capability:
    """One declared authority: ``namespace:operation:resource``.

    ``resource`` is a pattern: ``**`` matches anything, ``*`` anything
    without a ``/``, every other character itself (``fs:read:/tmp/**``).
    """

    namespace: str
    operation: str
    resource: str

    @classmethod
    def parse(cls, text: object) -> Capability:
        """Parse ``namespace:operation:resource``; exactly three non-empty parts.

        ``namespace`` and ``operation`` are lower-case words (never a
        wildcard), so a bare ``*`` or ``*:*:*`` is refused rather than read
        as "everything". Raises :class:`ValueError`.
        """
        if not isinstance(text, str):
            raise ValueError(f"a capability must be a string, got {type(text).__name__}")
        parts = text.split(":")
        if len(parts) != 3:
            raise ValueError(
                f"capability {text!a} must have exactly three colon-separated parts "
                "(namespace:operation:resource)"
            )
        namespace, operation, resource = parts
        for label, part in (("namespace", namespace), ("operation", operation)):
            if not _WORD.match(part):
                raise ValueError(
                    f"capability {text!a} has {label} {part!a}; "
                    "it must be a lower-case word"
                )
        _check_pattern(resource, f"capability {text!a}")
        return cls(namespace, operation, resource)

    @property
    def action(self) -> Action | None:
        """The :class:`Action` this capability is for, if it is a known one."""
        try:
            return Action(f"{self.namespace}:{self.operation}")
        except ValueError:
            return None

    def covers(self, other: Capability) -> bool:
        """Whether every use ``other`` allows is also allowed by ``self``."""
        return (
            self.namespace == other.namespace
            and self.operation == other.operation
            and pattern_covers(self.resource, other.resource)
        )

    def __str__(self) -> str:
        return f"{self.namespace}:{self.operation}:{self.resource}"


def capabilities_for(actions: Iterable[HostAction]) -> tuple[str, ...]:
    """One ``namespace:operation:**`` capability per action, in order."""
    return tuple(f"{a.namespace}:{a.operation}:**" for a in actions)


MCP_CAPABILITIES: tuple[str, ...] = capabilities_for(Action)
"""What every projected MCP flow declares: every host action, any resource.

Spelled out per action rather than as a bare ``*``, because a capability
must parse as three components and a wildcard would parse as nothing.
"""


_MAX_PATTERN = 1024


def _check_pattern(pattern: object, where: str) -> str:
    if not isinstance(pattern, str) or not pattern:
        raise ValueError(f"{where}: a resource pattern must be a non-empty string")
    if len(pattern) > _MAX_PATTERN:
        raise ValueError(f"{where}: a resource pattern is longer than {_MAX_PATTERN} characters")
    bad = _forbidden_char(pattern, allow_slash=True)
    if bad is not None or any(ch.isspace() for ch in pattern):
        raise ValueError(f"{where}: resource pattern {pattern!a} contains a forbidden character")
    return pattern


def _tokens(pattern: str) -> tuple[str, ...]:
    # "**" and "*" become single tokens; every other character is a literal.
    return tuple(re.findall(r"\*\*|\*|[^*]", pattern, re.DOTALL))


@lru_cache(maxsize=1024)
def pattern_covers(outer: str, inner: str) -> bool:
    """Whether every string matched by ``inner`` is matched by ``outer``.

    Patterns use ``**`` (anything), ``*`` (anything but ``/``) and literal
    characters. The answer is *sound*: ``True`` only when containment holds.
    It can say ``False`` for a few exotic pairs that do contain each other,
    which only makes narrowing stricter, never looser.
    """
    out, inn = _tokens(outer), _tokens(inner)
    n, m = len(out), len(inn)
    # covers[j] after processing outer token i: out[i:] covers inn[j:].
    # Bottom-up, one row at a time: O(n*m) time, no recursion.
    nxt = [False] * (m + 1)
    nxt[m] = True
    for i in range(n - 1, -1, -1):
        token = out[i]
        row = [False] * (m + 1)
        for j in range(m, -1, -1):
            if token == "**":
                # Swallow nothing more, or one more inner token of any kind.
                row[j] = nxt[j] or (j < m and row[j + 1])
            elif token == "*":
                # A "*" may stand for an inner "*" or a non-"/" literal.
                row[j] = nxt[j] or (j < m and inn[j] not in ("**", "/") and row[j + 1])
            else:
                row[j] = j < m and inn[j] == token and nxt[j + 1]
        nxt = row
    return nxt[0]


# --------------------------------------------------------------------------
# Effects

Mode: TypeAlias = Literal["enforced", "expected"]
OnConflict: TypeAlias = Literal["parallel", "serialize"]
Tier: TypeAlias = Literal["read_only", "reversible", "irreversible"]

# Each ladder runs from the least to the most cautious value. Narrowing may
# only move up a ladder: it can make a runtime more careful, never less.
MODES: tuple[Mode, ...] = ("enforced", "expected")
"""``enforced``: the host confines the flow to its reads/writes.
``expected``: nothing enforces them; they are the flow's own claim."""
ON_CONFLICT: tuple[OnConflict, ...] = ("parallel", "serialize")
"""How a runtime schedules the flow against others touching the same
resources: run alongside them, or one at a time."""
TIERS: tuple[Tier, ...] = ("read_only", "reversible", "irreversible")
"""How bad an abandoned or repeated run is: harmless, undoable, or not."""


@dataclass(frozen=True, slots=True)
class Effects:
    """What a flow may touch and how carefully a runtime must treat it.

    ``reads`` and ``writes`` are resource patterns (the same syntax as a
    capability's resource). ``mode``, ``on_conflict`` and ``tier`` each take
    one value of :data:`MODES`, :data:`ON_CONFLICT`, :data:`TIERS`.
    """

    reads: tuple[str, ...]
    writes: tuple[str, ...]
    mode: Mode
    on_conflict: OnConflict
    tier: Tier

    def __post_init__(self) -> None:
        for label in ("reads", "writes"):
            value: object = getattr(self, label)
            if isinstance(value, str) or not isinstance(value, Iterable):
                raise ValueError(f"effects {label} must be a sequence of patterns")
            patterns = tuple(_check_pattern(p, f"effects {label}") for p in value)
            object.__setattr__(self, label, patterns)
        for label, ladder in (("mode", MODES), ("on_conflict", ON_CONFLICT), ("tier", TIERS)):
            if getattr(self, label) not in ladder:
                raise ValueError(f"effects {label} must be one of {', '.join(ladder)}")

    @classmethod
    def pure(cls) -> Effects:
        """Touches nothing: no reads, no writes, safe to run alongside anything."""
        return cls(reads=(), writes=(), mode="enforced", on_conflict="parallel", tier="read_only")

    def to_dict(self) -> dict[str, Any]:
        """The envelope as plain JSON (camelCase keys)."""
        return {
            "reads": list(self.reads),
            "writes": list(self.writes),
            "mode": self.mode,
            "onConflict": self.on_conflict,
            "tier": self.tier,
        }


MCP_EFFECTS = Effects(
    reads=("**",), writes=("**",), mode="expected", on_conflict="serialize", tier="irreversible"
)
"""What every projected MCP flow declares: it may read and write anything,
nothing enforces that, it runs one at a time against conflicting flows, and
an abandoned call cannot be taken back (which is why a timed-out call sends
a cancellation)."""


# --------------------------------------------------------------------------
# Flows


@dataclass(frozen=True, slots=True)
class FlowResult:
    """What a flow returns: MCP ``content`` blocks, the tool's own error flag,
    and optional structured content. ``is_error=True`` is still a result:
    the tool ran and reported a problem, which is data for the caller."""

    content: tuple[Mapping[str, Any], ...]
    is_error: bool = False
    structured_content: Mapping[str, Any] | None = None

    @classmethod
    def from_call(cls, result: CallToolResult) -> FlowResult:
        return cls(result.content, result.is_error, result.structured_content)

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
        raise ValueError(f"flow {name!a} needs a non-empty description")
    if isinstance(capabilities, str):
        raise ValueError("capabilities must be a sequence of strings, not one string")
    caps = tuple(str(Capability.parse(c)) for c in capabilities)
    if not isinstance(effects, Effects):
        raise ValueError("effects must be an Effects")
    if input_document is None:
        document = _EMPTY_OBJECT
    elif isinstance(input_document, Mapping) and input_document.get("type") == "object":
        document = freeze(thaw(input_document))
    else:
        raise ValueError(f'flow {name!a}: input_document must be a schema of type "object"')

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
    reads it as what the server says, not as the host's instructions. An
    absent or empty server description adds nothing.
    """
    text = f'MCP tool "{tool}" on server "{server}"'
    if description:
        text += f". Server-supplied description: {description}"
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
    ``mcp/<server>``. ``include`` keeps only the named tools (``None`` or
    empty keeps all), then ``exclude`` drops tools. An empty prefix or an
    ``include`` name the catalog lacks raises :class:`ProjectionError`; an
    ``exclude`` name the catalog lacks is ignored.
    """
    server = session.server
    if name_prefix is None:
        prefix = check_flow_name(f"mcp/{server}", what="the default name prefix")
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
    options: Any = None,
    /,
    *,
    name_prefix: str | None = None,
    include: Iterable[str] | None = None,
    exclude: Iterable[str] | None = None,
    **connect_options: Any,
) -> ConnectedFlows:
    """Connect a server and project its tools, checking the projection first.

    ``options`` and ``connect_options`` are what :func:`mcp_sync.connect`
    takes; a config entry's own ``namePrefix``/``include``/``exclude`` apply
    unless given here. The prefix (or the default ``mcp/<server>``) and the
    shape of ``include``/``exclude`` are checked *before* anything is
    spawned or dialled, so a bad projection raises :class:`ProjectionError`
    with no server started. An ``include`` name the catalog lacks can only
    be found after connecting: the session is closed and the error raised.
    """
    from ._client import connect

    from_entry: dict[str, Any] = {}
    if options is not None and callable(getattr(options, "projection_kwargs", None)):
        from_entry = options.projection_kwargs()
    prefix = name_prefix if name_prefix is not None else from_entry.get("name_prefix")
    wanted = include if include is not None else from_entry.get("include")
    dropped = exclude if exclude is not None else from_entry.get("exclude")
    server = connect_options.get("server", getattr(options, "server", None))
    if prefix is not None:
        check_flow_name(prefix, what="name_prefix")
    elif isinstance(server, str) and server:
        check_flow_name(f"mcp/{server}", what="the default name prefix")
    kept, left_out = _names(wanted, "include"), _names(dropped, "exclude")
    session = connect(options, **connect_options)
    try:
        source = project(session, name_prefix=prefix, include=kept, exclude=left_out)
    except BaseException:
        session.close()
        raise
    return ConnectedFlows(source.flows, session)
