"""A client for the official MCP conformance suite, built on ``mcp_sync``.

The suite (``../shared/conformance/run.sh [--suite next]``) runs
``python tests/conformance_client.py URL`` once per scenario, with the scenario's
name in ``MCP_CONFORMANCE_SCENARIO`` (and, for some, arguments in
``MCP_CONFORMANCE_CONTEXT``). This client is a thin mapping onto the public API:
connect (``protocol="auto"``, the default, in every scenario), then do what the
scenario asks. It exits 0, or prints the error's kind and public message to
stderr and exits 1.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

from conformance_auth import auth_for

import mcp_sync

CONNECT_TIMEOUT_MS = 10_000
CALL_TIMEOUT_MS = 20_000

# Scenarios whose server offers no tools: mcp_sync refuses such a server (SPEC §3)
# right after reading its capabilities. What the scenario checks (the handshake or
# the request metadata) has been sent by then, so that refusal is the expected end.
NO_TOOLS = frozenset({"initialize", "request-metadata"})

def _handlers(scenario: str) -> mcp_sync.Handlers | None:
    if scenario.startswith("elicitation") or scenario == "sep-2322-client-request-state":
        # Accept with an empty form: the schema's defaults fill every field (SEP-1034).
        return mcp_sync.Handlers(elicitation=lambda request: mcp_sync.ElicitationResult.accept())
    return None


def call(session: mcp_sync.Session, name: str, arguments: dict[str, Any] | None = None) -> None:
    result = session.call_tool(name, arguments or {}, timeout_ms=CALL_TIMEOUT_MS)
    if result.is_error:
        raise SystemExit(f"{name} reported an error")


def skills(session: mcp_sync.Session, *, load: bool) -> None:
    """List the skills (which reads no file); with ``load``, load each one
    and read its files only once its SKILL.md passed every check."""
    from mcp_sync.skills import SkillVerificationError

    for skill in session.list_skills(timeout_ms=CALL_TIMEOUT_MS):
        print(skill.uri)
        if not load:
            continue
        try:
            session.load_skill(skill, timeout_ms=CALL_TIMEOUT_MS)
        except SkillVerificationError as exc:
            # The expected end of the verify-* scenarios: the skill is refused.
            print(f"refused: {exc.kind}: {exc}", file=sys.stderr)
            continue
        for item in skill.resources or ():
            if item.uri != skill.uri:
                session.read_skill_file(skill, item.uri, timeout_ms=CALL_TIMEOUT_MS)


def run(scenario: str, url: str, context: dict[str, Any]) -> None:
    try:
        session = mcp_sync.connect_http(
            server="conformance",
            url=url,
            handshake_timeout_ms=CONNECT_TIMEOUT_MS,
            auth=auth_for(scenario),
            handlers=_handlers(scenario),
        )
    except mcp_sync.ProtocolError as exc:
        if scenario in NO_TOOLS and "tools capability" in exc.message:
            return
        raise
    with session:
        if scenario == "tools_call":
            call(session, "add_numbers", {"a": 5, "b": 3})
        elif scenario == "sse-retry":
            # The server closes the call's SSE stream after a priming event; the
            # reply only comes on the GET that resumes it.
            call(session, "test_reconnection")
        elif scenario == "elicitation-sep1034-client-defaults":
            # The suite's server sends elicitation/create on the standalone GET
            # stream, which a session with handlers opens.
            result = session.call_tool("test_client_elicitation_defaults", {}, timeout_ms=CALL_TIMEOUT_MS)
            if result.is_error:
                raise SystemExit("test_client_elicitation_defaults reported an error")
        elif scenario in ("http-standard-headers", "http-invalid-tool-headers"):
            # Call every tool the catalog kept (invalid header declarations were
            # dropped from it), with a value for each required string argument.
            for tool in session.tools:
                required = tool.input_schema.get("required", ())
                call(session, tool.name, {name: "us-west1" for name in required})
        elif scenario == "http-custom-headers":
            for tool_call in context.get("toolCalls", []):
                call(session, tool_call["name"], tool_call.get("arguments"))
        elif scenario == "json-schema-2020-12-preservation":
            # Send the focal tool's schema back exactly as the catalog holds it.
            schema = mcp_sync.thaw(session.tool("json_schema_2020_12_tool").input_schema)
            call(session, "json_schema_echo", {"schema": schema})
        elif scenario == "sep-2322-client-request-state":
            for name in ("test_mrtr_echo_state", "test_mrtr_no_state",
                         "test_mrtr_unrelated", "test_mrtr_no_result_type"):
                call(session, name)
        elif scenario.startswith("sep-2640-"):
            skills(session, load=scenario != "sep-2640-client-no-prefetch")
        elif scenario.startswith("auth/"):
            # Connecting authorized and listed the tools; a call exercises
            # what only tools/call may need (a scope step-up).
            if any(tool.name == "test-tool" for tool in session.tools):
                session.call_tool("test-tool", {}, timeout_ms=CALL_TIMEOUT_MS)
        else:
            # Anything else (json-schema-ref-no-deref): connecting, which lists
            # the tools, is all this client does.
            for tool in session.tools:
                print(tool.name)


def main() -> int:
    if len(sys.argv) < 2:
        print("usage: conformance_client.py URL", file=sys.stderr)
        return 2
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
    try:
        run(scenario, sys.argv[-1], context)
    except mcp_sync.McpError as exc:
        print(f"{scenario}: {exc.kind}: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
