"""MCP tools as LangChain tools that block with deadlines.

LangChain's own MCP adapters are async-only; an agent that runs in a Flask
handler or a Celery task wants a tool whose ``invoke`` simply blocks. Each
tool made here calls the MCP tool on the calling thread with the library's
deadline (``func``), and its ``coroutine`` runs that same blocking call in a
worker thread, so ``ainvoke`` works too without an event loop in the
library. ``langchain_core`` is imported only when tools are made.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from .flows import Flow, FlowFailed, FlowResult
from .protocol.catalog import thaw
from .protocol.errors import missing_extra

if TYPE_CHECKING:
    from langchain_core.tools import StructuredTool

__all__ = ["make_tools"]

_ERROR_PREFIX = "The tool reported an error:"
_NO_CONTENT = "(the tool returned no content)"
_IMAGES = frozenset({"image/png", "image/jpeg", "image/webp", "image/gif"})


def _content(result: FlowResult) -> str | list[dict[str, Any]]:
    """The tool message content: plain text when the result is all text,
    else LangChain's standard content blocks (text and base64 images)."""
    blocks: list[dict[str, Any]] = []
    for block in result.content:
        kind = block.get("type")
        if kind == "text" and isinstance(block.get("text"), str):
            blocks.append({"type": "text", "text": block["text"]})
        elif kind == "image" and block.get("mimeType") in _IMAGES and isinstance(block.get("data"), str):
            blocks.append({"type": "image", "base64": block["data"], "mime_type": block["mimeType"]})
        else:
            shown = kind if isinstance(kind, str) else "unknown"
            blocks.append({"type": "text", "text": f"[{shown} content, not shown]"})
    if not any(b["type"] == "text" for b in blocks) and result.structured_content is not None:
        import json

        blocks.insert(0, {"type": "text", "text": json.dumps(thaw(result.structured_content), ensure_ascii=False)})
    if all(b["type"] == "text" for b in blocks):
        return "\n".join(b["text"] for b in blocks) or _NO_CONTENT
    return blocks


def _error_text(result: FlowResult) -> str:
    text = "\n".join(
        b["text"] for b in result.content if b.get("type") == "text" and isinstance(b.get("text"), str)
    )
    return f"{_ERROR_PREFIX}\n{text or _NO_CONTENT}"


def _make_tool(flow: Flow, name: str, timeout_ms: int | None, exception_type: type[Exception]) -> StructuredTool:
    from langchain_core.tools import StructuredTool

    def run(**arguments: Any) -> tuple[str | list[dict[str, Any]], FlowResult]:
        try:
            result = flow.invoke(arguments, timeout_ms=timeout_ms)
        except FlowFailed as exc:
            # A call that could not finish (deadline, refused arguments, a
            # server gone) is news for the model, as a tool error is.
            raise exception_type(f"The call failed: {exc}") from exc
        if result.is_error:
            raise exception_type(_error_text(result))
        return _content(result), result

    async def arun(**arguments: Any) -> tuple[str | list[dict[str, Any]], FlowResult]:
        return await asyncio.to_thread(run, **arguments)

    schema = thaw(flow.input_document)
    if not isinstance(schema, dict) or schema.get("type") != "object":
        schema = {"type": "object", "properties": {}}
    schema.setdefault("properties", {})
    return StructuredTool(
        name=name,
        description=flow.description or f"The MCP tool {flow.name}.",
        args_schema=schema,
        func=run,
        coroutine=arun,
        response_format="content_and_artifact",
        handle_tool_error=True,
        metadata={"mcp_flow": flow.name},
    )


def make_tools(flows: Sequence[Flow], names: Mapping[str, str], timeout_ms: int | None) -> list[StructuredTool]:
    """One ``StructuredTool`` per flow, named by ``names`` (see
    :func:`mcp_sync.model_tools.langchain_tools`)."""
    try:
        from langchain_core.tools import ToolException
    except ImportError:
        raise missing_extra("langchain_tools", "langchain_core", "langchain") from None
    return [_make_tool(flow, names[flow.name], timeout_ms, ToolException) for flow in flows]
