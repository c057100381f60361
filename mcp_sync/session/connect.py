"""``connect``: validate every option, start a transport, negotiate the era."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from .. import _log
from ..protocol.errors import InvalidOption, McpError, ProtocolError
from ..protocol.limits import Limits
from ..protocol.output_check import require_jsonschema
from ..protocol.redaction import Diagnostics
from .api import Session
from .core import _Core
from .eras.negotiation import check_protocol, negotiate

if TYPE_CHECKING:
    from .handlers import Handlers
    from .options import ConnectOptions, HttpConnectOptions, Settings

__all__ = ["connect", "connect_http"]


def connect(
    options: Any = None,
    /,
    *,
    server: str | None = None,
    command: str | None = None,
    args: Sequence[str] | None = None,
    url: str | None = None,
    limits: Limits | None = None,
    auth: Any = None,
    handlers: Handlers | None = None,
    protocol: str | None = None,
    protocol_version: str | None = None,
    diagnostics: Diagnostics | None = None,
    auto_refresh: bool | None = None,
    validate_output: bool | None = None,
    **more: Any,
) -> Session:
    """Start (or reach) an MCP server and return a ready :class:`Session`.

    Give ``command`` (and ``args``) for a local server over stdio, or ``url``
    for a remote one over Streamable HTTP (``auth``: an object from
    :mod:`mcp_sync.auth`, for a server behind OAuth; ``transport="sse"``: the
    deprecated HTTP+SSE transport of 2024-11-05). ``protocol`` chooses the era:
    ``"auto"`` (the default) probes for a 2026-07-28 server and falls back to
    the handshake, ``"legacy"`` only does the handshake, ``"modern"`` never
    does; ``protocol_version`` pins one revision. ``options`` may be a
    :class:`mcp_sync.config.ConnectOptions`, ``HttpConnectOptions`` or
    ``SseConnectOptions``; keyword arguments override its fields. Blocks
    until the era is settled and the catalog walk is done; on any failure
    raises an :class:`McpError` and leaves nothing running.

    ``handlers`` (a :class:`Handlers`) answers the server's requests
    (elicitation, sampling, roots) and declares those capabilities;
    ``auto_refresh=True`` refreshes the tool catalog on a library thread when
    the server says it changed; ``validate_output=True`` checks each result's
    ``structuredContent`` against the tool's ``outputSchema`` (needs the
    ``validation`` extra).

    ``limits`` (a :class:`Limits`, for instance one shared by several
    servers) sets every bound at once; a limit also given as a keyword
    argument (``max_frame_bytes=...``) overrides it.

    The other keywords are the fields of the options model:

    - every transport: ``transport`` (``"stdio"``, ``"http"``, ``"sse"``),
      the ten limits (``handshake_timeout_ms``, ``request_timeout_ms``,
      ``queue_capacity``, ``max_frame_bytes``, ``max_outbound_frame_bytes``,
      ``max_tools``, ``max_tool_name_bytes``, ``max_tool_document_bytes``,
      ``max_catalog_pages``, ``max_stderr_bytes``) and ``secrets``, extra
      values to mask in the diagnostic stderr tail (the values of ``env``
      always are; a config entry passes the values its variables expanded
      to);
    - a command: ``cwd``, ``env`` (added to a small allowlist of the
      parent's environment) and ``inherit_env=True`` (pass all of it);
    - a URL: ``bearer_token_env`` (the variable holding a static token),
      ``headers`` (static HTTP headers, private like the token),
      ``allow_insecure_http`` and ``http_client`` (an ``httpx.Client``).
      Credentials (a token or headers) are refused over plain ``http:`` to
      a host that is not loopback unless ``allow_insecure_http=True``.

    Any other keyword, or one of another transport, raises
    :class:`InvalidOption` naming it.
    """
    given = {
        "server": server, "command": command, "args": args, "url": url,
        "protocol": protocol, "protocol_version": protocol_version, **more,
    }  # fmt: skip
    switches = {
        "limits": limits, "auth": auth, "handlers": handlers, "diagnostics": diagnostics,
        "auto_refresh": auto_refresh, "validate_output": validate_output,
    }  # fmt: skip
    started = time.monotonic()
    try:
        from .options import resolve  # pydantic: imported by the first connect

        settings = resolve(options, given, switches)
        session = _start(settings)
    except McpError as exc:
        name = server if server is not None else getattr(options, "server", None)
        _log.connect_failed(name, exc, started)
        raise
    _log.connected(session, "stdio" if hasattr(settings.options, "command") else "http", started)
    return session


def connect_http(
    *,
    server: str,
    url: str,
    bearer_token_env: str | None = None,
    headers: Mapping[str, str] | None = None,
    auth: Any = None,
    **kwargs: Any,
) -> Session:
    """:func:`connect` to a Streamable HTTP server, optionally with static
    ``headers``, ``auth`` (see :mod:`mcp_sync.auth`) or a static token from
    ``bearer_token_env``; ``kwargs`` are :func:`connect`'s others."""
    return connect(
        server=server, url=url, bearer_token_env=bearer_token_env, headers=headers, auth=auth,
        **kwargs,
    )


def _start(settings: Settings) -> Session:
    """Start the transport the options name and settle the era."""
    from .options import ConnectOptions, SseConnectOptions

    options = settings.options
    try:
        mode, pinned = check_protocol(options.protocol, options.protocol_version)
    except ProtocolError as exc:  # a version of the other era than the protocol asked
        raise _as_invalid(exc) from None
    if settings.validate_output:
        require_jsonschema()
    if isinstance(options, ConnectOptions):
        return _negotiated(lambda: _stdio_core(settings, options), mode, pinned, http=False)
    http_options = _http_options(options)
    if isinstance(options, SseConnectOptions):
        if mode == "modern":
            raise InvalidOption(
                "option transport=sse is the 2024-11-05 HTTP+SSE transport, "
                "which has no modern era"
            )
        return _negotiated(lambda: _sse_core(settings, http_options), "legacy", pinned, http=True)

    def attempt(binding: Any) -> Session:
        session = _negotiated(
            lambda: _http_core(settings, http_options, binding), mode, pinned, http=True
        )
        if binding is not None:
            # From now on a login that needs a person runs inside the request.
            binding.established = True
        return session

    if settings.auth is None:
        return attempt(None)
    from ..auth._connect import connect_with_auth

    return connect_with_auth(settings.auth, http_options, attempt, settings.limits)


def _core(settings: Settings) -> _Core:
    return _Core(
        settings.options.server,
        settings.limits,
        settings.diagnostics,
        handlers=settings.handlers,
        auto_refresh=settings.auto_refresh,
        validate_output=settings.validate_output,
    )


def _stdio_core(settings: Settings, options: ConnectOptions) -> _Core:
    from ..transports.process import spawn_of
    from ..transports.stdio import StdioTransport

    # What a ${VAR} expanded to is revealed here, for the spawn alone.
    spawn = spawn_of(
        options.command, options.args, options.cwd, options.env, options.inherit_env is True
    )
    core = _core(settings)
    core.transport = StdioTransport(
        core,
        server=options.server,
        command=spawn.command,
        args=spawn.args,
        cwd=spawn.cwd,
        env=spawn.env,
        limits=settings.limits,
        secrets=(*(options.secrets or ()), *spawn.masked),
    )
    return core


def _http_options(options: HttpConnectOptions) -> dict[str, Any]:
    """The HTTP transports' keyword arguments: the token is read from its
    variable here, when connecting, never earlier."""
    from ..transports.http_options import check_http_options

    try:
        return check_http_options(
            options.server,
            options.url,
            options.bearer_token_env,
            options.http_client,
            headers=options.headers,
            allow_insecure_http=options.allow_insecure_http,
        )
    except ProtocolError as exc:
        # An unset token variable, a URL httpx cannot use, no httpx: the caller's.
        raise _as_invalid(exc) from None


def _as_invalid(exc: ProtocolError) -> InvalidOption:
    return exc if isinstance(exc, InvalidOption) else InvalidOption(exc.message)


def _http_core(settings: Settings, http_options: dict[str, Any], binding: Any) -> _Core:
    from ..transports.http import HttpTransport

    core = _core(settings)
    core.transport = HttpTransport(core, limits=settings.limits, auth=binding, **http_options)
    return core


def _sse_core(settings: Settings, http_options: dict[str, Any]) -> _Core:
    from ..transports.http_sse import SseTransport

    core = _core(settings)
    core.transport = SseTransport(core, limits=settings.limits, **http_options)
    return core


def _negotiated(
    open_core: Callable[[], _Core], mode: str, pinned: str | None, *, http: bool
) -> Session:
    """Start a transport, settle the era, fetch the catalog (see ._eras)."""
    done = negotiate(open_core, mode, pinned, http=http)
    return Session(done.core, done.server_info)
