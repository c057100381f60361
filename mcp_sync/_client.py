"""``connect``: validate every option, start a transport, negotiate the era."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from . import _log
from ._eras import check_protocol, negotiate
from ._errors import McpError, ProtocolError
from ._handlers import Handlers
from ._limits import Limits
from ._redact import Diagnostics
from ._session import Session, _Core
from ._validate import require_jsonschema

__all__ = ["connect", "connect_http"]


def connect(
    options: Any = None,
    /,
    *,
    server: str | None = None,
    command: str | None = None,
    args: Sequence[str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
    env: Mapping[str, str] | None = None,
    inherit_env: bool | None = None,
    url: str | None = None,
    bearer_token_env: str | None = None,
    headers: Mapping[str, str] | None = None,
    allow_insecure_http: bool | None = None,
    auth: Any = None,
    http_client: Any = None,
    secrets: Iterable[str] | None = None,
    transport: str | None = None,
    protocol: str | None = None,
    protocol_version: str | None = None,
    diagnostics: Diagnostics | None = None,
    handlers: Handlers | None = None,
    auto_refresh: bool | None = None,
    validate_output: bool | None = None,
    limits: Limits | None = None,
    handshake_timeout_ms: int | None = None,
    request_timeout_ms: int | None = None,
    queue_capacity: int | None = None,
    max_frame_bytes: int | None = None,
    max_outbound_frame_bytes: int | None = None,
    max_tools: int | None = None,
    max_tool_name_bytes: int | None = None,
    max_tool_document_bytes: int | None = None,
    max_catalog_pages: int | None = None,
    max_stderr_bytes: int | None = None,
) -> Session:
    """Start (or reach) an MCP server and return a ready :class:`Session`.

    Give ``command`` (and ``args``) for a local server over stdio, or ``url``
    for a remote one over Streamable HTTP (``auth``: an object from
    :mod:`mcp_sync.auth`, for a server behind OAuth; ``transport="sse"``: the
    deprecated HTTP+SSE transport of 2024-11-05). ``protocol`` chooses the era:
    ``"auto"`` (the default) probes for a 2026-07-28 server and falls back to
    the handshake, ``"legacy"`` only does the handshake, ``"modern"`` never
    does; ``protocol_version`` pins one revision. ``options`` may be a
    :class:`mcp_sync.config.ConnectOptions` or ``HttpConnectOptions``; keyword
    arguments override its fields. Blocks until the era is settled and the
    catalog walk is done; on any failure raises an :class:`McpError` and
    leaves nothing running.

    ``handlers`` (a :class:`Handlers`) answers the server's requests
    (elicitation, sampling, roots) and declares those capabilities;
    ``auto_refresh=True`` refreshes the tool catalog on a library thread when
    the server says it changed; ``validate_output=True`` checks each result's
    ``structuredContent`` against the tool's ``outputSchema`` (needs the
    ``validation`` extra).

    ``limits`` (a :class:`Limits`, for instance one shared by several
    servers) sets every bound at once; a limit also given as a keyword
    argument (``max_frame_bytes=...``) overrides it.

    ``headers`` are static HTTP headers, private like the bearer token.
    Credentials (a token or headers) are refused over plain ``http:`` to a
    host that is not loopback unless ``allow_insecure_http=True``.
    ``secrets`` are extra values to mask in the diagnostic stderr tail
    (the values of ``env`` always are); a config entry passes the values
    its variables expanded to.
    """
    given: dict[str, Any] = {k: v for k, v in locals().items() if k != "options"}
    merged: dict[str, Any] = dict(options.connect_kwargs()) if options is not None else {}
    merged.update({k: v for k, v in given.items() if v is not None})
    started = time.monotonic()
    try:
        session = _connect(**merged)
    except McpError as exc:
        _log.connect_failed(merged.get("server"), exc, started)
        raise
    _log.connected(session, "http" if merged.get("url") is not None else "stdio", started)
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
    ``bearer_token_env``."""
    return connect(
        server=server, url=url, bearer_token_env=bearer_token_env, headers=headers, auth=auth,
        **kwargs,
    )


def _connect(
    *,
    server: object = None,
    command: object = None,
    args: object = None,
    cwd: object = None,
    env: object = None,
    inherit_env: object = False,
    url: object = None,
    bearer_token_env: object = None,
    headers: object = None,
    allow_insecure_http: object = None,
    auth: object = None,
    http_client: object = None,
    secrets: object = None,
    transport: object = None,
    protocol: object = None,
    protocol_version: object = None,
    diagnostics: object = None,
    handlers: object = None,
    auto_refresh: object = False,
    validate_output: object = False,
    limits: object = None,
    **limit_options: Any,
) -> Session:
    # Step 1: every option is checked before anything is spawned or dialled.
    if not isinstance(server, str) or not server:
        raise ProtocolError("option server must be a non-empty string")
    if limits is not None:
        if not isinstance(limits, Limits):
            raise ProtocolError("option limits must be an mcp_sync.Limits (made with Limits.create)")
        limit_options = {**limits.as_options(), **limit_options}
    limits = Limits.create(**limit_options)
    mode, pinned = check_protocol(protocol, protocol_version)
    if diagnostics is not None and not callable(diagnostics):
        raise ProtocolError("option diagnostics must be callable")
    if (command is None) == (url is None):
        raise ProtocolError("give exactly one of the options command and url")
    if transport not in (None, "stdio", "http", "sse"):
        raise ProtocolError('option transport must be "stdio", "http" or "sse"')
    if (transport == "stdio" and command is None) or (transport in ("http", "sse") and url is None):
        given = "url" if url is not None else "command"
        raise ProtocolError(f"option transport={transport} does not match the option {given}")
    if handlers is not None and not isinstance(handlers, Handlers):
        raise ProtocolError("option handlers must be a mcp_sync.Handlers")
    for name, flag in (("auto_refresh", auto_refresh), ("validate_output", validate_output)):
        if type(flag) is not bool:
            raise ProtocolError(f"option {name} must be a bool")
    if validate_output:
        require_jsonschema()
    # What the session does besides tools: the same for every transport.
    features: dict[str, Any] = {
        "handlers": handlers,
        "auto_refresh": auto_refresh is True,
        "validate_output": validate_output is True,
    }

    if url is not None:
        from ._transports._options import check_http_options

        http_options = check_http_options(
            server,
            url,
            bearer_token_env,
            http_client,
            headers=headers,
            allow_insecure_http=allow_insecure_http,
        )
        if transport == "sse":
            if mode == "modern":
                raise ProtocolError(
                    "option transport=sse is the 2024-11-05 HTTP+SSE transport, "
                    "which has no modern era"
                )
            if auth is not None:
                raise ProtocolError("option auth applies to Streamable HTTP, not to transport=sse")
            from ._transports.http_sse import SseTransport

            def open_sse() -> _Core:
                core = _Core(server, limits, diagnostics, **features)
                core.transport = SseTransport(core, limits=limits, **http_options)
                return core

            return _negotiated(open_sse, "legacy", pinned, http=True)

        def attempt(binding: Any) -> Session:
            def open_http() -> _Core:
                return _http_core(server, limits, diagnostics, http_options, binding, features)

            session = _negotiated(open_http, mode, pinned, http=True)
            if binding is not None:
                # From now on a login that needs a person runs inside the request.
                binding.established = True
            return session

        if auth is None:
            return attempt(None)
        from .auth._connect import connect_with_auth

        return connect_with_auth(auth, http_options, attempt, limits)
    if auth is not None:
        raise ProtocolError("option auth applies to an HTTP server (url), not to a command")
    if headers is not None or allow_insecure_http is not None:
        raise ProtocolError(
            "options headers and allow_insecure_http apply only to an HTTP server (url)"
        )
    from ._transports.stdio import StdioTransport, child_environment

    if not isinstance(command, str) or not command:
        raise ProtocolError("option command must be a non-empty string")
    arg_list = _string_list(args)
    if cwd is not None and not isinstance(cwd, (str, os.PathLike)):
        raise ProtocolError("option cwd must be a path")
    extra_env = _string_map(env)
    child_env = child_environment(extra_env, inherit_env is True)
    masked = _secret_values(secrets, extra_env)
    workdir = os.fspath(cwd) if cwd is not None else None

    def open_stdio() -> _Core:
        core = _Core(server, limits, diagnostics, **features)
        core.transport = StdioTransport(
            core,
            server=server,
            command=command,
            args=arg_list,
            cwd=workdir,
            env=child_env,
            limits=limits,
            secrets=masked,
        )
        return core

    return _negotiated(open_stdio, mode, pinned, http=False)


def _http_core(  # noqa: PLR0917
    server: str,
    limits: Limits,
    diagnostics: object,
    http_options: dict[str, Any],
    binding: Any,
    features: dict[str, Any],
) -> _Core:
    from ._transports.http import HttpTransport

    core = _Core(server, limits, diagnostics, **features)  # type: ignore[arg-type]
    core.transport = HttpTransport(core, limits=limits, auth=binding, **http_options)
    return core


def _negotiated(
    open_core: Callable[[], _Core], mode: str, pinned: str | None, *, http: bool
) -> Session:
    """Start a transport, settle the era, fetch the catalog (see ._eras)."""
    done = negotiate(open_core, mode, pinned, http=http)
    return Session(done.core, done.era, done.server_info)


def _string_list(value: object) -> list[str]:
    if value is None:
        return []
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        raise ProtocolError("option args must be a list of strings")
    if not all(isinstance(item, str) for item in value):
        raise ProtocolError("option args must be a list of strings")
    return list(value)


def _string_map(value: object) -> dict[str, str] | None:
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise ProtocolError("option env must be a mapping of strings to strings")
    for key, item in value.items():
        if not isinstance(key, str) or not key or "=" in key or "\0" in key:
            raise ProtocolError("option env has a key that is not a valid variable name")
        if not isinstance(item, str) or "\0" in item:
            raise ProtocolError(f"option env has a value for {key!a} that is not a string")
    return dict(value)


def _secret_values(secrets: object, env: Mapping[str, str] | None) -> tuple[str, ...]:
    """Values the stderr tail masks: ``secrets`` and the values of ``env``."""
    values: list[str] = []
    if secrets is not None:
        if isinstance(secrets, (str, bytes)) or not isinstance(secrets, Iterable):
            raise ProtocolError("option secrets must be a collection of strings")
        for item in secrets:
            if not isinstance(item, str):
                raise ProtocolError("option secrets must be a collection of strings")
            values.append(item)
    if env:
        values.extend(env.values())
    return tuple(values)
