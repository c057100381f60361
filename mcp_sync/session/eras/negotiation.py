"""Era negotiation: which protocol revision a new session speaks.

``connect()`` settles the era once, here, before the catalog is fetched:

- ``protocol="legacy"`` (or a pinned handshake-era ``protocol_version``): the
  ``initialize`` handshake, proposing 2025-11-25 unless a version is pinned.
- ``protocol="modern"`` (or ``protocol_version="2026-07-28"``): a
  ``server/discover`` request and no fallback.
- ``protocol="auto"`` (the default): probe ``server/discover`` at the newest
  modern revision and fall back to the handshake on anything that is not
  positive evidence of a modern server.

Positive evidence is a ``DiscoverResult`` naming a revision both sides speak,
or a ``-32022`` (unsupported version) whose list names one: the probe is then
sent once more at that revision. Everything else -- a JSON-RPC error (an error
with a null id included: a server that could not read the probe's id), a
result that is not a ``DiscoverResult``, silence -- means a handshake-era
server. A server listing only versions this client does not speak fails
``connect`` with a ``protocol_error`` naming both sides.

``auto`` never connects fewer servers than the handshake alone would, costs a
server that ignores the probe a fraction of a second only, and settles a
dual-era server on 2026-07-28 however slowly it starts (the race, below):

- The probe is never abandoned for the handshake: when it goes unanswered for
  :data:`PROBE_GRACE_MS` *after the server has read it* (over stdio the clock
  starts when the server's stdin pipe is seen empty, on Linux, and waits
  while the server is busy, for at most :data:`PROBE_BUSY_MAX_MS`; elsewhere, and
  over HTTP, when the probe is sent: :data:`HTTP_PROBE_GRACE_MS`), the
  handshake is sent too, and the first answer decides. A server that is still
  starting reads nothing, so it is not sent a handshake it would read right
  after the probe.
- Over stdio a dual-era server may pin its era at the first request that
  settles it: the official TypeScript SDK's ``serveStdio`` answers a probe
  from an optimistic modern instance, then discards it for the handshake
  that follows (2026-07-28, "Versioning and Compatibility": an ``initialize``
  selects the handshake era for the stdio process). So once the handshake is
  out, its answer wins: a modern answer to the probe is taken only when the
  handshake is refused or unanswered :data:`PROBE_GRACE_MS` later. Over HTTP
  the era is per request (a handshake opens a session of its own), so a modern
  answer that comes first is taken at once.
- Over stdio, a session that ends while the probe is unanswered (the server
  exits, closes a pipe, or breaks a frame rule: an SDK 1.x server exits when
  its first request is not ``initialize``), or a handshake refused with
  ``-32022`` after the probe (a server that picks its era at the first
  request it reads, and whose modern side failed the probe), gets one fresh
  process, and that process sees the handshake alone, exactly as
  ``protocol="legacy"`` would send it. A handshake that fails otherwise (it
  times out, the server exits after answering the probe, any other JSON-RPC
  error) is not tried again: the handshake alone would have failed the same
  way. Nothing is probed twice.

A probe that a server answers with an error costs one round trip more than
the handshake alone; that is the price of ``auto`` for a handshake-era server.
What ``auto`` settled may be kept (:class:`EraMemory`, :func:`remembering`):
``Servers`` and the CLI keep it per configured server across respawns, so the
next process of the same server is sent its era's opening request alone (and
is probed again only if that fails).

This module only chooses and constructs: a :class:`~._legacy.LegacyEra` or a
:class:`~._modern.ModernEra` opens the session and, once its opening result
settles the era, makes itself the core's era (``_Core.adopt``).
"""

from __future__ import annotations

import contextlib
import functools
import os
import threading
import time
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..._log import TRACING
from ...protocol.catalog import ServerInfo
from ...protocol.errors import (
    AuthError,
    ConnectionClosed,
    McpError,
    ProtocolError,
    RemoteError,
)
from ...protocol.limits import seconds
from ...protocol.versions import (
    DEFAULT_HANDSHAKE_VERSION,
    HANDSHAKE_PROTOCOL_VERSIONS,
    LATEST_MODERN_VERSION,
    LEGACY,
    MODERN,
    MODERN_PROTOCOL_VERSIONS,
    SUPPORTED_PROTOCOL_VERSIONS,
    UNSUPPORTED_PROTOCOL_VERSION,
    advertised_versions,
    newest_mutual,
)
from .handshake import LegacyEra
from .modern import ModernEra, NoCommonVersion, versions_refused
from .opening import TICK, OpeningClock, OpeningWatch
from .race import Attempt, answered, process_busy

if TYPE_CHECKING:
    from ..core import _Core

__all__ = [
    "HTTP_PROBE_GRACE_MS",
    "PROBE_BUSY_MAX_MS",
    "PROBE_GRACE_MS",
    "PROTOCOLS",
    "Abort",
    "EraMemory",
    "Negotiated",
    "abortable",
    "check_protocol",
    "negotiate",
    "remembering",
]

PROTOCOLS = ("auto", "legacy", "modern")

PROBE_GRACE_MS = 250
"""How long ``auto``'s probe may go unanswered over stdio, counted from the
moment the server has read it, before the handshake is sent as well (the
probe stays open). A server that ignores the probe costs about this much at
connect; a dual-era server answers within milliseconds of reading it. Also
how long a modern answer waits for the fate of a handshake already sent."""
HTTP_PROBE_GRACE_MS = 500
"""The same over HTTP, counted from the moment the probe is sent (nothing
tells when the server has read it), with room for a round trip."""
PROBE_BUSY_MAX_MS = 2_000
"""How much longer than :data:`PROBE_GRACE_MS` the probe may wait after the
server read it while the server is seen busy (a thread running or runnable:
on a loaded machine a dual-era server may need more than the grace period to
produce its answer), and never past half of ``handshake_timeout_ms``: the
handshake keeps the other half. Linux only."""


def check_protocol(protocol: object, protocol_version: object) -> tuple[str, str | None]:
    """Validate the two options; return the mode (``auto``, ``legacy`` or
    ``modern``) and the pinned version, if any."""
    if protocol is None:
        protocol = "auto"
    if not isinstance(protocol, str) or protocol not in PROTOCOLS:
        raise ProtocolError('option protocol must be "auto", "legacy" or "modern"')
    if protocol_version is None:
        return protocol, None
    if not isinstance(protocol_version, str) or protocol_version not in SUPPORTED_PROTOCOL_VERSIONS:
        raise ProtocolError(
            "option protocol_version must be one of " + ", ".join(SUPPORTED_PROTOCOL_VERSIONS)
        )
    era = MODERN if protocol_version in MODERN_PROTOCOL_VERSIONS else LEGACY
    if protocol not in ("auto", era):
        raise ProtocolError(
            f"option protocol_version={protocol_version} belongs to the {era} era, "
            f'but option protocol is "{protocol}"'
        )
    return era, protocol_version


@dataclass(frozen=True)
class Negotiated:
    """A session core whose era is settled and whose catalog is fetched
    (``core.era`` says which era), and what the server disclosed about itself."""

    core: _Core
    server_info: ServerInfo


class EraMemory:
    """The era ``auto`` settled for one configured server, kept by its owner
    (a ``Servers`` slot, the CLI) across the server's respawns in this
    process: the era is a property of the server (2026-07-28, "Versioning and
    Compatibility"), so its next process is sent that era's opening request
    alone. A remembered era that fails is forgotten (the next start probes)."""

    __slots__ = ("era",)

    def __init__(self) -> None:
        # Written by the connecting thread only (a Servers slot connects
        # under its own lock); a stale read costs a probe, nothing more.
        self.era: str | None = None


# The memory the connect running in this context reads and updates.
_MEMORY: ContextVar[EraMemory | None] = ContextVar("mcp_sync_era_memory", default=None)


@contextlib.contextmanager
def remembering(memory: EraMemory) -> Iterator[None]:
    """``connect()`` calls inside use and update ``memory`` under ``protocol="auto"``."""
    token = _MEMORY.set(memory)
    try:
        yield
    finally:
        _MEMORY.reset(token)


class Abort:
    """A way to stop a connect that runs on another thread (``Servers``
    connects on a thread of its own): :meth:`abort` ends the session being
    negotiated with ``error``, at once or as soon as its transport is
    started, and the connect raises it after tearing that transport down, as
    on any failure."""

    __slots__ = ("_core", "_error", "_lock")

    def __init__(self) -> None:
        self._lock = threading.Lock()  # guards _core and _error; never held across a call
        self._core: _Core | None = None
        self._error: McpError | None = None

    def abort(self, error: McpError) -> None:
        with self._lock:
            if self._error is None:
                self._error = error
            core = self._core
        if core is not None:
            core.terminate(error)

    def watching(self, open_core: Callable[[], _Core]) -> Callable[[], _Core]:
        """``open_core``, made to hand each core it starts to this abort."""

        def opened() -> _Core:
            core = open_core()
            with self._lock:
                self._core = core
                error = self._error
            if error is not None:
                core.terminate(error)
            return core

        return opened


# The abort of the connect running in this context.
_ABORT: ContextVar[Abort | None] = ContextVar("mcp_sync_connect_abort", default=None)


@contextlib.contextmanager
def abortable(abort: Abort) -> Iterator[None]:
    """``connect()`` calls inside can be stopped from another thread with ``abort``."""
    token = _ABORT.set(abort)
    try:
        yield
    finally:
        _ABORT.reset(token)


class _Fresh(Exception):
    """Connect again on a fresh transport with the handshake alone."""


@dataclass(frozen=True)
class _Fallback:
    """No modern server (the handshake comes next)."""


def negotiate(
    open_core: Callable[[], _Core], protocol: str, pinned: str | None, *, http: bool
) -> Negotiated:
    """Open a session with ``open_core()`` (which starts its transport), settle
    its era and fetch the catalog. On any failure nothing is left running."""
    memory = _MEMORY.get() if protocol == "auto" else None
    abort = _ABORT.get()
    if abort is not None:
        open_core = abort.watching(open_core)
    core = open_core()
    try:
        clock = OpeningClock(core.server, core.limits, core.transport)
        if protocol == LEGACY:
            version = pinned or DEFAULT_HANDSHAKE_VERSION
            return _finish(core, _handshake(core, clock, version, pinned=pinned is not None))
        if protocol == MODERN:
            version = pinned or LATEST_MODERN_VERSION
            return _finish(core, _discover(core, clock, version, pinned=pinned is not None, http=http))
        try:
            done = _auto(core, clock, http=http, known=memory.era if memory is not None else None)
        except _Fresh:
            # Whatever the server made of the probe it read, a fresh one sees
            # only the handshake, exactly as protocol="legacy" would have sent
            # it, within what is left of the first one's handshake budget.
            core.discard()
            core = open_core()
            clock = OpeningClock(core.server, core.limits, core.transport, cap=clock.deadline)
            done = _finish(core, _handshake(core, clock, DEFAULT_HANDSHAKE_VERSION))
        if memory is not None:
            memory.era = done.core.era.name
        return done
    except McpError as exc:
        if memory is not None:
            memory.era = None
        core.terminate(exc, wait=True)
        raise
    except BaseException:
        core.terminate(ProtocolError("connect was interrupted"), wait=True)
        raise


def _auto(core: _Core, clock: OpeningClock, *, http: bool, known: str | None) -> Negotiated:
    """``auto``: the remembered era's opening request, or the race between the
    probe and the handshake. Raises :class:`_Fresh` when only a fresh
    transport can still connect the way ``protocol="legacy"`` would."""
    if known == LEGACY:
        return _finish(core, _handshake(core, clock, DEFAULT_HANDSHAKE_VERSION, auto=True))
    if known == MODERN:
        outcome = _probe(core, clock, http=http)
        if isinstance(outcome, ServerInfo):
            return _finish(core, outcome)
        return _finish(core, _fallback_handshake(core, clock, http=http))
    return _finish(core, _Race(core, clock, http=http).run())


def _finish(core: _Core, info: ServerInfo) -> Negotiated:
    core.era.load_catalog(core)
    if core.terminal is not None:
        raise core.terminal._copy()
    return Negotiated(core, info)


# ------------------------------------------------------------------ legacy


def _handshake(
    core: _Core, clock: OpeningClock, version: str, *, pinned: bool = False, auto: bool = False
) -> ServerInfo:
    """``initialize`` at ``version``. A ``-32022`` naming a handshake-era
    version both sides speak is answered once more at that version."""
    try:
        return _initialize(core, clock, version)
    except RemoteError as exc:
        retry = _version_to_retry(core, exc, version, pinned=pinned, auto=auto)
        if retry is None:
            raise
    return _initialize(core, clock, retry)


def _fallback_handshake(core: _Core, clock: OpeningClock, *, http: bool) -> ServerInfo:
    """The handshake after a probe that found no modern server. Over stdio a
    ``-32022`` here says the probe set this process to the modern era (a
    server that picks its era at the first request it reads); a fresh one has
    seen nothing. Any other refusal is the handshake's own."""
    try:
        return _handshake(core, clock, DEFAULT_HANDSHAKE_VERSION, auto=True)
    except RemoteError as exc:
        if http or exc.code != UNSUPPORTED_PROTOCOL_VERSION:
            raise
        raise _Fresh from None


def _legacy_era() -> LegacyEra:
    from ..core import CLIENT_INFO

    return LegacyEra(DEFAULT_HANDSHAKE_VERSION, client_info=CLIENT_INFO)


def _initialize(core: _Core, clock: OpeningClock, version: str) -> ServerInfo:
    """The handshake proposing ``version``; the era is settled when it passes its checks."""
    from ..core import CLIENT_INFO

    era = LegacyEra(version, client_info=CLIENT_INFO)
    return era.adopt(core, era.open(core, OpeningWatch(clock), clock.describe("initialize")), strict=True)


def _version_to_retry(
    core: _Core, exc: RemoteError, version: str, *, pinned: bool, auto: bool
) -> str | None:
    """The version to send ``initialize`` again at, ``None`` to let the
    refusal stand (never raised from here: a frame that raised its own
    argument would keep the whole stack alive in a cycle)."""
    supported = _refused_versions(exc) if exc.code == UNSUPPORTED_PROTOCOL_VERSION else None
    if supported is None:
        return None
    if auto and newest_mutual(supported, MODERN_PROTOCOL_VERSIONS) is not None:
        return None
    mutual = newest_mutual(supported, HANDSHAKE_PROTOCOL_VERSIONS)
    if mutual is None or pinned or mutual == version:
        if pinned:
            ours: tuple[str, ...] = (version,)
        else:
            ours = SUPPORTED_PROTOCOL_VERSIONS if auto else HANDSHAKE_PROTOCOL_VERSIONS
        raise versions_refused(core.server, supported, ours) from None
    return mutual


def _refused_versions(exc: RemoteError) -> tuple[str, ...] | None:
    from .modern import refused_versions

    return refused_versions(exc)


# ------------------------------------------------------------------ modern


def _modern(core: _Core, version: str, *, http: bool, pinned: bool = False) -> ModernEra:
    from ..core import CLIENT_INFO

    return ModernEra(
        core.server,
        version,
        http=http,
        capabilities=core.client_capabilities,
        client_info=CLIENT_INFO,
        pinned=pinned,
    )


def _discover(core: _Core, clock: OpeningClock, version: str, *, pinned: bool, http: bool) -> ServerInfo:
    """``server/discover`` with no fallback (``protocol="modern"``)."""
    era = _modern(core, version, http=http, pinned=pinned)
    try:
        result = era.open(core, OpeningWatch(clock), clock.describe("server/discover"))
    except RemoteError as exc:
        raise ProtocolError(
            f"server {core.server!r} answered server/discover with JSON-RPC error "
            f"{exc.code}: it does not speak the modern era (2026-07-28); "
            'connect with protocol="auto" or "legacy"'
        ) from None
    info = era.adopt(core, result, strict=True)
    assert info is not None
    return info


def _probe(core: _Core, clock: OpeningClock, *, http: bool) -> ServerInfo | _Fallback:
    """``server/discover`` alone, with the whole handshake budget, to a
    server remembered as modern: the server's info, else a :class:`_Fallback`.
    Raises :class:`_Fresh` when the probe ended the session and a fresh
    transport can try the handshake."""
    era = _modern(core, LATEST_MODERN_VERSION, http=http)
    try:
        with TRACING.probe():
            result = era.open(core, OpeningWatch(clock), clock.describe("server/discover"))
    except McpError as exc:
        return _refusal(core, clock, exc, http=http)
    info = era.adopt(core, result, strict=False)
    return info if info is not None else _Fallback()


def _modern_evidence(result: object) -> bool:
    """Whether a probe's result is a ``DiscoverResult`` listing a modern
    version both sides speak (what ``ModernEra.adopt`` will take)."""
    theirs = advertised_versions(result.get("supportedVersions")) if isinstance(result, dict) else None
    return theirs is not None and newest_mutual(theirs, MODERN_PROTOCOL_VERSIONS) is not None


def _refusal(core: _Core, clock: OpeningClock, exc: McpError, *, http: bool) -> _Fallback:
    """What a probe's error says: no modern server (a :class:`_Fallback`), or
    raised: versions in common with nobody, credentials, a session ended in
    a way a fresh transport cannot repair. :class:`_Fresh` when it can."""
    if isinstance(exc, NoCommonVersion):
        # -32022 listing no modern version this client speaks.
        if newest_mutual(exc.theirs, HANDSHAKE_PROTOCOL_VERSIONS) is not None:
            return _Fallback()
        raise versions_refused(core.server, exc.theirs, SUPPORTED_PROTOCOL_VERSIONS) from None
    if isinstance(exc, AuthError):
        raise exc  # credentials are not an answer about the era (a login may follow)
    # Any other JSON-RPC error, -32022 without a usable list, or twice, a
    # result type this client does not know: no positive evidence, unless
    # the session ended with it.
    _raise_unless_repairable(core, clock, http)
    return _Fallback()


def _raise_unless_repairable(core: _Core, clock: OpeningClock, http: bool) -> None:
    """After a probe that ended the session: over stdio a fresh process gets
    the handshake (it exited, or closed a pipe, or broke a frame rule), but
    only when the server read the probe: one that ended before reading it
    would end the same way before reading the handshake, and a server is
    never started twice for nothing. Over HTTP only a broken reply is worth
    a fresh transport (a refused connection or token would be refused to the
    handshake too)."""
    terminal = core.terminal
    if terminal is None:
        return
    repairable = isinstance(terminal, ProtocolError) or (not http and isinstance(terminal, ConnectionClosed))
    if repairable and clock.look():  # it read the probe (or nothing tells)
        raise _Fresh
    raise terminal._copy()


# ------------------------------------------------------------------ the race


class _Race:
    """``auto`` without a remembered era: the probe, then (if it goes
    unanswered after the server has read it) the handshake as well; the
    first answer decides, by the rules of the module docstring."""

    def __init__(self, core: _Core, clock: OpeningClock, *, http: bool) -> None:
        self.core = core
        self.clock = clock
        self.http = http
        # Every wait of the race ends by the clock's deadline: the start
        # budget until the server reads the probe, then the handshake budget
        # from that read (moved once, by phase one).
        self.deadline = clock.deadline
        self.modern = _modern(core, LATEST_MODERN_VERSION, http=http)
        self.legacy = _legacy_era()
        # Guards the attempts' outcomes and stop flags (and ``refused``):
        # the negotiating thread waits on it for either attempt to finish;
        # each attempt's thread waits on it for its reply or its stop.
        self.cond = threading.Condition(threading.Lock())
        self.refused = False  # the probe was answered with an error with a null id
        self.probe: Attempt | None = None
        self.handshake: Attempt | None = None

    def run(self) -> ServerInfo:
        core = self.core
        core.unattributed = self._null_id_error
        try:
            return self._run()
        finally:
            core.unattributed = None
            for attempt in (self.probe, self.handshake):
                if attempt is not None:
                    attempt.stop()
                    attempt.join()

    def _reraise(self) -> None:
        """Raise, in the negotiating thread, what broke an attempt's thread (a bug)."""
        for attempt in (self.probe, self.handshake):
            if attempt is not None and attempt.crash is not None:
                raise attempt.crash

    def _null_id_error(self, error: dict[str, Any]) -> bool:
        """An error with a null id while the probe is out: the probe's
        refusal by a server that could not read its id (not a diagnostic:
        the handshake alone would not have caused it). With the handshake
        out too it cannot be told whose it is, and is dropped."""
        with self.cond:
            probe = self.probe
            if probe is None or probe.done:
                return False
            if self.handshake is None:
                self.refused = True
                probe.stopped = True
            self.cond.notify_all()
        return True

    def _start(self, name: str, send: Callable[[Attempt], Any]) -> Attempt:
        return Attempt(self.cond, f"mcp_sync-{self.core.server}-{name}", self.deadline, send)

    def _send_probe(self, watch: Attempt) -> Any:
        with TRACING.probe():
            return self.modern.request(
                self.core, "server/discover", {}, self.deadline,
                self.clock.describe("server/discover"), cancellable=False, watch=watch,
            )  # fmt: skip

    def _send_handshake(self, watch: Attempt) -> Any:
        core = self.core
        return self.legacy.request(
            core, "initialize",
            self.legacy.initialize_params(core),  # what the handshake alone declares
            self.deadline, self.clock.describe("initialize"), cancellable=False, watch=watch,
        )  # fmt: skip

    def _busy(self) -> Callable[[], bool] | None:
        """Whether the server process is busy, where that can be seen (Linux)."""
        pid = getattr(self.core.transport, "pid", None) if self.clock.tells else None
        if isinstance(pid, int) and os.path.isdir(f"/proc/{pid}/task"):
            return functools.partial(process_busy, pid)
        return None

    def _phase_one(self, probe: Attempt, grace: float) -> bool:
        """The probe alone, until it is answered or has gone unanswered for
        ``grace`` after the server read it (and stopped being busy, for at
        most PROBE_BUSY_MAX_MS more, within half the handshake budget).
        Returns whether the server read it (False: the start budget ran out)."""
        clock = self.clock
        busy = self._busy()
        seen = 0.0  # when the server was last seen reading or busy
        last = 0.0  # phase one ends by then, whatever the server does
        with self.cond:
            while not (probe.done or self.refused):
                now = time.monotonic()
                if not seen:
                    if not (probe.sent and clock.look()):
                        if now >= clock.deadline:
                            return False
                        self.cond.wait(min(clock.deadline - now, TICK))
                        continue
                    # The server read the probe: the handshake budget runs from here.
                    assert clock.read_at is not None
                    seen = clock.read_at
                    last = seen + min(grace + seconds(PROBE_BUSY_MAX_MS), clock.budget / 2)
                    self.deadline = probe.deadline = clock.deadline
                    self.cond.notify_all()
                if busy is not None and now < last and busy():
                    seen = now  # still working on something: perhaps its answer
                end = min(seen + grace, last)
                if now >= end:
                    break
                self.cond.wait(min(end - now, TICK if busy is not None else threading.TIMEOUT_MAX))
        return clock.reading

    def _run(self) -> ServerInfo:
        # A tight handshake budget shortens the grace: the handshake keeps
        # most of the budget, and the probe stays out as long as it does.
        grace = min(seconds(HTTP_PROBE_GRACE_MS if self.http else PROBE_GRACE_MS), self.clock.budget / 4)
        probe = self.probe = self._start("probe", self._send_probe)
        read = self._phase_one(probe, grace)
        with self.cond:
            settled = probe.done or self.refused
        self._reraise()
        if settled:
            return self._after_probe()
        if not read:
            # Never read: the handshake alone would not have been either.
            probe.stop()
            probe.join()
            raise self.clock.not_read()
        handshake = self._start("handshake", self._send_handshake)
        with self.cond:
            self.handshake = handshake
        # Phase two: both are out; the first answer decides.
        with self.cond:
            while not (probe.done or handshake.done or self.refused):
                self.cond.wait()
            probe_first = probe.done and not self.refused
        self._reraise()
        if probe_first:
            return self._probe_first()
        return self._handshake_first()

    def _grace_left(self) -> float:
        """How long a verdict may wait for the other attempt: the grace,
        within the negotiation's deadline."""
        return max(0.0, min(seconds(PROBE_GRACE_MS), self.deadline - time.monotonic()))

    # ------------------------------------------------------------ verdicts

    def _after_probe(self) -> ServerInfo:
        """The probe was answered before the handshake was sent: the
        sequential rules (modern, or the handshake alone)."""
        probe = self.probe
        assert probe is not None
        probe.join()
        if not self.refused:
            if probe.error is not None:
                _refusal(self.core, self.clock, probe.error, http=self.http)
            else:
                info = self.modern.adopt(self.core, probe.result, strict=False)
                if info is not None:
                    return info
        return _fallback_handshake(self.core, self.clock, http=self.http)

    def _probe_first(self) -> ServerInfo:
        """The probe was answered while the handshake was out."""
        probe, handshake = self.probe, self.handshake
        assert probe is not None and handshake is not None
        if probe.error is not None or not _modern_evidence(probe.result):
            if probe.error is not None:
                _refusal(self.core, self.clock, probe.error, http=self.http)
            elif probe.result is not None:
                self.modern.adopt(self.core, probe.result, strict=False)  # disjoint versions raise
            return self._handshake_outcome()
        if not self.http:
            # Did the handshake pin this process to its era? Its answer, when
            # it comes within the grace period, says.
            with self.cond:
                self.cond.wait_for(lambda: handshake.done, self._grace_left())
            self._reraise()
            if handshake.done and handshake.error is None:
                return self._legacy(handshake.result)
        handshake.stop()
        info = self.modern.adopt(self.core, probe.result, strict=False)
        assert info is not None
        return info

    def _handshake_first(self) -> ServerInfo:
        """The handshake was answered (or the probe refused with a null id)
        while the probe was out."""
        probe, handshake = self.probe, self.handshake
        assert probe is not None and handshake is not None
        if handshake.done and handshake.error is None:
            probe.stop()
            return self._legacy(handshake.result)
        if self.refused:
            return self._handshake_outcome()
        error = handshake.error
        if isinstance(error, RemoteError):
            # A modern server that reads requests in order answered the probe
            # first; one that answers them at once may be a moment behind.
            with self.cond:
                self.cond.wait_for(lambda: probe.done, self._grace_left())
            self._reraise()
            if probe.done and probe.error is None and _modern_evidence(probe.result):
                info = self.modern.adopt(self.core, probe.result, strict=False)
                assert info is not None
                return info
        probe.stop()
        return self._handshake_outcome()

    def _handshake_outcome(self) -> ServerInfo:
        """The handshake sent in the race decides alone, as the handshake
        after a refused probe would (the probe is no longer waited for)."""
        core = self.core
        handshake = self.handshake
        assert handshake is not None
        with self.cond:
            self.cond.wait_for(lambda: handshake.done)
        self._reraise()
        if self.probe is not None:
            self.probe.stop()
        error = handshake.error
        if error is None:
            return self._legacy(handshake.result)
        if isinstance(error, RemoteError):
            retry = _version_to_retry(core, error, DEFAULT_HANDSHAKE_VERSION, pinned=False, auto=True)
            if retry is not None:
                return _initialize(core, self.clock, retry)
            if self.http or error.code != UNSUPPORTED_PROTOCOL_VERSION:
                raise error
            raise _Fresh
        if core.terminal is not None and not answered(self.probe):
            # The session ended with the probe unanswered: the server may
            # have exited on reading it (an SDK 1.x server does).
            _raise_unless_repairable(core, self.clock, self.http)
        raise error

    def _legacy(self, result: Any) -> ServerInfo:
        return self.legacy.adopt(self.core, result, strict=True)
