"""The exception hierarchy.

Every failure a session can report is an :class:`McpError` with a stable
``kind``. Messages are model-safe: they name the server, the option or limit
that was tripped and the tool (and a command that could not be started, as
its config wrote it), and never carry process ids, a command's arguments,
environment values, stderr text, raw frames or a remote error's message.
"""

from __future__ import annotations

from concurrent.futures import CancelledError
from typing import Any, ClassVar

from .redaction import Redacted

__all__ = [
    "AuthError",
    "Cancelled",
    "ConfigError",
    "ConnectionClosed",
    "InputRequired",
    "InvalidInput",
    "InvalidOption",
    "InvalidResponse",
    "LoginRequired",
    "McpError",
    "NotSupported",
    "OutputMismatch",
    "ProtocolError",
    "RemoteError",
    "ResultMismatch",
    "ServerUnavailable",
    "SpawnFailed",
    "Timeout",
    "ToolNotFound",
    "UrlElicitationRequired",
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


class InvalidOption(ProtocolError, ValueError):
    """A mistake of the caller's: an option of :func:`mcp_sync.connect`,
    ``Limits``, ``Handlers``, ``Servers`` or a call, or an outgoing argument,
    that cannot be used. Nothing was started or sent.

    Its kind stays ``protocol_error`` (it is a :class:`ProtocolError`), and it
    is also a builtin :class:`ValueError`: ``except ValueError`` catches every
    mistake of the caller's and nothing the peer did.
    """

    kind = "protocol_error"


class InvalidInput(McpError, ValueError):
    """A mistake of the caller's outside a session's options: a config entry,
    a flow projection or declaration, a model's tool call. Also a builtin
    :class:`ValueError`. Subclasses say which (``ConfigError``,
    ``flows.ProjectionError``, ``model_tools.MalformedToolCall``...)."""

    kind = "invalid_input"


class ConfigError(InvalidInput):
    """A config file (or entry) could not be used.

    ``path`` is the file; ``index`` the entry's position (or ``None`` for a
    problem with the whole file) and ``entry`` its name in a ``mcpServers``
    or ``servers`` object (``None`` in an array); ``field`` the field
    within it (a camelCase name, possibly with a ``.key`` or ``[n]``
    suffix); ``problem`` what is wrong.
    """

    kind = "config_error"

    def __init__(
        self,
        path: str,
        problem: str,
        *,
        index: int | None = None,
        field: str | None = None,
        entry: str | None = None,
    ) -> None:
        self.path = path
        self.problem = problem
        self.index = index
        self.field = field
        self.entry = entry
        super().__init__(self._where() + problem)

    def _where(self) -> str:
        where = self.path
        if self.entry is not None:
            where += f": entry {_quoted(self.entry)}"
        elif self.index is not None:
            where += f": entry {self.index}"
        if (self.entry is not None or self.index is not None) and self.field is not None:
            where += f", field {self.field}"
        return where + ": "

    def __repr__(self) -> str:
        return f"ConfigError({self.message!r})"

    def _copy(self) -> McpError:
        return ConfigError(
            self.path, self.problem, index=self.index, field=self.field, entry=self.entry
        )


def _quoted(name: str) -> str:
    return '"' + ascii(name)[1:-1].replace('"', '\\"') + '"'


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


class Cancelled(McpError, CancelledError):
    """A blocking call was cancelled through its ``cancel=`` token (a
    ``CancelScope`` or a ``threading.Event`` fired from another thread)
    before its result came. A request already written was withdrawn and the
    server told, the era's way; a task it had started was cancelled too. The
    session stays open.

    Also a :class:`concurrent.futures.CancelledError`, so ``except
    concurrent.futures.CancelledError`` catches it as it catches a cancelled
    ``ToolCall``.
    """

    kind = "cancelled"


class ToolNotFound(McpError):
    """``call_tool`` named a tool that is not in the catalog snapshot.

    Nothing was sent to the server.
    """

    kind = "tool_not_found"


class NotSupported(McpError):
    """The server did not declare the capability a request needs (resources,
    prompts, completions, logging, tasks). Nothing was sent."""

    kind = "not_supported"


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


URL_ELICITATION_REQUIRED = -32042
"""The JSON-RPC code of URLElicitationRequiredError (MCP 2025-11-25, elicitation)."""
MAX_PENDING_ELICITATIONS = 16


class UrlElicitationRequired(RemoteError):
    """The server refused a request until the user completes a URL-mode
    elicitation (JSON-RPC error ``-32042``, ``URLElicitationRequiredError``):
    send the user to :attr:`url`, then retry the request.

    ``url`` is the server's URL, checked to be an absolute ``http(s)`` URL
    without control characters or spaces; ``display_url`` is the same text
    escaped for showing (never open it without the user's consent).
    ``elicitation_id`` is the id the server gave it (or ``None``).
    ``elicitations`` holds every ``(url, elicitation_id)`` the server listed,
    first one first. The server's own words for the user are kept in
    ``detail``, a :class:`Redacted`, like every remote error's.
    """

    kind = "url_elicitation_required"

    def __init__(
        self,
        message: str,
        code: int = URL_ELICITATION_REQUIRED,
        detail: Redacted[Any] | None = None,
        elicitations: tuple[tuple[str, str | None], ...] = (),
    ) -> None:
        super().__init__(message, code, detail)
        self.elicitations = elicitations

    @property
    def url(self) -> str | None:
        return self.elicitations[0][0] if self.elicitations else None

    @property
    def display_url(self) -> str | None:
        from .text import escape

        url = self.url
        return escape(url) if url is not None else None

    @property
    def elicitation_id(self) -> str | None:
        return self.elicitations[0][1] if self.elicitations else None

    def _copy(self) -> McpError:
        return UrlElicitationRequired(self.message, self.code, self.detail, self.elicitations)


def remote_error(message: str, code: int, error_message: object, data: object) -> RemoteError:
    """The error for a JSON-RPC error reply: a :class:`RemoteError`, or for a
    ``-32042`` that lists at least one usable URL elicitation an
    :class:`UrlElicitationRequired` (the user has to open that URL first)."""
    detail: Redacted[Any] = Redacted({"message": error_message, "data": data})
    if code != URL_ELICITATION_REQUIRED:
        return RemoteError(message, code, detail)
    pending = url_elicitations(data)
    if not pending:
        return RemoteError(message, code, detail)
    return UrlElicitationRequired(
        f"{message}: the user must complete a URL elicitation first, then retry", code, detail, pending
    )


def url_elicitations(data: object) -> tuple[tuple[str, str | None], ...]:
    """The usable ``(url, elicitationId)`` pairs of a ``-32042`` error's data
    (``{"elicitations": [{"mode": "url", "url": ..., "elicitationId": ...}]}``)."""
    from collections.abc import Mapping

    from .text import valid_url

    listed = data.get("elicitations") if isinstance(data, Mapping) else None
    if not isinstance(listed, list):
        return ()
    out: list[tuple[str, str | None]] = []
    for entry in listed[:MAX_PENDING_ELICITATIONS]:
        if not isinstance(entry, Mapping) or entry.get("mode", "url") != "url":
            continue
        url = entry.get("url")
        if not isinstance(url, str) or not valid_url(url):
            continue
        elicitation_id = entry.get("elicitationId")
        usable_id = elicitation_id if isinstance(elicitation_id, str) and len(elicitation_id) <= 256 else None
        out.append((url, usable_id))
    return tuple(out)


class ResultMismatch(InvalidResponse):
    """A tool's result does not fit the ``result_type`` the caller gave
    ``call_tool``. Its kind stays ``invalid_response`` (it is an
    :class:`InvalidResponse`).

    ``reason`` is ``"is_error"`` (the tool reported a failure instead of a
    result), ``"missing"`` (the result has no ``structuredContent``) or
    ``"invalid"`` (it does not validate); ``field`` is the path of the first
    field that does not fit (``"days[1].high"``; ``None`` for the whole value);
    ``result`` is the :class:`CallToolResult` as received, to read its
    content (``None`` on a copy raised again elsewhere).
    """

    kind = "invalid_response"

    def __init__(
        self,
        message: str,
        reason: str = "invalid",
        field: str | None = None,
        result: Any = None,
    ) -> None:
        super().__init__(message)
        self.reason = reason
        self.field = field
        self.result = result

    def _copy(self) -> ResultMismatch:
        return ResultMismatch(self.message, self.reason, self.field, self.result)


class OutputMismatch(InvalidResponse):
    """A tool's result breaks the ``outputSchema`` the tool published (the
    session checks it unless ``connect(validate_output=False)``). Its kind
    stays ``invalid_response`` (it is an :class:`InvalidResponse`).

    ``tool`` is the tool's name; ``reason`` is ``"invalid"`` (the
    ``structuredContent`` does not validate) or ``"missing"`` (a successful
    result without ``structuredContent``); ``path`` is the JSON pointer of
    the first value that fails (``"/days/1/high"``, ``""`` for the whole
    value) and ``keyword`` the schema keyword it fails (``"type"``), both
    cut to 200 characters; ``result`` is the :class:`CallToolResult` as
    received (``None`` on a copy raised again elsewhere). The message names
    the tool, the keyword and the path, never a value the server sent.
    """

    kind = "invalid_response"

    def __init__(  # noqa: PLR0913, PLR0917
        self,
        message: str,
        tool: str = "",
        reason: str = "invalid",
        path: str = "",
        keyword: str | None = None,
        result: Any = None,
    ) -> None:
        super().__init__(message)
        self.tool = tool
        self.reason = reason
        self.path = path
        self.keyword = keyword
        self.result = result

    def _copy(self) -> OutputMismatch:
        return OutputMismatch(self.message, self.tool, self.reason, self.path, self.keyword, self.result)


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


class MissingExtra(McpError, ImportError):
    """A feature needs an optional dependency that is not installed: the
    HTTP transports need httpx (extra ``http``), ``validate_output`` needs
    jsonschema (``validation``), signed JWTs and DPoP need joserfc
    (``auth``). Also an :class:`ImportError`. Raised before anything is
    started or sent; ``extra`` names the extra that brings it."""

    kind = "missing_extra"

    def __init__(self, message: str, extra: str = "") -> None:
        super().__init__(message)
        self.extra = extra

    def _copy(self) -> McpError:
        return type(self)(self.message, self.extra)


def missing_extra(feature: str, module: str, extra: str) -> MissingExtra:
    """The error for ``feature`` needing ``module``, which ``extra`` brings."""
    return MissingExtra(f"{feature} needs {module}: pip install 'mcp-sync-client[{extra}]'", extra)


class ServerUnavailable(McpError):
    """:class:`mcp_sync.Servers` will not start this server again yet: it kept
    failing, and the next attempt is held back (see the respawn policy).

    Raised at once, without starting anything. ``server`` is its name,
    ``failures`` how many times in a row it failed, ``retry_in`` how many
    seconds remain before the next attempt, and ``last_error`` the failure
    that made it wait.
    """

    kind = "server_unavailable"

    def __init__(
        self,
        message: str,
        server: str = "",
        failures: int = 0,
        retry_in: float = 0.0,
        last_error: McpError | None = None,
    ) -> None:
        super().__init__(message)
        self.server = server
        self.failures = failures
        self.retry_in = retry_in
        self.last_error = last_error

    def _copy(self) -> McpError:
        return ServerUnavailable(
            self.message, self.server, self.failures, self.retry_in, self.last_error
        )
# Error codes of the OAuth registries (RFC 6749, 6750, 7591, 8707, 9449, OIDC):
# the only server-chosen words an AuthError repeats in its message.
OAUTH_ERROR_CODES = frozenset(
    {
        "access_denied", "consent_required", "insufficient_scope", "interaction_required",
        "invalid_client", "invalid_client_metadata", "invalid_dpop_proof", "invalid_grant",
        "invalid_redirect_uri", "invalid_request", "invalid_scope", "invalid_target",
        "invalid_token", "login_required", "server_error", "temporarily_unavailable",
        "unauthorized_client", "unsupported_grant_type", "unsupported_response_type",
        "use_dpop_nonce",
    }
)


class AuthError(McpError):
    """Authorization for a remote server could not be obtained, or the server
    refused the credentials it got.

    ``oauth_error`` is the OAuth error code an authorization server or the MCP
    server gave (``"invalid_grant"``, ``"insufficient_scope"``...) when it is
    one of the registered codes, else ``None``. Descriptions and URIs the
    servers sent are kept only in ``detail``, a :class:`Redacted`.
    """

    kind = "auth_failed"

    def __init__(
        self, message: str, oauth_error: str | None = None, detail: Redacted[Any] | None = None
    ) -> None:
        super().__init__(message)
        self.oauth_error = oauth_error if oauth_error in OAUTH_ERROR_CODES else None
        self.detail: Redacted[Any] = detail if detail is not None else Redacted(None)

    def _copy(self) -> McpError:
        return type(self)(self.message, self.oauth_error, self.detail)


class LoginRequired(AuthError):
    """A person has to log in (again) before the server can be reached: the
    authorization needs a browser and this auth object may not open one here.

    Call the auth object's ``login()``, or, in a web application, send the
    user through ``begin_login()`` / ``complete_login()``.
    """
