"""Requests in the modern era (2026-07-28): per-request metadata, result
types, version retries and multi round-trip requests.

No handshake and no protocol session: every request carries, in
``params._meta``, the protocol version it speaks, the client's capabilities
and its identity; over HTTP the version, method and name are mirrored into
headers as well (:mod:`._mcp_headers`). Each result says what it is
(``resultType``): absent or ``"complete"`` is a final result,
``"input_required"`` asks the client for input (an elicitation, a sampling
request, the roots list) and to send the request again with the answers and
the server's ``requestState`` echoed unchanged; anything else is refused. A
request refused with ``-32022`` (unsupported version) is sent once more at a
version both sides list.

One :class:`ModernPath` per session, made when negotiation settles on the
modern era (:mod:`._eras`); the session core routes its requests through it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from ._errors import InputRequired, InvalidResponse, McpError, ProtocolError, RemoteError
from ._mcp_headers import Binding, param_headers, standard_headers
from ._versions import (
    MODERN_PROTOCOL_VERSIONS,
    UNSUPPORTED_PROTOCOL_VERSION,
    advertised_versions,
    describe_versions,
    newest_mutual,
)

if TYPE_CHECKING:
    from ._session import _Core

__all__ = [
    "MAX_INPUT_REQUESTS",
    "MAX_INPUT_ROUNDS",
    "META_CLIENT_CAPABILITIES",
    "META_CLIENT_INFO",
    "META_PROTOCOL_VERSION",
    "META_SERVER_INFO",
    "ModernPath",
    "NoCommonVersion",
    "refused_versions",
    "versions_refused",
]

META_PROTOCOL_VERSION = "io.modelcontextprotocol/protocolVersion"
META_CLIENT_CAPABILITIES = "io.modelcontextprotocol/clientCapabilities"
META_CLIENT_INFO = "io.modelcontextprotocol/clientInfo"
META_SERVER_INFO = "io.modelcontextprotocol/serverInfo"
META_LOG_LEVEL = "io.modelcontextprotocol/logLevel"

MAX_INPUT_ROUNDS = 10
"""``input_required`` answers one request may get in a row before the call
fails: a server that keeps asking cannot hold a caller forever."""
MAX_INPUT_REQUESTS = 16
"""Input requests one ``input_required`` result may carry."""

# Methods a server may answer with input_required (2026-07-28, "Multi Round-Trip
# Requests"); for any other, that result type is refused.
_INPUT_METHODS = frozenset({"tools/call", "prompts/get", "resources/read"})
_COMPLETE = "complete"
_INPUT_REQUIRED = "input_required"
_KNOWN_INPUT_METHODS = ("elicitation/create", "sampling/createMessage", "roots/list")


class NoCommonVersion(ProtocolError):
    """A server and this client share no protocol version (``theirs`` lists the server's)."""

    def __init__(self, message: str, theirs: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.theirs = theirs

    def _copy(self) -> McpError:
        return NoCommonVersion(self.message, self.theirs)


def versions_refused(server: str, theirs: tuple[str, ...], ours: tuple[str, ...]) -> NoCommonVersion:
    """The error for a server and a client that share no protocol version."""
    return NoCommonVersion(
        f"server {server!r} speaks protocol versions {describe_versions(theirs)}; "
        f"this client speaks {', '.join(ours)}: no version in common",
        theirs,
    )


def refused_versions(exc: RemoteError) -> tuple[str, ...] | None:
    """The versions a ``-32022`` error lists (``data.supported``), or ``None``."""
    detail = exc.detail.reveal()
    data = detail.get("data") if isinstance(detail, dict) else None
    return advertised_versions(data.get("supported") if isinstance(data, dict) else None)


def _remaining(deadline: float) -> float:
    return max(0.0, deadline - time.monotonic())


class ModernPath:
    """How one session sends requests in the modern era."""

    __slots__ = ("_meta", "http", "pinned", "server", "tool_headers", "version")

    def __init__(
        self,
        server: str,
        version: str,
        *,
        http: bool,
        capabilities: Mapping[str, Any],
        client_info: Mapping[str, str],
        pinned: bool = False,
    ) -> None:
        self.server = server
        self.http = http
        self.pinned = pinned
        self.tool_headers: Mapping[str, tuple[Binding, ...]] = MappingProxyType({})
        """Per tool, the arguments mirrored into ``Mcp-Param-*`` headers (HTTP)."""
        self._meta: dict[str, Any] = {
            META_PROTOCOL_VERSION: version,
            META_CLIENT_CAPABILITIES: dict(capabilities),
            META_CLIENT_INFO: dict(client_info),
        }
        self.version = version

    def use_log_level(self, level: str) -> None:
        """From now on every request asks for log messages of ``level`` and
        above (``io.modelcontextprotocol/logLevel``; the era has no
        ``logging/setLevel``). A new dict, as in :meth:`_use`."""
        self._meta = {**self._meta, META_LOG_LEVEL: level}

    def _use(self, version: str) -> None:
        # A new dict rather than a change in place: a frame being encoded in
        # another thread keeps the one it took.
        self._meta = {**self._meta, META_PROTOCOL_VERSION: version}
        self.version = version

    # ------------------------------------------------------------ one request

    def headers(self, method: str, params: Mapping[str, Any]) -> dict[str, str] | None:
        """The MCP headers of one POST, or ``None`` off HTTP."""
        if not self.http:
            return None
        headers = standard_headers(self.version, method, params)
        if method == "tools/call":
            bindings = self.tool_headers.get(params.get("name"))  # type: ignore[arg-type]
            arguments = params.get("arguments")
            if bindings and isinstance(arguments, Mapping):
                headers.update(param_headers(bindings, arguments))
        return headers

    def request(
        self,
        core: _Core,
        method: str,
        params: Mapping[str, Any],
        deadline: float,
        describe: Callable[[], str],
        *,
        cancellable: bool = True,
    ) -> Any:
        """Send one request with ``_meta`` (and headers) and return its result,
        sent once more at a mutual version if the server answers ``-32022``.

        The result's ``resultType`` has been checked: ``input_required`` comes
        back only for the methods that may carry it.
        """
        retried = False
        while True:
            sent = self.version
            # The headers first: they may refuse an argument, before any I/O.
            headers = self.headers(method, params)
            extra = params.get("_meta")
            # The caller's own _meta keys (a traceparent) go along; the
            # protocol's are this path's.
            meta = self._meta if extra is None else {**extra, **self._meta}
            full = {**params, "_meta": meta}
            try:
                result = core.request(
                    method,
                    full,
                    _remaining(deadline),
                    describe,
                    cancellable=cancellable,
                    headers=headers,
                )
            except RemoteError as exc:
                if exc.code != UNSUPPORTED_PROTOCOL_VERSION:
                    raise
                retry = self._version_after_refusal(exc, sent, retried)
                self._use(retry)
                retried = True
                continue
            self.result_type(result, method)
            return result

    def _version_after_refusal(self, exc: RemoteError, sent: str, retried: bool) -> str:
        supported = refused_versions(exc)
        if supported is None:
            raise ProtocolError(
                f"server {self.server!r} refused protocol version {sent} (-32022) "
                "without a list of the versions it supports"
            ) from None
        mutual = newest_mutual(supported, MODERN_PROTOCOL_VERSIONS)
        if mutual is None or (self.pinned and mutual != sent):
            raise versions_refused(
                self.server, supported, (sent,) if self.pinned else MODERN_PROTOCOL_VERSIONS
            ) from None
        if retried:
            raise ProtocolError(
                f"server {self.server!r} refused protocol version {sent} (-32022) again "
                f"after listing it as supported"
            ) from None
        return mutual

    def result_type(self, result: object, method: str) -> str:
        """``"complete"`` or ``"input_required"``; anything else is refused."""
        if not isinstance(result, dict):
            return _COMPLETE  # the caller's own shape check says what is wrong
        kind = result.get("resultType", _COMPLETE)
        if kind is None or kind == _COMPLETE:
            return _COMPLETE
        if kind == _INPUT_REQUIRED:
            if method in _INPUT_METHODS:
                return _INPUT_REQUIRED
            raise InvalidResponse(
                f"server {self.server!r} answered {method} with resultType "
                '"input_required", which only tools/call, prompts/get and '
                "resources/read may carry"
            )
        raise InvalidResponse(
            f"server {self.server!r} answered {method} with a resultType this client "
            "does not know"
        )

    # ------------------------------------------------------------ tools/call

    def call_tool(
        self,
        core: _Core,
        name: str,
        arguments: Mapping[str, Any],
        deadline: float,
        describe: Callable[[], str],
        *,
        meta: Mapping[str, Any] | None = None,
    ) -> Any:
        """``tools/call``, answering ``input_required`` results until the
        server gives a final result, all within ``deadline``. ``meta``: the
        caller's own ``_meta`` keys, sent with every round."""
        base: dict[str, Any] = {"name": name, "arguments": arguments}
        if meta is not None:
            base["_meta"] = meta
        params = base
        for _ in range(MAX_INPUT_ROUNDS + 1):
            result = self.request(core, "tools/call", params, deadline, describe)
            if self.result_type(result, "tools/call") == _COMPLETE:
                return result
            params = dict(base)
            requests, state = self._input_required(result, name)
            if requests is not None:
                params["inputResponses"] = self._answer(core, requests, name, deadline)
            if state is not None:
                params["requestState"] = state
        raise ProtocolError(
            f"tool {name!a} on server {self.server!r} asked for input more than "
            f"{MAX_INPUT_ROUNDS} times in a row"
        )

    def _input_required(
        self, result: dict[str, Any], name: str
    ) -> tuple[dict[str, dict[str, Any]] | None, str | None]:
        where = f"tool {name!a} on server {self.server!r}"
        requests = result.get("inputRequests")
        state = result.get("requestState")
        if state is not None and not isinstance(state, str):
            raise InvalidResponse(f"{where} sent a requestState that is not a string")
        if requests is None:
            if state is None:
                raise InvalidResponse(
                    f"{where} answered input_required with neither inputRequests nor requestState"
                )
            return None, state
        if not isinstance(requests, dict):
            raise InvalidResponse(f"{where} sent inputRequests that is not an object")
        if len(requests) > MAX_INPUT_REQUESTS:
            raise InvalidResponse(
                f"{where} sent more than {MAX_INPUT_REQUESTS} input requests at once"
            )
        for request in requests.values():
            if not (
                isinstance(request, dict)
                and isinstance(request.get("method"), str)
                and isinstance(request.get("params", {}), (dict, type(None)))
            ):
                raise InvalidResponse(f"{where} sent an input request without a method")
        return requests, state

    def _answer(
        self,
        core: _Core,
        requests: dict[str, dict[str, Any]],
        name: str,
        deadline: float,
    ) -> dict[str, Any]:
        answers: dict[str, Any] = {}
        for key, request in requests.items():
            try:
                answers[key] = core.answer_input_request(
                    request["method"], request.get("params") or {}, deadline
                )
            except InputRequired:
                asked = tuple(str(r["method"]) for r in requests.values())
                raise InputRequired(
                    f"tool {name!a} on server {self.server!r} needs input this client "
                    f"cannot give: {', '.join(_shown_method(m) for m in asked)} "
                    "(no handler answers it)",
                    asked,
                ) from None
        return answers


def _shown_method(method: str) -> str:
    # A method name is the server's text: only the known ones are named.
    return method if method in _KNOWN_INPUT_METHODS else "a request this client does not know"

