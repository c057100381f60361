"""``connect``: validate every option, start a transport, negotiate the era."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

from .. import _log
from ..protocol.errors import InvalidOption, McpError, ProtocolError
from ..protocol.limits import Limits
from ..protocol.output_check import require_jsonschema
from ..protocol.redaction import Diagnostics, MessageHook
from .api import Session
from .core import _Core
from .eras.negotiation import check_protocol, negotiate

if TYPE_CHECKING:
    import httpx

    from ..auth._base import Auth, TokenProvider
    from ..protocol.secret import Secret
    from .handlers import Handlers
    from .option_checks import Checked, Settings
    from .options import ConnectOptions, HttpConnectOptions, SseConnectOptions

__all__ = ["connect", "connect_http"]


def connect(
    options: ConnectOptions | HttpConnectOptions | SseConnectOptions | None = None,
    /,
    *,
    server: str | None = None,
    command: str | Secret | None = None,
    args: Sequence[str | Secret] | None = None,
    url: str | Secret | None = None,
    transport: Literal["stdio", "http", "sse"] | None = None,
    protocol: Literal["auto", "legacy", "modern"] | None = None,
    protocol_version: str | None = None,
    cwd: str | Secret | os.PathLike[str] | None = None,
    env: Mapping[str, str | Secret] | None = None,
    inherit_env: bool | None = None,
    bearer_token_env: str | None = None,
    headers: Mapping[str, str | Secret] | None = None,
    allow_insecure_http: bool | None = None,
    http_client: httpx.Client | None = None,
    auth: Auth | TokenProvider | Callable[[], str] | None = None,
    secrets: Collection[str] | None = None,
    limits: Limits | None = None,
    handshake_timeout_ms: int | None = None,
    start_timeout_ms: int | None = None,
    request_timeout_ms: int | None = None,
    queue_capacity: int | None = None,
    max_frame_bytes: int | None = None,
    max_outbound_frame_bytes: int | None = None,
    max_tools: int | None = None,
    max_tool_name_bytes: int | None = None,
    max_tool_document_bytes: int | None = None,
    max_catalog_pages: int | None = None,
    max_stderr_bytes: int | None = None,
    handlers: Handlers | None = None,
    diagnostics: Diagnostics | None = None,
    auto_refresh: bool | None = None,
    validate_output: bool | None = None,
    cache: bool | None = None,
    on_message: MessageHook | None = None,
) -> Session:
    """Start (or reach) an MCP server and return a ready :class:`Session`.

    Blocks until the era is settled and the catalog walk is done; on any
    failure raises an :class:`McpError` and leaves nothing running. Every
    invalid option raises :class:`InvalidOption` naming it before anything
    starts. A keyword left at ``None`` is not given: it takes the field of
    ``options`` or else its default.

    ``options``: a :class:`mcp_sync.config.ConnectOptions`,
    ``HttpConnectOptions`` or ``SseConnectOptions`` (a config entry); the
    keywords that are not ``None`` override its fields.

    The server and the protocol:

    - ``server``: the server's name, in messages and flow names (no ``/``).
    - ``command`` and ``args``: a local server, started as a subprocess and
      spoken to over stdio; or ``url``: a remote one over Streamable HTTP.
      Exactly one of ``command`` and ``url``.
    - ``transport``: ``"stdio"``, ``"http"`` or ``"sse"``; normally implied
      by ``command`` or ``url``, ``"sse"`` chooses the deprecated HTTP+SSE
      transport of 2024-11-05 for a ``url`` (the handshake era only).
    - ``protocol``: the era; ``"auto"`` (the default) probes for a
      2026-07-28 server and falls back to the handshake, ``"legacy"`` only
      does the handshake, ``"modern"`` never does.
    - ``protocol_version``: pin one of ``SUPPORTED_PROTOCOL_VERSIONS``.

    A command only:

    - ``cwd``: the child's working directory (a ``str`` or a path).
    - ``env``: variables added to a small allowlist of the parent's
      environment; ``inherit_env=True`` passes all of it.

    A URL only:

    - ``bearer_token_env``: the environment variable holding a static
      bearer token, read when connecting.
    - ``headers``: static HTTP headers sent with every request, private
      like the token.
    - ``allow_insecure_http``: credentials (a token or headers) are refused
      over plain ``http:`` to a host that is not loopback unless ``True``.
    - ``http_client``: an ``httpx.Client`` to send the requests with.
    - ``auth``: OAuth for a Streamable HTTP server, an object from
      :mod:`mcp_sync.auth` (or a callable returning a bearer token).

    Private values:

    - ``secrets``: extra values masked in the diagnostic stderr tail (the
      values of ``env``, and what a config entry's variables expanded to,
      always are).

    The bounds (see :class:`Limits`): ``limits`` sets every bound at once
    (one ``Limits`` may be shared by several servers); each limit given as a
    keyword overrides it: ``handshake_timeout_ms``, ``start_timeout_ms``,
    ``request_timeout_ms``, ``queue_capacity``, ``max_frame_bytes``, ``max_outbound_frame_bytes``,
    ``max_tools``, ``max_tool_name_bytes``, ``max_tool_document_bytes``,
    ``max_catalog_pages``, ``max_stderr_bytes`` (positive integers).

    The session:

    - ``handlers``: a :class:`Handlers` that answers the server's requests
      (elicitation, sampling, roots) and declares those capabilities.
    - ``diagnostics``: a callable given the server's stderr tail (redacted)
      when the session ends badly.
    - ``auto_refresh=True``: refresh the tool catalog on a library thread
      when the server says it changed.
    - ``validate_output``: check each successful result's
      ``structuredContent`` against the tool's ``outputSchema``. By default
      when the ``validation`` extra is installed (without it results pass
      unchecked, and a WARNING says so once); ``True`` requires the extra,
      ``False`` checks nothing.
    - ``cache=False``: never reuse a result, whatever ``ttlMs`` the server
      gives. By default lists and reads are answered from the session's
      cache while the server says they are fresh (``ttlMs``, ``cacheScope``).
    - ``on_message``: a callable shown every message the server sends, past
      the inbound limits, as a frozen :class:`InboundMessage`, on the thread
      that read it; what it raises is counted and logged, never the session's.
    """
    given = {
        "server": server, "command": command, "args": args, "url": url,
        "transport": transport, "protocol": protocol, "protocol_version": protocol_version,
        "cwd": cwd, "env": env, "inherit_env": inherit_env,
        "bearer_token_env": bearer_token_env, "headers": headers,
        "allow_insecure_http": allow_insecure_http, "http_client": http_client,
        "secrets": secrets,
        "handshake_timeout_ms": handshake_timeout_ms, "start_timeout_ms": start_timeout_ms,
        "request_timeout_ms": request_timeout_ms,
        "queue_capacity": queue_capacity, "max_frame_bytes": max_frame_bytes,
        "max_outbound_frame_bytes": max_outbound_frame_bytes, "max_tools": max_tools,
        "max_tool_name_bytes": max_tool_name_bytes,
        "max_tool_document_bytes": max_tool_document_bytes,
        "max_catalog_pages": max_catalog_pages, "max_stderr_bytes": max_stderr_bytes,
    }  # fmt: skip
    switches = {
        "limits": limits, "auth": auth, "handlers": handlers, "diagnostics": diagnostics,
        "auto_refresh": auto_refresh, "validate_output": validate_output, "cache": cache, "on_message": on_message,
    }  # fmt: skip
    started = time.monotonic()
    try:
        from .option_checks import plain_settings  # loaded by the first connect

        settings = plain_settings(given, switches) if options is None else None
        if settings is None:
            # A config entry, or a keyword the plain checks are not sure of:
            # the models (pydantic) check it and word the error.
            from .options import resolve

            settings = resolve(options, given, switches)
        session = _start(settings)
    except McpError as exc:
        name = server if server is not None else getattr(options, "server", None)
        _log.connect_failed(name, exc, started)
        raise
    _log.connected(session, "stdio" if settings.options.kind == "stdio" else "http", started)
    return session


def connect_http(
    *,
    server: str,
    url: str | Secret,
    bearer_token_env: str | None = None,
    headers: Mapping[str, str | Secret] | None = None,
    auth: Auth | TokenProvider | Callable[[], str] | None = None,
    transport: Literal["http", "sse"] | None = None,
    protocol: Literal["auto", "legacy", "modern"] | None = None,
    protocol_version: str | None = None,
    allow_insecure_http: bool | None = None,
    http_client: httpx.Client | None = None,
    secrets: Collection[str] | None = None,
    limits: Limits | None = None,
    handshake_timeout_ms: int | None = None,
    start_timeout_ms: int | None = None,
    request_timeout_ms: int | None = None,
    queue_capacity: int | None = None,
    max_frame_bytes: int | None = None,
    max_outbound_frame_bytes: int | None = None,
    max_tools: int | None = None,
    max_tool_name_bytes: int | None = None,
    max_tool_document_bytes: int | None = None,
    max_catalog_pages: int | None = None,
    max_stderr_bytes: int | None = None,
    handlers: Handlers | None = None,
    diagnostics: Diagnostics | None = None,
    auto_refresh: bool | None = None,
    validate_output: bool | None = None,
    cache: bool | None = None,
    on_message: MessageHook | None = None,
) -> Session:
    """:func:`connect` to a Streamable HTTP server at ``url``: its keywords
    for a URL, each as :func:`connect` describes it (``headers``: static
    HTTP headers; ``auth``: see :mod:`mcp_sync.auth`; ``bearer_token_env``:
    the variable holding a static token)."""
    return connect(
        server=server, url=url, bearer_token_env=bearer_token_env, headers=headers, auth=auth,
        transport=transport, protocol=protocol, protocol_version=protocol_version,
        allow_insecure_http=allow_insecure_http, http_client=http_client, secrets=secrets,
        limits=limits, handshake_timeout_ms=handshake_timeout_ms, start_timeout_ms=start_timeout_ms,
        request_timeout_ms=request_timeout_ms, queue_capacity=queue_capacity,
        max_frame_bytes=max_frame_bytes, max_outbound_frame_bytes=max_outbound_frame_bytes,
        max_tools=max_tools, max_tool_name_bytes=max_tool_name_bytes,
        max_tool_document_bytes=max_tool_document_bytes, max_catalog_pages=max_catalog_pages,
        max_stderr_bytes=max_stderr_bytes, handlers=handlers, diagnostics=diagnostics,
        auto_refresh=auto_refresh, validate_output=validate_output, cache=cache, on_message=on_message,
    )  # fmt: skip


def _start(settings: Settings) -> Session:
    """Start the transport the options name and settle the era."""
    options = settings.options
    try:
        mode, pinned = check_protocol(options.protocol, options.protocol_version)
    except ProtocolError as exc:  # a version of the other era than the protocol asked
        raise _as_invalid(exc) from None
    if settings.validate_output:
        require_jsonschema()
    if options.kind == "stdio":
        return _negotiated(lambda: _stdio_core(settings, options), mode, pinned, http=False)
    http_options = _http_options(options)
    if options.kind == "sse":
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
        validate_output=settings.validate_output is not False,
        cache=cache_scopes(settings),
        on_message=settings.on_message,
    )


def cache_scopes(settings: Settings) -> str:
    """What the response cache keeps: ``"off"``; ``"public"`` results only
    when the credential may change while the session runs (``auth=``, or an
    ``http_client`` with auth of its own: another user's token may come
    next); else ``"all"`` (the session speaks for one user)."""
    if not settings.cache:
        return "off"
    client = settings.options.http_client
    managed = client is not None and (client.auth is not None or bool(client.event_hooks.get("request")))
    return "public" if settings.auth is not None or managed else "all"


def _stdio_core(settings: Settings, options: Checked) -> _Core:
    from ..transports.process import ServerProcess, spawn_of

    # What a ${VAR} expanded to is revealed here, for the spawn alone.
    spawn = spawn_of(
        options.command, options.args, options.cwd, options.env, options.inherit_env is True
    )
    # The server starts first: a server takes from tens of milliseconds to
    # seconds to start, and the rest (the session's machinery imported on a
    # first connect, the core, the transport's pipes and threads) is built
    # meanwhile instead of before.
    child = ServerProcess(
        options.server, spawn.command, spawn.args, spawn.cwd, spawn.env, (spawn.shown_command, spawn.shown_cwd)
    )
    try:
        from ..transports.stdio import StdioTransport

        core = _core(settings)
    except BaseException:
        child.abandon()
        raise
    # From here the transport owns the child (and stops it if it cannot start).
    core.transport = StdioTransport(
        core,
        server=options.server,
        child=child,
        limits=settings.limits,
        secrets=(*(options.secrets or ()), *spawn.masked),
    )
    return core


def _http_options(options: Checked) -> dict[str, Any]:
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
