"""scripts/sweep runs (a smoke test on a local peer: the sweep itself is a script, not a test)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from conftest import peer_bin, sdk_stdio_command

REPO = Path(__file__).resolve().parent.parent


def test_the_sweep_times_both_clients_in_both_orders_and_counts_starts(tmp_path: Path) -> None:
    peer_bin("memory")  # skips (or fails, where peers are required) when it is missing
    sdk_stdio_command()
    out = tmp_path / "sweep.json"
    done = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "sweep"), "--local", "--only", "memory", "--rounds", "1",
         "--json", str(out)],
        capture_output=True, text=True, timeout=300, check=False,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    rows = json.loads(out.read_text())["rows"]
    assert sorted((row["client"], row["order"]) for row in rows) == [
        ("mcp_sync", "ours-first"), ("mcp_sync", "sdk-first"), ("sdk 2.3.0", "ours-first"), ("sdk 2.3.0", "sdk-first"),
    ]  # fmt: skip
    for row in rows:
        assert (row["tools"], row["call"], row["starts"], row["error"]) == (9, "ok", 1, ""), row
        assert row["connect_ms"] > 0
    assert "| memory " in done.stdout and "median over the 1 servers both connected (both)" in done.stdout
