"""mcp_sync: a blocking, thread-safe Model Context Protocol client."""

from __future__ import annotations

__version__ = "0.1.0"
