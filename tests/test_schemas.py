"""Tool schemas pass through untouched (SEP-2106, SEP-1613).

Every JSON Schema 2020-12 keyword a server sends is kept exactly as sent, in both
eras and on both transports, and no ``$ref`` is ever dereferenced: a canary server
that a ``$ref`` points at sees no request at all.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from support import connect_fake

import mcp_sync

RICH_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "$id": "https://example.invalid/schemas/order",
    "type": "object",
    "$defs": {
        "address": {"$anchor": "addr", "type": "object", "properties": {"street": {"type": "string"}}},
        "id": {"type": "string", "pattern": "^[a-z0-9-]+$"},
    },
    "properties": {
        "id": {"$ref": "#/$defs/id"},
        "ship_to": {"$ref": "#addr"},
        "items": {"type": "array", "prefixItems": [{"type": "string"}], "items": False},
        "kind": {"enum": ["a", "b"], "default": "a"},
        "note": {"type": ["string", "null"], "const": None},
    },
    "allOf": [{"anyOf": [{"required": ["id"]}, {"required": ["ship_to"]}]}],
    "oneOf": [{"not": {"required": ["x"]}}],
    "if": {"properties": {"kind": {"const": "b"}}},
    "then": {"required": ["ship_to"]},
    "else": {"dependentSchemas": {"ship_to": {"required": ["id"]}}},
    "unevaluatedProperties": False,
    "additionalProperties": False,
    "x-vendor": {"nested": [1, 2.5, {"k": True}]},
}
OUTPUT_SCHEMA: dict[str, Any] = {"$schema": "https://json-schema.org/draft/2020-12/schema",
                                 "type": "array", "items": {"$ref": "#/$defs/n"},
                                 "$defs": {"n": {"type": "number"}}}


@contextmanager
def canary() -> Iterator[tuple[str, list[str]]]:
    """A server a $ref may point at; it records every request it gets."""
    hits: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_GET(self) -> None:
            hits.append(self.path)
            body = b'{"type": "object"}'
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/canary/profile.json", hits
    finally:
        httpd.shutdown()
        httpd.server_close()


@pytest.mark.parametrize("era", ["legacy", "modern"])
def test_every_2020_12_keyword_is_kept_and_no_ref_is_fetched(era: str) -> None:
    with canary() as (url, hits):
        schema = {**RICH_SCHEMA, "properties": {**RICH_SCHEMA["properties"], "profile": {"$ref": url}}}
        tools = [{"name": "order", "inputSchema": schema, "outputSchema": OUTPUT_SCHEMA},
                 {"name": "echo", "inputSchema": {"type": "object"}}]
        with connect_fake("--era", "dual", "--tools", json.dumps(tools),
                          protocol="modern" if era == "modern" else "legacy") as session:
            assert session.era == era
            tool = session.tool("order")
            assert mcp_sync.thaw(tool.input_schema) == schema
            assert mcp_sync.thaw(tool.output_schema) == OUTPUT_SCHEMA
            assert tool.to_dict()["inputSchema"] == schema
            # Sent back as an argument, it reaches the server byte for byte.
            result = session.call_tool("echo", {"message": json.dumps(mcp_sync.thaw(tool.input_schema))})
            assert json.loads(result.content[0]["text"]) == schema
        assert hits == []


def test_schemas_are_kept_over_http_in_the_modern_era() -> None:
    from test_http_modern import connect, fake_http

    with canary() as (url, hits):
        schema = {**RICH_SCHEMA, "properties": {"profile": {"$ref": url}}}
        tools = [{"name": "order", "inputSchema": schema}]
        with (
            fake_http("--era", "modern", "--tools", json.dumps(tools)) as server_url,
            connect(server_url) as session,
        ):
            assert mcp_sync.thaw(session.tool("order").input_schema) == schema
        assert hits == []
