"""The exception hierarchy.

Every failure a session can report is an :class:`McpError` with a stable
``kind``. Messages are model-safe: they name the server, the option or limit
that was tripped and the tool, and never carry process ids, command lines,
environment values, stderr text, raw frames or a remote error's message.
"""

from __future__ import annotations

from typing import Any, ClassVar

from ._redact import Redacted

__all__ = [
    "ConnectionClosed",
    "InputRequired",
    "InvalidResponse",
    "McpError",
    "ProtocolError",
    "RemoteError",
    "SpawnFailed",
    "Timeout",
    "ToolNotFound",
]


class McpError(Exception):
    """Base class of every error a session raises; ``kind`` says which one."""

    kind: ClassVar[str] = "mcp_error"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return self.message

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.message!r})"

    def _copy(self) -> McpError:
        """A fresh instance with the same kind and message.

        The terminal error is raised in many threads; each gets its own
        instance so tracebacks do not pile up on one shared object.
        """
        return type(self)(self.message)


class SpawnFailed(McpError):
    """The server's command could not be started."""

    kind = "spawn_failed"


class ProtocolError(McpError):
    """The peer broke a JSON-RPC or MCP rule, a limit was exceeded, an option
    is invalid, or an outgoing argument cannot be sent."""

    kind = "protocol_error"


class InvalidResponse(McpError):
    """A reply was well-formed JSON-RPC but its MCP content is unacceptable:
    a bad catalog, too many tools, a bad tool name or a bad result shape."""

    kind = "invalid_response"


class ConnectionClosed(McpError):
    """The session has ended; the message says which event ended it."""

    kind = "connection_closed"


class Timeout(McpError, TimeoutError):
    """A handshake step or a request missed its deadline.

    Also a builtin :class:`TimeoutError`, so ``except TimeoutError`` works.
    """

    kind = "timeout"


class ToolNotFound(McpError):
    """``call_tool`` named a tool that is not in the catalog snapshot.

    Nothing was sent to the server.
    """

    kind = "tool_not_found"


class RemoteError(McpError):
    """The server answered a request with a JSON-RPC error.

    ``code`` is the JSON-RPC error code. The server's own message and data are
    untrusted text: they are kept only in ``detail``, a :class:`Redacted`
    whose ``reveal()`` returns ``{"message": ..., "data": ...}``.
    """

    kind = "remote_error"

    def __init__(self, message: str, code: int = 0, detail: Redacted[Any] | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.detail: Redacted[Any] = detail if detail is not None else Redacted(None)

    def _copy(self) -> McpError:
        return RemoteError(self.message, self.code, self.detail)


class InputRequired(McpError):
    """The server needs input from the client to finish a request (2026-07-28
    ``input_required``: an elicitation, a sampling request, the roots list)
    and nothing in this client provides it.

    ``methods`` names what the server asked for, e.g.
    ``("elicitation/create",)``. Nothing was retried; the session stays open.
    """

    kind = "input_required"

    def __init__(self, message: str, methods: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.methods = methods

    def _copy(self) -> McpError:
        return InputRequired(self.message, self.methods)
