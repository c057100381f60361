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
(SPEC §10.1):

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
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from ._catalog import ServerInfo, Tool
from ._errors import (
    AuthError,
    ConnectionClosed,
    InvalidResponse,
    McpError,
    ProtocolError,
    RemoteError,
    Timeout,
)
from ._limits import seconds
from ._mcp_headers import Binding, InvalidHeaders, header_bindings
from ._modern import (
    META_SERVER_INFO,
    ModernPath,
    NoCommonVersion,
    refused_versions,
    versions_refused,
)
from ._versions import (
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
    """What negotiation settled, and the catalog fetched in that era."""

    core: _Core
    era: str
    server_info: ServerInfo
    tools: tuple[Tool, ...]


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
            return _finish(core, LEGACY, _handshake(core, version, pinned=pinned is not None))
        if protocol == MODERN:
            version = pinned or LATEST_MODERN_VERSION
            return _finish(core, MODERN, _discover(core, version, pinned=pinned is not None, http=http))
        try:
            return _auto(core, http=http)
        except _Fresh:
            # Whatever the server made of the probe, a fresh one sees only the
            # handshake, exactly as protocol="legacy" would have sent it.
            _discard(core)
            core = open_core()
            return _finish(core, LEGACY, _handshake(core, DEFAULT_HANDSHAKE_VERSION))
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
        return _finish(core, MODERN, outcome)
    try:
        info = _handshake(core, DEFAULT_HANDSHAKE_VERSION, auto=True)
    except RemoteError as exc:
        modern = _reprobe(core, exc, outcome.silent, http=http)
        if modern is not None:
            return _finish(core, MODERN, modern)
        # A -32022 here says the probe set this process to the modern era (a
        # server that picks its era at the first request it reads); a fresh
        # one has seen nothing. Any other refusal is the handshake's own.
        if http or exc.code != UNSUPPORTED_PROTOCOL_VERSION:
            raise
        raise _Fresh from None
    return _finish(core, LEGACY, info)


def _discard(core: _Core) -> None:
    """Tear down a session that a fresh one replaces. Its stderr is not
    reported: the fresh session's is what the caller gets."""
    from ._session import CLOSED_BY_CALLER

    core.diagnostics = None
    core.terminate(ConnectionClosed(CLOSED_BY_CALLER), wait=True)


def _finish(core: _Core, era: str, info: ServerInfo) -> Negotiated:
    core.era = era
    modern = core.modern
    if modern is None or not modern.http:
        tools = core.load_catalog()
    else:
        bindings: dict[str, tuple[Binding, ...]] = {}
        tools = core.load_catalog(_header_check(core, bindings))
        modern.tool_headers = MappingProxyType(bindings)
    if core.terminal is not None:
        raise core.terminal._copy()
    return Negotiated(core, era, info, tools)


# ------------------------------------------------------------------ legacy


def _handshake(core: _Core, version: str, *, pinned: bool = False, auto: bool = False) -> ServerInfo:
    """``initialize`` at ``version``. A ``-32022`` naming a handshake-era
    version both sides speak is answered once more at that version; one naming
    a modern version is left to ``auto`` to probe again."""
    try:
        return core.initialize(version)
    except RemoteError as exc:
        retry = _version_to_retry(core, exc, version, pinned=pinned, auto=auto)
        if retry is None:
            raise
    return core.initialize(retry)


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


def _path(core: _Core, version: str, *, http: bool, pinned: bool = False) -> ModernPath:
    from ._session import CLIENT_INFO

    return ModernPath(
        core.server,
        version,
        http=http,
        capabilities=core.client_capabilities,
        client_info=CLIENT_INFO,
        pinned=pinned,
    )


def _send_discover(core: _Core, path: ModernPath, timeout: float) -> Any:
    budget = f"handshake_timeout_ms={core.limits.handshake_timeout_ms}"
    return path.request(
        core,
        "server/discover",
        {},
        time.monotonic() + timeout,
        lambda: f"server/discover with server {core.server!r} ({budget})",
        cancellable=False,
    )


def _discover(core: _Core, version: str, *, pinned: bool, http: bool) -> ServerInfo:
    """``server/discover`` with no fallback (``protocol="modern"``)."""
    path = _path(core, version, http=http, pinned=pinned)
    try:
        result = _send_discover(core, path, seconds(core.limits.handshake_timeout_ms))
    except RemoteError as exc:
        raise ProtocolError(
            f"server {core.server!r} answered server/discover with JSON-RPC error "
            f"{exc.code}: it does not speak the modern era (2026-07-28); "
            'connect with protocol="auto" or "legacy"'
        ) from None
    info = _adopt(core, path, result, strict=True)
    assert info is not None
    return info


def _adopt(core: _Core, path: ModernPath, result: Any, *, strict: bool) -> ServerInfo | None:
    """Take a ``DiscoverResult``: the server is modern when it lists a version
    both sides speak. ``None`` when it is no such evidence (``strict``: an
    error instead); versions with nothing in common are always an error."""
    from ._session import check_capabilities, server_info

    where = f"server {core.server!r}"
    theirs = (
        advertised_versions(result.get("supportedVersions")) if isinstance(result, dict) else None
    )
    if theirs is None:
        if strict:
            raise InvalidResponse(f"{where} answered server/discover without supportedVersions")
        return None
    if path.pinned:
        if path.version not in theirs:
            raise versions_refused(core.server, theirs, (path.version,))
        mutual: str | None = path.version
    else:
        mutual = newest_mutual(theirs, MODERN_PROTOCOL_VERSIONS)
    if mutual is None:
        if not strict and newest_mutual(theirs, HANDSHAKE_PROTOCOL_VERSIONS) is not None:
            return None  # it lists only handshake-era versions: a legacy advertisement
        ours = MODERN_PROTOCOL_VERSIONS if strict else SUPPORTED_PROTOCOL_VERSIONS
        raise versions_refused(core.server, theirs, ours)
    assert isinstance(result, dict)
    check_capabilities(result.get("capabilities"), where, "server/discover")
    from ._catalog import freeze

    core.server_capabilities = freeze(result["capabilities"])
    meta = result.get("_meta")
    stamp = meta.get(META_SERVER_INFO) if isinstance(meta, dict) else None
    info = server_info(stamp if isinstance(stamp, dict) else result.get("serverInfo"))
    if mutual != path.version:
        path = _path(core, mutual, http=path.http)
    core.modern = path
    core.protocol_version = path.version
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
    path = _path(core, version, http=http)
    try:
        result = _send_discover(core, path, timeout)
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
    info = _adopt(core, path, result, strict=False)
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


# ------------------------------------------------------------------ headers


def _header_check(
    core: _Core, bindings: dict[str, tuple[Binding, ...]]
) -> Callable[[Tool], bool]:
    """Over HTTP in the modern era, a tool whose ``x-mcp-header`` declarations
    break the rules is left out of the catalog, with a ``tool-rejected``
    diagnostic; the others' declarations are kept in ``bindings``."""

    def keep(tool: Tool) -> bool:
        try:
            found = header_bindings(tool.input_schema)
        except InvalidHeaders as exc:
            core.emit("tool-rejected", {"tool": tool.name, "reason": str(exc)})
            return False
        if found:
            bindings[tool.name] = found
        return True

    return keep
