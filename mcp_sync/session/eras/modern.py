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

:class:`ModernEra` is this era's implementation of the era contract
(:mod:`._era`): negotiation (:mod:`._eras`) constructs one for its probe and
the session core holds it once the server's ``DiscoverResult`` settled the
era; the call plan (:mod:`._plan`) drives the ``input_required`` rounds.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from ...protocol.catalog import ServerInfo, Tool, bounded_instructions
from ...protocol.errors import InvalidResponse, McpError, NotSupported, ProtocolError, RemoteError
from ...protocol.limits import seconds
from ...protocol.versions import (
    HANDSHAKE_PROTOCOL_VERSIONS,
    MODERN,
    MODERN_PROTOCOL_VERSIONS,
    SUPPORTED_PROTOCOL_VERSIONS,
    UNSUPPORTED_PROTOCOL_VERSION,
    advertised_versions,
    describe_versions,
    newest_mutual,
)
from ...transports.mcp_headers import Binding, InvalidHeaders, header_bindings, param_headers, standard_headers
from ..tool_tasks import cancel_in_background, check_task_option, follow_modern_task, offers_task_extension
from .contract import (
    COMPLETE,
    INPUT_REQUIRED,
    MAX_INPUT_REQUESTS,
    MAX_INPUT_ROUNDS,
    TASK,
    TASKS_EXTENSION,
    EraCore,
    check_capabilities,
    server_info,
)

if TYPE_CHECKING:
    from ..pending import Watch
    from .contract import Route

__all__ = [
    "MAX_INPUT_REQUESTS",
    "MAX_INPUT_ROUNDS",
    "META_CLIENT_CAPABILITIES",
    "META_CLIENT_INFO",
    "META_LOG_LEVEL",
    "META_PROTOCOL_VERSION",
    "META_SERVER_INFO",
    "TASKS_EXTENSION",
    "ModernEra",
    "NoCommonVersion",
    "refused_versions",
    "versions_refused",
]

META_PROTOCOL_VERSION = "io.modelcontextprotocol/protocolVersion"
META_CLIENT_CAPABILITIES = "io.modelcontextprotocol/clientCapabilities"
META_CLIENT_INFO = "io.modelcontextprotocol/clientInfo"
META_SERVER_INFO = "io.modelcontextprotocol/serverInfo"
META_LOG_LEVEL = "io.modelcontextprotocol/logLevel"

# Methods a server may answer with input_required (2026-07-28, "Multi Round-Trip
# Requests"); for any other, that result type is refused.
_INPUT_METHODS = frozenset({"tools/call", "prompts/get", "resources/read"})


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


class ModernEra:
    """The modern era for one session: the ``_meta`` every request carries,
    the version it speaks (changed at most once, by a ``-32022``), and over
    HTTP the per-request MCP headers."""

    __slots__ = ("_meta", "_tasks_meta", "_version", "http", "pinned", "server", "tool_headers")

    name = MODERN
    any_structured = True  # since 2026-07-28 structured content may be any JSON value
    input_rounds = True
    version_retry = True  # a -32022 refusal is answered by sending the request again
    plain_requests = False  # _meta on every request, headers, the version retry

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
        self._version = version
        # _meta with the tasks extension declared too, and the _meta it was made from.
        self._tasks_meta: tuple[dict[str, Any], dict[str, Any]] | None = None

    @property
    def version(self) -> str:
        return self._version

    def _use(self, version: str) -> None:
        # A new dict rather than a change in place: a frame being encoded in
        # another thread keeps the one it took.
        self._meta = {**self._meta, META_PROTOCOL_VERSION: version}
        self._version = version

    # ------------------------------------------------------------ opening

    def open(self, core: EraCore, watch: Watch, describe: Callable[[], str]) -> Any:
        """``server/discover``, as the opening request or as ``auto``'s probe."""
        return self.request(
            core,
            "server/discover",
            {},
            watch.deadline,
            describe,
            cancellable=False,
            watch=watch,
        )

    def adopt(self, core: EraCore, result: Any, *, strict: bool) -> ServerInfo | None:
        """Take a ``DiscoverResult``: the server is modern when it lists a version
        both sides speak. ``None`` when it is no such evidence (``strict``: an
        error instead); versions with nothing in common are always an error."""
        where = f"server {core.server!r}"
        theirs = advertised_versions(result.get("supportedVersions")) if isinstance(result, dict) else None
        if theirs is None:
            if strict:
                raise InvalidResponse(f"{where} answered server/discover without supportedVersions")
            return None
        if self.pinned:
            if self._version not in theirs:
                raise versions_refused(core.server, theirs, (self._version,))
            mutual: str | None = self._version
        else:
            mutual = newest_mutual(theirs, MODERN_PROTOCOL_VERSIONS)
        if mutual is None:
            if not strict and newest_mutual(theirs, HANDSHAKE_PROTOCOL_VERSIONS) is not None:
                return None  # it lists only handshake-era versions: a legacy advertisement
            ours = MODERN_PROTOCOL_VERSIONS if strict else SUPPORTED_PROTOCOL_VERSIONS
            raise versions_refused(core.server, theirs, ours)
        assert isinstance(result, dict)
        check_capabilities(result.get("capabilities"), where, "server/discover")
        meta = result.get("_meta")
        stamp = meta.get(META_SERVER_INFO) if isinstance(meta, dict) else None
        info = server_info(
            stamp if isinstance(stamp, dict) else result.get("serverInfo"),
            bounded_instructions(core.server, core.limits, result.get("instructions")),
            result,
            core,
        )
        if mutual != self._version:
            self._use(mutual)
        core.adopt(self, result["capabilities"])
        self.listen(core)
        return info

    def listen(self, core: EraCore) -> None:
        """With ``auto_refresh``, open the ``subscriptions/listen`` stream for
        the list changes the server declares (see ``._listen``) and wait, up
        to ``handshake_timeout_ms``, for its acknowledgment, so that no change
        after the first catalog walk is missed. (The revision has no server
        requests; a request's progress and logs come on its own reply stream.)"""
        inbound = core.inbound
        if not inbound.auto_refresh:
            return
        declared = core.server_capabilities
        lists = tuple(
            kind for kind in ("tools", "resources", "prompts")
            if isinstance(declared.get(kind), Mapping) and declared[kind].get("listChanged") is True
        )  # fmt: skip
        if not lists:
            return
        try:
            inbound.listen_stream(lists).change(seconds(core.limits.handshake_timeout_ms))
        except McpError:
            if core.terminal is not None:
                raise
            # Logged by the listen thread, which keeps trying; a refresh by
            # hand works meanwhile.

    def subscribe(self, core: EraCore, uri: str, deadline: float) -> None:
        """A new ``subscriptions/listen`` stream whose filter carries ``uri``
        replaces the old one; returns once the server acknowledged it."""
        stream = core.inbound.listen_stream(())
        stream.change(max(0.0, deadline - time.monotonic()))
        if not stream.subscribed(uri):
            raise NotSupported(f"server {core.server!r} did not honor the subscription to {uri[:200]!a}")

    def unsubscribe(self, core: EraCore, uri: str, deadline: float) -> None:
        stream = core.inbound.stream
        if stream is not None:
            stream.change(max(0.0, deadline - time.monotonic()))

    def notification_meta(self) -> dict[str, Any] | None:
        """The protocol's ``_meta``; over Streamable HTTP the revision has no
        client notifications at all."""
        if self.http:
            raise NotSupported("the 2026-07-28 revision has no client notifications over Streamable HTTP")
        return dict(self._meta)

    def reopen(self, core: EraCore, deadline: float) -> None:
        """Never called: the revision has no protocol session to renew."""
        raise AssertionError("the 2026-07-28 era has no protocol session to renew")

    def load_catalog(self, core: EraCore) -> tuple[Tool, ...]:
        """Over HTTP a tool whose ``x-mcp-header`` declarations break the
        rules is left out of the catalog, with a ``tool-rejected``
        diagnostic; the others' declarations are kept for the headers."""
        if not self.http:
            return core.load_catalog()
        bindings: dict[str, tuple[Binding, ...]] = {}

        def keep(tool: Tool) -> bool:
            try:
                found = header_bindings(tool.input_schema)
            except InvalidHeaders as exc:
                core.emit("tool-rejected", {"tool": tool.name, "reason": str(exc)})
                return False
            if found:
                bindings[tool.name] = found
            return True

        tools = core.load_catalog(keep)
        self.tool_headers = MappingProxyType(bindings)
        return tools

    # ------------------------------------------------------------ one request

    def headers(self, method: str, params: Mapping[str, Any]) -> dict[str, str] | None:
        """The MCP headers of one POST, or ``None`` off HTTP."""
        if not self.http:
            return None
        headers = standard_headers(self._version, method, params)
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

    def frame(
        self, method: str, params: Mapping[str, Any], *, tasks: bool = False
    ) -> tuple[dict[str, Any], dict[str, str] | None]:
        """The params as sent (with the protocol's ``_meta``) and the MCP
        headers of one request."""
        # The headers first: they may refuse an argument, before any I/O.
        headers = self.headers(method, params)
        extra = params.get("_meta")
        # The caller's own _meta keys (a traceparent, a progress token)
        # go along; the protocol's are this era's.
        protocol = self._protocol_meta(tasks)
        meta = protocol if extra is None else {**extra, **protocol}
        return {**params, "_meta": meta}, headers

    def request(  # noqa: PLR0917
        self,
        core: EraCore,
        method: str,
        params: Mapping[str, Any],
        deadline: float,
        describe: Callable[[], str],
        # Not keyword-only (callers name them): a keyword-only default costs
        # a dict lookup on every request, and a plain one leaves all three out.
        cancellable: bool = True,
        watch: Watch | None = None,
        tasks: bool = False,
    ) -> Any:
        """Send one request with ``_meta`` (and headers) and return its result,
        sent once more at a mutual version if the server answers ``-32022``.

        The result's ``resultType`` has been checked: ``input_required`` comes
        back only for the methods that may carry it, ``task`` only where the
        extension was declared.
        """
        retried = False
        while True:
            sent = self._version
            full, headers = self.frame(method, params, tasks=tasks)
            try:
                result = core.request(
                    method,
                    full,
                    max(0.0, (deadline if watch is None else watch.deadline) - time.monotonic()),
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
            self.result_kind(result, method, tasks=tasks)
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

    def result_kind(self, result: object, method: str, *, tasks: bool = False) -> str:
        """``"complete"``, ``"input_required"`` or (when the request declared
        the tasks extension) ``"task"``; anything else is refused."""
        if not isinstance(result, dict):
            return COMPLETE  # the caller's own shape check says what is wrong
        kind = result.get("resultType", COMPLETE)
        if kind is None or kind == COMPLETE:
            return COMPLETE
        if kind == TASK:
            if tasks and method == "tools/call":
                return TASK
            raise InvalidResponse(
                f'server {self.server!r} answered {method} with a task (resultType "task"), '
                "which this client did not ask for"
            )
        if kind == INPUT_REQUIRED:
            if method in _INPUT_METHODS:
                return INPUT_REQUIRED
            raise InvalidResponse(
                f"server {self.server!r} answered {method} with resultType "
                '"input_required", which only tools/call, prompts/get and '
                "resources/read may carry"
            )
        raise InvalidResponse(
            f"server {self.server!r} answered {method} with a resultType this client does not know"
        )

    def server_request(self, core: EraCore, request_id: int | str, method: str, params: object) -> None:
        """Dropped: the revision has no server requests, and no replies from clients."""

    def probe(self, core: EraCore, deadline: float, budget: str) -> None:
        """``server/discover``: the revision has no ``ping``, and every server
        of it must answer this one, which changes nothing on the server."""
        self.request(
            core,
            "server/discover",
            {},
            deadline,
            lambda: f"server/discover of server {core.server!r} ({budget})",
            cancellable=False,
        )

    def set_log_level(self, core: EraCore, level: str, timeout_ms: int | None) -> None:
        """No ``logging/setLevel``: from now on every request asks for log
        messages of ``level`` and above (``io.modelcontextprotocol/logLevel``).
        A new dict, as in :meth:`_use`."""
        self._meta = {**self._meta, META_LOG_LEVEL: level}

    # ------------------------------------------------------------ tasks

    def use_task(self, core: EraCore, tool: Tool, task: bool | None) -> bool:
        """Whether the call declares the tasks extension (the server then
        decides): always when the server advertises it, unless ``task=False``."""
        takes = offers_task_extension(core.server_capabilities)
        if task is None:
            return takes
        return check_task_option(core, tool, task, takes)

    def task_params(self, params: dict[str, Any], route: Route) -> dict[str, Any]:
        return params  # the extension is declared in _meta, request by request

    def follow_task(
        self, core: EraCore, name: str, created: dict[str, Any], route: Route, describe: Callable[[], str]
    ) -> Any:
        return follow_modern_task(core, self, name, created, route, describe)

    def cancel_task(self, core: EraCore, task_id: str, describe: Callable[[], str]) -> None:
        cancel_in_background(core, self, task_id, describe)
