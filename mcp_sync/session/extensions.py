"""What the library lets a caller add to the protocol: ``meta=`` on the calls
that take it, and requests and notifications of methods it does not know
(``Session.request``, ``Session.notify``), for extensions.

Loaded only when one of these is used. A custom request goes the way every
built-in one goes: through the era (in 2026-07-28 with the protocol's
``_meta`` and MCP headers), under the same deadline (``request_timeout_ms``
or ``timeout_ms``), outbound size and depth bounds, and typed errors. A
method the library already sends has a call of its own, and is refused here
with a pointer to it.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..protocol.errors import InvalidOption, InvalidResponse
from ..protocol.frames import check_arguments
from ..protocol.limits import request_budget, seconds

if TYPE_CHECKING:
    from .eras.contract import EraCore

__all__ = ["KNOWN_METHODS", "check_meta", "custom_notify", "custom_request", "merge_meta"]

KNOWN_METHODS: Mapping[str, str] = {
    "initialize": "connect()",
    "server/discover": "connect()",
    "ping": "Session.ping()",
    "tools/list": "Session.list_tools() or Session.refresh_tools()",
    "tools/call": "Session.call_tool()",
    "resources/list": "Session.list_resources()",
    "resources/templates/list": "Session.list_resource_templates()",
    "resources/read": "Session.read_resource()",
    "resources/subscribe": "Session.subscribe_resource()",
    "resources/unsubscribe": "Session.unsubscribe_resource()",
    "subscriptions/listen": "Session.subscribe_resource() or connect(auto_refresh=True)",
    "prompts/list": "Session.list_prompts()",
    "prompts/get": "Session.get_prompt()",
    "completion/complete": "Session.complete()",
    "logging/setLevel": "Session.set_log_level()",
    "tasks/get": "Session.call_tool() (it follows a task to its result)",
    "tasks/result": "Session.call_tool() (it follows a task to its result)",
    "tasks/list": "Session.call_tool() (it follows a task to its result)",
    "tasks/cancel": "Session.call_tool() (a task is cancelled when its caller leaves)",
    "tasks/update": "Session.call_tool() (it answers a task's questions with the handlers)",
    "notifications/initialized": "connect()",
    "notifications/cancelled": "a call's deadline or its cancel= token (an abandoned request is cancelled)",
    "notifications/progress": "nothing: progress is the server's to send",
    "notifications/roots/list_changed": "Session.set_roots() or Session.roots_changed()",
}
"""Methods the library sends itself, and the call that sends each one."""

_MAX_METHOD_BYTES = 256


def check_meta(meta: object, max_bytes: int) -> dict[str, Any]:
    """A caller's ``meta=``: a dict with str keys, JSON-encodable under the
    outbound bounds (a copy, so a later change of the caller's dict is not sent)."""
    if not isinstance(meta, Mapping):
        raise InvalidOption(f"meta must be a dict with str keys, got {type(meta).__name__}")
    copy = dict(meta)
    check_arguments(copy, max_bytes)
    return copy


def merge_meta(caller: Mapping[str, Any] | None, library: Mapping[str, Any]) -> dict[str, Any]:
    """The ``_meta`` sent: the caller's keys, then the library's (which win)."""
    if not caller:
        return dict(library)
    return {**caller, **library}


def _method(method: object, notification: bool) -> str:
    if not isinstance(method, str) or not method:
        raise InvalidOption("method must be a non-empty string")
    if len(method.encode("utf-8", "surrogatepass")) > _MAX_METHOD_BYTES:
        raise InvalidOption(f"method is over {_MAX_METHOD_BYTES} bytes")
    proper = KNOWN_METHODS.get(method)
    if proper is not None:
        raise InvalidOption(f"{method} is a method this library sends itself: use {proper}")
    is_notification = method.startswith("notifications/")
    if is_notification != notification:
        kind = "a notification" if is_notification else "a request"
        call = "Session.notify()" if is_notification else "Session.request()"
        raise InvalidOption(f"{method} names {kind}: send it with {call}")
    return method


def _params(params: object, max_bytes: int) -> dict[str, Any]:
    if params is None:
        return {}
    if not isinstance(params, Mapping):
        raise InvalidOption(f"params must be a dict with str keys, got {type(params).__name__}")
    copy = dict(params)
    check_arguments(copy, max_bytes)
    return copy


def custom_request(
    core: EraCore, method: str, params: Mapping[str, Any] | None, timeout_ms: int | None
) -> dict[str, Any]:
    """``Session.request``: one request of a method the library does not
    know, sent the era's way, its result (a JSON object) returned as decoded."""
    name = _method(method, notification=False)
    sent = _params(params, core.limits.max_outbound_frame_bytes)
    terminal = core.terminal
    if terminal is not None:
        raise terminal._copy()
    timeout_ms, option = request_budget(core.limits, timeout_ms)
    server = core.server

    def describe() -> str:
        return f"{name[:100]!a} on server {server!r} ({option}={timeout_ms})"

    deadline = time.monotonic() + seconds(timeout_ms)
    result = core.era.request(core, name, sent, deadline, describe)
    if not isinstance(result, dict):
        raise InvalidResponse(f"server {server!r} answered {name[:100]!a} with a result that is not an object")
    return result


def custom_notify(core: EraCore, method: str, params: Mapping[str, Any] | None) -> None:
    """``Session.notify``: one notification the library does not know. In
    2026-07-28 it carries the protocol's ``_meta`` too; over Streamable HTTP
    that revision has no client notifications, so it is refused there."""
    name = _method(method, notification=True)
    sent = _params(params, core.limits.max_outbound_frame_bytes)
    terminal = core.terminal
    if terminal is not None:
        raise terminal._copy()
    meta = core.era.notification_meta()
    if meta is not None:
        extra = sent.get("_meta")
        sent["_meta"] = {**(extra if isinstance(extra, Mapping) else {}), **meta}
    core.notify(name, seconds(core.limits.request_timeout_ms), sent)
