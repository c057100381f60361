"""The options :func:`mcp_sync.connect` settled on, and the plain checks of its keywords.

:class:`Settings` (with :class:`Checked`, the transport's options) is what a
connect runs on, whichever way the options came. Keyword options of the
ordinary kinds (a ``str`` server, a list of ``str`` args, an ``int`` limit...)
are checked here with plain code (:func:`plain_settings`), so a keyword
connect never imports pydantic. Anything this module is not sure of (a
value of another type, one that breaks a rule, an ``options=`` model) is
left to the models of :mod:`.options`, which hold every rule and word every
error: a keyword that passes here passes there unchanged, and one that would
fail there never passes here.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import urlsplit

from ..protocol.catalog import forbidden_char
from ..protocol.errors import InvalidOption
from ..protocol.limits import LIMIT_NAMES, MAX_SAFE_INTEGER, Limits
from ..protocol.secret import Text
from ..protocol.versions import SUPPORTED_PROTOCOL_VERSIONS

if TYPE_CHECKING:
    from ..auth._base import Auth, TokenProvider
    from .handlers import Handlers

    AuthOption = Auth | TokenProvider | Callable[[], str]

__all__ = ["Checked", "Settings", "auth_for", "plain_settings", "session_settings", "url_problem"]

Kind = Literal["stdio", "http", "sse"]

_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")
_STDIO_KEYS = frozenset({"command", "args", "cwd", "env", "inherit_env"})
_HTTP_KEYS = frozenset({"url", "bearer_token_env", "headers", "allow_insecure_http", "http_client"})


@dataclass(frozen=True)
class Checked:
    """One server's transport options, every rule checked."""

    kind: Kind
    server: str
    protocol: str | None = None
    protocol_version: str | None = None
    secrets: tuple[str, ...] | None = None
    command: Text = ""
    args: tuple[Text, ...] = ()
    cwd: Text | None = None
    env: dict[str, Text] | None = None
    inherit_env: bool | None = None
    url: Text = ""
    bearer_token_env: str | None = None
    headers: dict[str, Text] | None = None
    allow_insecure_http: bool | None = None
    http_client: Any = None

    @classmethod
    def of(cls, model: Any, kind: Kind) -> Checked:
        """The options a validated model of :mod:`.options` holds."""
        keys = _STDIO_KEYS if kind == "stdio" else _HTTP_KEYS
        fields = {key: getattr(model, key) for key in keys}
        return cls(
            kind,
            model.server,
            model.protocol,
            model.protocol_version,
            model.secrets,
            **fields,
        )


@dataclass(frozen=True)
class Settings:
    """What :func:`mcp_sync.connect` was asked for, every option checked."""

    options: Checked
    limits: Limits
    auth: AuthOption | None
    handlers: Handlers | None
    diagnostics: Any
    auto_refresh: bool
    validate_output: bool | None
    """``None``: check results when the validation extra is installed."""
    cache: bool
    on_message: Any = None


def url_problem(text: str) -> str | None:
    """What is wrong with ``text`` as a server's URL (never repeating it), or ``None``."""
    if _CONTROL.search(text) or any(ch.isspace() for ch in text):
        return "must not contain whitespace or control characters"
    try:
        parts = urlsplit(text)
        host = parts.hostname
        has_userinfo = parts.username is not None or parts.password is not None
        parts.port  # noqa: B018 - raises ValueError for a bad port
    except ValueError:
        return "is not a valid URL"
    if parts.scheme.lower() not in ("http", "https"):
        return "must be an absolute http: or https: URL"
    if not host:
        return "must name a host"
    if has_userinfo or "@" in parts.netloc:
        return "must not carry a user or password; name the token's variable in bearerTokenEnv"
    return None


def session_settings(
    options: Checked, given_limits: Mapping[str, object], switches: Mapping[str, Any]
) -> Settings:
    """``options`` with the session's own keywords checked: ``given_limits``
    are the limits given one by one (over ``switches["limits"]``)."""
    return Settings(
        options=options,
        limits=_limits(switches["limits"], given_limits),
        auth=auth_for(switches["auth"], options.kind),
        handlers=_handlers(switches["handlers"]),
        diagnostics=_callable("diagnostics", switches["diagnostics"]),
        auto_refresh=_flag("auto_refresh", switches["auto_refresh"]),
        validate_output=_tristate("validate_output", switches["validate_output"]),
        cache=_flag("cache", switches.get("cache"), default=True),
        on_message=_callable("on_message", switches.get("on_message")),
    )


def plain_settings(given: Mapping[str, Any], switches: Mapping[str, Any]) -> Settings | None:
    """The settings of a keyword connect, or ``None`` when any keyword is
    not plainly right (the models then find and word the problem).

    ``given``: the keywords that shape the transport, ``None`` for not given.
    """
    checked = _plain(given)
    if checked is None:
        return None
    return session_settings(checked, {n: given.get(n) for n in LIMIT_NAMES}, switches)


def _plain(given: Mapping[str, Any]) -> Checked | None:
    fields = {key: value for key, value in given.items() if value is not None}
    kind = _kind(fields, fields.pop("transport", None))
    if kind is None or not _common_ok(fields, _STDIO_KEYS if kind == "stdio" else _HTTP_KEYS):
        return None
    secrets = _secrets(fields.get("secrets"))
    values = _stdio(fields) if kind == "stdio" else _http(fields)
    if secrets is False or values is None:
        return None
    server, protocol, version = fields["server"], fields.get("protocol"), fields.get("protocol_version")
    return Checked(kind, server, protocol, version, secrets, **values)


def _kind(fields: Mapping[str, Any], transport: object) -> Kind | None:
    """The transport ``fields`` plainly name, if they do."""
    if "command" in fields and "url" not in fields and transport in (None, "stdio"):
        return "stdio"
    if "url" in fields and "command" not in fields and transport in (None, "http", "sse"):
        return "sse" if transport == "sse" else "http"
    return None


def _common_ok(fields: Mapping[str, Any], keys: frozenset[str]) -> bool:
    """Only options of this transport, and the ones every transport has are plainly right."""
    allowed = keys | {"server", "protocol", "protocol_version", "secrets", *LIMIT_NAMES}
    return (
        fields.keys() <= allowed
        and _server_ok(fields.get("server"))
        and _one_of(fields.get("protocol"), ("auto", "legacy", "modern"))
        and _one_of(fields.get("protocol_version"), SUPPORTED_PROTOCOL_VERSIONS)
        and all(_limit_ok(fields.get(name)) for name in LIMIT_NAMES)
    )


def _server_ok(server: object) -> bool:
    # The rule of flow_declarations.check_label, which the models apply.
    return type(server) is str and bool(server) and forbidden_char(server, allow_slash=True) is None


def _one_of(value: object, choices: tuple[str, ...]) -> bool:
    return value is None or (type(value) is str and value in choices)


def _flag_ok(value: object) -> bool:
    return value is None or type(value) is bool


def _limit_ok(value: object) -> bool:
    return value is None or (type(value) is int and 1 <= value <= MAX_SAFE_INTEGER)


def _strings(value: object) -> bool:
    return isinstance(value, (list, tuple)) and all(type(item) is str for item in value)


def _str_dict(value: object) -> bool:
    return type(value) is dict and all(
        type(key) is str and type(item) is str for key, item in value.items()
    )


def _secrets(value: object) -> tuple[str, ...] | Literal[False] | None:
    if value is None:
        return None
    if isinstance(value, (set, frozenset)):
        value = sorted(value, key=str)
    return tuple(value) if _strings(value) else False  # type: ignore[arg-type]


def _stdio(fields: Mapping[str, Any]) -> dict[str, Any] | None:
    command, args = fields["command"], fields.get("args", ())
    cwd, env = fields.get("cwd"), fields.get("env")
    if isinstance(cwd, os.PathLike):
        cwd = os.fspath(cwd)
    if (
        type(command) is not str
        or not command
        or not _strings(args)
        or (cwd is not None and (type(cwd) is not str or not cwd))
        or (env is not None and not _env_ok(env))
        or not _flag_ok(fields.get("inherit_env"))
    ):
        return None
    return {
        "command": command,
        "args": tuple(args),
        "cwd": cwd,
        "env": None if env is None else dict(env),
        "inherit_env": fields.get("inherit_env"),
    }


def _env_ok(env: object) -> bool:
    return _str_dict(env) and all(
        key and "=" not in key and "\0" not in key and "\0" not in value
        for key, value in env.items()  # type: ignore[attr-defined]
    )


def _http(fields: Mapping[str, Any]) -> dict[str, Any] | None:
    # (Imported here: a stdio connect, the first one included, never needs them.)
    from ..transports.header_rules import plain_http_refused

    url, token_env = fields["url"], fields.get("bearer_token_env")
    headers, insecure = fields.get("headers"), fields.get("allow_insecure_http")
    client = fields.get("http_client")
    if (
        type(url) is not str
        or not url
        or url_problem(url) is not None
        or (token_env is not None and (type(token_env) is not str or not _ENV_NAME.match(token_env)))
        or (headers is not None and not _headers_ok(headers, token_env))
        or not _flag_ok(insecure)
        or (client is not None and not _is_client(client))
        or plain_http_refused(
            url, sends_credentials=bool(token_env or headers), allowed=insecure is True
        )
    ):
        return None
    return {
        "url": url,
        "bearer_token_env": token_env,
        "headers": None if headers is None else dict(headers),
        "allow_insecure_http": insecure,
        "http_client": client,
    }


def _headers_ok(headers: object, token_env: object) -> bool:
    from ..transports.header_rules import check_headers

    if not _str_dict(headers):
        return False
    try:
        check_headers(headers, has_token=False)
    except ValueError:
        return False
    return not (
        token_env and any(key.lower() == "authorization" for key in headers)  # type: ignore[attr-defined]
    )


def _is_client(value: object) -> bool:
    try:
        import httpx
    except ImportError:
        return False
    return isinstance(value, httpx.Client)


def _limits(limits: object, given: Mapping[str, object]) -> Limits:
    if limits is not None and not isinstance(limits, Limits):
        raise InvalidOption("option limits must be an mcp_sync.Limits (made with Limits.create)")
    base = limits.as_options() if limits is not None else {}
    return Limits.create(**{**base, **{k: v for k, v in given.items() if v is not None}})


def auth_for(auth: Any, kind: Kind) -> AuthOption | None:
    """``auth`` if the transport takes one (only Streamable HTTP does)."""
    if auth is None:
        return None
    if kind == "sse":
        raise InvalidOption("option auth applies to Streamable HTTP, not to transport=sse")
    if kind != "http":
        raise InvalidOption("option auth applies to an HTTP server (url), not to a command")
    return auth  # type: ignore[no-any-return]


def _handlers(handlers: object) -> Handlers | None:
    if handlers is None:
        return None
    from .handlers import Handlers  # only when handlers are given

    if not isinstance(handlers, Handlers):
        raise InvalidOption("option handlers must be a mcp_sync.Handlers")
    return handlers


def _callable(name: str, value: object) -> object:
    if value is not None and not callable(value):
        raise InvalidOption(f"option {name} must be callable")
    return value


def _flag(name: str, value: object, default: bool = False) -> bool:
    chosen = _tristate(name, value)
    return default if chosen is None else chosen


def _tristate(name: str, value: object) -> bool | None:
    if value is not None and type(value) is not bool:
        raise InvalidOption(f"option {name} must be a bool")
    return value
