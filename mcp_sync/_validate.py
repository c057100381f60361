"""Opt-in validation of a tool's ``structuredContent`` against its
``outputSchema`` (``connect(validate_output=True)``), with ``jsonschema``.

``jsonschema`` is an optional extra (``mcp-sync-client[validation]``) and is
imported only when a session asks for validation, so ``import mcp_sync``
stays fast. Each tool's schema is compiled once per catalog snapshot. Remote
``$ref``s are never fetched (jsonschema's ``referencing`` resolves only what
the schema itself contains).
"""

from __future__ import annotations

import importlib.util
import threading
from typing import Any

from ._catalog import CallToolResult, Snapshot, Tool, thaw
from ._errors import InvalidResponse, missing_extra

__all__ = ["check_structured_output", "require_jsonschema"]

_lock = threading.Lock()  # guards building a snapshot's validator cache entries


def require_jsonschema() -> None:
    """Refuse ``validate_output=True`` up front when jsonschema is missing."""
    if importlib.util.find_spec("jsonschema") is None:
        raise missing_extra("option validate_output", "jsonschema", "validation")


def _validator(snapshot: Snapshot, tool: Tool) -> Any:
    cached = snapshot.validators.get(tool.name)
    if cached is not None:
        return cached
    import jsonschema  # type: ignore[import-untyped]  # the optional extra, imported on first use
    from jsonschema.exceptions import SchemaError  # type: ignore[import-untyped]

    assert tool.output_schema is not None
    schema = thaw(tool.output_schema)
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    try:
        cls.check_schema(schema)
    except SchemaError:
        raise InvalidResponse(f"tool {tool.name!a} has an outputSchema that is not a valid JSON Schema") from None
    validator = cls(schema)
    with _lock:
        return snapshot.validators.setdefault(tool.name, validator)


def check_structured_output(snapshot: Snapshot, tool: Tool, result: CallToolResult) -> None:
    """Raise :class:`InvalidResponse` naming the tool when a successful result
    does not match the tool's ``outputSchema``."""
    if tool.output_schema is None or result.is_error:
        return
    if result.structured_content is None:
        raise InvalidResponse(
            f"tool {tool.name!a} has an outputSchema but its result has no structuredContent"
        )
    validator = _validator(snapshot, tool)
    try:
        error = next(iter(validator.iter_errors(thaw(result.structured_content))), None)
    except Exception:  # a hostile schema (a pattern the regex engine refuses...)
        raise InvalidResponse(
            f"the structuredContent of tool {tool.name!a} could not be checked against its outputSchema"
        ) from None
    if error is not None:
        where = "/".join(str(part) for part in error.absolute_path)[:200]
        raise InvalidResponse(
            f"the structuredContent of tool {tool.name!a} does not match its outputSchema "
            f"(keyword {str(error.validator)[:40]!a} at {('/' + where)!a})"
        )
