"""Every ``auth/*`` client scenario of both conformance suites, run against
mcp_sync through tests/conformance_client.py (its auth mapping is
tests/conformance_auth.py). A scenario that fails fails this test.

Five scenarios of the ``next`` suite run their MCP server in the 2026-07-28
era (no ``initialize``): they pass because ``protocol="auto"`` finds that era.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from conftest import REPO_ROOT, missing_peer
from test_conformance import CLIENT, RUN_SH

EXPECTED = {"stable": 22, "next": 33}


@pytest.mark.peer
@pytest.mark.timeout(900)
@pytest.mark.parametrize("suite", ["stable", "next"])
def test_every_auth_scenario_passes(suite: str, capsys: pytest.CaptureFixture[str]) -> None:
    if not RUN_SH.is_file():
        missing_peer(f"the conformance runner is not at {RUN_SH}")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO_ROOT), str(REPO_ROOT / "tests")])}
    with tempfile.TemporaryDirectory() as results:
        proc = subprocess.run(
            ["bash", str(RUN_SH), "--suite", suite, "--only", "^auth/", "--verbose",
             "--results", results, "--", sys.executable, str(CLIENT)],
            cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=880, check=False,
        )  # fmt: skip
        stderr = {
            path.parent.name.replace("__", "/"): path.read_text(errors="replace")
            for path in Path(results).glob("*/stderr.txt")
        }
    with capsys.disabled():
        print(f"\n==> conformance ({suite}): run.sh --only '^auth/'")
        print(proc.stdout, end="")
    if proc.returncode == 2:
        missing_peer(f"the conformance suite ({suite}) could not be set up (run.sh exit 2)")
    verdicts = dict(
        (name, verdict) for verdict, name in re.findall(r"^(PASS|FAIL) (\S+)", proc.stdout, re.M)
    )
    assert len(verdicts) == EXPECTED[suite], verdicts
    failed = [
        f"{name}: {stderr.get(name, '').strip()}" for name, verdict in verdicts.items() if verdict != "PASS"
    ]
    assert not failed, f"conformance ({suite}) failed: {failed}"
