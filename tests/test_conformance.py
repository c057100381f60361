"""The official MCP conformance suite's client scenarios, run against mcp_sync.

Both pinned suites run, side by side (each scenario starts its own node server, so
the two runs share nothing but the CPU): the stable one (0.1.16, the handshake-era
revisions) and ``--suite next`` (0.2.0-alpha.12, with the 2026-07-28 scenarios).
Each prints its report, so the PASS lines appear in the CI log, and each test fails
when a scenario it lists fails. The ``auth/`` scenarios are left out here (issue 16
adds them). The four ``sep-2640-*`` scenarios (the skills extension) must pass:
listing reads no file, and a SKILL.md whose digest, size or frontmatter does not
match its entry is refused before any supporting file is read.

``elicitation-sep1034-client-defaults`` must pass in both. ``sep-2322-client-request-state``
gets the answers to the elicitations its server asks for from the client's handlers.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
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
RUN_TIMEOUT = 880  # the first run installs the suites (and node 22) from npm

MUST_PASS_STABLE = ("initialize", "tools_call", "sse-retry", "elicitation-sep1034-client-defaults")
MUST_PASS_NEXT = (
    "initialize",
    "tools_call",
    "sse-retry",
    "elicitation-sep1034-client-defaults",
    "request-metadata",
    "sep-2322-client-request-state",
    "http-standard-headers",
    "http-custom-headers",
    "http-invalid-tool-headers",
    "json-schema-ref-no-deref",
    "json-schema-2020-12-preservation",
    "sep-2640-client-no-prefetch",
    "sep-2640-client-verify-digest",
    "sep-2640-client-verify-size",
    "sep-2640-client-verify-frontmatter",
)
SUITES = {
    "stable": ["--skip", "^auth/", "--verbose", "--", sys.executable, str(CLIENT)],
    "next": ["--suite", "next", "--skip", "^auth/", "--verbose", "--",
             sys.executable, str(CLIENT)],
}


@pytest.fixture(scope="module")
def suite_runs() -> Iterator[dict[str, subprocess.Popen[str]]]:
    """Start both suites at once; each test waits for its own."""
    if not RUN_SH.is_file():
        missing_peer(f"the conformance runner is not at {RUN_SH}")
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    runs = {
        name: subprocess.Popen(
            ["bash", str(RUN_SH), *args],
            cwd=REPO_ROOT, env=env, text=True,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        )
        for name, args in SUITES.items()
    }
    try:
        yield runs
    finally:
        for proc in runs.values():
            if proc.poll() is None:
                proc.kill()
            proc.communicate()


def _verdicts(name: str, proc: subprocess.Popen[str], capsys: pytest.CaptureFixture[str]) -> dict[str, str]:
    try:
        stdout, stderr = proc.communicate(timeout=RUN_TIMEOUT)
    except subprocess.TimeoutExpired:
        proc.kill()
        stdout, stderr = proc.communicate()
    with capsys.disabled():
        print(f"\n==> conformance ({name}): run.sh {' '.join(SUITES[name][:-3])}")
        print(stdout, end="")
        if proc.returncode == 2:
            print(stderr, end="")
    if proc.returncode == 2:
        missing_peer("the conformance suite could not be set up (run.sh exit 2)")
    return {
        scenario: verdict
        for verdict, scenario in re.findall(r"^(PASS|FAIL) (\S+)", stdout, re.MULTILINE)
    }


@pytest.mark.peer
@pytest.mark.timeout(RUN_TIMEOUT + 20)
@pytest.mark.parametrize(
    ("suite", "must_pass"), [("stable", MUST_PASS_STABLE), ("next", MUST_PASS_NEXT)]
)
def test_conformance_client_scenarios(
    suite: str,
    must_pass: tuple[str, ...],
    suite_runs: dict[str, subprocess.Popen[str]],
    capsys: pytest.CaptureFixture[str],
) -> None:
    verdicts = _verdicts(suite, suite_runs[suite], capsys)
    failed = [f"{name}: {verdicts.get(name, 'not run')}" for name in must_pass
              if verdicts.get(name) != "PASS"]
    assert not failed, f"conformance ({suite}) scenarios that must pass: {failed}"
