"""The bundled demo: connect the package's own example server and use it.

``python -m mcp_sync.demo`` (what ``scripts/demo`` runs). It starts the fake
server from :mod:`mcp_sync.testing` over stdio, prints its tools as a table,
calls two of them (one from several threads at once) and closes.
"""

from __future__ import annotations

import sys
import time
from concurrent.futures import ThreadPoolExecutor

from . import connect
from .protocol.text import escape
from .testing import server_command

__all__ = ["main"]


def main() -> int:
    command, *args = server_command()
    started = time.perf_counter()
    with connect(server="example", command=command, args=args) as session:
        took = (time.perf_counter() - started) * 1000
        print(
            f"connected to {escape(session.server_info.name)} {escape(session.server_info.version)} "
            f"(protocol {session.protocol_version}) in {took:.0f} ms"
        )
        width = max(len(tool.name) for tool in session.tools)
        print(f"\n{'TOOL':<{width}}  DESCRIPTION")
        for tool in session.tools:
            print(f"{escape(tool.name):<{width}}  {escape((tool.description or '').splitlines()[0])}")

        result = session.call_tool("echo", {"message": "hello from mcp_sync"})
        print(f"\necho -> {result.content[0]['text']!r}")

        with ThreadPoolExecutor(max_workers=8) as pool:
            sums = list(pool.map(lambda n: session.call_tool("add", {"a": n, "b": n}), range(8)))
        print("add from 8 threads ->", [r.structured_content["sum"] for r in sums if r.structured_content])

        failed = session.call_tool("fail")
        print(f"fail -> is_error={failed.is_error}: {failed.content[0]['text']!r}")
    print(f"session closed: {session.closed}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
