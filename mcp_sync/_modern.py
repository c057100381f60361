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
    from ._session import Watch, _Core

__all__ = [
    "MAX_INPUT_REQUESTS",
    "MAX_INPUT_ROUNDS",
    "META_CLIENT_CAPABILITIES",
    "META_CLIENT_INFO",
    "META_PROTOCOL_VERSION",
    "META_SERVER_INFO",
    "TASKS_EXTENSION",
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
TASKS_EXTENSION = "io.modelcontextprotocol/tasks"
"""The tasks extension of 2026-07-28 (SEP-2663), declared per request."""

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
_TASK = "task"  # the tasks extension's result type: a task handle instead of the result
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

    __slots__ = ("_meta", "_tasks_meta", "http", "pinned", "server", "tool_headers", "version")

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
        # _meta with the tasks extension declared too, and the _meta it was made from.
        self._tasks_meta: tuple[dict[str, Any], dict[str, Any]] | None = None

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

    def _protocol_meta(self, tasks: bool) -> dict[str, Any]:
        """The protocol's ``_meta`` keys; with ``tasks``, the client
        capabilities declare the tasks extension too (this request may be
        answered with a task)."""
        meta = self._meta
        if not tasks:
            return meta
        cached = self._tasks_meta
        if cached is not None and cached[0] is meta:
            return cached[1]
        capabilities = meta[META_CLIENT_CAPABILITIES]
        extensions = capabilities.get("extensions")
        declared = {**(extensions if isinstance(extensions, Mapping) else {}), TASKS_EXTENSION: {}}
        with_tasks = {**meta, META_CLIENT_CAPABILITIES: {**capabilities, "extensions": declared}}
        self._tasks_meta = (meta, with_tasks)
        return with_tasks

    def request(
        self,
        core: _Core,
        method: str,
        params: Mapping[str, Any],
        deadline: float,
        describe: Callable[[], str],
        *,
        cancellable: bool = True,
        watch: Watch | None = None,
        tasks: bool = False,
    ) -> Any:
        """Send one request with ``_meta`` (and headers) and return its result,
        sent once more at a mutual version if the server answers ``-32022``.
        With a ``watch`` its progress is followed as it comes, until the
        watch's (movable) deadline rather than ``deadline``; with ``tasks``
        the request declares the tasks extension.

        The result's ``resultType`` has been checked: ``input_required`` comes
        back only for the methods that may carry it, ``task`` only where the
        extension was declared.
        """
        retried = False
        while True:
            sent = self.version
            # The headers first: they may refuse an argument, before any I/O.
            headers = self.headers(method, params)
            extra = params.get("_meta")
            # The caller's own _meta keys (a traceparent, a progress token)
            # go along; the protocol's are this path's.
            protocol = self._protocol_meta(tasks)
            meta = protocol if extra is None else {**extra, **protocol}
            full = {**params, "_meta": meta}
            try:
                result = core.request(
                    method,
                    full,
                    _remaining(deadline if watch is None else watch.deadline),
                    describe,
                    cancellable=cancellable,
                    headers=headers,
                    watch=watch,
                )
            except RemoteError as exc:
                if exc.code != UNSUPPORTED_PROTOCOL_VERSION:
                    raise
                retry = self._version_after_refusal(exc, sent, retried)
                self._use(retry)
                retried = True
                continue
            self.result_type(result, method, tasks=tasks)
            return result

    def ask(
        self,
        core: _Core,
        method: str,
        params: Mapping[str, Any],
        deadline: float,
        describe: Callable[[], str],
        *,
        watch: Watch | None = None,
    ) -> Any:
        """One request and its final result: where the method may be answered
        with ``input_required`` (``prompts/get``, ``resources/read``, ...)
        through :meth:`retrying`, else as it comes."""
        if method in _INPUT_METHODS:
            return self.retrying(core, method, params, deadline, describe, watch=watch)
        return self.request(core, method, params, deadline, describe, watch=watch)

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

    def result_type(self, result: object, method: str, *, tasks: bool = False) -> str:
        """``"complete"``, ``"input_required"`` or (when the request declared
        the tasks extension) ``"task"``; anything else is refused."""
        if not isinstance(result, dict):
            return _COMPLETE  # the caller's own shape check says what is wrong
        kind = result.get("resultType", _COMPLETE)
        if kind is None or kind == _COMPLETE:
            return _COMPLETE
        if kind == _TASK:
            if tasks and method == "tools/call":
                return _TASK
            raise InvalidResponse(
                f'server {self.server!r} answered {method} with a task (resultType "task"), '
                "which this client did not ask for"
            )
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

    # ------------------------------------------------------------ input_required

    def subject(self, method: str, params: Mapping[str, Any]) -> str:
        """What a request is about, for messages: the tool, prompt or resource."""
        if method == "resources/read":
            return f"resource {str(params.get('uri'))[:200]!a} on server {self.server!r}"
        kind = "prompt" if method == "prompts/get" else "tool"
        return f"{kind} {params.get('name')!a} on server {self.server!r}"

    def retrying(
        self,
        core: _Core,
        method: str,
        params: Mapping[str, Any],
        deadline: float,
        describe: Callable[[], str],
        *,
        watch: Watch | None = None,
        tasks: bool = False,
    ) -> Any:
        """``method`` with ``params``, answering ``input_required`` results
        until the server gives a final one (or, with ``tasks``, a task
        handle), all within ``deadline`` (the watch's, if there is one). The
        same loop for every method that may carry ``input_required``."""
        where = self.subject(method, params)
        sent: Mapping[str, Any] = params
        for round_ in range(MAX_INPUT_ROUNDS + 1):
            if round_ and watch is not None:
                watch.retry()
            result = self.request(core, method, sent, deadline, describe, watch=watch, tasks=tasks)
            if self.result_type(result, method, tasks=tasks) != _INPUT_REQUIRED:
                return result
            # Each retry is the original request plus this round's answers and
            # state: nothing of an earlier round is carried over.
            retry = dict(params)
            requests, state = self.input_requests(result, where)
            if requests is not None:
                retry["inputResponses"] = self.answer(
                    core, requests, where, deadline if watch is None else watch.deadline
                )
            if state is not None:
                retry["requestState"] = state
            sent = retry
        raise ProtocolError(f"{where} asked for input more than {MAX_INPUT_ROUNDS} times in a row")

    def call_tool(
        self,
        core: _Core,
        name: str,
        arguments: Mapping[str, Any],
        deadline: float,
        describe: Callable[[], str],
        *,
        meta: Mapping[str, Any] | None = None,
        watch: Watch | None = None,
        tasks: bool = False,
    ) -> Any:
        """``tools/call`` through :meth:`retrying`. ``meta``: the caller's own
        ``_meta`` keys, sent with every round."""
        params: dict[str, Any] = {"name": name, "arguments": arguments}
        if meta is not None:
            params["_meta"] = meta
        return self.retrying(core, "tools/call", params, deadline, describe, watch=watch, tasks=tasks)

    def input_requests(
        self, result: Mapping[str, Any], where: str, *, state: bool = True
    ) -> tuple[dict[str, dict[str, Any]] | None, str | None]:
        """The ``inputRequests`` (and ``requestState``) of an ``input_required``
        result, or of a task waiting for input (``state=False``: a task has
        no request state, and must ask for something), after their checks."""
        requests = result.get("inputRequests")
        request_state = result.get("requestState") if state else None
        if request_state is not None and not isinstance(request_state, str):
            raise InvalidResponse(f"{where} sent a requestState that is not a string")
        if requests is None:
            if request_state is None:
                raise InvalidResponse(
                    f"{where} answered input_required with neither inputRequests nor requestState"
                )
            return None, request_state
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
        return requests, request_state

    def answer(
        self,
        core: _Core,
        requests: Mapping[str, Mapping[str, Any]],
        where: str,
        deadline: float,
    ) -> dict[str, Any]:
        """The client's answers to ``requests``, keyed like them: each made by
        the session's handlers (``_Core.answer_input_request``) by ``deadline``."""
        answers: dict[str, Any] = {}
        for key, request in requests.items():
            try:
                answers[key] = core.answer_input_request(
                    request["method"], request.get("params") or {}, deadline
                )
            except InputRequired:
                asked = tuple(str(r["method"]) for r in requests.values())
                raise InputRequired(
                    f"{where} needs input this client cannot give: "
                    f"{', '.join(_shown_method(m) for m in asked)} (no handler answers it)",
                    asked,
                ) from None
        return answers


def _shown_method(method: str) -> str:
    # A method name is the server's text: only the known ones are named.
    return method if method in _KNOWN_INPUT_METHODS else "a request this client does not know"

