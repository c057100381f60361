"""The cheapest request that proves a server still answers.

In the handshake era that is ``ping`` (a request every peer must answer with
an empty result). The 2026-07-28 revision has no ``ping``: there the probe is
``server/discover``, which every server of that era must answer and which
changes nothing on the server.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from ..protocol.limits import request_budget, seconds

if TYPE_CHECKING:
    from ..protocol.catalog import ServerInfo
    from .feature_contract import Core

__all__ = ["facts", "probe"]


def probe(core: Core, timeout_ms: int | None) -> None:
    """Send the era's probe and block for its answer, at most ``timeout_ms``."""
    budget, option = request_budget(core.limits, timeout_ms)
    terminal = core.terminal
    if terminal is not None:
        raise terminal._copy()
    core.era.probe(core, time.monotonic() + seconds(budget), f"{option}={budget}")


def facts(core: Core, info: ServerInfo, era: str) -> list[tuple[str, str]]:
    """What a notebook shows of a session: (label, value) pairs, the server's
    own words untouched (the display escapes them). Reads state; sends nothing."""
    itself = f"{info.name} {info.version}" + (f" ({info.title})" if info.title else "")
    terminal = core.terminal
    if terminal is not None:
        health = f"closed ({terminal.kind}): {terminal.message}"
    else:
        health = "open"
        if core.inbound.changed["tools"].is_set():
            health += "; the server says its tools changed (refresh_tools() reads them again)"
        failed = core.inbound.last_refresh_error
        if failed is not None:
            health += f"; the last refresh failed ({failed.kind})"
    return [
        ("server", core.server),
        ("reports itself as", itself),
        ("era", era),
        ("health", health),
        ("tools", str(len(core.catalog.tools))),
    ]
