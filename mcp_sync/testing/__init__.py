"""A fake MCP server for tests: yours and ours.

``python -m mcp_sync.testing`` serves a small, polite catalog over stdio;
its options and the tools listed with ``--misbehave`` make it misbehave the
way real servers do (noise on stdout, crashes, hangs, pings during a call,
floods, bad catalogs). :func:`server_command` builds the command line::

    import mcp_sync
    from mcp_sync.testing import server_command

    command, *args = server_command("--noise")
    with mcp_sync.connect(server="fake", command=command, args=args) as session:
        session.call_tool("echo", {"message": "hi"})

:func:`connect_in_process` gives a session on an official-SDK server object
in this process instead (no subprocess; needs the ``testing`` extra).
"""

from __future__ import annotations

import sys

from ._features import FEATURE_TOOLS
from ._in_process import connect_in_process
from ._main import main
from ._server import DEFAULT_TOOLS, MISBEHAVING_TOOLS, FakeServer

__all__ = [
    "DEFAULT_TOOLS",
    "FEATURE_TOOLS",
    "FakeServer",
    "MISBEHAVING_TOOLS",
    "connect_in_process",
    "main",
    "server_command",
]


def server_command(*options: str) -> list[str]:
    """The command line that runs the fake server with ``options``."""
    return [sys.executable, "-m", "mcp_sync.testing", *options]
