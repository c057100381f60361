"""Change notifications a session asked for: resource subscriptions (both
eras) and the ``subscriptions/listen`` stream of the 2026-07-28 era.

Loaded only by a session that subscribes to a resource, or that asked for
``auto_refresh`` from a 2026-07-28 server declaring list changes.

:class:`ResourceUpdates` keeps the session's subscriptions (URI -> callback)
and runs a callback for each ``notifications/resources/updated`` on a
library thread (``mcp_sync-<server>-updates``), never on the reader's: a
callback that raises is logged and the session goes on. Updates of one URI
that arrive while its callback is still queued are coalesced into that one
call (the notification is a level trigger: "read it again").

:class:`ListenStream` is the 2026-07-28 channel for what a server sends
unasked (MCP 2026-07-28, "Subscriptions"): one ``subscriptions/listen``
request whose reply stream carries the ``notifications/subscriptions/
acknowledged`` frame, then the list changes and resource updates the filter
asked for, until the server ends it with a result. One library thread,
``mcp_sync-<server>-listen``, owns it: it opens the stream, opens a new one
when the filter changes (a subscription added or removed) or the stream's
lifetime is near its end, and closes the old one only once the new one is
acknowledged, so nothing falls between the two; after a drop it opens the
stream again (backing off) and, since changes may have been missed in
between, marks the lists it listens to as changed. The request is sent and
left in the session's request table (:meth:`_Stream.follow` does not wait):
its reply, or the end of the session, wakes the thread.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Protocol, cast

from ..protocol.errors import ConnectionClosed, InvalidOption, McpError, NotSupported, RemoteError, Timeout
from ..protocol.limits import seconds
from ..transports.workers import Workers

if TYPE_CHECKING:
    from ..transports.contract import Outbound, Transport
    from .eras.contract import EraCore
    from .pending import _Watched

__all__ = [
    "LISTEN_LIFETIME",
    "MAX_SUBSCRIPTIONS",
    "MAX_URI_BYTES",
    "ListenStream",
    "OnUpdate",
    "ResourceUpdates",
    "check_uri",
]

MAX_SUBSCRIPTIONS = 256
"""Resource subscriptions one session may hold at once."""
MAX_URI_BYTES = 8192
"""The longest resource URI subscribed to, or accepted in an update."""
MAX_PENDING_UPDATES = 256
"""Distinct URIs whose callback may wait to run; past it an update is dropped (and logged)."""
LISTEN_LIFETIME = 300.0
"""Seconds a listen stream is kept before a new one replaces it (a bound on
how long one HTTP response is held open, like the GET stream's)."""
RENEW_AT = 0.9
"""A stream is replaced once this share of its lifetime has passed (the
request itself is bounded by the whole lifetime, so the two overlap)."""
HEALTHY = 5.0
"""A stream that lived less than this many seconds before it dropped counts
as a failure: the next one waits (backing off), so a server that drops every
stream at once cannot make the session spin."""
ACK_TIMEOUT_FLOOR = 1.0
"""At least this many seconds for a new stream's acknowledgment."""
MAX_BACKOFF = 30.0
"""The longest pause before a dropped stream is opened again."""

SUBSCRIPTION_ID = "io.modelcontextprotocol/subscriptionId"
_LIST_KEYS = {"tools": "toolsListChanged", "resources": "resourcesListChanged", "prompts": "promptsListChanged"}

_log = logging.getLogger("mcp_sync.catalog")

OnUpdate = Callable[[str], None]
"""``on_update(uri)``: the resource at ``uri`` changed (read it again)."""


def check_uri(uri: object) -> str:
    """A URI a caller subscribes to: a non-empty string within :data:`MAX_URI_BYTES`."""
    if not isinstance(uri, str) or not uri:
        raise InvalidOption("uri must be a non-empty string")
    if len(uri.encode("utf-8", "surrogatepass")) > MAX_URI_BYTES:
        raise InvalidOption(f"uri is over {MAX_URI_BYTES} bytes")
    return uri


# ---------------------------------------------------------------------- subscriptions


class ResourceUpdates:
    """One session's resource subscriptions and the thread that runs their callbacks."""

    def __init__(self, server: str) -> None:
        self._server = server
        # Guards _callbacks and _due. Held only for dict and set updates:
        # nobody waits on it while a callback runs.
        self._lock = threading.Lock()
        self._callbacks: dict[str, OnUpdate] = {}
        self._due: set[str] = set()
        self.dropped = 0
        """Updates dropped because :data:`MAX_PENDING_UPDATES` URIs were already waiting."""
        self._pool = Workers(f"mcp_sync-{server}-updates", max_workers=1, backlog=MAX_PENDING_UPDATES)

    def uris(self) -> tuple[str, ...]:
        with self._lock:
            return tuple(self._callbacks)

    def __contains__(self, uri: object) -> bool:
        with self._lock:
            return uri in self._callbacks

    def add(self, uri: str, on_update: OnUpdate) -> bool:
        """Keep ``on_update`` for ``uri``; True if the URI is new (the server must be told)."""
        with self._lock:
            new = uri not in self._callbacks
            if new and len(self._callbacks) >= MAX_SUBSCRIPTIONS:
                raise InvalidOption(f"a session holds at most {MAX_SUBSCRIPTIONS} resource subscriptions")
            self._callbacks[uri] = on_update
            return new

    def remove(self, uri: str) -> bool:
        with self._lock:
            return self._callbacks.pop(uri, None) is not None

    def notify(self, params: object) -> None:
        """``notifications/resources/updated``, on the reader's thread: queue
        the callback of the subscription it is about (the URI itself, or the
        longest subscribed URI it lies under: an update may name a
        sub-resource). Anything else is dropped."""
        uri = params.get("uri") if isinstance(params, dict) else None
        if not isinstance(uri, str) or not uri or len(uri) > MAX_URI_BYTES:
            return
        with self._lock:
            key = uri if uri in self._callbacks else _covering(self._callbacks, uri)
            if key is None or uri in self._due:
                return  # not ours, or already queued: one call reads it again
            if len(self._due) >= MAX_PENDING_UPDATES:
                self.dropped += 1
                return
            self._due.add(uri)
        if not self._pool.submit(lambda: self._run(key, uri)):
            with self._lock:
                self._due.discard(uri)

    def _run(self, key: str, uri: str) -> None:
        with self._lock:
            self._due.discard(uri)
            callback = self._callbacks.get(key)
        if callback is None:
            return  # unsubscribed meanwhile
        try:
            callback(uri)
        except Exception:
            _log.exception(
                "the on_update callback of a resource subscription on server %r raised",
                self._server,
                extra={"mcp_event": "subscription_callback_failed", "mcp_server": self._server},
            )

    def close(self, timeout: float) -> None:
        self._pool.close(timeout)


def _covering(callbacks: Mapping[str, OnUpdate], uri: str) -> str | None:
    best: str | None = None
    for subscribed in callbacks:
        under = uri.startswith(subscribed) and (
            subscribed.endswith("/") or uri[len(subscribed) : len(subscribed) + 1] in ("/", "?", "#")
        )
        if under and (best is None or len(subscribed) > len(best)):
            best = subscribed
    return best


# ---------------------------------------------------------------------- 2026-07-28: the listen stream


class _Stream:
    """One ``subscriptions/listen`` request: the session's request table holds
    its entry until the server ends the stream or the session ends. A
    :class:`~._pending.Watch` whose ``follow`` sends and returns at once."""

    def __init__(self, owner: ListenStream, generation: int, lifetime: float) -> None:
        self._owner = owner
        self.generation = generation
        now = time.monotonic()
        self.opened_at = now
        self.deadline = now + lifetime
        self.renew_at = now + lifetime * RENEW_AT
        self.request_id: int | None = None
        self.acked = False
        self.honored: Mapping[str, Any] = {}
        self.ended = False
        self.error: McpError | None = None
        self._entry: _Watched | None = None

    # The Watch protocol (see _pending.Watch), on the session's threads.

    def follow(self, entry: _Watched, transport: Transport, item: Outbound, timeout: float) -> bool:
        self._entry = entry
        self.request_id = item.request_id
        return transport.send(item, timeout)

    def wake(self) -> None:
        """The entry was completed (the reader's thread, or the session's end)."""
        entry = self._entry
        error = entry.error if entry is not None else None
        self._owner.ended(self, error if isinstance(error, McpError) else None)

    def retry(self) -> None:
        """Never called: a listen request is not retried with input."""


def _doubled(backoff: float) -> float:
    """The pause before the next open after a short life or a failed open."""
    return min(MAX_BACKOFF, max(0.05, backoff * 2))


class ListenStream:
    """The 2026-07-28 ``subscriptions/listen`` stream of one session."""

    def __init__(self, core: EraCore, lists: tuple[str, ...]) -> None:
        self._core = core
        self._lists = lists
        self.lifetime = LISTEN_LIFETIME
        # Guards every field below. The listen thread waits on it for work
        # (a filter change, a stream's end or ack, the session's end); a
        # subscriber waits on it for the stream that carries its change.
        self._cond = threading.Condition(threading.Lock())
        self._generation = 0  # bumped by every change of the filter
        self._served = -1  # the generation the acknowledged stream carries
        self._failure: tuple[int, McpError] | None = None  # why a generation could not be served
        self._current: _Stream | None = None
        self._opening: _Stream | None = None
        # A stream dropped and none acknowledged since: reopening goes on
        # (with backoff) until one is, even though the generation was served.
        self._lost = False
        self._closed = False
        self._refused: McpError | None = None  # the server does not serve subscriptions/listen
        self.opened = 0
        """Streams opened so far (a hint for tests and logs)."""
        self._thread = threading.Thread(target=self._run, name=f"mcp_sync-{core.server}-listen", daemon=True)

    # ------------------------------------------------------------ callers

    def change(self, timeout: float) -> None:
        """The filter changed (a subscription added or removed): return once
        a stream carrying it is acknowledged; raise if none could be."""
        deadline = time.monotonic() + timeout
        with self._cond:
            self._generation += 1
            wanted = self._generation
            self._cond.notify_all()
            if self._thread.ident is None and not self._closed:
                self._thread.start()  # the first change: there is a filter to open
            while self._served < wanted:
                failure = self._failure
                if failure is not None and failure[0] >= wanted:
                    raise failure[1]._copy()
                terminal = self._core.terminal
                if terminal is not None or self._closed:
                    raise (terminal or self._refused or ConnectionClosed("the session has ended"))._copy()
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise Timeout(f"subscriptions/listen of server {self._core.server!r} was not acknowledged in time")
                self._cond.wait(min(remaining, threading.TIMEOUT_MAX))

    def honored(self) -> Mapping[str, Any]:
        with self._cond:
            current = self._current
            return current.honored if current is not None else {}

    def subscribed(self, uri: str) -> bool:
        """Whether the acknowledged filter carries ``uri``."""
        uris = self.honored().get("resourceSubscriptions")
        return isinstance(uris, (list, tuple)) and uri in uris

    # ------------------------------------------------------------ the reader's side

    def acknowledged(self, params: object) -> None:
        """``notifications/subscriptions/acknowledged``: the stream it names is open."""
        if not isinstance(params, dict):
            return
        meta = params.get("_meta")
        stream_id = meta.get(SUBSCRIPTION_ID) if isinstance(meta, dict) else None
        if type(stream_id) is not int:
            return  # our request ids are integers (and True is not 1 here)
        honored = params.get("notifications")
        with self._cond:
            for stream in (self._opening, self._current):
                if stream is not None and stream.request_id == stream_id:
                    stream.acked = True
                    stream.honored = honored if isinstance(honored, dict) else {}
                    self._cond.notify_all()
                    return

    def ended(self, stream: _Stream, error: McpError | None) -> None:
        with self._cond:
            stream.ended = True
            stream.error = error
            self._cond.notify_all()

    def close(self, timeout: float) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify_all()
        if self._thread is not threading.current_thread() and self._thread.ident is not None:
            self._thread.join(timeout)

    # ------------------------------------------------------------ the listen thread

    def _filter(self) -> dict[str, Any]:
        declared = self._core.server_capabilities
        wanted: dict[str, Any] = {}
        for kind in self._lists:
            capability = declared.get(kind)
            if isinstance(capability, Mapping) and capability.get("listChanged") is True:
                wanted[_LIST_KEYS[kind]] = True
        updates = self._core.inbound.updates
        uris = updates.uris() if updates is not None else ()
        if uris:
            wanted["resourceSubscriptions"] = list(uris)
        return wanted

    def _stopped(self) -> bool:
        return self._closed or self._core.terminal is not None

    def _run(self) -> None:
        backoff = 0.0
        failed = False  # the last open failed
        try:
            while True:
                work = self._next()
                if work is None:
                    return
                generation, current, dropped, lived = work
                # A stream that lasted HEALTHY starts the pause over, a
                # shorter one doubles it, and so does a failed open. A
                # success starts it over only when nothing failed on the way
                # (a new filter, a first stream): after a quick drop or a
                # failed open, it says nothing of how long the new stream
                # will last.
                if lived is True:
                    backoff = 0.0
                elif lived is False:
                    backoff = _doubled(backoff)
                if backoff and self._core.ended.wait(backoff):
                    return
                if self._open(generation, current, resumed=dropped):
                    if lived is None and not failed:
                        backoff = 0.0
                    failed = False
                else:
                    backoff = _doubled(backoff)
                    failed = True
        finally:
            with self._cond:
                self._closed = True
                self._cond.notify_all()
            for stream in (self._current, self._opening):
                if stream is not None and not stream.ended and stream.request_id is not None:
                    self._core.cancel_request(stream.request_id)

    def _next(self) -> tuple[int, _Stream | None, bool, bool | None] | None:
        """Wait for work: a stream to open (none yet, the last one ended, the
        filter changed, the lifetime is nearly up). ``None``: stop. Else the
        generation to serve, the stream to replace, whether the last one
        dropped, and whether the stream that ended or is replaced lived
        HEALTHY seconds (``None``: no stream ended or is replaced, or one
        replaced sooner, for a new filter)."""
        with self._cond:
            while not self._stopped():
                current = self._current
                if self._served < self._generation or self._lost or (current is not None and current.ended):
                    break
                if current is None:  # nothing to listen to
                    self._cond.wait()
                    continue
                remaining = current.renew_at - time.monotonic()
                if remaining <= 0:
                    break
                self._cond.wait(min(remaining, threading.TIMEOUT_MAX))
            if self._stopped():
                return None
            current = self._current
            # A reopen that failed after a drop is tried again as a drop:
            # changes may have come and gone unseen meanwhile.
            dropped, lived = self._lost, None
            if current is not None and current.ended:
                if self._dropped(current) is None:
                    return None
                lived = time.monotonic() - current.opened_at >= HEALTHY
                self._current, current, dropped = None, None, True
                self._lost = True
            elif current is not None and time.monotonic() - current.opened_at >= HEALTHY:
                lived = True  # replaced after a healthy life (its lifetime, or a new filter)
            return self._generation, current, dropped, lived

    def _dropped(self, stream: _Stream) -> bool | None:
        """A stream ended (holding the lock). True: open it again; None: stop
        listening (the server does not serve ``subscriptions/listen``)."""
        error = stream.error
        if isinstance(error, RemoteError) and error.code == -32601:
            _log.warning(
                "server %r does not serve subscriptions/listen: no list changes will arrive", self._core.server,
                extra={"mcp_event": "listen_refused", "mcp_server": self._core.server},
            )  # fmt: skip
            self._refused = NotSupported(f"server {self._core.server!r} does not serve subscriptions/listen")
            self._failure = (self._generation, self._refused)
            self._cond.notify_all()
            return None
        _log.info(
            "the subscriptions/listen stream of server %r ended (%s); opening it again", self._core.server,
            error.message if error is not None else "closed by the server",
            extra={"mcp_event": "listen_resumed", "mcp_server": self._core.server},
        )  # fmt: skip
        return True

    def _open(self, generation: int, old: _Stream | None, *, resumed: bool) -> bool:
        """Open a stream carrying ``generation``'s filter, wait for its
        acknowledgment, then close ``old``. False (and ``old`` kept) if it failed."""
        core = self._core
        wanted = self._filter()
        if not wanted:
            # Nothing left to listen to (the last subscription went): no stream.
            with self._cond:
                self._current = None
                self._lost = False
                self._served = max(self._served, generation)
                self._cond.notify_all()
            if old is not None and not old.ended and old.request_id is not None:
                core.cancel_request(old.request_id)
            return True
        stream = _Stream(self, generation, self.lifetime)
        params = {"notifications": wanted}
        limits = core.limits
        ack_timeout = max(ACK_TIMEOUT_FLOOR, seconds(limits.handshake_timeout_ms))
        with self._cond:
            self._opening = stream
        try:
            self.opened += 1
            core.era.request(
                core, "subscriptions/listen", params, stream.deadline,
                lambda: f"subscriptions/listen of server {core.server!r}", watch=stream,
            )  # fmt: skip
        except McpError as exc:
            return self._failed(stream, generation, exc)
        until = time.monotonic() + ack_timeout
        with self._cond:
            while not (stream.acked or stream.ended or self._stopped()):
                remaining = until - time.monotonic()
                if remaining <= 0:
                    break
                self._cond.wait(min(remaining, threading.TIMEOUT_MAX))
            if not stream.acked:
                error = stream.error or Timeout(
                    f"subscriptions/listen of server {core.server!r} was not acknowledged "
                    f"within handshake_timeout_ms={limits.handshake_timeout_ms}"
                )
                if isinstance(error, RemoteError) and error.code == -32601:
                    # Not served at all: stop trying.
                    error = self._refused = NotSupported(
                        f"server {core.server!r} does not serve subscriptions/listen"
                    )
                    self._closed = True
            else:
                self._opening = None
                self._current = stream
                self._lost = False
                self._failure = None
        if not stream.acked:
            return self._failed(stream, generation, error)
        if old is not None and not old.ended and old.request_id is not None:
            core.cancel_request(old.request_id)
        # Over HTTP the old stream is its own connection: a change it carried
        # but we had not read yet is gone with it, so a replacement refreshes
        # as a drop does. Marked before the callers waiting for this stream
        # are released, so that nothing they fetch next is dropped after.
        if resumed or old is not None:
            self._missed()
        with self._cond:
            self._served = max(self._served, generation)
            self._cond.notify_all()
        return True

    def _failed(self, stream: _Stream, generation: int, error: McpError) -> bool:
        with self._cond:
            self._opening = None
            self._failure = (generation, error)
            self._cond.notify_all()
        if not stream.ended and stream.request_id is not None:
            self._core.cancel_request(stream.request_id)
        if self._core.terminal is None:
            _log.warning(
                "subscriptions/listen of server %r failed: %s", self._core.server, error.message,
                extra={"mcp_event": "listen_failed", "mcp_server": self._core.server, "mcp_kind": error.kind},
            )  # fmt: skip
        return False

    def _missed(self) -> None:
        """After a drop, changes may have come and gone unseen: treat each
        list listened to as changed (an automatic refresh follows)."""
        inbound = self._core.inbound
        for kind in self._lists:
            inbound.notification(f"notifications/{kind}/list_changed", None)


# ---------------------------------------------------------------------- the session's methods


class _Subscriber(Protocol):
    """What the session's methods use of its inbound side (``._inbound.Inbound``)."""

    @property
    def updates(self) -> ResourceUpdates | None: ...

    def resource_updates(self) -> ResourceUpdates: ...


def subscribe_resource(core: EraCore, uri: str, on_update: OnUpdate, timeout_ms: int | None) -> None:
    """``Session.subscribe_resource``: keep ``on_update`` for ``uri`` and tell
    the server, the era's way; on failure nothing is kept."""
    from ..protocol.limits import request_budget

    core.require("resources", "resources/subscribe")
    resources = core.server_capabilities.get("resources")
    if not (isinstance(resources, Mapping) and resources.get("subscribe") is True):
        raise NotSupported(
            f"server {core.server!r} did not declare resources.subscribe, which resource subscriptions need"
        )
    uri = check_uri(uri)
    if not callable(on_update):
        raise InvalidOption("on_update must be a callable taking the updated resource's URI")
    timeout_ms, option = request_budget(core.limits, timeout_ms)
    deadline = time.monotonic() + seconds(timeout_ms)
    updates = cast("_Subscriber", core.inbound).resource_updates()
    if not updates.add(uri, on_update):
        return  # already subscribed: the new callback replaces the old one
    try:
        core.era.subscribe(core, uri, deadline)
    except McpError as exc:
        updates.remove(uri)
        if isinstance(exc, Timeout):
            raise Timeout(
                f"subscribing to {uri[:200]!a} on server {core.server!r} missed its deadline ({option}={timeout_ms})"
            ) from None
        raise
    except BaseException:
        updates.remove(uri)
        raise


def unsubscribe_resource(core: EraCore, uri: str, timeout_ms: int | None) -> None:
    """``Session.unsubscribe_resource``: forget ``uri``'s callback at once,
    then tell the server (nothing to do if it was not subscribed)."""
    from ..protocol.limits import request_budget

    uri = check_uri(uri)
    updates = cast("_Subscriber", core.inbound).updates
    if updates is None or not updates.remove(uri):
        return
    terminal = core.terminal
    if terminal is not None:
        raise terminal._copy()
    timeout_ms, _ = request_budget(core.limits, timeout_ms)
    core.era.unsubscribe(core, uri, time.monotonic() + seconds(timeout_ms))
