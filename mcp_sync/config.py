"""Server configuration: pydantic models for one server and a file of them.

A config file is one of three documents (see ``_config_formats``): the
seed's JSON array of entries, ``{"mcpServers": {name: entry}}`` (Claude
Desktop, Claude Code, Cursor, Windsurf) or VS Code's ``{"servers": {...}}``.
Each entry is a stdio server (``command``) or a Streamable HTTP server
(``url``), never both, written with the camelCase names
(``requestTimeoutMs``); in Python the models also take the snake_case
names. Unknown keys are errors. ``${VAR}``, ``${VAR:-default}`` and
``${env:VAR}`` expand in ``command``, ``args``, ``env``, ``cwd``, ``url``
and ``headers`` values (``_variables``).

:func:`load_config` turns any problem with a file into one
:class:`ConfigError` that names the path and, for a bad entry, the entry
and field. Values from the file and from expanded variables are never
repeated in a message or a model's ``repr`` (an ``env`` value may be a
token); expanded values are passed on to the session, which masks them in
its diagnostics.

This module imports pydantic; ``import mcp_sync`` does not import it.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any, Literal, TypeAlias
from urllib.parse import urlsplit

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    StrictBool,
    StrictInt,
    StrictStr,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic.alias_generators import to_camel

from ._config_formats import EntryProblem, RawEntry, document_format, entries, normalise
from ._errors import ConfigError, InvalidInput
from ._headers import check_headers, plain_http_refused
from ._jsonrpc import json_depth
from ._limits import MAX_JSON_DEPTH, MAX_SAFE_INTEGER
from ._locations import CLIENTS, candidates, select_servers
from ._variables import VariableError, expand
from ._versions import SUPPORTED_PROTOCOL_VERSIONS
from .auth._config import AuthConfig
from .flows import ProjectionError, check_flow_name

__all__ = [
    "CLIENTS",
    "MAX_CONFIG_BYTES",
    "MAX_CONFIG_DEPTH",
    "ConfigError",
    "ConnectOptions",
    "HttpConnectOptions",
    "ServerEntry",
    "client_config_paths",
    "load_client_config",
    "load_config",
    "parse_config",
    "read_json",
]

MAX_CONFIG_BYTES = 16 * 1024 * 1024
"""A config file larger than this (16 MiB) is refused unread. Claude Code's
``~/.claude.json`` keeps history beside its servers, so this is generous."""
MAX_CONFIG_DEPTH = MAX_JSON_DEPTH
"""Objects and arrays in a config file nest at most this deep (128)."""

# A limit: a positive integer no larger than 2**53-1. Strict, so a bool, a
# float such as 1.0 or a numeric string is refused rather than coerced.
Limit = Annotated[StrictInt, Field(ge=1, le=MAX_SAFE_INTEGER)]
NonEmpty = Annotated[StrictStr, Field(min_length=1)]
# Any sequence of strings in Python (a str itself is refused), kept as a tuple.
Strings = Annotated[Sequence[StrictStr], AfterValidator(tuple)]
Names = Annotated[Sequence[NonEmpty], AfterValidator(tuple)]

_LIMIT_PROBLEM = "must be a positive integer no larger than 2**53-1"
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")
_PROJECTION = frozenset({"include", "exclude", "name_prefix"})
_MASK = "[REDACTED]"
# The fields whose string values may hold ${VAR} references.
_EXPANDED = ("command", "args", "env", "cwd", "url", "headers")


class _Entry(BaseModel):
    """What every server entry has: its name, projection fields and limits."""

    model_config = ConfigDict(
        extra="forbid",
        populate_by_name=True,
        alias_generator=to_camel,
        frozen=True,
    )

    server: NonEmpty
    """The server's name: in messages, and in flow names ``mcp/<server>/<tool>``."""

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

    handshake_timeout_ms: Limit | None = None
    request_timeout_ms: Limit | None = None
    max_frame_bytes: Limit | None = None
    max_outbound_frame_bytes: Limit | None = None
    max_tools: Limit | None = None
    max_tool_name_bytes: Limit | None = None
    max_tool_document_bytes: Limit | None = None
    max_catalog_pages: Limit | None = None

    # Values its ${VAR} references expanded to (set by the loader).
    _secrets: frozenset[str] = PrivateAttr(default_factory=frozenset)

    def __repr_args__(self) -> Any:
        # env and headers values are private whatever their origin; other
        # fields show a [REDACTED] where an expanded value stood.
        for name, value in super().__repr_args__():
            if name in ("env", "headers") and isinstance(value, dict):
                yield name, dict.fromkeys(value, _MASK)
            else:
                yield name, _masked(value, self._secrets)

    @field_validator("server")
    @classmethod
    def _server_name(cls, value: str) -> str:
        # The name reaches a model inside flow names and descriptions.
        if "/" in value:
            raise ValueError("must not contain '/' (it separates the parts of a flow name)")
        if value in (".", ".."):
            raise ValueError("must not be '.' or '..'")
        try:
            check_flow_name(value, what="server")
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
            if name in _PROJECTION:
                continue
            value = getattr(self, name)
            if value is None:
                continue
            out[name] = list(value) if isinstance(value, tuple) else value
        if self._secrets:
            out["secrets"] = sorted(self._secrets)
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
    command: NonEmpty
    """The executable. A relative path is resolved from the working directory
    of the process that connects, not from the config file's directory."""
    args: Strings
    """Its arguments (required; write ``[]`` for none)."""
    cwd: NonEmpty | None = None
    env: dict[StrictStr, StrictStr] | None = None
    """Added to the small allowlist of the parent's environment the child gets."""
    queue_capacity: Limit | None = None
    max_stderr_bytes: Limit | None = None

    @field_validator("env")
    @classmethod
    def _env_names(cls, value: dict[str, str] | None) -> dict[str, str] | None:
        for key in value or {}:
            if not key or "=" in key or "\0" in key:
                raise ValueError("has a key that is not a valid environment variable name")
        return value


class HttpConnectOptions(_Entry):
    """A remote server spoken to over Streamable HTTP."""

    transport: Literal["http", "sse"] | None = Field(default=None, alias="type")
    """``"http"`` (Streamable HTTP, the default) or ``"sse"`` (the deprecated
    HTTP+SSE transport of 2024-11-05); written ``type`` in the file."""
    url: NonEmpty
    """An absolute ``http:`` or ``https:`` URL, without a user or password."""
    bearer_token_env: NonEmpty | None = None
    """The name of the environment variable holding the bearer token. The
    token itself never appears in the file."""
    headers: dict[StrictStr, StrictStr] | None = None
    """Static headers sent with every request (``"Authorization": "Bearer
    ${TOKEN}"``), private like the token."""
    allow_insecure_http: StrictBool | None = None
    """Send the token or headers over plain ``http:`` to a host that is not
    loopback. Off by default: they would cross the network unencrypted."""

    @field_validator("headers")
    @classmethod
    def _headers(cls, value: dict[str, str] | None) -> dict[str, str] | None:
        if value is not None:
            check_headers(value, has_token=False)
        return value

    @model_validator(mode="after")
    def _credentials(self) -> HttpConnectOptions:
        if self.headers and self.bearer_token_env and any(
            key.lower() == "authorization" for key in self.headers
        ):
            raise _FieldError(
                "headers", "sets Authorization and bearerTokenEnv is also given; keep one"
            )
        if plain_http_refused(
            self.url,
            sends_credentials=bool(self.bearer_token_env or self.headers),
            allowed=self.allow_insecure_http is True,
        ):
            raise _FieldError(
                "url",
                "is plain http:// to a host that is not loopback, so the bearer token or "
                "headers would cross the network unencrypted: use https:, or set "
                "allowInsecureHttp: true to opt in",
            )
        return self
    auth: AuthConfig | None = None
    """OAuth for the server (see :mod:`mcp_sync.auth`); built when connecting."""

    def connect_kwargs(self) -> dict[str, Any]:
        out = super().connect_kwargs()
        if self.auth is not None:
            out["auth"] = self.auth.build(self.server)
        return out

    @field_validator("url")
    @classmethod
    def _url(cls, value: str) -> str:
        if _CONTROL.search(value) or any(ch.isspace() for ch in value):
            raise ValueError("must not contain whitespace or control characters")
        try:
            parts = urlsplit(value)
            host = parts.hostname
            has_userinfo = parts.username is not None or parts.password is not None
            parts.port  # noqa: B018 - raises ValueError for a bad port
        except ValueError:
            raise ValueError("is not a valid URL") from None
        if parts.scheme.lower() not in ("http", "https"):
            raise ValueError("must be an absolute http: or https: URL")
        if not host:
            raise ValueError("must name a host")
        if has_userinfo:
            raise ValueError(
                "must not carry a user or password; name the token's variable in bearerTokenEnv"
            )
        return value

    @field_validator("bearer_token_env")
    @classmethod
    def _token_env(cls, value: str | None) -> str | None:
        if value is not None and not _ENV_NAME.match(value):
            raise ValueError("must be an environment variable name (letters, digits, _)")
        return value


ServerEntry: TypeAlias = ConnectOptions | HttpConnectOptions


class _FieldError(ValueError):
    """A model-level rule broken by one field (reported as that field)."""

    def __init__(self, field: str, problem: str) -> None:
        super().__init__(problem)
        self.field = field
        self.problem = problem


def _masked(value: Any, secrets: frozenset[str]) -> Any:
    if not secrets:
        return value
    if isinstance(value, str):
        for secret in sorted(secrets, key=len, reverse=True):
            value = value.replace(secret, _MASK)
        return value
    if isinstance(value, tuple):
        return tuple(_masked(item, secrets) for item in value)
    return value


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            # json keeps the last value silently; a repeated key hides an edit.
            raise ValueError(f"duplicate key {key!a}")
        out[key] = value
    return out


def read_json(path: str | os.PathLike[str]) -> Any:
    """The JSON document in a config file, read with the file rules (size,
    encoding, depth, repeated keys); :class:`ConfigError` on any problem."""
    shown = os.fspath(path)
    try:
        with open(path, "rb") as handle:
            # One byte past the bound tells "too large" without reading more:
            # /dev/zero or a huge file cannot make memory grow.
            data = handle.read(MAX_CONFIG_BYTES + 1)
    except FileNotFoundError:
        raise ConfigError(shown, "file not found") from None
    except IsADirectoryError:
        raise ConfigError(shown, "is a directory, not a file") from None
    except PermissionError:
        raise ConfigError(shown, "cannot be read: permission denied") from None
    except OSError as exc:
        raise ConfigError(shown, f"cannot be read: {exc.strerror or type(exc).__name__}") from None
    except MemoryError:
        raise ConfigError(shown, "cannot be read: out of memory") from None
    if len(data) > MAX_CONFIG_BYTES:
        raise ConfigError(
            shown, f"is larger than {MAX_CONFIG_BYTES} bytes, the limit for a config file"
        )
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise ConfigError(shown, "is not UTF-8 text") from None
    # json's parser recurses: check the depth first, without recursion.
    if json_depth(data) > MAX_CONFIG_DEPTH:
        raise ConfigError(
            shown, f"nests objects and arrays deeper than {MAX_CONFIG_DEPTH} levels"
        )
    try:
        return json.loads(text, object_pairs_hook=_no_duplicate_keys)
    except json.JSONDecodeError as exc:
        raise ConfigError(
            shown, f"is not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"
        ) from None
    except RecursionError:  # a last guard; the depth check comes first
        raise ConfigError(shown, "nests objects and arrays too deeply") from None
    except ValueError as exc:
        raise ConfigError(shown, f"is not valid JSON: {exc}") from None


def load_config(path: str | os.PathLike[str]) -> tuple[ServerEntry, ...]:
    """Read and validate a config file; raise :class:`ConfigError` on any problem.

    The document may be the seed's array, ``{"mcpServers": {...}}`` or VS
    Code's ``{"servers": {...}}``; entries with ``disabled: true`` are
    left out.
    """
    shown = os.fspath(path)
    return parse_config(read_json(path), path=shown)


def parse_config(
    value: object,
    *,
    path: str = "<config>",
    environ: Mapping[str, str] | None = None,
) -> tuple[ServerEntry, ...]:
    """Validate already-decoded JSON (any of the three documents); ``path``
    names it in errors. Variables expand from ``environ`` (default
    ``os.environ``)."""
    fmt = document_format(value)
    if fmt is None:
        raise ConfigError(
            path,
            'must be an object with "mcpServers" or "servers", or an array of server '
            f"entries; it is {_json_type(value)}"
            + (" with neither key" if isinstance(value, dict) else ""),
        )
    if fmt != "array" and not isinstance(value[fmt], dict):  # type: ignore[index]
        raise ConfigError(
            path, f"{fmt} must be an object mapping server names to entries"
        )
    parsed: list[ServerEntry] = []
    seen: dict[str, RawEntry] = {}
    for raw in entries(value, fmt):
        entry = _entry(raw, path, environ)
        if entry is None:
            continue
        if entry.server in seen:
            raise ConfigError(
                path,
                f"server name {entry.server!r} is already used by entry {seen[entry.server].index}",
                index=raw.index,
                field="server",
            )
        seen[entry.server] = raw
        parsed.append(entry)
    return tuple(parsed)


def _entry(
    raw: RawEntry, path: str, environ: Mapping[str, str] | None
) -> ServerEntry | None:
    index, name = raw.index, raw.name

    def fail(problem: str, field: str | None = None) -> ConfigError:
        return ConfigError(path, problem, index=index, field=field, entry=name)

    item = raw.item
    if not isinstance(item, dict):
        raise fail(f"must be an object, not {_json_type(item)}")
    if name is not None:
        try:
            normalised = normalise(name, item)
        except EntryProblem as exc:
            raise fail(exc.problem, exc.field) from None
        if normalised is None:
            return None  # disabled: true
        item = normalised
    has_command, has_url = "command" in item, "url" in item
    if has_command and has_url:
        raise fail(
            "has both command and url; a server is stdio (command) or HTTP (url), never both",
            "url",
        )
    model: type[ConnectOptions] | type[HttpConnectOptions] = (
        HttpConnectOptions if has_url else ConnectOptions
    )
    # The file speaks camelCase only; the snake_case names are for Python.
    aliases = {info.alias or name: name for name, info in model.model_fields.items()}
    for key in item:
        if key not in aliases:
            hint = ""
            if key in model.model_fields and model.model_fields[key].alias:
                hint = f" (the file uses camelCase: {model.model_fields[key].alias})"
            elif not has_url and key in _aliases(HttpConnectOptions):
                hint = " (only an HTTP server entry, one with url, has it)"
            raise fail(f"unknown field{hint}", _shown_key(key))
    if not has_command and not has_url:
        raise fail("is required (or url, for an HTTP server)", "command")
    found: set[str] = set()
    item = _expanded(item, environ, found, fail)
    try:
        entry = model.model_validate(item)
    except ValidationError as exc:
        errors = exc.errors(include_url=False, include_input=False)
        first = errors[0]
        field, problem = _location(first), _problem(first)
        if len(errors) > 1:
            more = len(errors) - 1
            problem += f" (and {more} more problem{'s' if more > 1 else ''} in this entry)"
        raise fail(problem, field) from None
    entry._secrets = frozenset(found)
    return entry


def _expanded(
    item: dict[str, Any],
    environ: Mapping[str, str] | None,
    found: set[str],
    fail: Callable[[str, str], ConfigError],
) -> dict[str, Any]:
    """``item`` with the references in its expandable fields replaced."""
    out = dict(item)

    def one(value: object, where: str) -> object:
        if not isinstance(value, str):
            return value  # the model refuses a non-string by name
        try:
            return expand(value, environ, found)
        except VariableError as exc:
            raise fail(str(exc), where) from None

    for key in _EXPANDED:
        value = out.get(key)
        if isinstance(value, list):
            out[key] = [one(element, f"{key}[{n}]") for n, element in enumerate(value)]
        elif isinstance(value, dict):
            out[key] = {k: one(v, f"{key}.{_shown_key(k)}") for k, v in value.items()}
        elif value is not None:
            out[key] = one(value, key)
    return out


def _aliases(model: type[BaseModel]) -> set[str]:
    return {info.alias or name for name, info in model.model_fields.items()}


def _shown_key(key: str) -> str:
    return key if key.isprintable() and key else ascii(key)


def _location(error: Any) -> str:
    cause = (error.get("ctx") or {}).get("error")
    if isinstance(cause, _FieldError):
        return cause.field
    out = ""
    for part in error["loc"]:
        if isinstance(part, int):
            out += f"[{part}]"
        elif not out:
            out = _shown_key(part)
        else:
            out += f".{_shown_key(part)}"
    return out or "(entry)"


def _problem(error: Any) -> str:
    kind = error["type"]
    loc = error["loc"]
    field = loc[0] if loc else ""
    is_limit = isinstance(field, str) and (
        field.endswith("Ms") or field.startswith(("max", "queue"))
    )
    if is_limit and kind in ("int_type", "greater_than_equal", "less_than_equal", "int_parsing"):
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


def _json_type(value: object) -> str:
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if value is None:
        return "null"
    return type(value).__name__


def client_config_paths(client: str, *, cwd: str | os.PathLike[str] | None = None) -> tuple[str, ...]:
    """The files :func:`load_client_config` tries for ``client``, in order."""
    where = Path(cwd) if cwd is not None else None
    return tuple(str(location.path) for location in candidates(client, cwd=where))


def load_client_config(
    client: str, *, cwd: str | os.PathLike[str] | None = None
) -> tuple[str, tuple[ServerEntry, ...]]:
    """The servers another MCP client would run, and the file they came from.

    ``client`` is one of :data:`CLIENTS`. Its well-known files are tried
    in order (the project's, in ``cwd`` or the working directory, then the
    user's) and the first that exists is read, with the same rules as
    :func:`load_config`. No file at all is a :class:`ConfigError` listing
    the paths tried.
    """
    if client not in CLIENTS:
        raise InvalidInput(f"unknown client {client!a}; one of {', '.join(CLIENTS)}")
    where = Path(cwd) if cwd is not None else Path.cwd()
    tried = candidates(client, cwd=where)
    for location in tried:
        if not location.path.exists():
            continue
        shown = str(location.path)
        document = select_servers(client, location, read_json(location.path), cwd=where)
        return shown, parse_config(document, path=shown)
    raise ConfigError(
        client,
        "no config file found; looked for " + ", ".join(str(loc.path) for loc in tried),
    )
