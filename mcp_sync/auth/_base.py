"""The base of every auth object, and the plain token provider."""

from __future__ import annotations

import re
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, ClassVar, Literal

from ..protocol.errors import AuthError, McpError, ProtocolError, Timeout
from ..protocol.limits import Limits
from ._grant import Binding, Grant, Run
from ._store import MemoryTokenStore, TokenStore
from ._tokens import CLIENT_AUTH_METHODS, ClientAuth, TokenSet

if TYPE_CHECKING:
    import httpx

    from ..transports.http_status import Beside

__all__ = ["Auth", "TokenProvider"]

_SCOPE = re.compile(r"[\x21\x23-\x5b\x5d-\x7e]+(?: [\x21\x23-\x5b\x5d-\x7e]+)*\Z")
_VISIBLE = re.compile(r"[\x21-\x7e]+\Z")

DpopSetting = bool | Literal["auto"]


def check_scope(scope: object, option: str = "scope") -> str | None:
    if scope is None:
        return None
    if not isinstance(scope, str) or not _SCOPE.match(scope):
        raise ProtocolError(f"option {option} must be space-separated OAuth scope tokens")
    return scope


def check_auth_method(method: object, *, secret: bool, key: bool = False) -> str | None:
    """The ``token_endpoint_auth_method`` option: how the client was
    registered to authenticate, which must suit the credential it was given."""
    if method is None:
        return None
    if method not in CLIENT_AUTH_METHODS:
        raise ProtocolError(
            "option token_endpoint_auth_method must be one of " + ", ".join(CLIENT_AUTH_METHODS)
        )
    assert isinstance(method, str)
    if method == "private_key_jwt" and not key:
        raise ProtocolError("option token_endpoint_auth_method=private_key_jwt needs private_key")
    if method != "private_key_jwt" and not secret:
        raise ProtocolError(f"option token_endpoint_auth_method={method} needs client_secret")
    return method


class Auth(ABC):
    """Base class of the OAuth flows :func:`mcp_sync.connect_http` takes as
    ``auth=``: :class:`AuthorizationCode`, :class:`ClientCredentials`,
    :class:`WorkloadIdentity`, :class:`EnterpriseManagedAuthorization`.

    An auth object may serve many sessions, to many servers, from many
    threads: it keeps one grant per server URL and lets one thread at a time
    refresh or re-authorize it.

    ``scope`` is requested on top of what the server asks for; ``store``
    keeps tokens (default: in memory); ``dpop`` is ``"auto"`` (bind tokens
    with DPoP when the server and its authorization server both offer it),
    ``True`` (require it) or ``False``; ``issuer`` pins one authorization
    server when a server lists several.

    A credential of the caller's (a client secret, a private key's assertion,
    a workload's JWT) is sent only to the authorization server pinned with
    ``issuer``, or to one at the MCP server's own origin: a server whose
    metadata names an authorization server elsewhere gets :class:`AuthError`
    before anything is sent, unless ``any_issuer=True`` says to trust
    whichever one it names.
    """

    interactive: ClassVar[bool] = False
    """Whether getting a token may need a person (a browser login)."""

    def __init__(
        self,
        *,
        scope: str | None = None,
        store: TokenStore | None = None,
        dpop: DpopSetting = "auto",
        issuer: str | None = None,
        any_issuer: bool = False,
    ) -> None:
        self.scope = check_scope(scope)
        if store is None:
            store = MemoryTokenStore()
        elif not all(callable(getattr(store, name, None)) for name in ("get", "put", "delete")):
            raise ProtocolError("option store must be a TokenStore (with get, put and delete)")
        self.store: TokenStore = store
        if dpop not in (True, False, "auto"):
            raise ProtocolError('option dpop must be True, False or "auto"')
        self.dpop: DpopSetting = dpop
        if issuer is not None and (not isinstance(issuer, str) or not issuer):
            raise ProtocolError("option issuer must be a non-empty string (an issuer URL)")
        self.issuer = issuer
        if not isinstance(any_issuer, bool):
            raise ProtocolError("option any_issuer must be True or False")
        self.any_issuer = any_issuer
        self._grants_lock = threading.Lock()
        self._grants: dict[str, Grant] = {}

    def __repr__(self) -> str:
        return f"<{type(self).__name__}>"

    # ----------------------------------------------------------- for connect

    def _grant(self, url: str) -> Grant:
        with self._grants_lock:
            grant = self._grants.get(url)
            if grant is None:
                grant = self._grants[url] = Grant(self, url)
            return grant

    def _bind(self, *, server: str, url: str, limits: Limits) -> Binding | TokenProviderBinding:
        """The hook one session's HTTP transport consults."""
        return Binding(self, server, url, limits)

    def forget(self, url: str) -> None:
        """Drop the tokens held for the server at ``url`` (log out locally):
        the next request has to authorize again."""
        grant = self._grant(url)
        with grant.lock:
            grant.load()
            grant.forget_token()

    # ----------------------------------------------------------- per grant kind

    @abstractmethod
    def _acquire(self, run: Run, scope: str | None) -> TokenSet:
        """Get a new token from ``run.ctx``'s authorization server."""

    def _refresh_client(self, grant: Grant) -> ClientAuth | None:
        """How the client authenticates when it refreshes ``grant``'s token."""
        return grant.client


def source_text(value: object, option: str) -> Callable[[], str]:
    """A string, a callable returning one, or a path to a file holding one:
    made into a callable read each time (a projected token file changes)."""
    import os

    if isinstance(value, str):
        if not value.strip():
            raise ProtocolError(f"option {option} must not be empty")
        text = value.strip()
        return lambda: text
    if isinstance(value, os.PathLike):
        path = os.fspath(value)

        def read() -> str:
            try:
                with open(path, encoding="utf-8") as handle:
                    return handle.read(64 * 1024).strip()
            except OSError as exc:
                raise AuthError(
                    f"option {option}: the file cannot be read ({exc.strerror or type(exc).__name__})"
                ) from None

        return read
    if callable(value):
        return value
    raise ProtocolError(f"option {option} must be a string, a callable or a path (os.PathLike)")


def call_source(source: Callable[[], str], option: str) -> str:
    """Call a caller-supplied source; what it raises is not repeated (it may
    carry a secret), and what it returns must be a visible-ASCII token."""
    try:
        value = source()
    except McpError:
        raise
    except Exception as exc:
        raise AuthError(f"the {option} callable raised {type(exc).__name__}") from None
    if not isinstance(value, str) or not _VISIBLE.match(value.strip() or " "):
        raise AuthError(f"the {option} source gave something other than a non-empty visible-ASCII string")
    return value.strip()


# ------------------------------------------------------------------ token provider


class TokenProvider:
    """Tokens the caller manages: ``get_token()`` is called for every request
    and once more after a 401; a token it returns is sent as
    ``Authorization: Bearer <token>``.

    It should cache (it is on every request's path) and may refresh in its
    own way. If it returns the same token again after a 401, the session
    ends with :class:`mcp_sync.AuthError`.
    """

    def __init__(self, get_token: Callable[[], str]) -> None:
        if not callable(get_token):
            raise ProtocolError("option auth: TokenProvider needs a callable returning a token")
        self._get_token = get_token

    def __repr__(self) -> str:
        return "<TokenProvider>"

    def _bind(self, *, server: str, url: str, limits: Limits) -> TokenProviderBinding:
        return TokenProviderBinding(self._get_token, server)


class TokenProviderBinding:
    """The transport hook of a :class:`TokenProvider`."""

    def __init__(self, get_token: Callable[[], str], server: str) -> None:
        self._get_token = get_token
        self.server = server
        self.established = False
        self._last: str | None = None

    def attach(self, client: httpx.Client, stopping: threading.Event, beside: Beside | None = None) -> None:
        pass

    def _token(self, deadline: float) -> str:
        if time.monotonic() >= deadline:
            raise Timeout(f"server {self.server!r}: waiting for a token missed the deadline")
        token = call_source(self._get_token, "token provider")
        self._last = token
        return token

    def headers(self, method: str, url: str, body: bytes | None, deadline: float) -> dict[str, str]:
        return {"Authorization": "Bearer " + self._token(deadline)}

    def current(self, method: str, url: str) -> dict[str, str]:
        return {} if self._last is None else {"Authorization": "Bearer " + self._last}

    def observe(self, status: int, headers: httpx.Headers) -> None:
        pass

    def refused(
        self, status: int, headers: httpx.Headers, sent: Mapping[str, str], deadline: float
    ) -> bool:
        if status != 401:
            return False
        before = sent.get("Authorization")
        return before != "Bearer " + self._token(deadline)

    def failure(self, status: int) -> tuple[McpError, bool]:
        if status == 401:
            return (
                AuthError(
                    f"server {self.server!r} refused the token from the token provider (HTTP 401)",
                    "invalid_token",
                ),
                True,
            )
        return AuthError(f"server {self.server!r} refused the request (HTTP 403)"), False
