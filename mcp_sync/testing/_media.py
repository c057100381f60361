"""The fake server's media (``--media``): tools whose results are more than
text, for the notebook display and its tests.

``chart`` answers a PNG bar chart, ``chime`` a WAV tone, ``report`` an
embedded Markdown resource and a resource link, ``table`` rows of structured
content, ``dashboard`` text and points at an MCP App (``_meta.ui.resourceUri``),
and ``progress`` (the features' tool) reports progress. The resources add the
chart as a binary resource and the App's ``ui://`` page. The image and the
sound are made here, byte by byte: no file, no dependency.
"""

from __future__ import annotations

import base64
import io
import math
import struct
import wave
import zlib
from typing import Any

from ._host import Host

__all__ = ["MEDIA_RESOURCES", "MEDIA_TOOLS", "call", "chart_png", "read"]

DASHBOARD_URI = "ui://fake/dashboard"
CHART_URI = "fake://media/chart.png"
_COLORS = ((220, 50, 47), (38, 139, 210), (133, 153, 0), (181, 137, 0), (108, 113, 196), (42, 161, 152))

MEDIA_TOOLS: list[dict[str, Any]] = [
    {
        "name": "chart",
        "title": "Bar chart",
        "description": "Draw `values` (at most 12 integers from 0 to 100) as a PNG bar chart.",
        "inputSchema": {
            "type": "object",
            "properties": {
                "values": {"type": "array", "items": {"type": "integer"}, "description": "Bar heights, 0-100."},
                "title": {"type": "string", "description": "A caption."},
            },
            "required": ["values"],
        },
    },
    {
        "name": "chime",
        "description": "A short tone as WAV audio.",
        "inputSchema": {
            "type": "object",
            "properties": {"hz": {"type": "integer", "description": "Pitch (default 440)."}},
        },
    },
    {
        "name": "report",
        "description": "A Markdown report as an embedded resource, and a link to the chart resource.",
        "inputSchema": {"type": "object", "properties": {"topic": {"type": "string"}}, "required": ["topic"]},
    },
    {
        "name": "table",
        "description": "The planets' rows, as structured content.",
        "inputSchema": {"type": "object", "properties": {"limit": {"type": "integer", "description": "Rows."}}},
        "outputSchema": {
            "type": "object",
            "properties": {"rows": {"type": "array", "items": {"type": "object"}}},
            "required": ["rows"],
        },
    },
    {
        "name": "dashboard",
        "description": "Open the dashboard (an MCP App).",
        "inputSchema": {"type": "object"},
        "_meta": {"ui": {"resourceUri": DASHBOARD_URI}},
    },
]

_PLANETS = [
    {"planet": "Mercury", "moons": 0, "au": 0.39},
    {"planet": "Venus", "moons": 0, "au": 0.72},
    {"planet": "Earth", "moons": 1, "au": 1.0},
    {"planet": "Mars", "moons": 2, "au": 1.52},
    {"planet": "Jupiter", "moons": 95, "au": 5.2},
]

DASHBOARD = """<!doctype html>
<html><body style="font-family:sans-serif;margin:8px">
<h3 style="margin:0 0 6px">Dashboard</h3>
<div id="state">the script did not run</div>
<script>
document.getElementById("state").textContent = "drawn by the app's own script";
</script>
</body></html>
"""

MEDIA_RESOURCES: list[dict[str, Any]] = [
    {"uri": CHART_URI, "name": "chart", "mimeType": "image/png", "description": "A bar chart."},
    {"uri": DASHBOARD_URI, "name": "dashboard", "mimeType": "text/html;profile=mcp-app",
     "description": "The dashboard app."},
]  # fmt: skip


def chart_png(values: list[int], width: int = 240, height: int = 120) -> bytes:
    """A bar chart: one coloured bar per value (0-100) on white, as PNG bytes."""
    rows = []
    bars = max(1, len(values))
    slot = width // bars
    for y in range(height):
        row = bytearray([0])  # filter: none
        for x in range(width):
            index = min(x // slot, bars - 1)
            value = values[index] if values else 0
            top = height - 1 - (height - 8) * max(0, min(100, value)) // 100
            inside = x % slot >= 3 and x % slot < slot - 3 and y >= top
            row += bytes(_COLORS[index % len(_COLORS)]) if inside else b"\xff\xff\xff"
        rows.append(bytes(row))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(b"".join(rows))) + chunk(
        b"IEND", b""
    )


def _tone(hz: int, seconds: float = 0.4, rate: int = 8000) -> bytes:
    out = io.BytesIO()
    with wave.open(out, "wb") as sound:
        sound.setnchannels(1)
        sound.setsampwidth(1)
        sound.setframerate(rate)
        sound.writeframes(
            bytes(128 + int(60 * math.sin(2 * math.pi * hz * n / rate)) for n in range(int(rate * seconds)))
        )
    return out.getvalue()


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def call(server: Host, rid: object, name: str, args: dict[str, Any]) -> bool:
    """Answer a media tool; False if ``name`` is not one."""
    if name == "chart":
        values = [int(v) for v in args.get("values", [])][:12]
        caption = str(args.get("title", "chart"))
        server.reply(rid, {"content": [
            {"type": "text", "text": f"{caption}: {len(values)} values"},
            {"type": "image", "mimeType": "image/png", "data": _b64(chart_png(values))},
        ]})  # fmt: skip
    elif name == "chime":
        audio = _tone(int(args.get("hz", 440)))
        server.reply(rid, {"content": [{"type": "audio", "mimeType": "audio/wav", "data": _b64(audio)}]})
    elif name == "report":
        topic = str(args.get("topic", ""))
        text = f"# Report on {topic}\n\n- written by the fake server\n- **{len(topic)}** characters of topic\n"
        server.reply(rid, {"content": [
            {"type": "resource", "resource": {"uri": f"fake://reports/{len(topic)}", "mimeType": "text/markdown",
                                              "text": text}},
            {"type": "resource_link", "uri": CHART_URI, "name": "chart", "mimeType": "image/png"},
        ]})  # fmt: skip
    elif name == "table":
        rows = _PLANETS[: int(args.get("limit", len(_PLANETS)))]
        server.reply(rid, server.text(f"{len(rows)} rows", structuredContent={"rows": rows}))
    elif name == "dashboard":
        server.reply(rid, server.text(f"the dashboard is at {DASHBOARD_URI}"))
    else:
        return False
    return True


def read(uri: object) -> dict[str, Any] | None:
    """The contents of a media resource, or None."""
    if uri == CHART_URI:
        return {"uri": uri, "mimeType": "image/png", "blob": _b64(chart_png([30, 80, 55]))}
    if uri == DASHBOARD_URI:
        return {"uri": uri, "mimeType": "text/html;profile=mcp-app", "text": DASHBOARD}
    return None
