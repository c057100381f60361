"""``connect`` with ``auth=``: check the option, bind it to the session's
transport, and when the first attempt stops because a person must log in,
run that login on the caller's thread (bounded by ``login_timeout_ms``, not
by the handshake's timeout) and connect again."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar
from urllib.parse import urlsplit

from ..protocol.errors import LoginRequired, ProtocolError
from ..protocol.limits import Limits
from ._base import Auth, TokenProvider
from ._code import AuthorizationCode
from ._urls import is_loopback

__all__ = ["MAX_CONNECT_LOGINS", "connect_with_auth"]

MAX_CONNECT_LOGINS = 2
"""Logins one ``connect`` may run: a second is needed when the server moves
to another authorization server between the first login and the end of the
connect (its next request is refused, and the new server has never seen
this client)."""

T = TypeVar("T")


def as_auth(auth: object) -> Auth | TokenProvider:
    if isinstance(auth, (Auth, TokenProvider)):
        return auth
    if callable(auth):
        return TokenProvider(auth)  # a bare callable returning a token
    raise ProtocolError(
        "option auth must be an object from mcp_sync.auth (or a callable returning a token)"
    )


def connect_with_auth(
    auth: object, http_options: dict[str, Any], attempt: Callable[[Any], T], limits: Limits
) -> T:
    checked = as_auth(auth)
    server: str = http_options["server"]
    url: str = http_options["url"]
    if http_options.get("token") is not None:
        raise ProtocolError("give at most one of the options bearer_token_env and auth")
    parts = urlsplit(url)
    if parts.scheme.lower() == "http" and not is_loopback(parts.hostname):
        raise ProtocolError(
            f"server {server!r}: option auth sends credentials, which plain http would expose; "
            "use an https URL (http is allowed only to a loopback host)"
        )
    for logins in range(MAX_CONNECT_LOGINS + 1):
        try:
            return attempt(checked._bind(server=server, url=url, limits=limits))
        except LoginRequired:
            if (
                not isinstance(checked, AuthorizationCode)
                or not checked.can_login
                or logins == MAX_CONNECT_LOGINS
            ):
                raise
        checked.login(url, server=server, http_client=http_options.get("http_client"))
    raise AssertionError("unreachable")  # pragma: no cover - the loop returns or raises
