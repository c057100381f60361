"""``python -m mcp_sync``: the same program as the ``mcp-sync`` command."""

from __future__ import annotations

import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
