#!/usr/bin/env python3
"""Print, for each way a server can treat the era probe, what ``protocol="auto"`` and
``protocol="legacy"`` negotiate and how long ``connect()`` takes (a Markdown table).

    .venv/bin/python scripts/era_table.py [--real]

The cases run against the fake server (``python -m mcp_sync.testing``); ``--real`` adds
the real peers of tests/test_eras_peers.py (installed by scripts/test into .cache) and
the era cases among the real servers of scripts/sweep that it has installed into
.cache/sweep (``scripts/sweep --only context7,mongodb,chroma`` installs them).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import mcp_sync
from mcp_sync.testing import server_command

ROOT = Path(__file__).resolve().parent.parent
NULL_ID = ('server/discover={"jsonrpc":"2.0","id":null,"error":'
           '{"code":-32600,"message":"Invalid Request"}}')
REFUSE_INIT = 'initialize={"jsonrpc":"2.0","id":{id},"error":{"code":-32601,"message":"no"}}'

Case = tuple[str, list[str], dict[str, str]]

FAKE_CASES: list[tuple[str, list[str]]] = [
    ("refuses the probe (-32601)", []),
    ("refuses the probe (error, null id)", ["--answer", NULL_ID]),
    ("ignores the probe", ["--hang-on", "server/discover"]),
    ("dual-era (sdk kind), starts 5 s late", ["--era", "sdk", "--start-delay", "5000"]),
    ("exits on the probe", ["--exit-on", "server/discover"]),
    ("exits on the probe 1.2 s after reading it",
     ["--delay", "server/discover=1200", "--exit-on", "server/discover"]),
    ("ignores the probe, refuses initialize", ["--hang-on", "server/discover", "--answer", REFUSE_INIT]),
]


def real_cases() -> list[Case]:
    peers = ROOT / ".cache" / "peers"
    cases: list[Case] = [
        ("TypeScript SDK v2 (serveStdio), starts 5 s late",
         ["node", str(ROOT / "tests" / "peers" / "ts_v2_server.mjs"), "--peers", str(peers),
          "--delay", "5000"], {}),
        ("Python SDK 1.x (mcp 1.6.0): exits on the probe",
         [str(ROOT / ".cache" / "mcp1-venv" / "bin" / "python"), str(ROOT / "tests" / "peers" / "sdk1_server.py")],
         {}),
    ]
    sweep = ROOT / ".cache" / "sweep"
    npm = sweep / "npm" / "node_modules" / ".bin"
    data = tempfile.mkdtemp(prefix="era_table-")
    for name, exe, args, env in (
        ("@upstash/context7-mcp 4.1.1 (TypeScript SDK v2)", npm / "context7-mcp", [], {"DO_NOT_TRACK": "1"}),
        ("mongodb-mcp-server 3.0.4 (TypeScript SDK v2)", npm / "mongodb-mcp-server", [],
         {"MDB_MCP_TELEMETRY": "disabled", "DO_NOT_TRACK": "1", "MDB_MCP_LOG_PATH": f"{data}/logs"}),
        ("chroma-mcp 0.2.6 (mcp 1.6.0): exits on the request after the probe",
         sweep / "venvs" / "chroma" / "bin" / "chroma-mcp",
         ["--client-type", "persistent", "--data-dir", f"{data}/chroma"], {"ANONYMIZED_TELEMETRY": "False"}),
    ):
        if exe.exists():
            cases.append((name, [str(exe), *args], env))
    return cases


def run(argv: list[str], protocol: str, env: dict[str, str] | None = None) -> str:
    events: list[Any] = []
    command, *args = argv
    started = time.monotonic()
    try:
        with mcp_sync.connect(server="s", command=command, args=args, env=env, protocol=protocol,
                              handshake_timeout_ms=60_000, diagnostics=events.append) as session:
            took = time.monotonic() - started
            outcome = f"{session.protocol_version}"
    except mcp_sync.McpError as exc:
        took = time.monotonic() - started
        outcome = f"{exc.kind}"
    noted = [e.kind for e in events if e.kind != "stderr"]
    return f"{outcome}, {took:.2f} s" + (f" ({', '.join(noted)})" if noted else "")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--real", action="store_true", help="also the real peers")
    options = parser.parse_args()
    cases: list[Case] = [(name, server_command(*fake), {}) for name, fake in FAKE_CASES]
    if options.real:
        cases += real_cases()
    run(server_command(), "legacy")  # warm-up: the first connect imports what connect needs
    print("| server | auto | legacy |")
    print("| --- | --- | --- |")
    for name, argv, env in cases:
        print(f"| {name} | {run(argv, 'auto', env)} | {run(argv, 'legacy', env)} |", flush=True)


if __name__ == "__main__":
    sys.exit(main())
