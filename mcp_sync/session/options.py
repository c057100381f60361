"""The options of one server, as validated models: one per transport.

:class:`ConnectOptions` (a command over stdio), :class:`HttpConnectOptions`
(Streamable HTTP) and :class:`SseConnectOptions` (the 2024-11-05 HTTP+SSE
transport) are what a config entry decodes to, and what
:func:`mcp_sync.connect` validates ``options=`` and any keyword the plain
checks of :mod:`.option_checks` are unsure of into (:func:`resolve`), so
each rule on an option, and the words of its error, are written here. Their
fields take the snake_case names in Python and the camelCase names in a
file; the eleven limits are not spelled here but derived from
:class:`mcp_sync.Limits`.

A rule broken in Python raises :class:`InvalidOption` naming the option
(``option max_tools must be ...``); the config loader reports the same rule
as a field of its file (``config``).

This module imports pydantic; neither ``import mcp_sync`` nor a connect
with keyword options imports it (tests/test_connect_typed.py checks that
the plain checks accept exactly what these models accept).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from functools import cache
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal, TypeAlias

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StrictBool,
    StrictStr,
    TypeAdapter,
    ValidationError,
    ValidationInfo,
    create_model,
    field_validator,
    model_validator,
)
from pydantic.alias_generators import to_camel, to_snake

from ..protocol.errors import InvalidOption
from ..protocol.flow_declarations import ProjectionError, check_flow_name, check_label
from ..protocol.limits import LIMIT_NAMES, STDIO_ONLY_LIMITS, check_limit
from ..protocol.secret import Text, TextSchema, reveal
from ..protocol.versions import SUPPORTED_PROTOCOL_VERSIONS
from ..transports.header_rules import check_headers, plain_http_refused
from .option_checks import Checked, Kind, Settings, session_settings, url_problem

__all__ = [
    "PROJECTION_FIELDS",
    "PYTHON_ONLY_FIELDS",
    "ConnectOptions",
    "FieldError",
    "HttpConnectOptions",
    "ServerEntry",
    "Settings",
    "problem_of",
    "SseConnectOptions",
    "resolve",
]

NonEmpty = Annotated[StrictStr, Field(min_length=1)]
# Any sequence of strings in Python (a str itself is refused), kept as a tuple.
Strings = Annotated[Sequence[StrictStr], AfterValidator(tuple)]
Names = Annotated[Sequence[NonEmpty], AfterValidator(tuple)]
# The fields a ${VAR} may expand in: a str, or the Secret it expanded to
# (which shows the reference as written wherever it is rendered).
NonEmptyText = Annotated[Text, TextSchema(min_length=1)]
AnyText = Annotated[Text, TextSchema()]
Texts = Annotated[Sequence[AnyText], AfterValidator(tuple)]

_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_MASK = "[REDACTED]"

PROJECTION_FIELDS = frozenset({"include", "exclude", "name_prefix"})
"""Fields of an entry that shape :func:`mcp_sync.flows.project`, not the session."""
PYTHON_ONLY_FIELDS = frozenset({"inherit_env", "secrets", "http_client"})
"""Fields a Python caller may give but a config file may not (values, not text)."""
_PRIVATE = ("env", "headers", "secrets")


def _path(value: object) -> object:
    return os.fspath(value) if isinstance(value, os.PathLike) else value


def _collection(value: object) -> object:
    # Python may pass secrets as any collection (a set); kept in its order.
    if isinstance(value, (set, frozenset)):
        return tuple(sorted(value, key=str))
    return value


class FieldError(ValueError):
    """A rule on several fields, reported as one field: ``problem`` in a
    file's words, ``message`` in Python's (naming the keyword)."""

    def __init__(self, field: str, problem: str, message: str) -> None:
        super().__init__(problem)
        self.field = field
        self.problem = problem
        self.message = message


class _Base(BaseModel):
    model_config = ConfigDict(
        extra="forbid", populate_by_name=True, alias_generator=to_camel, frozen=True
    )

    # Fields only a Python caller may set (connect validates with the context
    # {"python": True}); a file or a plain model_validate() may not.
    _python_only: ClassVar[frozenset[str]] = PYTHON_ONLY_FIELDS

    @model_validator(mode="before")
    @classmethod
    def _file_fields_only(cls, data: object, info: ValidationInfo) -> object:
        if isinstance(data, dict) and not (info.context or {}).get("python"):
            for key in data:
                if to_snake(str(key)) in cls._python_only:
                    raise ValueError(f"{key} is not a field of this entry")
        return data

    @field_validator(*LIMIT_NAMES, mode="before", check_fields=False)
    @classmethod
    def _limit(cls, value: object, info: ValidationInfo) -> object:
        # The one rule for a limit, shared with Limits.create.
        return None if value is None else check_limit(str(info.field_name), value)


# The eleven limits, one optional field each, derived from Limits.
if TYPE_CHECKING:
    _LimitFields = _Base
else:
    _LimitFields = create_model(
        "_LimitFields", __base__=_Base, **{name: (int | None, None) for name in LIMIT_NAMES}
    )


class _Entry(_LimitFields):
    """What every server entry has: its name, projection fields and limits."""

    server: NonEmpty
    """The server's name: in messages, and in flow names ``mcp/<server>/<tool>``
    (escaped there: ``@scope/name`` is ``@scope%2Fname``)."""

    include: Names | None = None
    """Exact tool names to keep; omitted or empty keeps every tool."""
    exclude: Names | None = None
    """Exact tool names to drop, applied after ``include``."""
    name_prefix: NonEmpty | None = None
    """Replaces the default ``mcp/<server>`` flow-name prefix."""

    protocol: Literal["auto", "legacy", "modern"] | None = None
    """The protocol era: ``auto`` (the default) probes, ``legacy`` is the
    handshake only, ``modern`` is 2026-07-28 only."""
    protocol_version: NonEmpty | None = None
    """Pin one revision (one of ``SUPPORTED_PROTOCOL_VERSIONS``)."""

    cache: StrictBool | None = None
    """``false``: the session never reuses a result, whatever ``ttlMs`` the
    server gives (by default lists and reads are answered from its cache
    while the server says they are fresh). ``connect(cache=...)`` wins."""

    secrets: Annotated[Strings | None, BeforeValidator(_collection)] = None
    """Python only: more values to mask in the diagnostic stderr tail (the
    values of ``env``, and what a config entry's variables expanded to,
    always are)."""

    def __repr_args__(self) -> Any:
        # env, headers and secrets are private whatever their origin; other
        # fields show what a ${VAR} expanded to as the reference (a Secret).
        for name, value in super().__repr_args__():
            if name in _PRIVATE and isinstance(value, dict):
                yield name, dict.fromkeys(value, _MASK)
            elif name in _PRIVATE and isinstance(value, tuple):
                yield name, (_MASK,) * len(value)
            else:
                yield name, value

    @field_validator("server")
    @classmethod
    def _server_name(cls, value: str) -> str:
        # The name reaches a model inside flow names (escaped: "/" is "%2F")
        # and descriptions, where an invisible character could disguise it.
        try:
            check_label(value, what="server")
        except ProjectionError:
            raise ValueError("must not contain control or format characters") from None
        return value

    @field_validator("protocol_version")
    @classmethod
    def _version(cls, value: str | None) -> str | None:
        if value is not None and value not in SUPPORTED_PROTOCOL_VERSIONS:
            raise ValueError("must be one of " + ", ".join(SUPPORTED_PROTOCOL_VERSIONS))
        return value

    @field_validator("name_prefix")
    @classmethod
    def _prefix(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                check_flow_name(value, what="namePrefix")
            except ProjectionError as exc:
                raise ValueError(str(exc)) from None
        return value

    def connect_kwargs(self) -> dict[str, Any]:
        """The keyword arguments of :func:`mcp_sync.connect` this entry sets.

        Only fields that were given; never the projection fields.
        """
        out: dict[str, Any] = {}
        for name in self.model_fields_set:
            if name in PROJECTION_FIELDS:
                continue
            value = getattr(self, name)
            if value is None:
                continue
            out[name] = list(value) if isinstance(value, tuple) else value
        return out

    def projection_kwargs(self) -> dict[str, Any]:
        """The keyword arguments of :func:`mcp_sync.flows.project` this entry sets."""
        return {
            "name_prefix": self.name_prefix,
            "include": self.include,
            "exclude": self.exclude,
        }


class ConnectOptions(_Entry):
    """A server started as a subprocess and spoken to over stdio."""

    transport: Literal["stdio"] | None = Field(default=None, alias="type")
    """``"stdio"`` (written ``type`` in the file): what an entry with a command is anyway."""
    command: NonEmptyText
    """The executable. A relative path is resolved from the working directory
    of the process that connects, not from the config file's directory."""
    args: Texts
    """Its arguments (required in a file; write ``[]`` for none)."""
    cwd: Annotated[NonEmptyText | None, BeforeValidator(_path)] = None
    """The child's working directory (in Python, also a path object)."""
    env: dict[StrictStr, AnyText] | None = None
    """Added to the small allowlist of the parent's environment the child gets."""
    inherit_env: StrictBool | None = None
    """Python only: pass the parent's whole environment to the child."""

    @field_validator("env")
    @classmethod
    def _env_names(cls, value: dict[str, Text] | None) -> dict[str, Text] | None:
        for key, item in (value or {}).items():
            if not key or "=" in key or "\0" in key:
                raise ValueError("has a key that is not a valid environment variable name")
            if "\0" in reveal(item):
                raise FieldError(
                    "env",
                    "has a value that holds a NUL character",
                    f"option env has a value for {key!a} that is not a string",
                )
        return value


class HttpConnectOptions(_Entry):
    """A remote server spoken to over Streamable HTTP."""

    transport: Literal["http", "sse"] | None = Field(default=None, alias="type")
    """``"http"`` (Streamable HTTP, the default) or ``"sse"`` (the deprecated
    HTTP+SSE transport of 2024-11-05: an entry of that type is a
    :class:`SseConnectOptions`); written ``type`` in the file."""
    url: NonEmptyText
    """An absolute ``http:`` or ``https:`` URL, without a user or password."""
    bearer_token_env: NonEmpty | None = None
    """The name of the environment variable holding the bearer token. The
    token itself never appears in the file."""
    headers: dict[StrictStr, AnyText] | None = None
    """Static headers sent with every request (``"Authorization": "Bearer
    ${TOKEN}"``), private like the token."""
    allow_insecure_http: StrictBool | None = None
    """Send the token or headers over plain ``http:`` to a host that is not
    loopback. Off by default: they would cross the network unencrypted."""
    http_client: Any = None
    """Python only: an ``httpx.Client`` to send the requests with."""

    # A file's HTTP entry sizes no queue and has no stderr; Python may share
    # one Limits between servers of both kinds.
    _python_only: ClassVar[frozenset[str]] = PYTHON_ONLY_FIELDS | STDIO_ONLY_LIMITS
    auth: Any = None
    """OAuth for the server: an ``AuthConfig`` of :mod:`mcp_sync.auth`
    (validated from its JSON object), built when connecting."""

    @field_validator("auth", mode="before")
    @classmethod
    def _auth(cls, value: object) -> object:
        if value is None:
            return None
        try:
            return _auth_config().validate_python(value)
        except ValidationError as exc:
            first = exc.errors(include_url=False, include_input=False)[0]
            where = "".join(
                f"[{part}]" if isinstance(part, int) else f".{part}" for part in first["loc"]
            )
            problem = problem_of(first)
            raise FieldError(f"auth{where}", problem, f"option auth{where} {problem}") from None

    @field_validator("headers")
    @classmethod
    def _headers(cls, value: object) -> object:
        if value is not None:
            check_headers(value, has_token=False)
        return value

    @field_validator("http_client")
    @classmethod
    def _client(cls, value: object) -> object:
        if value is None:
            return None
        try:
            import httpx
        except ImportError:
            raise ValueError("must be an httpx.Client") from None
        if not isinstance(value, httpx.Client):
            raise ValueError("must be an httpx.Client")
        return value

    @model_validator(mode="after")
    def _credentials(self) -> HttpConnectOptions:
        if self.headers and self.bearer_token_env and any(
            key.lower() == "authorization" for key in self.headers
        ):
            raise FieldError(
                "headers",
                "sets Authorization and bearerTokenEnv is also given; keep one",
                f"server {self.server!r}: option headers sets Authorization and a bearer token "
                "variable is also given; keep one",
            )
        if plain_http_refused(
            reveal(self.url),
            sends_credentials=bool(self.bearer_token_env or self.headers),
            allowed=self.allow_insecure_http is True,
        ):
            raise FieldError(
                "url",
                "is plain http:// to a host that is not loopback, so the bearer token or "
                "headers would cross the network unencrypted: use https:, or set "
                "allowInsecureHttp: true to opt in",
                f"server {self.server!r}: refusing to send a bearer token or headers over "
                "plain http:// to a host that is not loopback; use https:, or pass "
                "allow_insecure_http=True to send them unencrypted",
            )
        return self

    def connect_kwargs(self) -> dict[str, Any]:
        out = super().connect_kwargs()
        if self.auth is not None:
            out["auth"] = self.auth.build(self.server)
        return out

    @field_validator("url")
    @classmethod
    def _url(cls, value: Text) -> Text:
        # The value's shape is checked; the message never repeats it.
        problem = url_problem(reveal(value))
        if problem is not None:
            raise ValueError(problem)
        return value

    @field_validator("bearer_token_env")
    @classmethod
    def _token_env(cls, value: str | None) -> str | None:
        if value is not None and not _ENV_NAME.match(value):
            raise ValueError("must be an environment variable name (letters, digits, _)")
        return value


class SseConnectOptions(HttpConnectOptions):
    """A remote server spoken to over the deprecated HTTP+SSE transport of
    2024-11-05 (``"type": "sse"`` in a file, ``transport="sse"`` in Python).
    It has no 2026-07-28 era and no OAuth."""

    transport: Literal["sse"] = Field(default="sse", alias="type")


ServerEntry: TypeAlias = ConnectOptions | HttpConnectOptions


@cache
def _auth_config() -> TypeAdapter[Any]:
    # The OAuth models load the auth package: only for an entry that has auth.
    from ..auth._config import AuthConfig

    return TypeAdapter(AuthConfig)


_LIMIT_PROBLEM = "must be a positive integer no larger than 2**53-1"
_LIMIT_ALIASES = frozenset(to_camel(name) for name in LIMIT_NAMES)


def problem_of(error: Any) -> str:
    """One pydantic error in a config file's words (never repeating the value)."""
    kind = error["type"]
    loc = error["loc"]
    field = loc[0] if loc else ""
    if field in _LIMIT_ALIASES:
        # Every limit has one rule; the file's message never repeats the value.
        return _LIMIT_PROBLEM
    if kind == "missing":
        return "is required"
    if kind in ("string_type",):
        return "must be a string"
    if kind == "string_too_short":
        return "must not be empty"
    if kind in ("tuple_type", "list_type", "sequence_str", "is_instance_of"):
        return "must be an array"
    if kind == "dict_type":
        return "must be an object"
    if kind == "bool_type":
        return "must be true or false"
    if kind == "value_error":
        message = str(error.get("msg", ""))
        return message.removeprefix("Value error, ")
    return str(error.get("msg", "is invalid"))


# ---------------------------------------------------------------- connect's keywords

_MODELS: dict[str, type[ConnectOptions] | type[HttpConnectOptions]] = {
    "stdio": ConnectOptions,
    "http": HttpConnectOptions,
    "sse": SseConnectOptions,
}
# What connect() says about a value of the wrong type, per option.
_WORDING = {
    "server": "must be a non-empty string",
    "command": "must be a non-empty string",
    "args": "must be a list of strings",
    "cwd": "must be a path",
    "env": "must be a mapping of strings to strings",
    "inherit_env": "must be a bool",
    "cache": "must be a bool",
    "secrets": "must be a collection of strings",
    "url": "must be an absolute http: or https: URL with a host and without a user name or "
    "password",
    "bearer_token_env": "must be an environment variable name (letters, digits and "
    "underscores, not starting with a digit)",
    "allow_insecure_http": "must be a bool",
    "http_client": "must be an httpx.Client (not an AsyncClient)",
    "protocol": 'must be "auto", "legacy" or "modern"',
    "protocol_version": "must be one of " + ", ".join(SUPPORTED_PROTOCOL_VERSIONS),
}
_INVALID = "is invalid"
_STDIO_ONLY = sorted(set(ConnectOptions.model_fields) - set(HttpConnectOptions.model_fields))
_HTTP_ONLY = sorted(
    set(HttpConnectOptions.model_fields) - set(ConnectOptions.model_fields) - {"auth"}
)


def resolve(options: object, given: Mapping[str, Any], switches: Mapping[str, Any]) -> Settings:
    """Check every option of :func:`mcp_sync.connect` before anything starts.

    ``options`` is a model (or ``None``); ``given`` the keywords that shape
    the transport (``None``: not given), which override its fields;
    ``switches`` the session's own keywords (``limits``, ``auth``,
    ``handlers``, ``diagnostics``, ``auto_refresh``, ``validate_output``,
    ``cache``, ``on_message``); a ``cache`` switch left at ``None`` takes the entry's field.
    """
    merged = _merged(options, given)
    auth = switches["auth"] if switches["auth"] is not None else merged.pop("auth", None)
    merged.pop("auth", None)
    model = _model(merged)
    if switches.get("cache") is None:
        switches = {**switches, "cache": model.cache}
    kind: Kind = (
        "stdio"
        if isinstance(model, ConnectOptions)
        else "sse" if isinstance(model, SseConnectOptions) else "http"
    )
    return session_settings(
        Checked.of(model, kind),
        {name: getattr(model, name) for name in LIMIT_NAMES},
        {**switches, "auth": auth},
    )


def _merged(options: object, given: Mapping[str, Any]) -> dict[str, Any]:
    merged: dict[str, Any] = {}
    if options is not None:
        if not isinstance(options, _Entry):
            raise InvalidOption(
                "options must be a ConnectOptions, HttpConnectOptions or SseConnectOptions"
            )
        merged = options.connect_kwargs()
    merged.update({key: value for key, value in given.items() if value is not None})
    return merged


def _model(fields: dict[str, Any]) -> ConnectOptions | HttpConnectOptions:
    """The model ``fields`` describe: the transport is chosen by ``command``,
    ``url`` and ``transport``; a keyword no transport has is refused by name."""
    transport = fields.get("transport")
    if transport not in (None, "stdio", "http", "sse"):
        raise InvalidOption('option transport must be "stdio", "http" or "sse"')
    has_command, has_url = fields.get("command") is not None, fields.get("url") is not None
    if has_command == has_url:
        raise InvalidOption("give exactly one of the options command and url")
    kind = "stdio" if has_command else ("sse" if transport == "sse" else "http")
    if (transport == "stdio") != has_command and transport is not None:
        shown = "url" if has_url else "command"
        raise InvalidOption(f"option transport={transport} does not match the option {shown}")
    model = _MODELS[kind]
    known = set(model.model_fields) - PROJECTION_FIELDS - {"auth"}
    for key in fields:
        if key in known:
            continue
        if key in _HTTP_ONLY:
            raise InvalidOption(
                f"option {key} does not apply to a command: options "
                f"{', '.join(_HTTP_ONLY)} apply only to an HTTP server (url)"
            )
        if key in _STDIO_ONLY:
            raise InvalidOption(
                f"option {key} does not apply to an HTTP server: options "
                f"{', '.join(_STDIO_ONLY)} apply only to a command"
            )
        raise InvalidOption(f"unknown option {key!r}")
    if kind == "stdio":
        fields.setdefault("args", ())
    try:
        return model.model_validate(fields, context={"python": True})
    except ValidationError as exc:
        raise _invalid(exc, fields.get("server")) from None


def _invalid(exc: ValidationError, server: object) -> InvalidOption:
    """The first problem of ``exc`` in connect's words."""
    error = exc.errors(include_url=False, include_input=False)[0]
    cause = (error.get("ctx") or {}).get("error")
    if isinstance(cause, InvalidOption):
        return cause
    if isinstance(cause, FieldError):
        return InvalidOption(cause.message)
    loc = error["loc"]
    name = str(loc[0]) if loc else "options"
    name = _SNAKE.get(name, name)
    if name == "headers":
        if cause is None and len(loc) > 1:
            cause = f"has a value for {loc[1]} that is not a string"
        elif cause is None:
            cause = "must be a mapping of header names to string values"
        return InvalidOption(f"server {server!r}: option headers {cause}")
    if name == "env" and len(loc) > 1:
        return InvalidOption(f"option env has a value for {str(loc[1])!a} that is not a string")
    if isinstance(cause, ValueError) and name not in ("url", "bearer_token_env", "http_client"):
        return InvalidOption(f"option {name} {cause}")
    return InvalidOption(f"option {name} {_WORDING.get(name, _INVALID)}")


_SNAKE = {
    info.alias: name
    for model in _MODELS.values()
    for name, info in model.model_fields.items()
    if info.alias
}
