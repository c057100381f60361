"""The declaration side of flows: their errors, names, capabilities and effects.

Public through :mod:`mcp_sync.flows`, which re-exports every name here.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, ClassVar, Literal, Protocol, TypeAlias

from .catalog import forbidden_char
from .errors import InvalidInput

__all__ = [
    "MCP_CAPABILITIES",
    "MCP_EFFECTS",
    "MODES",
    "ON_CONFLICT",
    "TIERS",
    "Action",
    "Capability",
    "DeclarationError",
    "DuplicateFlowError",
    "Effects",
    "FlowFailed",
    "HostAction",
    "Mode",
    "NarrowingError",
    "OnConflict",
    "ProjectionError",
    "Tier",
    "capabilities_for",
    "check_flow_name",
    "check_label",
    "escape_label",
    "pattern_covers",
    "unescape_label",
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


class ProjectionError(InvalidInput):
    """A projection was asked for something impossible: an empty or malformed
    ``name_prefix``, or an ``include`` name the catalog does not have."""

    kind = "invalid_projection"


class DuplicateFlowError(InvalidInput):
    """Two sources composed into one catalog declare the same flow name."""

    kind = "duplicate_flow"


class NarrowingError(InvalidInput):
    """:meth:`Flow.narrow` was given an envelope that is not inside the old one."""

    kind = "invalid_narrowing"


class DeclarationError(InvalidInput):
    """A flow's declaration is malformed: a capability that does not parse,
    effects outside their ladders, a missing description."""

    kind = "invalid_declaration"


# --------------------------------------------------------------------------
# Names

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
        bad = forbidden_char(segment, allow_slash=False)
        if bad is not None:
            raise ProjectionError(
                f"{what} {name!a} contains the forbidden character U+{ord(bad):04X}"
            )
    return name


# A session's label is one segment of its flows' names (``mcp/<label>/<tool>``).
# It may hold any printable character, "/" and "%" included, so inside a flow
# name "%" is written "%25" and "/" is written "%2F" (percent-encoding, as in
# a URL path), and a label that is exactly "." or ".." is written "%2E" or
# "%2E%2E". Nothing else changes: "@scope/name" becomes "@scope%2Fname".
_LABEL_ESCAPES = {"%": "%25", "/": "%2F"}
_LABEL_UNESCAPES = {"%25": "%", "%2F": "/"}
_LABEL_ESCAPED = re.compile(r"%(?:25|2F)?")


def check_label(label: object, *, what: str = "server") -> str:
    """``label`` if it can name a session, else :class:`ProjectionError`.

    A non-empty string of printable characters: any character but the ones a
    tool name may not contain (controls, format characters, U+2028/U+2029,
    lone surrogates). ``/``, ``@``, ``%``, spaces and ``.`` are all fine.
    """
    if not isinstance(label, str):
        raise ProjectionError(f"{what} must be a string, got {type(label).__name__}")
    if not label:
        raise ProjectionError(f"{what} must not be empty")
    bad = forbidden_char(label, allow_slash=True)
    if bad is not None:
        raise ProjectionError(f"{what} {label!a} contains the forbidden character U+{ord(bad):04X}")
    return label


def escape_label(label: str) -> str:
    """The segment that stands for session label ``label`` in a flow name.

    ``%`` becomes ``%25`` and ``/`` becomes ``%2F``; a label that is exactly
    ``.`` or ``..`` becomes ``%2E`` or ``%2E%2E``. Every other character stays
    as it is, so ``escape_label("@playwright/mcp") == "@playwright%2Fmcp"``
    and the default flow name of its ``browser_click`` tool is
    ``mcp/@playwright%2Fmcp/browser_click``. :func:`unescape_label` undoes it.
    """
    if label in (".", ".."):
        return "%2E" * len(label)
    if "%" not in label and "/" not in label:
        return label
    return "".join(_LABEL_ESCAPES.get(ch, ch) for ch in label)


def unescape_label(segment: str) -> str:
    """The session label that :func:`escape_label` wrote as ``segment``.

    Raises :class:`ProjectionError` for a segment that function never writes
    (a ``/``, a ``%`` not followed by ``25``, ``2F`` or ``2E``, or ``%2E``
    anywhere but in ``%2E`` and ``%2E%2E``).
    """
    if segment in ("%2E", "%2E%2E"):
        return "." * (len(segment) // 3)
    if "/" in segment or "%2E" in segment:
        raise ProjectionError(f"{segment!a} is not an escaped label")

    def one(found: re.Match[str]) -> str:
        text = found.group()
        if text == "%":
            raise ProjectionError(f"{segment!a} is not an escaped label")
        return _LABEL_UNESCAPES[text]

    return _LABEL_ESCAPED.sub(one, segment)


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
        as "everything". Raises :class:`DeclarationError` (a ``ValueError``).
        """
        if not isinstance(text, str):
            raise DeclarationError(f"a capability must be a string, got {type(text).__name__}")
        parts = text.split(":")
        if len(parts) != 3:
            raise DeclarationError(
                f"capability {text!a} must have exactly three colon-separated parts "
                "(namespace:operation:resource)"
            )
        namespace, operation, resource = parts
        for label, part in (("namespace", namespace), ("operation", operation)):
            if not _WORD.match(part):
                raise DeclarationError(
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
        raise DeclarationError(f"{where}: a resource pattern must be a non-empty string")
    if len(pattern) > _MAX_PATTERN:
        raise DeclarationError(f"{where}: a resource pattern is longer than {_MAX_PATTERN} characters")
    bad = forbidden_char(pattern, allow_slash=True)
    if bad is not None or any(ch.isspace() for ch in pattern):
        raise DeclarationError(f"{where}: resource pattern {pattern!a} contains a forbidden character")
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
                raise DeclarationError(f"effects {label} must be a sequence of patterns")
            patterns = tuple(_check_pattern(p, f"effects {label}") for p in value)
            object.__setattr__(self, label, patterns)
        for label, ladder in (("mode", MODES), ("on_conflict", ON_CONFLICT), ("tier", TIERS)):
            if getattr(self, label) not in ladder:
                raise DeclarationError(f"effects {label} must be one of {', '.join(ladder)}")

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
