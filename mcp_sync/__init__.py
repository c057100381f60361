"""mcp_sync: a blocking, thread-safe Model Context Protocol client.

Open a :class:`Session` with :func:`connect`, call tools from any number of
threads, close it (or leave a ``with`` block). See ``docs/`` for the guides.
"""

from __future__ import annotations

import typing

from ._servers import DEFAULT_HEALTH_CHECK_TIMEOUT_MS, RespawnPolicy, Servers
from ._version import __version__
from .protocol.catalog import CallToolResult, Icon, ServerInfo, Tool, thaw
from .protocol.errors import (
    AuthError,
    Cancelled,
    ConfigError,
    ConnectionClosed,
    InputRequired,
    InvalidInput,
    InvalidOption,
    InvalidResponse,
    LoginRequired,
    McpError,
    MissingExtra,
    NotSupported,
    OutputMismatch,
    ProtocolError,
    RemoteError,
    ResultMismatch,
    ServerUnavailable,
    SpawnFailed,
    Timeout,
    ToolNotFound,
    UrlElicitationRequired,
)
from .protocol.limits import (
    DEFAULT_HANDSHAKE_TIMEOUT_MS,
    DEFAULT_MAX_CATALOG_PAGES,
    DEFAULT_MAX_FRAME_BYTES,
    DEFAULT_MAX_OUTBOUND_FRAME_BYTES,
    DEFAULT_MAX_STDERR_BYTES,
    DEFAULT_MAX_TOOL_DOCUMENT_BYTES,
    DEFAULT_MAX_TOOL_NAME_BYTES,
    DEFAULT_MAX_TOOLS,
    DEFAULT_QUEUE_CAPACITY,
    DEFAULT_REQUEST_TIMEOUT_MS,
    DEFAULT_START_TIMEOUT_MS,
    MAX_JSON_DEPTH,
    MAX_JSON_VALUES,
    MAX_SAFE_INTEGER,
    Limits,
)
from .protocol.redaction import DiagnosticEvent, Diagnostics, InboundMessage, MessageHook, Redacted
from .protocol.versions import (
    HANDSHAKE_PROTOCOL_VERSIONS,
    MODERN_PROTOCOL_VERSIONS,
    SUPPORTED_PROTOCOL_VERSIONS,
)
from .session.api import Session
from .session.cancel import CancelScope
from .session.connect import connect, connect_http
from .session.core import CLIENT_INFO
from .session.progress import ProgressCallback
from .session.submit import ToolCall

if typing.TYPE_CHECKING:
    from .protocol.roots import Root
    from .session.handlers import (
        ElicitationRequest,
        ElicitationResult,
        HandlerError,
        Handlers,
        SamplingRequest,
        SamplingResult,
    )
    from .session.paging import Page
    from .session.resources import (
        Completion,
        GetPromptResult,
        Prompt,
        PromptArgument,
        PromptMessage,
        ReadResourceResult,
        Resource,
        ResourceContents,
        ResourceTemplate,
    )

# Defined on first use: these value types (answers to the server's requests,
# resources, prompts, roots, a list's Page) cost `import mcp_sync` about 25 ms to define, and
# many programs never touch them. (Outside type checking: mypy sees the
# imports above, and no module __getattr__ to hide a misspelt name.)
_FROM_HANDLERS = frozenset({
    "ElicitationRequest", "ElicitationResult", "HandlerError", "Handlers",
    "SamplingRequest", "SamplingResult",
})  # fmt: skip
_FROM_RESOURCES = frozenset({
    "Completion", "GetPromptResult", "Prompt", "PromptArgument", "PromptMessage",
    "ReadResourceResult", "Resource", "ResourceContents", "ResourceTemplate",
})  # fmt: skip

if not typing.TYPE_CHECKING:

    def __getattr__(name: str) -> object:
        if name in _FROM_HANDLERS:
            from .session import handlers as module
        elif name in _FROM_RESOURCES:
            from .session import resources as module
        elif name == "Root":
            from .protocol import roots as module
        elif name == "Page":
            from .session import paging as module
        else:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        value = getattr(module, name)
        globals()[name] = value  # the next lookup finds it without coming here
        return value

    def __dir__() -> list[str]:
        return sorted({*globals(), *_FROM_HANDLERS, *_FROM_RESOURCES, "Root", "Page"})


__all__ = [
    "AuthError",
    "CLIENT_INFO",
    "CallToolResult",
    "CancelScope",
    "Cancelled",
    "Completion",
    "ConfigError",
    "ConnectionClosed",
    "DEFAULT_HANDSHAKE_TIMEOUT_MS",
    "DEFAULT_HEALTH_CHECK_TIMEOUT_MS",
    "DEFAULT_MAX_CATALOG_PAGES",
    "DEFAULT_MAX_FRAME_BYTES",
    "DEFAULT_MAX_OUTBOUND_FRAME_BYTES",
    "DEFAULT_MAX_STDERR_BYTES",
    "DEFAULT_MAX_TOOLS",
    "DEFAULT_MAX_TOOL_DOCUMENT_BYTES",
    "DEFAULT_MAX_TOOL_NAME_BYTES",
    "DEFAULT_QUEUE_CAPACITY",
    "DEFAULT_REQUEST_TIMEOUT_MS",
    "DEFAULT_START_TIMEOUT_MS",
    "DiagnosticEvent",
    "Diagnostics",
    "ElicitationRequest",
    "ElicitationResult",
    "GetPromptResult",
    "HANDSHAKE_PROTOCOL_VERSIONS",
    "HandlerError",
    "Handlers",
    "Icon",
    "InboundMessage",
    "InputRequired",
    "InvalidInput",
    "InvalidOption",
    "InvalidResponse",
    "Limits",
    "LoginRequired",
    "MAX_JSON_DEPTH",
    "MAX_JSON_VALUES",
    "MAX_SAFE_INTEGER",
    "MODERN_PROTOCOL_VERSIONS",
    "McpError",
    "MessageHook",
    "MissingExtra",
    "NotSupported",
    "OutputMismatch",
    "Page",
    "ProgressCallback",
    "Prompt",
    "PromptArgument",
    "PromptMessage",
    "ProtocolError",
    "ReadResourceResult",
    "Redacted",
    "RemoteError",
    "Resource",
    "ResourceContents",
    "ResourceTemplate",
    "RespawnPolicy",
    "ResultMismatch",
    "Root",
    "SUPPORTED_PROTOCOL_VERSIONS",
    "SamplingRequest",
    "SamplingResult",
    "ServerInfo",
    "ServerUnavailable",
    "Servers",
    "Session",
    "SpawnFailed",
    "Timeout",
    "Tool",
    "ToolCall",
    "ToolNotFound",
    "UrlElicitationRequired",
    "__version__",
    "connect",
    "connect_http",
    "thaw",
]
