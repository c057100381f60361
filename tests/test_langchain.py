"""LangChain tools from MCP tools, in a real LangChain agent loop.

``model_tools.langchain_tools`` against the real ``langchain-core`` (and the
``langchain`` agent on ``langchain-openai``'s chat model, pointed at the
stand-in model API on 127.0.0.1): the sync ``invoke`` blocks with the
library's deadline, ``ainvoke`` runs the same call in a worker thread, and
tool errors go back to the model as error tool messages.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import ToolMessage
from langchain_openai import ChatOpenAI
from model_standin import CALL_ID, MESSAGE, StandIn, standin
from support import connect_fake, library_threads

import mcp_sync
from mcp_sync import model_tools
from mcp_sync.model_tools import NAME_PATTERN

PROMPT = {"messages": [{"role": "user", "content": "Say hello through the echo tool."}]}


@pytest.fixture
def model() -> Iterator[StandIn]:
    with standin() as cfg:
        yield cfg


@pytest.fixture
def session() -> Iterator[mcp_sync.Session]:
    with connect_fake(server="example") as session:
        yield session


def _agent(model: StandIn, tools: list[Any]) -> Any:
    chat = ChatOpenAI(model="stand-in", base_url=model.openai_base_url, api_key="sk-standin", max_retries=0)
    return create_agent(chat, tools=tools)


def _check_run(model: StandIn, messages: list[Any]) -> None:
    assert model.problems == []
    tool_messages = [m for m in messages if isinstance(m, ToolMessage)]
    assert [(m.name, m.tool_call_id, m.content, m.status) for m in tool_messages] == [
        ("mcp__example__echo", CALL_ID, MESSAGE, "success")
    ]
    assert tool_messages[0].artifact.text == MESSAGE  # the FlowResult
    assert messages[-1].content == f"The tool said: {MESSAGE}"
    assert len(model.exchanges("openai")) == 2


def test_a_blocking_agent_loop_calls_the_mcp_tool(session: mcp_sync.Session, model: StandIn) -> None:
    tools = model_tools.langchain_tools(session)
    result = _agent(model, tools).invoke(PROMPT)
    _check_run(model, result["messages"])


def test_an_async_agent_loop_runs_the_same_tools(session: mcp_sync.Session, model: StandIn) -> None:
    tools = model_tools.langchain_tools(session)
    result = asyncio.run(_agent(model, tools).ainvoke(PROMPT))
    _check_run(model, result["messages"])


def test_names_and_schemas(session: mcp_sync.Session) -> None:
    tools = {tool.name: tool for tool in model_tools.langchain_tools(session)}
    assert sorted(tools) == sorted(f"mcp__example__{t.name}" for t in session.tools)
    assert all(NAME_PATTERN.match(name) for name in tools)
    echo = next(t for t in session.tools if t.name == "echo")
    assert tools["mcp__example__echo"].args == {"message": {"type": "string"}}
    assert tools["mcp__example__echo"].args_schema == {
        "type": "object", "properties": {"message": {"type": "string"}}, "required": ["message"],
    }  # fmt: skip
    assert echo.description in tools["mcp__example__echo"].description


def _call(tool: Any, args: dict[str, Any]) -> ToolMessage:
    message = tool.invoke({"type": "tool_call", "id": "c1", "name": tool.name, "args": args})
    assert isinstance(message, ToolMessage)
    return message


def test_a_tool_error_goes_back_to_the_model(session: mcp_sync.Session) -> None:
    tools = {tool.name: tool for tool in model_tools.langchain_tools(session)}
    message = _call(tools["mcp__example__fail"], {})
    assert message.status == "error"
    assert str(message.content).startswith("The tool reported an error:\n")


def test_the_deadline_holds_and_the_model_is_told(session: mcp_sync.Session) -> None:
    tools = {tool.name: tool for tool in model_tools.langchain_tools(session, timeout_ms=300)}
    started = time.monotonic()
    message = _call(tools["mcp__example__sleep"], {"ms": 10_000})
    elapsed = time.monotonic() - started
    assert 0.25 <= elapsed < 3.0, elapsed
    assert message.status == "error"
    assert "missed its deadline" in str(message.content)
    # The session is still usable, and the async path keeps the deadline too.
    assert _call(tools["mcp__example__echo"], {"message": "after"}).content == "after"
    started = time.monotonic()
    sleep = tools["mcp__example__sleep"]
    late = asyncio.run(sleep.ainvoke({"type": "tool_call", "id": "c2", "name": sleep.name, "args": {"ms": 10_000}}))
    assert late.status == "error" and time.monotonic() - started < 3.0


def test_a_dead_server_is_a_tool_error_not_a_crash() -> None:
    session = connect_fake(server="example")
    tools = {tool.name: tool for tool in model_tools.langchain_tools(session)}
    session.close()
    message = _call(tools["mcp__example__echo"], {"message": "x"})
    assert message.status == "error" and "The call failed:" in str(message.content)
    deadline = time.monotonic() + 5
    while library_threads():
        assert time.monotonic() < deadline, library_threads()
        time.sleep(0.01)


def test_a_missing_langchain_core_is_a_missing_extra(
    session: mcp_sync.Session, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "langchain_core", None)
    monkeypatch.setitem(sys.modules, "langchain_core.tools", None)
    with pytest.raises(mcp_sync.MissingExtra, match=r"pip install 'mcp-sync-client\[langchain\]'") as raised:
        model_tools.langchain_tools(session)
    assert raised.value.extra == "langchain"


def test_import_loads_no_langchain() -> None:
    code = "import sys, mcp_sync, mcp_sync.model_tools; print(sorted(m for m in sys.modules if 'langchain' in m))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
