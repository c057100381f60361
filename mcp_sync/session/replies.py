"""The JSON-RPC shape rules for an inbound frame that is not a plain
result reply (those take the core's own short way in ``_Core.receive``):
a server's request or notification, an error reply, a reply with a null id.

Functions over the frame and the session core's narrow protocol: the core
(``session.core``) calls them from ``_Core._dispatch``; none imports it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..protocol.errors import McpError, ProtocolError, remote_error
from ..protocol.frames import error_object

if TYPE_CHECKING:
    from .eras.contract import EraCore

__all__ = ["remote_failure", "reply_parts", "server_message", "stray_error"]


def server_message(core: EraCore, message: dict[str, Any]) -> None:
    """A frame with a method: a notification for the inbound side, or a
    request for the era to answer. Raises :class:`ProtocolError` for a
    frame outside JSON-RPC's shape."""
    method = message["method"]
    if not isinstance(method, str):
        raise ProtocolError("a protocol frame has a method that is not a string")
    if "result" in message or "error" in message:
        raise ProtocolError("a protocol frame carries a method beside a result or error")
    if "params" in message and not isinstance(message["params"], (dict, list)):
        raise ProtocolError("a protocol frame has params that are not an object or array")
    params = message.get("params")
    if "id" not in message:
        core.inbound.notification(method, params)
        return
    request_id = message["id"]
    if type(request_id) is not int and type(request_id) is not str:
        raise ProtocolError("a server request has an id that is not a string or integer")
    core.era.server_request(core, request_id, method, params)


def reply_parts(message: dict[str, Any]) -> tuple[int | str | None, dict[str, Any] | None]:
    """A reply's id and its error object (``None`` for a result), once its
    shape is checked: exactly one of result and error, a well-formed error
    object, an id that is a string, an integer, or (for an error) null."""
    if "id" not in message:
        raise ProtocolError("a reply has no id")
    has_result = "result" in message
    if has_result == ("error" in message):
        raise ProtocolError("a reply must carry exactly one of result and error")
    request_id = message["id"]
    error = None if has_result else error_object(message)
    if error is None and not has_result:
        raise ProtocolError("a reply has a malformed error object")
    if request_id is None:
        if error is None:
            raise ProtocolError("a result reply has a null id")
        return None, error
    if type(request_id) is not int and type(request_id) is not str:
        raise ProtocolError("a reply has an id that is not a string or integer")
    return request_id, error


def stray_error(
    core: EraCore, taker: Callable[[dict[str, Any]], bool] | None, error: dict[str, Any] | None
) -> None:
    """An error reply with a null id: taken by ``taker`` (era negotiation's,
    while its probe is out) or reported as a ``remote-error`` event."""
    assert error is not None  # (reply_parts gives a null id only with an error)
    if taker is not None and taker(error):
        return
    core.emit("remote-error", {"code": error["code"], "message": error["message"], "data": error.get("data")})


def remote_failure(server: str, error: dict[str, Any]) -> McpError:
    """What the caller of a request the server answered with ``error`` gets."""
    return remote_error(
        f"server {server!r} answered with JSON-RPC error {error['code']}",
        error["code"],
        error["message"],
        error.get("data"),
    )
