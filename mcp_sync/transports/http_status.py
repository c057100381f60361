"""What an HTTP answer means for the session: status codes to errors, in both
eras, for both HTTP transports.

What breaks the transport ends the session (401/403 that new credentials did
not fix, a 2xx without the reply, an over-limit or compressed body:
``terminal``); an error status the server gives one request (5xx, 429, other
4xx) fails only that call (``remote_error``). No message carries the token,
the URL or response body text.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, Protocol, TypeAlias

from ..protocol.errors import AuthError, ConnectionClosed, McpError, ProtocolError, RemoteError, remote_error
from ..protocol.frames import decode_line, error_object
from ..protocol.redaction import Redacted

if TYPE_CHECKING:
    import httpx

__all__ = ["AuthHook", "Failure", "SessionLost", "StatusMap", "Stopped", "content_type", "what"]


class AuthHook(Protocol):
    """What an HTTP transport needs from an auth object's binding
    (``mcp_sync.auth._grant.Binding``): credentials for each request, and a
    decision when the server refuses them."""

    def attach(self, client: httpx.Client, stopping: threading.Event, beside: Beside | None = None) -> None: ...
    def headers(self, method: str, url: str, body: bytes | None, deadline: float) -> dict[str, str]: ...
    def current(self, method: str, url: str) -> dict[str, str]: ...
    def observe(self, status: int, headers: httpx.Headers) -> None: ...
    def refused(
        self, status: int, headers: httpx.Headers, sent: dict[str, str], deadline: float
    ) -> bool: ...
    def failure(self, status: int) -> tuple[McpError, bool]: ...


class Failure(Exception):
    """Raised inside an exchange: ``error`` ends the session (``terminal``)
    or fails only the request being sent."""

    def __init__(self, error: McpError, terminal: bool) -> None:
        super().__init__(error.message)
        self.error = error
        self.terminal = terminal


class SessionLost(Exception):
    """The server answered 404 to a request that carried session id ``stale``."""

    def __init__(self, stale: str) -> None:
        super().__init__("session lost")
        self.stale = stale


Beside: TypeAlias = Callable[[], AbstractContextManager[Callable[[str, dict[str, Any]], None]]]
"""A transport's hook for a request made on its HTTP client beside its own
exchanges (an OAuth token fetch): entered around the request, it gives the
``trace`` extension that lets the transport's close wake the request's socket."""


class Stopped(Exception):
    """The transport is shutting down: abandon the exchange quietly."""


def content_type(response: httpx.Response) -> str:
    value: str = response.headers.get("content-type", "")
    return value.split(";", 1)[0].strip().lower()


_OUR_METHODS = frozenset({"initialize", "tools/list", "tools/call", "server/discover"})


def what(method: str | None) -> str:
    """How an error message names the request (only methods that carry no
    caller data are named)."""
    return method if method in _OUR_METHODS else "a request"


class StatusMap:
    """Turns a status code into the error it means for this server.

    ``refused`` turns true (and stays) once the server refused our
    credentials or could not be reached: nobody to send a closing DELETE to.
    """

    def __init__(self, server: str, *, has_token: bool, auth: AuthHook | None) -> None:
        self._server = server
        self._has_token = has_token
        self._auth = auth
        self.refused = False

    def legacy(self, status: int, response: httpx.Response, method: str | None, *, allow_renew: bool) -> None:
        """A handshake-era request's status: returns on 200, raises otherwise."""
        if status == 200:
            return
        if status in (401, 403):
            raise self.refusal(status)
        stale = response.request.headers.get("Mcp-Session-Id")
        if status == 404 and allow_renew and stale is not None:
            raise SessionLost(stale)
        if status in (202, 204):
            raise Failure(
                ProtocolError(
                    f"server {self._server!r} answered {what(method)} with HTTP {status} "
                    "and no reply"
                ),
                True,
            )
        # Any other status fails this request only; the body is never read.
        raise Failure(self.status_error(status, method), False)

    def modern(
        self,
        status: int,
        response: httpx.Response,
        method: str | None,
        request_id: int,
        read_body: Callable[[], bytes],
    ) -> None:
        """A modern request answered with an error status. A JSON-RPC error in
        the body (the revision puts ``-32022``, ``-32601``, header mismatches
        there) is the request's reply; otherwise as in the legacy era."""
        if status in (401, 403) or status < 400:
            self.legacy(status, response, method, allow_renew=False)
            return
        if content_type(response) == "application/json":
            try:
                message = decode_line(read_body())
            except ProtocolError as exc:
                raise Failure(exc, True) from None
            error = _error_reply(message, request_id)
            if error is not None:
                raise Failure(
                    remote_error(
                        f"server {self._server!r} answered {what(method)} with HTTP "
                        f"{status} and JSON-RPC error {error['code']}",
                        error["code"],
                        error["message"],
                        error.get("data"),
                    ),
                    False,
                )
        raise Failure(self.status_error(status, method), False)

    def refusal(self, status: int) -> Failure:
        """The failure for a 401/403 that new credentials did not fix."""
        if self._auth is not None:
            error, terminal = self._auth.failure(status)
            if terminal:
                self.refused = True
            return Failure(error, terminal)
        self.refused = True
        reason = "401 Unauthorized" if status == 401 else "403 Forbidden"
        if self._has_token:
            # The static token was refused: an auth failure too, whose remedy
            # is a new token (its value never appears here).
            message = (
                f"server {self._server!r} answered HTTP {reason}: it refused the token "
                "from bearer_token_env (check that the token is valid and not expired)"
            )
            return Failure(AuthError(message), True)
        # No credentials were configured at all: the server wants
        # authorization, which is an auth failure with what to try.
        return Failure(
            AuthError(
                f"server {self._server!r} answered HTTP {reason} and no auth is configured "
                "(give auth=, see mcp_sync.auth, or bearer_token_env)"
            ),
            True,
        )

    def status_error(self, status: int, method: str | None, *, noun: str | None = None) -> RemoteError:
        # JSON-RPC's closest codes: invalid request for 4xx, internal error otherwise.
        code = -32600 if 400 <= status < 500 else -32603
        return RemoteError(
            f"server {self._server!r} answered {noun or what(method)} with HTTP {status}",
            code,
            Redacted({"message": f"HTTP {status}", "data": {"http_status": status}}),
        )

    def transport_error(self, exc: Exception, hx: Any) -> ConnectionClosed:
        """A request that could not be completed at the HTTP level."""
        name = type(exc).__name__
        if isinstance(exc, (hx.ConnectError, hx.ProxyError)):
            self.refused = True  # nobody there to tell
            return ConnectionClosed(f"server {self._server!r} could not be reached ({name})")
        return ConnectionClosed(f"the HTTP connection to server {self._server!r} failed ({name})")


def _error_reply(message: dict[str, Any] | None, request_id: int) -> dict[str, Any] | None:
    """The error object of a JSON-RPC error reply to ``request_id`` (or with a
    null id, which a server that could not read the request gives), else ``None``."""
    if message is None or "result" in message or message.get("id") not in (request_id, None):
        return None
    return error_object(message)
