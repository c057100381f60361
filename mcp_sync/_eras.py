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
sent once more at that revision. Everything else -- a JSON-RPC error, a
result that is not a ``DiscoverResult``, silence past the probe's budget --
means a handshake-era server. A server listing only versions this client does
not speak fails ``connect`` with a ``protocol_error`` naming both sides.

So that ``auto`` never connects fewer servers than the handshake alone
would:

- a probe that goes unanswered costs :data:`PROBE_TIMEOUT_MS`, not the whole
  handshake budget. A modern server that was only slow to start answers it
  late, and is then serving the modern era: the handshake that follows is
  refused (``-32022``, or any JSON-RPC error), and that refusal after a
  silent probe sends the probe once more, to a server that is up now;
- over stdio, a probe that ends the session (the server exits, closes a
  pipe, or writes a frame that breaks the rules), or a handshake after the
  probe that is refused with ``-32022`` (a server that picks its era at the
  first request it reads, and whose modern side failed the probe), gets one
  fresh process, and that process sees the handshake alone, exactly as
  ``protocol="legacy"`` would send it. A handshake that fails otherwise (it
  times out, the server exits, any other JSON-RPC error) is not tried again:
  the handshake alone would have failed the same way.

A probe that a server answers with an error costs one round trip more than
the handshake alone; that is the price of ``auto`` for a handshake-era server.

This module only chooses and constructs: a :class:`~._legacy.LegacyEra` or a
:class:`~._modern.ModernEra` opens the session and, once its opening result
settles the era, makes itself the core's era (``_Core.adopt``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ._catalog import ServerInfo
from ._errors import (
    AuthError,
    ConnectionClosed,
    McpError,
    ProtocolError,
    RemoteError,
    Timeout,
)
from ._legacy import LegacyEra
from ._limits import seconds
from ._modern import ModernEra, NoCommonVersion, refused_versions, versions_refused
from ._versions import (
    DEFAULT_HANDSHAKE_VERSION,
    HANDSHAKE_PROTOCOL_VERSIONS,
    LATEST_MODERN_VERSION,
    LEGACY,
    MODERN,
    MODERN_PROTOCOL_VERSIONS,
    SUPPORTED_PROTOCOL_VERSIONS,
    UNSUPPORTED_PROTOCOL_VERSION,
    newest_mutual,
)

if TYPE_CHECKING:
    from ._session import _Core

__all__ = [
    "HTTP_PROBE_TIMEOUT_MS",
    "PROBE_TIMEOUT_MS",
    "PROTOCOLS",
    "Negotiated",
    "check_protocol",
    "negotiate",
]

PROTOCOLS = ("auto", "legacy", "modern")

PROBE_TIMEOUT_MS = 1_000
"""How long ``auto`` waits for its ``server/discover`` probe over stdio (or
``handshake_timeout_ms``, if shorter) before it tries the handshake. A server
that ignores the probe costs this much at connect; a modern server slower
than this to start is still found (see the module docstring)."""
HTTP_PROBE_TIMEOUT_MS = 3_000
"""The same over HTTP, where a server already listens but a first request may
cross a slow network or wake a cold instance."""


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


class _Dead(Exception):
    """The probe ended the session in a way a fresh transport can repair."""


class _Fresh(Exception):
    """Connect again on a fresh transport with the handshake alone."""


@dataclass(frozen=True)
class _Fallback:
    """No modern server; ``silent``: the probe was never answered."""

    silent: bool


def negotiate(
    open_core: Callable[[], _Core], protocol: str, pinned: str | None, *, http: bool
) -> Negotiated:
    """Open a session with ``open_core()`` (which starts its transport), settle
    its era and fetch the catalog. On any failure nothing is left running."""
    core = open_core()
    try:
        if protocol == LEGACY:
            version = pinned or DEFAULT_HANDSHAKE_VERSION
            return _finish(core, _handshake(core, version, pinned=pinned is not None))
        if protocol == MODERN:
            version = pinned or LATEST_MODERN_VERSION
            return _finish(core, _discover(core, version, pinned=pinned is not None, http=http))
        try:
            return _auto(core, http=http)
        except _Fresh:
            # Whatever the server made of the probe, a fresh one sees only the
            # handshake, exactly as protocol="legacy" would have sent it.
            core.discard()
            core = open_core()
            return _finish(core, _handshake(core, DEFAULT_HANDSHAKE_VERSION))
    except McpError as exc:
        core.terminate(exc, wait=True)
        raise
    except BaseException:
        core.terminate(ProtocolError("connect was interrupted"), wait=True)
        raise


def _auto(core: _Core, *, http: bool) -> Negotiated:
    """Probe, then the handshake on anything but positive evidence. Raises
    :class:`_Fresh` when only a fresh transport can still connect the way
    ``protocol="legacy"`` would."""
    try:
        outcome = _probe(core, http=http)
    except _Dead:
        raise _Fresh from None
    if isinstance(outcome, ServerInfo):
        return _finish(core, outcome)
    try:
        info = _handshake(core, DEFAULT_HANDSHAKE_VERSION, auto=True)
    except RemoteError as exc:
        modern = _reprobe(core, exc, outcome.silent, http=http)
        if modern is not None:
            return _finish(core, modern)
        # A -32022 here says the probe set this process to the modern era (a
        # server that picks its era at the first request it reads); a fresh
        # one has seen nothing. Any other refusal is the handshake's own.
        if http or exc.code != UNSUPPORTED_PROTOCOL_VERSION:
            raise
        raise _Fresh from None
    return _finish(core, info)


def _finish(core: _Core, info: ServerInfo) -> Negotiated:
    core.era.load_catalog(core)
    if core.terminal is not None:
        raise core.terminal._copy()
    return Negotiated(core, info)


# ------------------------------------------------------------------ legacy


def _handshake(core: _Core, version: str, *, pinned: bool = False, auto: bool = False) -> ServerInfo:
    """``initialize`` at ``version``. A ``-32022`` naming a handshake-era
    version both sides speak is answered once more at that version; one naming
    a modern version is left to ``auto`` to probe again."""
    try:
        return _initialize(core, version)
    except RemoteError as exc:
        retry = _version_to_retry(core, exc, version, pinned=pinned, auto=auto)
        if retry is None:
            raise
    return _initialize(core, retry)


def _initialize(core: _Core, version: str) -> ServerInfo:
    """The handshake proposing ``version``; the era is settled when it passes its checks."""
    from ._session import CLIENT_INFO

    era = LegacyEra(version, client_info=CLIENT_INFO)
    return era.adopt(core, era.open(core, seconds(core.limits.handshake_timeout_ms)), strict=True)


def _version_to_retry(
    core: _Core, exc: RemoteError, version: str, *, pinned: bool, auto: bool
) -> str | None:
    """The version to send ``initialize`` again at, ``None`` to let the
    refusal stand (never raised from here: a frame that raised its own
    argument would keep the whole stack alive in a cycle)."""
    supported = refused_versions(exc) if exc.code == UNSUPPORTED_PROTOCOL_VERSION else None
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


# ------------------------------------------------------------------ modern


def _modern(core: _Core, version: str, *, http: bool, pinned: bool = False) -> ModernEra:
    from ._session import CLIENT_INFO

    return ModernEra(
        core.server,
        version,
        http=http,
        capabilities=core.client_capabilities,
        client_info=CLIENT_INFO,
        pinned=pinned,
    )


def _discover(core: _Core, version: str, *, pinned: bool, http: bool) -> ServerInfo:
    """``server/discover`` with no fallback (``protocol="modern"``)."""
    era = _modern(core, version, http=http, pinned=pinned)
    try:
        result = era.open(core, seconds(core.limits.handshake_timeout_ms))
    except RemoteError as exc:
        raise ProtocolError(
            f"server {core.server!r} answered server/discover with JSON-RPC error "
            f"{exc.code}: it does not speak the modern era (2026-07-28); "
            'connect with protocol="auto" or "legacy"'
        ) from None
    info = era.adopt(core, result, strict=True)
    assert info is not None
    return info


def _probe(core: _Core, *, http: bool, version: str = LATEST_MODERN_VERSION,
           timeout_ms: int | None = None) -> ServerInfo | _Fallback:
    """``server/discover`` as ``auto``'s probe: the server's info when it is
    modern, else a :class:`_Fallback`. Raises :class:`_Dead` when the probe
    ended the session and a fresh transport can try the handshake, and a
    :class:`NoCommonVersion` when the server speaks nothing this client does."""
    if timeout_ms is None:
        timeout_ms = PROBE_TIMEOUT_MS if not http else HTTP_PROBE_TIMEOUT_MS
    timeout = seconds(min(core.limits.handshake_timeout_ms, timeout_ms))
    era = _modern(core, version, http=http)
    try:
        result = era.open(core, timeout)
    except Timeout:
        return _Fallback(silent=True)
    except NoCommonVersion as exc:
        # -32022 listing no modern version this client speaks.
        if newest_mutual(exc.theirs, HANDSHAKE_PROTOCOL_VERSIONS) is not None:
            return _Fallback(silent=False)
        raise versions_refused(core.server, exc.theirs, SUPPORTED_PROTOCOL_VERSIONS) from None
    except RemoteError:
        return _Fallback(silent=False)  # any other JSON-RPC error: a handshake-era server
    except AuthError:
        raise  # credentials are not an answer about the era (a login may follow)
    except McpError:
        _raise_unless_repairable(core, http)
        # -32022 without a usable list, or twice; a result type this client
        # does not know: no positive evidence.
        return _Fallback(silent=False)
    info = era.adopt(core, result, strict=False)
    return info if info is not None else _Fallback(silent=False)


def _raise_unless_repairable(core: _Core, http: bool) -> None:
    """After a probe that ended the session: over stdio a fresh process gets
    the handshake (it exited, or closed a pipe, or broke a frame rule); over
    HTTP only a broken reply is worth a fresh transport (a refused connection
    or token would be refused to the handshake too)."""
    terminal = core.terminal
    if terminal is None:
        return
    if isinstance(terminal, ProtocolError) or (not http and isinstance(terminal, ConnectionClosed)):
        raise _Dead
    raise terminal._copy()


def _reprobe(core: _Core, refusal: RemoteError, silent: bool, *, http: bool) -> ServerInfo | None:
    """The fallback handshake was refused. A ``-32022`` naming a modern
    version, or any refusal after a probe nobody answered (a modern server
    that was slow to start is up now), earns one more probe."""
    version = LATEST_MODERN_VERSION
    if refusal.code == UNSUPPORTED_PROTOCOL_VERSION:
        mutual = newest_mutual(refused_versions(refusal) or (), MODERN_PROTOCOL_VERSIONS)
        if mutual is None:
            return None
        version = mutual
    elif not silent:
        return None
    if core.terminal is not None:
        return None
    try:
        outcome = _probe(core, http=http, version=version,
                         timeout_ms=core.limits.handshake_timeout_ms)
    except _Dead:
        return None
    return outcome if isinstance(outcome, ServerInfo) else None
