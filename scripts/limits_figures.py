#!/usr/bin/env python3
"""The figures behind the default limits (docs/performance.md, "Limits chosen
from real servers"). Each case runs in a fresh interpreter, whose peak RSS
(VmHWM, reset through /proc/self/clear_refs: Linux only) is read around it.

    .venv/bin/python scripts/limits_figures.py              # frames and catalogs (~1 minute)
    .venv/bin/python scripts/limits_figures.py --structure  # also hostile 64 MiB frames (minutes)
"""

from __future__ import annotations

import subprocess
import sys

CASE = r'''
import json, sys, time
import mcp_sync
from mcp_sync.protocol.frames import decode_line
from mcp_sync.testing import server_command

def status(field):
    for line in open("/proc/self/status"):
        if line.startswith(field):
            return int(line.split()[1]) * 1024

def reset():
    with open("/proc/self/clear_refs", "w") as handle:
        handle.write("5")

command, *args = server_command()
case, *rest = sys.argv[1:]
out = {}
if case == "catalog":
    tools = int(rest[0])
    base = status("VmRSS:"); reset()
    start = time.monotonic()
    with mcp_sync.connect(server="big", command=command, args=[*args, "--extra-tools", str(tools - 5)],
                          protocol="legacy") as session:
        out["connect_s"] = round(time.monotonic() - start, 3)
        out["tools"] = len(session.tools)
        out["peak_growth_mib"] = round((status("VmHWM:") - base) / 2**20, 1)
elif case == "structure":
    body = {"lists": b"[]", "zeros": b"0", "strings": b'"ab"'}[rest[0]]
    count = 64 * 2**20 // (len(body) + 1)
    line = b'{"jsonrpc":"2.0","id":1,"result":{"x":[' + (body + b",") * count + body + b"]}}"
    base = status("VmRSS:"); reset()
    start = time.monotonic()
    decode_line(line)
    out["took_s"] = round(time.monotonic() - start, 2)
    out["peak_growth_mib"] = round((status("VmHWM:") - base) / 2**20, 1)
else:
    session = mcp_sync.connect(server="fake", command=command, args=[*args, "--misbehave"])
    calls = {
        "read 64 MiB reply": ("huge_reply", {"bytes": 64 * 2**20 - 200}),
        "skip 1 GiB reply, id last": ("huge_reply", {"bytes": 2**30}),
        "skip 1 GiB reply, id first": ("huge_reply", {"bytes": 2**30, "id_first": True}),
        "1 GiB with no newline": ("flood", {"bytes": 2**30}),
    }
    tool, arguments = calls[case]
    base = status("VmRSS:"); reset()
    start = time.monotonic()
    try:
        session.call_tool(tool, arguments, timeout_ms=600_000)
    except mcp_sync.McpError as exc:
        out["error"] = str(exc)
    out["call_s"] = round(time.monotonic() - start, 2)
    out["peak_growth_mib"] = round((status("VmHWM:") - base) / 2**20, 1)
    if not session.closed:
        start = time.monotonic()
        session.call_tool("echo", {"message": "x"})
        out["next_call_s"] = round(time.monotonic() - start, 3)
    out["session_closed"] = session.closed
    start = time.monotonic()
    session.close()
    out["close_s"] = round(time.monotonic() - start, 3)
print(json.dumps(out))
'''


def run(*argv: str) -> None:
    done = subprocess.run([sys.executable, "-c", CASE, *argv], capture_output=True, text=True, check=False)
    print(" ".join(argv).ljust(32), done.stdout.strip() or done.stderr.strip()[-500:], flush=True)


def main() -> None:
    for case in ("read 64 MiB reply", "skip 1 GiB reply, id last", "skip 1 GiB reply, id first",
                 "1 GiB with no newline"):
        run(case)
    for tools in ("5", "299", "4096"):
        run("catalog", tools)
    if "--structure" in sys.argv[1:]:
        for kind in ("lists", "zeros", "strings"):
            run("structure", kind)


if __name__ == "__main__":
    main()
