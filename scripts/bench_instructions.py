#!/usr/bin/env python3
"""Client instructions per sequential ``call_tool`` over stdio, counted by valgrind.

    .venv/bin/python scripts/bench_instructions.py [REF ...] [--era legacy|modern|modern-tasks] [--calls N] [--submit]

For each REF (a git ref; ``.`` is this working tree, the default) the client
runs twice under ``valgrind --tool=cachegrind --cache-sim=no
--trace-children=no`` (only the client process is counted, every thread of
it): 300 warm-up calls then N, and 300 then 3N. The difference over 2N is the
client's instructions per call: deterministic to ~1% on a loaded machine,
unlike wall-clock figures. ``legacy`` runs against
``scripts/bench_echo_server.py`` (the 2025-11-25 handshake era); ``modern``
against the fake server in the 2026-07-28 era without the tasks extension
(plain calls), ``modern-tasks`` with it (every call declares it). With
``--submit`` the calls are ``submit_tool`` handles from one thread keeping 16
in flight (``result()`` of the oldest, then one more), as ``scripts/bench
--pipelined`` drives them. A REF's ``mcp_sync/`` is exported with
``git archive`` into a temporary folder.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ECHO_SERVER = ROOT / "scripts" / "bench_echo_server.py"

CLIENT = r"""
import sys
import mcp_sync
calls, era, server, mode = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
if era.startswith("modern"):
    from mcp_sync.testing import server_command
    extra = () if era == "modern-tasks" else ("--capabilities", '{"tools": {}}')
    command, *args = server_command("--era", "modern", *extra)
    session = mcp_sync.connect(server="b", command=command, args=args, protocol_version="2026-07-28")
else:
    session = mcp_sync.connect(server="b", command=sys.executable, args=[server])
with session:
    if mode == "submit":
        from collections import deque
        handles = deque()
        for _ in range(300 + calls):
            if len(handles) >= 16:
                handles.popleft().result()
            handles.append(session.submit_tool("echo", {"message": "hello"}))
        while handles:
            handles.popleft().result()
    else:
        for _ in range(300 + calls):
            session.call_tool("echo", {"message": "hello"})
print(mcp_sync.__file__, file=sys.stderr)
"""


def count(tree: Path, era: str, calls: int, scratch: Path, mode: str) -> int:
    out = scratch / "cachegrind.out"
    run = subprocess.run(
        [
            "valgrind", "--tool=cachegrind", "--cache-sim=no", "--trace-children=no",
            f"--cachegrind-out-file={out}", sys.executable, "-c", CLIENT, str(calls), era, str(ECHO_SERVER), mode,
        ],
        env=dict(os.environ, PYTHONPATH=str(tree)), cwd=scratch, capture_output=True, text=True, check=False,
    )  # fmt: skip
    if run.returncode != 0 or str(tree) not in run.stderr:
        sys.exit(f"bench_instructions: the client for {tree} failed:\n{run.stderr[-2000:]}")
    found = re.search(r"^summary: (\d+)", out.read_text(), re.MULTILINE)
    if found is None:
        sys.exit("bench_instructions: no summary line in the cachegrind output")
    return int(found.group(1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("refs", nargs="*", default=["."])
    parser.add_argument("--era", choices=("legacy", "modern", "modern-tasks"), default="legacy")
    parser.add_argument("--calls", type=int, default=500)
    parser.add_argument("--submit", action="store_true", help="submit_tool, 16 in flight from one thread")
    options = parser.parse_args()
    for ref in options.refs:
        with tempfile.TemporaryDirectory() as scratch:
            tree = ROOT
            if ref != ".":
                tree = Path(scratch) / "tree"
                tree.mkdir()
                archive = subprocess.run(["git", "archive", ref, "mcp_sync"], cwd=ROOT, capture_output=True, check=True)
                subprocess.run(["tar", "-x", "-C", str(tree)], input=archive.stdout, check=True)
            mode = "submit" if options.submit else "call"
            small = count(tree, options.era, options.calls, Path(scratch), mode)
            big = count(tree, options.era, 3 * options.calls, Path(scratch), mode)
            per_call = (big - small) / (2 * options.calls)
            what = "submit_tool, 16 in flight" if options.submit else "call_tool"
            print(f"{ref}\t{options.era}\t{what}\t{per_call / 1000:.1f}k instructions per call", flush=True)


if __name__ == "__main__":
    main()
