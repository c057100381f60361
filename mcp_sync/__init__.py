"""mcp_sync: a blocking, thread-safe Model Context Protocol client.

Open a :class:`Session` with :func:`connect`, call tools from any number of
threads, close it (or leave a ``with`` block). See ``docs/`` for the guides.
"""

from __future__ import annotations

__version__ = "0.1.0"

from ._catalog import CallToolResult, ServerInfo, Tool, thaw
from ._client import connect, connect_http
from ._errors import (
    AuthError,
    ConfigError,
    ConnectionClosed,
    InputRequired,
    InvalidInput,
    InvalidOption,
    InvalidResponse,
    LoginRequired,
    McpError,
    NotSupported,
    ProtocolError,
    RemoteError,
    ServerUnavailable,
    SpawnFailed,
    Timeout,
    ToolNotFound,
)
from ._handlers import (
    ElicitationRequest,
    ElicitationResult,
    HandlerError,
    Handlers,
    Root,
    SamplingRequest,
    SamplingResult,
)
from ._limits import (
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
    MAX_JSON_DEPTH,
    MAX_SAFE_INTEGER,
    Limits,
)
from ._progress import ProgressCallback
from ._redact import DiagnosticEvent, Diagnostics, Redacted
from ._resources import (
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
from ._servers import DEFAULT_HEALTH_CHECK_TIMEOUT_MS, RespawnPolicy, Servers
from ._session import CLIENT_INFO, Session
from ._versions import (
    HANDSHAKE_PROTOCOL_VERSIONS,
    MODERN_PROTOCOL_VERSIONS,
    SUPPORTED_PROTOCOL_VERSIONS,
)

__all__ = [
    "CLIENT_INFO",
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
    "HANDSHAKE_PROTOCOL_VERSIONS",
    "MAX_JSON_DEPTH",
    "MAX_SAFE_INTEGER",
    "MODERN_PROTOCOL_VERSIONS",
    "SUPPORTED_PROTOCOL_VERSIONS",
    "AuthError",
    "CallToolResult",
    "Completion",
    "ConfigError",
    "ConnectionClosed",
    "DiagnosticEvent",
    "Diagnostics",
    "ElicitationRequest",
    "ElicitationResult",
    "GetPromptResult",
    "HandlerError",
    "Handlers",
    "InputRequired",
    "InvalidInput",
    "InvalidOption",
    "InvalidResponse",
    "Limits",
    "LoginRequired",
    "McpError",
    "NotSupported",
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
    "Root",
    "SamplingRequest",
    "SamplingResult",
    "RespawnPolicy",
    "ServerInfo",
    "ServerUnavailable",
    "Servers",
    "Session",
    "SpawnFailed",
    "Timeout",
    "Tool",
    "ToolNotFound",
    "__version__",
    "connect",
    "connect_http",
    "thaw",
]
