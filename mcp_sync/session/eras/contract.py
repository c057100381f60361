"""The era contract: what a protocol era does for a session.

Two eras speak MCP (2026-07-28, "Versioning and Compatibility"): the
handshake era (:mod:`._legacy`: ``initialize``, then plain JSON-RPC) and the
modern era (:mod:`._modern`: no handshake, protocol metadata on every
request). A session core holds exactly one :class:`Era` object and never asks
which one it is: each difference between the eras is a method here.
Negotiation (:mod:`._eras`) only chooses and constructs the object; the call
plan (:mod:`._plan`) drives every request through it.

This module imports nothing of the package but constants, value types and
the other contracts (``session.feature_contract``, ``session.pending``, ``transports.contract``), so
every era-aware module can depend on it without a cycle. ``EraCore`` is the
part of the session core (``session.core._Core``) an era, the call plan, the task
followers and the server-request machinery use; ``EraInbound`` and ``Route``
are what they use of its inbound side and of a call's progress route.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Protocol

from ...protocol.catalog import ServerInfo, entry_extras, result_meta
from ...protocol.errors import ProtocolError
from ..feature_contract import Core, InboundHooks
from ..pending import Entry, Watch

if TYPE_CHECKING:
    from ...protocol.catalog import Tool
    from ...protocol.errors import McpError
    from ...protocol.limits import Limits
    from ...transports.contract import Transport

__all__ = [
    "COMPLETE",
    "INPUT_REQUIRED",
    "MAX_INPUT_REQUESTS",
    "MAX_INPUT_ROUNDS",
    "SKILLS_EXTENSION",
    "TASK",
    "TASKS_EXTENSION",
    "Era",
    "EraCore",
    "EraInbound",
    "Jobs",
    "ListenHooks",
    "Route",
    "check_capabilities",
    "server_info",
]

COMPLETE = "complete"
"""A final result."""
INPUT_REQUIRED = "input_required"
"""The server asks the client for input and for the request again (modern era)."""
TASK = "task"
"""A task handle instead of the result (either era's tasks)."""

TASKS_EXTENSION = "io.modelcontextprotocol/tasks"
"""The tasks extension of 2026-07-28 (SEP-2663), declared per request."""
MAX_INPUT_ROUNDS = 10
"""``input_required`` answers one request may get in a row before the call
fails: a server that keeps asking cannot hold a caller forever."""
MAX_INPUT_REQUESTS = 16
"""Input requests one ``input_required`` result may carry."""


SKILLS_EXTENSION = "io.modelcontextprotocol/skills"
"""The skills extension (SEP-2640): a server offering it is useful without tools."""


def check_capabilities(capabilities: object, where: str, method: str) -> None:
    """A server's capabilities must be an object offering tools (or skills:
    a server that only publishes skills is connected with an empty catalog)."""
    if not isinstance(capabilities, dict):
        raise ProtocolError(f"{where} answered {method} without a capabilities object")
    if not isinstance(capabilities.get("tools"), dict):
        extensions = capabilities.get("extensions")
        if not isinstance(extensions, dict) or not isinstance(extensions.get(SKILLS_EXTENSION), dict):
            raise ProtocolError(f"{where} does not offer the tools capability")


def server_info(
    value: object, instructions: str | None = None, result: object = None, core: Core | None = None
) -> ServerInfo:
    """The server's name and version, as far as it disclosed them (untrusted
    text), its ``instructions`` (already bounded: :func:`bounded_instructions`),
    and with ``core`` its icons (bounded like a catalog entry's) and the
    opening ``result``'s ``_meta``."""
    meta = result_meta(result) if isinstance(result, dict) else None
    if not isinstance(value, dict):
        return ServerInfo(name="", version="", instructions=instructions, meta=meta)
    name, version, title = value.get("name"), value.get("version"), value.get("title")
    description, website = value.get("description"), value.get("websiteUrl")
    icons: tuple[Any, ...] = ()
    if core is not None:
        limit = core.limits.max_tool_document_bytes
        icons, _ = entry_extras({"icons": value.get("icons")}, limit, core.server, lambda: "its serverInfo")
    return ServerInfo(
        name=name if isinstance(name, str) else "",
        version=version if isinstance(version, str) else "",
        title=title if isinstance(title, str) else None,
        instructions=instructions,
        icons=icons,
        description=description if isinstance(description, str) else None,
        website_url=website if isinstance(website, str) else None,
        meta=meta,
    )


class Jobs(Protocol):
    """A pool of library threads (``transports.workers.Workers``) that runs jobs nobody waits for."""

    def submit(self, job: Callable[[], None], timeout: float = 0.0) -> bool:
        """Queue ``job``, waiting at most ``timeout`` s for room; False: not queued."""


class UpdatesHooks(Protocol):
    """The session's resource subscriptions (``._listen.ResourceUpdates``) as the eras see them."""

    def uris(self) -> tuple[str, ...]:
        """The URIs subscribed to."""


class ListenHooks(Protocol):
    """The 2026-07-28 listen stream (``._listen.ListenStream``) as the eras see it."""

    def change(self, timeout: float) -> None:
        """The filter changed: return once a stream carrying it is acknowledged."""

    def subscribed(self, uri: str) -> bool:
        """Whether the filter the server acknowledged carries ``uri``."""


class EraInbound(InboundHooks, Protocol):
    """The session's inbound side (``session.inbound.Inbound``) as the eras see it."""

    def wants_server_messages(self) -> bool:
        """Whether anything serves what a server sends unasked (then HTTP opens its GET stream)."""

    def request(self, request_id: int | str, method: str, params: object) -> None:
        """Hand a server request to the handlers (dropped once the session is terminal)."""

    @property
    def background(self) -> Jobs:
        """The thread for best-effort requests nobody waits for (a modern ``tasks/cancel``)."""

    auto_refresh: bool
    """Whether the session refreshes its catalog when the server says it changed."""

    @property
    def updates(self) -> UpdatesHooks | None:
        """The resource subscriptions, once there has been one (``._listen``)."""

    @property
    def stream(self) -> ListenHooks | None:
        """The 2026-07-28 listen stream, once started (``._listen``)."""

    def listen_stream(self, lists: tuple[str, ...]) -> ListenHooks:
        """The 2026-07-28 listen stream (started on first use)."""

    def notification(self, method: str, params: object) -> None:
        """One notification, as if the server had sent it."""


class Route(Watch, Protocol):
    """A call's progress route (``session.progress.ProgressRoute``) as an era and
    a task follower use it: a :class:`Watch` with the call's token and limits."""

    @property
    def token(self) -> int:
        """The progress token the call's requests carry."""

    @property
    def hard_deadline(self) -> float:
        """The furthest (monotonic) time progress may move ``deadline`` to."""

    def pause(self, interval: float, ended: threading.Event) -> None:
        """Wait ``interval`` s running progress callbacks; returns early once ``ended`` is set."""


class EraCore(Core, Protocol):
    """What an era, the call plan and the server-request machinery need from
    the session core: everything a feature sees (:class:`Core`) and more."""

    server: str
    era: Era
    limits: Limits
    transport: Transport | None
    ended: threading.Event
    client_capabilities: Mapping[str, Any]
    server_capabilities: Mapping[str, Any]

    @property
    def inbound(self) -> EraInbound:
        """Notifications, server requests, the background thread."""

    @property
    def terminal(self) -> McpError | None: ...

    def terminate(self, error: McpError, *, wait: bool = False) -> None:
        """End the session with ``error`` (the first call wins), tearing the transport down."""

    def request(
        self,
        method: str,
        params: dict[str, Any],
        timeout: float,
        describe: Callable[[], str],
        *,
        cancellable: bool = True,
        watch: Watch | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> Any: ...

    def notify(self, method: str, timeout: float, params: dict[str, Any] | None = None) -> None: ...

    def cancel_request(self, request_id: int) -> None:
        """Stop waiting for a request sent earlier and tell the server (best effort)."""

    def withdraw(self, request_id: int, reason: str, cancellable: bool = True) -> Entry | None:
        """Take a request off the table and tell the server if it was sent (and
        ``cancellable``); its entry, for the caller to complete, or ``None``
        when a reply (or the end of the session) took it first."""

    def send_and_forget(self, method: str, params: dict[str, Any]) -> None: ...

    def emit(self, kind: Any, detail: Any) -> None: ...

    def adopt(self, era: Era, capabilities: Mapping[str, Any]) -> None: ...

    def load_catalog(self, keep: Callable[[Tool], bool] | None = None) -> tuple[Tool, ...]: ...

    def answer_input_request(
        self, method: str, params: Mapping[str, Any], deadline: float
    ) -> dict[str, Any]: ...


class Era(Protocol):
    """One protocol era, as a session core uses it. Methods take the core as
    an argument (an era holds no reference to it: no cycle keeps a dropped
    session alive)."""

    name: str
    """``"legacy"`` or ``"modern"``: what ``Session.era`` says."""
    any_structured: bool
    """Whether a tool's ``structuredContent`` may be any JSON value (else an object)."""
    input_rounds: bool
    """Whether a result may ask for another round (``input_required``); when
    not, a request that cannot become a task is settled by its first result."""
    version_retry: bool
    """Whether a request refused with ``-32022`` (unsupported version) is sent
    again at a version both sides list (else the refusal is its answer)."""
    plain_requests: bool
    """Whether :meth:`request` is plain JSON-RPC, the core's ``request`` with
    the time left: nothing added to the params, no headers, no retry, no
    result kind but a task (the call plan then sends a plain call straight)."""

    @property
    def version(self) -> str | None:
        """The protocol version in use (``None`` before a handshake settled one)."""

    # ------------------------------------------------------------ opening

    def open(self, core: EraCore, watch: Watch, describe: Callable[[], str]) -> Any:
        """Send the era's opening request (``initialize`` or ``server/discover``)
        and return its raw result, by the watch's (movable) deadline;
        ``describe`` words a timeout."""

    def adopt(self, core: EraCore, result: Any, *, strict: bool) -> ServerInfo | None:
        """Check the opening result and, if it settles this era, make this
        object the core's era (``core.adopt``), finish the opening (the
        handshake's ``initialized``, the server-to-client channel) and return
        the server's info. ``None``: no evidence of this era (``strict``: an
        error instead)."""

    def listen(self, core: EraCore) -> None:
        """Open the channel on which the server sends what is not a reply,
        where the era has one and the session serves it."""

    def reopen(self, core: EraCore, deadline: float) -> None:
        """Open a new protocol session on the same transport at the version in
        use (an HTTP server that forgot ours), by ``deadline`` (monotonic)."""

    def load_catalog(self, core: EraCore) -> tuple[Tool, ...]:
        """The first ``tools/list`` walk, with whatever this era checks in it."""

    # ------------------------------------------------------------ requests

    def frame(
        self, method: str, params: Mapping[str, Any], *, tasks: bool = False
    ) -> tuple[dict[str, Any], dict[str, str] | None]:
        """A request's params as this era sends them, and its own headers
        (``None``: none), without sending it (a submitted call, ._submit)."""

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
        """One request framed the era's way, its result checked for a
        ``resultType`` this era allows. With a ``watch``, bounded by the
        watch's (movable) deadline instead of ``deadline``; ``tasks``: the
        request may be answered with a task."""

    def result_kind(self, result: object, method: str, *, tasks: bool = False) -> str:
        """:data:`COMPLETE`, :data:`INPUT_REQUIRED` or :data:`TASK`."""

    def server_request(self, core: EraCore, request_id: int | str, method: str, params: object) -> None:
        """A request the server sent on its own (answered by the handlers where
        the era has server requests, dropped where it has none)."""

    def probe(self, core: EraCore, deadline: float, budget: str) -> None:
        """The cheapest request that proves the server answers."""

    def set_log_level(self, core: EraCore, level: str, timeout_ms: int | None) -> None:
        """Ask for server log messages of ``level`` and above."""

    def notification_meta(self) -> dict[str, Any] | None:
        """The ``_meta`` a client notification carries in this era (``None``:
        none); raises :class:`NotSupported` where the era sends none at all."""

    def subscribe(self, core: EraCore, uri: str, deadline: float) -> None:
        """Tell the server the session now listens to updates of ``uri``
        (already in ``core.inbound.updates``), by ``deadline``."""

    def unsubscribe(self, core: EraCore, uri: str, deadline: float) -> None:
        """Tell the server the session no longer listens to ``uri`` (already
        removed from ``core.inbound.updates``), by ``deadline``."""

    # ------------------------------------------------------------ tasks

    def use_task(self, core: EraCore, tool: Tool, task: bool | None) -> bool:
        """Whether a ``tools/call`` of ``tool`` goes as (or may become) a task."""

    def task_params(self, params: dict[str, Any], route: Route) -> dict[str, Any]:
        """The ``tools/call`` params of a call that may become a task."""

    def follow_task(
        self, core: EraCore, name: str, created: dict[str, Any], route: Route, describe: Callable[[], str]
    ) -> Any:
        """Follow a task the server answered ``tools/call`` with to the result
        ``tools/call`` would have given; cancelled if the caller leaves first."""

    def cancel_task(self, core: EraCore, task_id: str, describe: Callable[[], str]) -> None:
        """Best effort: ask the server to cancel a task; never waits for it."""
