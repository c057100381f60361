"""The official MCP conformance suite's client scenarios, run against mcp_sync.

Runs ``../shared/conformance/run.sh --skip '^auth/' -- python tests/conformance_client.py``
(the suite's own test servers, loopback only) and prints its report, so the PASS lines
appear in the CI log. ``initialize``, ``tools_call``, ``sse-retry`` and
``elicitation-sep1034-client-defaults`` must pass.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO_ROOT, missing_peer


def _shared_candidates() -> list[Path]:
    """Where ``shared/`` may be: MCP_SYNC_SHARED, beside this checkout, or, for a
    clone made elsewhere (``git clone . /tmp/x``), beside the repository it was
    cloned from."""
    if "MCP_SYNC_SHARED" in os.environ:
        return [Path(os.environ["MCP_SYNC_SHARED"])]
    found = [REPO_ROOT.parent / "shared"]
    origin = subprocess.run(
        ["git", "-C", str(REPO_ROOT), "config", "--get", "remote.origin.url"],
        capture_output=True, text=True, check=False,
    ).stdout.strip()
    if origin and Path(origin).is_absolute():
        found.append(Path(origin).parent / "shared")
    return found


SHARED = next(
    (path for path in _shared_candidates() if (path / "conformance" / "run.sh").is_file()),
    REPO_ROOT.parent / "shared",
)
RUN_SH = SHARED / "conformance" / "run.sh"
CLIENT = REPO_ROOT / "tests" / "conformance_client.py"
MUST_PASS = ("initialize", "tools_call", "sse-retry", "elicitation-sep1034-client-defaults")


@pytest.mark.peer
@pytest.mark.timeout(900)  # the first run installs the suite (and node 22) from npm
def test_conformance_client_scenarios(capsys: pytest.CaptureFixture[str]) -> None:
    if not RUN_SH.is_file():
        missing_peer(f"the conformance runner is not at {RUN_SH}")
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    proc = subprocess.run(
        ["bash", str(RUN_SH), "--skip", "^auth/", "--verbose", "--", sys.executable, str(CLIENT)],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=880,
        check=False,
    )
    with capsys.disabled():
        print("\n==> conformance: run.sh --skip '^auth/' -- python tests/conformance_client.py")
        print(proc.stdout, end="")
        if proc.returncode == 2:
            print(proc.stderr, end="")
    if proc.returncode == 2:
        missing_peer("the conformance suite could not be set up (run.sh exit 2)")
    verdicts = {
        name: verdict
        for verdict, name in re.findall(r"^(PASS|FAIL) (\S+)", proc.stdout, re.MULTILINE)
    }
    for scenario in MUST_PASS:
        verdict = verdicts.get(scenario, "not run")
        assert verdict == "PASS", f"conformance scenario {scenario}: {verdict}"
