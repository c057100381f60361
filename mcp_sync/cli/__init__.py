"""The ``mcp-sync`` command (also ``python -m mcp_sync``).

Reads a config file of servers (``--mcp-config PATH``, ``--from CLIENT`` for
the file Claude Desktop, Claude Code, Cursor or VS Code uses, or
``MCP_SYNC_CONFIG``; a flag wins), connects every server in it, projects
their tools into flows and lists or calls them, or prints them as a model
provider's tool list (``tools --format openai``). Exit codes:

====  ==========================================================
0     success
1     ``call``: the tool ran and reported an error (``isError``)
2     usage error: bad flags, or a config file that cannot be used
3     a configured server failed to connect (``check``: any did)
4     ``call``: the call itself failed (timeout, closed session, ...)
130   interrupted
141   standard output was closed by its reader (``| head``)
====  ==========================================================

Text that came from a server is printed with control, format (bidi) and
line-separator characters escaped, so it cannot move the cursor, recolour
the terminal or reorder what is shown. ``--json`` output is ASCII JSON.

The modules: ``_common`` (exit codes, errors, output, the config, connecting
and ``--server``, ``--args``), one module per group of commands (``_tools``,
``_features``), ``session.progress`` (a call's deadline, progress and spinner),
``_version`` (``--version`` and the name-clash check) and ``_main`` (the
parser, the dispatch, a closed pipe). Each imports only ``_common`` and the
modules below it, never another module's private names; ``_common`` imports
none of them.
"""

from __future__ import annotations

from ..protocol.text import escape
from ._common import (
    CONFIG_ENV,
    EXIT_CALL_FAILED,
    EXIT_CONNECT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_TOOL_ERROR,
    EXIT_USAGE,
)
from ._main import main

__all__ = [
    "CONFIG_ENV",
    "EXIT_CALL_FAILED",
    "EXIT_CONNECT_FAILED",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "EXIT_TOOL_ERROR",
    "EXIT_USAGE",
    "escape",
    "main",
]
