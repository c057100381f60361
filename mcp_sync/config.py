"""Server configuration: pydantic models for one server and a file of them.

A config file is a JSON array. Each entry is a stdio server (``command``)
or a Streamable HTTP server (``url``), never both, written with the
camelCase names (``requestTimeoutMs``); in Python the models also take the
snake_case names. Unknown keys are errors. :func:`load_config` turns any
problem with a file into one :class:`ConfigError` that names the path and,
for a bad entry, its index and field. Values from the file are never
repeated in a message (an ``env`` value may be a token).

This module imports pydantic; ``import mcp_sync`` does not import it.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Sequence
from typing import Annotated, Any, Literal, TypeAlias
from urllib.parse import urlsplit

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    StrictInt,
    StrictStr,
    ValidationError,
    field_validator,
)
from pydantic.alias_generators import to_camel

from ._limits import MAX_SAFE_INTEGER
from ._versions import SUPPORTED_PROTOCOL_VERSIONS
from .flows import ProjectionError, check_flow_name

__all__ = [
    "ConfigError",
    "ConnectOptions",
    "HttpConnectOptions",
    "ServerEntry",
    "load_config",
    "parse_config",
]

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


class ConfigError(ValueError):
    """A config file could not be used.

    ``path`` is the file, ``index`` the entry (or ``None`` for a problem with
    the whole file), ``field`` the field within it (a camelCase name,
    possibly with a ``.key`` or ``[n]`` suffix), ``problem`` what is wrong.
    """

    def __init__(
        self,
        path: str,
        problem: str,
        *,
        index: int | None = None,
        field: str | None = None,
    ) -> None:
        self.path = path
        self.problem = problem
        self.index = index
        self.field = field
        super().__init__(str(self))

    def __str__(self) -> str:
        where = self.path
        if self.index is not None:
            where += f": entry {self.index}"
            if self.field is not None:
                where += f", field {self.field}"
        return f"{where}: {self.problem}"


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            # json keeps the last value silently; a repeated key hides an edit.
            raise ValueError(f"duplicate key {key!a}")
        out[key] = value
    return out


def load_config(path: str | os.PathLike[str]) -> tuple[ServerEntry, ...]:
    """Read and validate a config file; raise :class:`ConfigError` on any problem."""
    shown = os.fspath(path)
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except FileNotFoundError:
        raise ConfigError(shown, "file not found") from None
    except IsADirectoryError:
        raise ConfigError(shown, "is a directory, not a file") from None
    except PermissionError:
        raise ConfigError(shown, "cannot be read: permission denied") from None
    except OSError as exc:
        raise ConfigError(shown, f"cannot be read: {exc.strerror or type(exc).__name__}") from None
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise ConfigError(shown, "is not UTF-8 text") from None
    try:
        value = json.loads(text, object_pairs_hook=_no_duplicate_keys)
    except json.JSONDecodeError as exc:
        raise ConfigError(
            shown, f"is not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"
        ) from None
    except ValueError as exc:
        raise ConfigError(shown, f"is not valid JSON: {exc}") from None
    return parse_config(value, path=shown)


def parse_config(value: object, *, path: str = "<config>") -> tuple[ServerEntry, ...]:
    """Validate already-decoded JSON (an array of entries); ``path`` names it in errors."""
    if not isinstance(value, list):
        raise ConfigError(
            path, f"must be a JSON array of server entries, not {_json_type(value)}"
        )
    entries: list[ServerEntry] = []
    seen: dict[str, int] = {}
    for index, item in enumerate(value):
        entry = _entry(item, path, index)
        if entry.server in seen:
            raise ConfigError(
                path,
                f"server name {entry.server!r} is already used by entry {seen[entry.server]}",
                index=index,
                field="server",
            )
        seen[entry.server] = index
        entries.append(entry)
    return tuple(entries)


def _entry(item: object, path: str, index: int) -> ServerEntry:
    if not isinstance(item, dict):
        raise ConfigError(path, f"must be an object, not {_json_type(item)}", index=index)
    has_command, has_url = "command" in item, "url" in item
    if has_command and has_url:
        raise ConfigError(
            path,
            "has both command and url; a server is stdio (command) or HTTP (url), never both",
            index=index,
            field="url",
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
            raise ConfigError(path, f"unknown field{hint}", index=index, field=_shown_key(key))
    if not has_command and not has_url:
        raise ConfigError(
            path,
            "is required (or url, for an HTTP server)",
            index=index,
            field="command",
        )
    try:
        return model.model_validate(item)
    except ValidationError as exc:
        errors = exc.errors(include_url=False, include_input=False)
        first = errors[0]
        field = _location(first["loc"])
        problem = _problem(first)
        if len(errors) > 1:
            more = len(errors) - 1
            problem += f" (and {more} more problem{'s' if more > 1 else ''} in this entry)"
        raise ConfigError(path, problem, index=index, field=field) from None


def _aliases(model: type[BaseModel]) -> set[str]:
    return {info.alias or name for name, info in model.model_fields.items()}


def _shown_key(key: str) -> str:
    return key if key.isprintable() and key else ascii(key)


def _location(loc: Sequence[int | str]) -> str:
    out = ""
    for part in loc:
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
