"""Server configuration: pydantic models for one server and a file of them.

A config file is one of three documents (see ``config.formats``): the
seed's JSON array of entries, ``{"mcpServers": {name: entry}}`` (Claude
Desktop, Claude Code, Cursor, Windsurf) or VS Code's ``{"servers": {...}}``.
Each entry is a stdio server (``command``) or a Streamable HTTP server
(``url``), never both, written with the camelCase names
(``requestTimeoutMs``); in Python the models also take the snake_case
names. Unknown keys are errors. ``${VAR}``, ``${VAR:-default}`` and
``${env:VAR}`` expand in ``command``, ``args``, ``env``, ``cwd``, ``url``
and ``headers`` values (``config.variables``).

:func:`load_config` turns any problem with a file into one
:class:`ConfigError` that names the path and, for a bad entry, the entry
and field. Values from the file and from expanded variables are never
repeated in a message or a model's ``repr`` (an ``env`` value may be a
token). A value that took anything from the environment is held as a
:class:`Secret`: it shows the references as written wherever it
is rendered, and only the transport reveals it, when it spawns the server
or sends a request; the session masks those values in its diagnostics.

``import mcp_sync`` does not import pydantic, nor does importing this
package: the option models (and pydantic) load with the first entry read or
the first use of a model's name. The package holds the file formats (``formats``), the variables (``variables``)
and where each client keeps its file (``locations``); it sits above the
session layer (the option models it validates entries with are
``mcp_sync.session.options``, which ``connect()`` uses too).
"""

from __future__ import annotations

import json
import os
import typing
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from ..protocol.errors import ConfigError, InvalidInput
from ..protocol.frames import json_depth
from ..protocol.limits import MAX_JSON_DEPTH, STDIO_ONLY_LIMITS
from ..protocol.secret import Secret
from .formats import EntryProblem, RawEntry, document_format, entries, normalise
from .locations import CLIENTS, candidates, select_servers
from .variables import VariableError, expand_text

if typing.TYPE_CHECKING:
    from pydantic import BaseModel

    from ..session.options import (
        ConnectOptions,
        HttpConnectOptions,
        ServerEntry,
        SseConnectOptions,
    )

# The option models (and pydantic) load with the first entry read or the
# first use of one of these names: `mcp-sync --version` and the parser,
# which need only CLIENTS, start without them. (Outside type checking: mypy
# sees the imports above.)
_MODELS = frozenset({"ConnectOptions", "HttpConnectOptions", "ServerEntry", "SseConnectOptions"})

if not typing.TYPE_CHECKING:

    def __getattr__(name: str) -> object:
        if name not in _MODELS:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        from ..session import options

        value = getattr(options, name)
        globals()[name] = value  # the next lookup finds it without coming here
        return value

    def __dir__() -> list[str]:
        return sorted({*globals(), *_MODELS})

__all__ = [
    "CLIENTS",
    "ConfigError",
    "ConnectOptions",
    "HttpConnectOptions",
    "MAX_CONFIG_BYTES",
    "MAX_CONFIG_DEPTH",
    "Secret",
    "ServerEntry",
    "SseConnectOptions",
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

# The fields whose string values may hold ${VAR} references.
_EXPANDED = ("command", "args", "env", "cwd", "url", "headers")


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
    model = _model_of(item, has_url)
    unknown = _unknown_key(model, item, has_url)
    if unknown is not None:
        raise fail(*unknown)
    if not has_command and not has_url:
        raise fail("is required (or url, for an HTTP server)", "command")
    item = _expanded(item, environ, fail)
    from pydantic import ValidationError

    from ..session.options import problem_of

    try:
        entry = model.model_validate(item)
    except ValidationError as exc:
        errors = exc.errors(include_url=False, include_input=False)
        first = errors[0]
        field, problem = _location(first), problem_of(first)
        if len(errors) > 1:
            more = len(errors) - 1
            problem += f" (and {more} more problem{'s' if more > 1 else ''} in this entry)"
        raise fail(problem, field) from None
    return entry


def _expanded(
    item: dict[str, Any],
    environ: Mapping[str, str] | None,
    fail: Callable[[str, str], ConfigError],
) -> dict[str, Any]:
    """``item`` with the references in its expandable fields replaced (a
    value that took anything from the environment becomes a ``Secret``)."""
    out = dict(item)

    def one(value: object, where: str) -> object:
        if not isinstance(value, str):
            return value  # the model refuses a non-string by name
        try:
            return expand_text(value, environ)
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


def _model_of(item: Mapping[str, Any], has_url: bool) -> type[ServerEntry]:
    from ..session.options import ConnectOptions, HttpConnectOptions, SseConnectOptions

    if not has_url:
        return ConnectOptions
    return SseConnectOptions if item.get("type") == "sse" else HttpConnectOptions


def _file_fields(model: type[BaseModel], *, http: bool) -> dict[str, str]:
    """The camelCase names a file may use for ``model``, to the field names."""
    from ..session.options import PYTHON_ONLY_FIELDS

    left_out = PYTHON_ONLY_FIELDS | (STDIO_ONLY_LIMITS if http else frozenset())
    return {
        info.alias or name: name
        for name, info in model.model_fields.items()
        if name not in left_out
    }


def _unknown_key(
    model: type[BaseModel], item: Mapping[str, Any], has_url: bool
) -> tuple[str, str] | None:
    """The problem and field of the first key the file may not use, if any.
    The file speaks camelCase only; the snake_case names are for Python."""
    from ..session.options import HttpConnectOptions

    aliases = _file_fields(model, http=has_url)
    for key in item:
        if key in aliases:
            continue
        hint = ""
        alias = model.model_fields[key].alias if key in model.model_fields else None
        if alias and alias in aliases:
            hint = f" (the file uses camelCase: {alias})"
        elif not has_url and key in _file_fields(HttpConnectOptions, http=True):
            hint = " (only an HTTP server entry, one with url, has it)"
        return f"unknown field{hint}", _shown_key(key)
    return None


def _shown_key(key: str) -> str:
    return key if key.isprintable() and key else ascii(key)


def _location(error: Any) -> str:
    from ..session.options import FieldError

    cause = (error.get("ctx") or {}).get("error")
    if isinstance(cause, FieldError):
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
