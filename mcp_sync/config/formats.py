"""The shapes of config file other MCP clients write, read as our entries.

Three documents are recognised:

- ``array``: the seed's format, a JSON array of entries each naming its
  ``server``; only our own keys.
- ``mcpServers``: ``{"mcpServers": {name: entry}}``, written by Claude
  Desktop, Claude Code (``.mcp.json``), Cursor, Windsurf, fastmcp, mcp-use.
- ``servers``: VS Code's ``{"servers": {name: entry}, "inputs": [...]}``.

In the two object formats an entry's name is its key; ``type`` (or
``transport``) says ``stdio``, ``http`` or ``sse`` (the deprecated HTTP+SSE
transport; the first two are inferred from ``command`` or ``url`` when
absent); ``args`` may be left out; ``disabled: true`` skips the entry and
``disabledTools`` adds to ``exclude``. Keys other tools define that mean
nothing to us are dropped by name (:data:`IGNORED_KEYS`); any
other unknown key stays, for the model to refuse by name. Other top-level
keys of the document (Claude Desktop keeps its settings there) are ignored.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from ..protocol.errors import InvalidInput

__all__ = ["IGNORED_KEYS", "EntryProblem", "RawEntry", "entries"]

IGNORED_KEYS: frozenset[str] = frozenset(
    {
        "alwaysAllow",  # Cline, Roo: tools approved without asking
        "autoApprove",  # Cline: the same
        "description",
        "dev",  # VS Code: watch/debug settings for server development
        "gallery",  # VS Code: where the entry was installed from
        "icon",
        "timeout",  # Cline (seconds), Gemini CLI (ms): one name, two units
        "trust",  # Gemini CLI: skip confirmations
        "version",
    }
)
"""Entry keys of other MCP clients that mean nothing here, dropped by name."""

_HTTP_TYPES = frozenset({"http", "streamable-http", "streamableHttp", "streamable_http"})


class EntryProblem(InvalidInput):
    """A problem with one entry of an object format; ``field`` names the key.
    (Reported to a caller as the :class:`ConfigError` of its entry.)"""

    def __init__(self, field: str | None, problem: str) -> None:
        super().__init__(problem)
        self.field = field
        self.problem = problem


@dataclass
class RawEntry:
    """One entry as the document holds it: ``item`` is for the models once
    :func:`normalise` has run (object formats), ``name`` its key there."""

    index: int
    name: str | None
    item: object


def document_format(value: object) -> str | None:
    """``"array"``, ``"mcpServers"``, ``"servers"``, or ``None`` for none of them."""
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        if "mcpServers" in value:
            return "mcpServers"
        if "servers" in value:
            return "servers"
    return None


def entries(value: Any, fmt: str) -> Iterator[RawEntry]:
    """The entries of a document of format ``fmt`` (see :func:`document_format`)."""
    if fmt == "array":
        for index, item in enumerate(value):
            yield RawEntry(index, None, item)
        return
    for index, (name, item) in enumerate(value[fmt].items()):
        yield RawEntry(index, name, item)


def normalise(name: str, item: dict[str, Any]) -> dict[str, Any] | None:
    """An object-format entry as our entry dict (``None``: disabled, skip it).

    Raises :class:`EntryProblem` for a key that is wrong here.
    """
    if _disabled(item):
        return None
    _refuse_foreign_keys(item)
    out = {k: v for k, v in item.items() if k not in IGNORED_KEYS and k != "disabled"}
    if "serverUrl" in out:  # Windsurf's name for url
        if "url" in out:
            raise EntryProblem("serverUrl", "and url are both given; keep one")
        out["url"] = out.pop("serverUrl")
    _check_transport(out, _kind(out))
    _merge_disabled_tools(out)
    return {"server": name, **out}


def _disabled(item: dict[str, Any]) -> bool:
    disabled = item.get("disabled", False)
    if not isinstance(disabled, bool):
        raise EntryProblem("disabled", "must be true or false")
    return disabled


def _refuse_foreign_keys(item: dict[str, Any]) -> None:
    if "server" in item:
        raise EntryProblem("server", "is not used here: the entry's name is its key")
    if "envFile" in item:
        raise EntryProblem(
            "envFile",
            "is not supported: mcp-sync does not read env files; put the variables "
            "in env (values may use ${VAR})",
        )


def _check_transport(out: dict[str, Any], kind: str) -> None:
    """Check ``command``/``url`` against the entry's ``kind``; fill ``args`` or ``type``."""
    if kind == "stdio":
        if "url" in out:
            raise EntryProblem("url", "is for an HTTP server, but this entry is stdio")
        out.setdefault("args", [])
    elif "command" in out:
        raise EntryProblem("command", f"is for a stdio server, but this entry is {kind}")
    elif "url" not in out:
        raise EntryProblem("url", f"is required for an {kind} server")
    if kind == "sse":
        out["type"] = "sse"


def _merge_disabled_tools(out: dict[str, Any]) -> None:
    """``disabledTools`` becomes part of ``exclude``."""
    tools = out.pop("disabledTools", None)
    if tools is None:
        return
    if not isinstance(tools, list) or not all(isinstance(t, str) and t for t in tools):
        raise EntryProblem("disabledTools", "must be an array of tool names")
    exclude = out.get("exclude", [])
    if not isinstance(exclude, list):
        raise EntryProblem("exclude", "must be an array")
    out["exclude"] = [*exclude, *tools]


def _kind(out: dict[str, Any]) -> str:
    keys = [key for key in ("type", "transport") if key in out]
    if len(keys) == 2:
        raise EntryProblem("transport", "and type are both given; keep one")
    if not keys:
        if "command" in out and "url" in out:
            raise EntryProblem(
                "url",
                "has both command and url; a server is stdio (command) or HTTP (url), never both",
            )
        if "command" in out:
            return "stdio"
        if "url" in out:
            return "http"
        raise EntryProblem("command", "is required (or url, for an HTTP server)")
    key = keys[0]
    value = out.pop(key)
    if value == "stdio":
        return "stdio"
    if value in _HTTP_TYPES:
        return "http"
    if value == "sse":
        return "sse"  # the deprecated HTTP+SSE transport, chosen explicitly
    if isinstance(value, str):
        shown = ascii(value[:40])
        raise EntryProblem(key, f"must be stdio, http or sse, not {shown}")
    raise EntryProblem(key, "must be a string: stdio, http or sse")
