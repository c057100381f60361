"""How results, content blocks, catalogs, resources, prompts and sessions
look in Jupyter (the display protocol's ``_repr_mimebundle_``).

The value types call :func:`bundle` from their ``_repr_mimebundle_``; this
module is imported by the first display, never by ``import mcp_sync``. A
bundle has a ``text/plain`` and a ``text/html`` rendering.

Everything a server chose (text, names, titles, URIs, MIME types,
descriptions, schemas, messages) is HTML-escaped: none of it becomes markup,
a link, a style or a script. An image or audio block is inlined as a
``data:`` URI only when its MIME type is a plain ``image/...`` or
``audio/...`` token and its data is strict base64; anything else is
described, not shown. HTML a server sends (an MCP App's ``ui://`` page
included) is shown as source: running it is a separate call,
``mcp_sync.notebook.app_frame``, in a sandboxed frame.

Bounded by the limits (a session's own, else the defaults): each text at
most ``max_tool_document_bytes`` UTF-8 bytes, at most ``max_tools`` blocks,
rows or parameters per list, and at most ``max_frame_bytes`` of server data
per rendering; past a bound a note says how much was left out. Every pass
over server data is one linear scan.
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from .limits import Limits
from .text import escape

__all__ = ["Page", "bundle", "records_table", "tool_rows"]

# A MIME type shown inline: a plain lower-case token, nothing a server could
# use to break out of the attribute or to name a scriptable type.
_INLINE_MIME = re.compile(r"(?:image|audio)/[a-z0-9][a-z0-9.+-]{0,63}")
# Strict base64 (standard alphabet, padding only at the end): one linear match.
_BASE64 = re.compile(r"[A-Za-z0-9+/]*={0,2}")
# A cell of a table of records: at most this many characters of a value.
_CELL_CHARS = 200
_MAX_COLUMNS = 32

_STYLE = (
    "<style>.mcp-sync{font-family:system-ui,sans-serif;font-size:13px;line-height:1.4}"
    ".mcp-sync table{border-collapse:collapse;margin:2px 0}"
    # table[class]: above JupyterLab's own rule for output tables (right-aligned cells).
    ".mcp-sync table[class] th,.mcp-sync table[class] td"
    "{border:1px solid #ccc;padding:3px 8px;text-align:left;vertical-align:top}"
    ".mcp-sync table[class] th{background:#f3f3f3}"
    ".mcp-sync pre{white-space:pre-wrap;margin:2px 0;padding:4px;background:#f7f7f7}"
    ".mcp-sync .mcp-note{color:#666;font-style:italic}"
    ".mcp-sync .mcp-error{color:#b00020;font-weight:bold}"
    ".mcp-sync ul{margin:0;padding-left:18px}</style>"
)


def esc(text: object) -> str:
    """``text`` (any value, as ``str``) safe inside HTML text and quoted attributes."""
    return html.escape(str(text), quote=True)


class Page:
    """One rendering: its limits and what is left of its data budget."""

    __slots__ = ("left", "limits")

    def __init__(self, limits: Limits | None = None) -> None:
        self.limits = limits if limits is not None else Limits()
        self.left = self.limits.max_frame_bytes

    @property
    def rows(self) -> int:
        return self.limits.max_tools

    def clip(self, text: str) -> tuple[str, int]:
        """``text`` cut to the text bound and the budget left; and how many
        UTF-8 bytes were cut."""
        bound = min(self.limits.max_tool_document_bytes, max(self.left, 0))
        if len(text) <= bound // 4:  # at most 4 bytes a character: surely within
            self.left -= len(text)
            return text, 0
        raw = text.encode("utf-8", "surrogatepass")
        if len(raw) <= bound:
            self.left -= len(raw)
            return text, 0
        self.left -= bound
        return raw[:bound].decode("utf-8", "ignore"), len(raw) - bound

    def spend(self, size: int) -> bool:
        """Take ``size`` bytes of inline data from the budget, if they fit."""
        if size > self.left:
            return False
        self.left -= size
        return True

    def text(self, text: str, tag: str = "pre") -> str:
        shown, cut = self.clip(text)
        out = f"<{tag}>{esc(shown)}</{tag}>"
        return out + _cut_note(cut) if cut else out

    def inline(self, text: str) -> str:
        """A short value (a name, a URI): escaped, clipped, on one line."""
        shown, cut = self.clip(text)
        return esc(escape(shown)) + ("…" if cut else "")


def _cut_note(cut: int) -> str:
    return f'<div class="mcp-note">… {cut:,} more bytes not shown</div>'


def _more(count: int, what: str) -> str:
    return f'<div class="mcp-note">… {count:,} more {what} not shown</div>' if count > 0 else ""


def _json(value: Any, page: Page) -> str:
    try:
        text = json.dumps(value, indent=2, ensure_ascii=False, default=_plain)
    except (TypeError, ValueError):
        text = repr(value)
    return page.text(text)


def _plain(value: Any) -> Any:
    if isinstance(value, Mapping):
        return dict(value)
    if isinstance(value, (bytes, bytearray)):
        return f"<{len(value)} bytes>"
    raise TypeError(type(value).__name__)


def _compact(value: Any) -> str:
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False, default=_plain)
    except (TypeError, ValueError):
        return repr(value)


def _b64_size(data: str) -> int:
    """The bytes that base64 text decodes to."""
    return len(data) * 3 // 4 - data[-2:].count("=")


def _wrap(body: str, kind: str) -> str:
    return f'{_STYLE}<div class="mcp-sync mcp-sync-{kind}">{body}</div>'


# ---------------------------------------------------------------- content blocks


def _media(kind: str, mime: object, data: object, page: Page, alt: str) -> str:
    """An image or audio as a data URI, or a note saying why not."""
    if not isinstance(mime, str) or not _INLINE_MIME.fullmatch(mime) or not mime.startswith(kind):
        return f'<div class="mcp-note">{esc(kind)} with MIME type {page.inline(str(mime))}: not shown</div>'
    if not isinstance(data, str) or len(data) % 4 or not _BASE64.fullmatch(data):
        return f'<div class="mcp-note">{esc(kind)} ({esc(mime)}) whose data is not base64: not shown</div>'
    if not page.spend(len(data)):
        size = _b64_size(data)
        return f'<div class="mcp-note">{esc(kind)} ({esc(mime)}, {size:,} bytes): over the display budget</div>'
    source = f"data:{mime};base64,{data}"
    if kind == "image":
        return f'<img class="mcp-sync-image" src="{source}" alt="{esc(alt)}" style="max-width:100%">'
    return f'<audio class="mcp-sync-audio" controls src="{source}"></audio>'


def resource_body(  # noqa: PLR0911, PLR0913, PLR0917
    uri: str, mime: str | None, text: str | None, blob: str | None, page: Page, size: int | None = None
) -> str:
    """One resource's contents by MIME type (``blob`` as base64): text as
    text, JSON pretty-printed, images and audio inline, HTML as source;
    ``size`` alone: binary contents not shown."""
    kind = page.inline(mime or "no MIME type")
    head = f'<div><code>{page.inline(uri)}</code> <span class="mcp-note">{kind}</span></div>'
    base = (mime or "").split(";", 1)[0].strip().lower()
    if text is not None:
        if base == "application/json" or base.endswith("+json"):
            try:
                parsed = json.loads(text)
            except ValueError:
                return head + page.text(text)
            return head + _json(parsed, page)
        if base == "text/html" and uri.startswith("ui://"):
            note = ('<div class="mcp-note">an MCP App, shown as source: '
                    "mcp_sync.notebook.app_frame(...) runs it in a sandboxed frame</div>")  # fmt: skip
            return head + note + page.text(text)
        return head + page.text(text)
    if blob is not None:
        for kind in ("image", "audio"):
            if base.startswith(kind + "/"):
                return head + _media(kind, base, blob, page, uri)
        size = _b64_size(blob)
    if size is not None:
        return head + f'<div class="mcp-note">{size:,} bytes of binary data</div>'
    return head


def block_html(block: Mapping[str, Any], page: Page) -> str:
    """One content block (text, image, audio, resource, resource_link)."""
    kind = block.get("type")
    if kind == "text" and isinstance(block.get("text"), str):
        return page.text(block["text"])
    if kind in ("image", "audio"):
        return _media(str(kind), block.get("mimeType"), block.get("data"), page, f"{kind} from the server")
    if kind == "resource" and isinstance(block.get("resource"), Mapping):
        item = block["resource"]
        uri, mime = item.get("uri"), item.get("mimeType")
        text, blob = item.get("text"), item.get("blob")
        return resource_body(
            uri if isinstance(uri, str) else "",
            mime if isinstance(mime, str) else None,
            text if isinstance(text, str) else None,
            blob if isinstance(blob, str) else None,
            page,
        )
    if kind == "resource_link":
        name, uri = block.get("name"), block.get("uri")
        label = page.inline(str(name)) if isinstance(name, str) else ""
        mime = block.get("mimeType")
        extra = f' <span class="mcp-note">{page.inline(mime)}</span>' if isinstance(mime, str) else ""
        return f"<div>link: <b>{label}</b> <code>{page.inline(str(uri))}</code>{extra}</div>"
    return f'<div class="mcp-note">a {page.inline(str(kind))} block</div>' + _json(block, page)


def blocks_html(blocks: Sequence[Mapping[str, Any]], page: Page) -> str:
    shown = [
        block_html(block, page) if isinstance(block, Mapping) else _json(block, page) for block in blocks[: page.rows]
    ]
    return "".join(shown) + _more(len(blocks) - page.rows, "blocks")


def block_text(block: object, page: Page) -> str:
    if not isinstance(block, Mapping):
        return _compact(block)
    kind = block.get("type")
    if kind == "text" and isinstance(block.get("text"), str):
        shown, cut = page.clip(block["text"])
        return escape(shown, multiline=True) + (f"\n… {cut:,} more bytes" if cut else "")
    if kind in ("image", "audio"):
        data = block.get("data")
        size = _b64_size(data) if isinstance(data, str) else 0
        return f"[{kind} {escape(str(block.get('mimeType')))[:80]}, {size:,} bytes]"
    if kind == "resource" and isinstance(block.get("resource"), Mapping):
        return f"[resource {escape(str(block['resource'].get('uri')))[:200]}]"
    if kind == "resource_link":
        return f"[link {escape(str(block.get('uri')))[:200]}]"
    return f"[{escape(str(kind))[:40]} block]"


# ---------------------------------------------------------------- tables


def _cell(value: Any, page: Page) -> str:
    text = _compact(value)
    if len(text) > _CELL_CHARS:
        text = text[:_CELL_CHARS] + "…"
    return page.inline(text)


def records_table(records: Sequence[Any], page: Page, columns: Sequence[str] | None = None) -> str:
    """Mappings as a table: the given columns, else every key (first seen
    first, at most 32) of the rows shown."""
    rows = [row for row in records[: page.rows] if isinstance(row, Mapping)]
    if columns is None:
        seen: dict[str, None] = {}
        for row in rows:
            for key in row:
                if len(seen) >= _MAX_COLUMNS:
                    break
                seen.setdefault(str(key), None)
        columns = list(seen)
    head = "".join(f"<th>{page.inline(name)}</th>" for name in columns)
    body = "".join(
        "<tr>" + "".join(f"<td>{_cell(row.get(name, ''), page)}</td>" for name in columns) + "</tr>"
        for row in rows
    )
    table = f'<table class="mcp-sync-table"><tr>{head}</tr>{body}</table>'
    return table + _more(len(records) - len(rows), "rows")


def structured_html(value: Any, page: Page) -> str:
    """Structured content: a list of records (or an object holding one) as a
    table, an object of plain values as a two-column table, else JSON."""
    records = value
    if isinstance(value, Mapping) and len(value) == 1:
        (records,) = value.values()
    tabular = isinstance(records, Sequence) and not isinstance(records, str) and records
    if tabular and all(isinstance(row, Mapping) for row in records[: page.rows]):
        return records_table(records, page)
    plain = isinstance(value, Mapping) and all(not isinstance(v, (Mapping, list, tuple)) for v in value.values())
    if plain and value:
        return records_table([{"key": k, "value": v} for k, v in value.items()], page, ("key", "value"))
    return _json(value, page)


def _type_of(schema: Any, depth: int = 0) -> str:  # noqa: PLR0911
    """A parameter's type in a few words (nested types to depth 2: a schema
    of nested ``anyOf`` costs no more than a fixed number of steps)."""
    if not isinstance(schema, Mapping) or depth > 2:
        return "any"
    if "enum" in schema and isinstance(schema["enum"], Sequence):
        return "one of " + ", ".join(_compact(v)[:40] for v in list(schema["enum"])[:8])
    kind = schema.get("type")
    if isinstance(kind, str):
        if kind == "array":
            return f"array of {_type_of(schema.get('items'), depth + 1)}"
        return kind
    if isinstance(kind, Sequence) and not isinstance(kind, str):
        return " | ".join(str(k) for k in list(kind)[:8])
    for key in ("anyOf", "oneOf"):
        if isinstance(schema.get(key), Sequence):
            return " | ".join(_type_of(s, depth + 1) for s in list(schema[key])[:8])
    ref = schema.get("$ref")
    if isinstance(ref, str):
        return ref.rsplit("/", 1)[-1]
    return "any"


def tool_rows(tools: Sequence[Any], page: Page) -> str:
    """Tools (``Tool`` entries) as a table: name, description, parameters."""
    rows = []
    for tool in tools[: page.rows]:
        name = f"<code>{page.inline(tool.name)}</code>"
        if tool.title:
            name += f"<br>{page.inline(tool.title)}"
        notes = []
        if tool.output_schema is not None:
            notes.append("structured result")
        if tool.task_support != "forbidden":
            notes.append(f"task: {tool.task_support}")
        if notes:
            name += f'<br><span class="mcp-note">{esc(", ".join(notes))}</span>'
        description = page.text(tool.description, "div") if tool.description else ""
        rows.append(f"<tr><td>{name}</td><td>{description}</td><td>{_parameters(tool.input_schema, page)}</td></tr>")
    head = "<tr><th>tool</th><th>description</th><th>parameters</th></tr>"
    table = f'<table class="mcp-sync-tools">{head}{"".join(rows)}</table>'
    return table + _more(len(tools) - len(rows), "tools")


def _parameters(schema: Mapping[str, Any], page: Page) -> str:
    properties = schema.get("properties")
    if not isinstance(properties, Mapping) or not properties:
        return '<span class="mcp-note">none</span>'
    required = schema.get("required")
    needed = set(required) if isinstance(required, Sequence) and not isinstance(required, str) else set()
    items = []
    for index, (name, spec) in enumerate(properties.items()):
        if index >= page.rows:
            break
        line = f"<code>{page.inline(str(name))}</code> <i>{page.inline(_type_of(spec))}</i>"
        if name in needed:
            line += " <b>required</b>"
        described = spec.get("description") if isinstance(spec, Mapping) else None
        if isinstance(described, str) and described:
            line += f" — {page.inline(described)}"
        items.append(f"<li>{line}</li>")
    return "<ul>" + "".join(items) + "</ul>" + _more(len(properties) - len(items), "parameters")


def _parameter_names(schema: Mapping[str, Any]) -> str:
    properties = schema.get("properties")
    if not isinstance(properties, Mapping):
        return ""
    return ", ".join(escape(str(name))[:64] for name in list(properties)[:16])


# ---------------------------------------------------------------- bundles


def bundle(value: Any, limits: Limits | None = None) -> dict[str, str]:
    """``value``'s display bundle: ``text/plain`` and ``text/html``."""
    page = Page(limits)
    kind = type(value).__name__
    render = _RENDERERS.get(kind)
    if render is None:
        raise TypeError(f"no display for {kind}")
    text, body = render(value, page)
    return {"text/plain": text, "text/html": _wrap(body, kind.lower())}


def _result(value: Any, page: Page) -> tuple[str, str]:
    lines = [block_text(block, page) for block in value.content[: page.rows]]
    body = blocks_html(value.content, page)
    if value.is_error:
        lines.insert(0, "tool error:")
        body = '<div class="mcp-error">the tool reported an error</div>' + body
    if value.structured_content is not None:
        lines.append(_compact(value.structured_content)[: page.limits.max_tool_document_bytes])
        body += '<div class="mcp-note">structured content</div>' + structured_html(value.structured_content, page)
    return "\n".join(lines) or "(no content)", body


def _tool_line(tool: Any) -> str:
    """``name(parameters) — the description's first line``, on one line."""
    text = f"{escape(tool.name)}({_parameter_names(tool.input_schema)})"
    if tool.description:
        first = tool.description.strip().split("\n", 1)[0]
        text += " — " + escape(first[:_CELL_CHARS])
    return text


def _tools(value: Sequence[Any], page: Page) -> tuple[str, str]:
    lines = [f"  {_tool_line(tool)}" for tool in value[: page.rows]]
    more = [f"  … {len(value) - len(lines):,} more"] if len(value) > len(lines) else []
    return "\n".join([f"{len(value)} tools:", *lines, *more]), tool_rows(value, page)


def _tool(value: Any, page: Page) -> tuple[str, str]:
    text = _tool_line(value)
    body = tool_rows([value], page) + '<div class="mcp-note">input schema</div>' + _json(value.input_schema, page)
    if value.output_schema is not None:
        body += '<div class="mcp-note">output schema</div>' + _json(value.output_schema, page)
    return text, body


def _listing(value: Sequence[Any], page: Page) -> tuple[str, str]:
    if not value:
        return "(none)", '<div class="mcp-note">none</div>'
    kind = type(value[0]).__name__
    records = [item.to_dict() for item in value[: page.rows]]
    if kind == "Prompt":
        for record in records:
            record["arguments"] = ", ".join(
                argument["name"] + ("*" if argument.get("required") else "") for argument in record.get("arguments", [])
            )
    columns = _LISTING_COLUMNS.get(kind)
    names = "; ".join(escape(str(record.get("name")))[:64] for record in records)
    table = records_table(records, page, columns) + _more(len(value) - len(records), "entries")
    return f"{len(value)} {kind.lower()}s: {names}", table


_LISTING_COLUMNS = {
    "Resource": ("name", "uri", "mimeType", "description"),
    "ResourceTemplate": ("name", "uriTemplate", "mimeType", "description"),
    "Prompt": ("name", "description", "arguments"),
}


def _entry(value: Any, page: Page) -> tuple[str, str]:
    return _listing((value,), page)


def _contents(value: Any, page: Page) -> tuple[str, str]:
    blob, size = None, None
    if value.blob is not None:
        size = len(value.blob)
        media = (value.mime_type or "").lower().startswith(("image/", "audio/"))
        # Encoded only to be shown inline, and only when it fits the budget.
        if media and (size + 2) // 3 * 4 <= page.left:
            import base64

            blob = base64.b64encode(value.blob).decode("ascii")
    body = resource_body(value.uri, value.mime_type, value.text, blob, page, size)
    if value.text is not None:
        shown = escape(page.clip(value.text)[0], multiline=True)
    else:
        shown = f"[{len(value.blob or b''):,} bytes]"
    return f"{escape(value.uri)[:200]} ({escape(str(value.mime_type))[:80]})\n{shown}", body


def _read(value: Any, page: Page) -> tuple[str, str]:
    parts = [_contents(item, page) for item in value.contents[: page.rows]]
    text = "\n".join(part[0] for part in parts)
    return text, "".join(part[1] for part in parts) + _more(len(value.contents) - len(parts), "contents")


def _messages(messages: Iterable[Any], page: Page) -> tuple[list[str], str]:
    lines, rows = [], []
    for index, message in enumerate(messages):
        if index >= page.rows:
            break
        role = escape(str(message.role))[:40]
        lines.append(f"{role}: {block_text(message.content, page)}")
        rows.append(f"<tr><th>{esc(role)}</th><td>{block_html(message.content, page)}</td></tr>")
    return lines, f'<table class="mcp-sync-messages">{"".join(rows)}</table>'


def _prompt_result(value: Any, page: Page) -> tuple[str, str]:
    lines, table = _messages(value.messages, page)
    head = page.text(value.description, "div") if value.description else ""
    return "\n".join(lines), head + table + _more(len(value.messages) - page.rows, "messages")


def session_card(facts: Sequence[tuple[str, str]], page: Page) -> str:
    """A session's facts (label, value) as a two-column table."""
    rows = "".join(f"<tr><th>{esc(label)}</th><td>{page.inline(value)}</td></tr>" for label, value in facts)
    return f'<table class="mcp-sync-facts">{rows}</table>'


def _session(value: Any, page: Page) -> tuple[str, str]:
    facts = value._display_facts()
    text = "; ".join(f"{label}: {escape(fact)[:200]}" for label, fact in facts)
    return text, session_card(facts, page) + tool_rows(value.tools, page)


def _servers(value: Any, page: Page) -> tuple[str, str]:
    rows = value._display_rows()
    text = "; ".join(f"{escape(name)[:64]}: {escape(state)[:200]}" for name, state in rows)
    records = [{"server": name, "state": state} for name, state in rows]
    return text or "(no servers)", records_table(records, page, ("server", "state"))


_RENDERERS = {
    "CallToolResult": _result,
    "Tools": _tools,
    "Tool": _tool,
    "Listing": _listing,
    "Resource": _entry,
    "ResourceTemplate": _entry,
    "Prompt": _entry,
    "ResourceContents": _contents,
    "ReadResourceResult": _read,
    "GetPromptResult": _prompt_result,
    "Session": _session,
    "Servers": _servers,
}
