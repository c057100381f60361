#!/usr/bin/env python3
"""A/B two versions of mcp_sync in one run: this working tree against a git ref.

    .venv/bin/python scripts/bench_ab.py REF [--rounds R] [--calls N] [--no-http] [--threads T] [--busy]

REF's ``mcp_sync/`` is exported (``git archive``) into a temporary folder; each
round then runs one child process per side, alternating which goes first, so
drift on a busy machine is shared out. Each child connects, warms up, and makes
``--calls`` sequential ``echo`` calls over stdio (against
``scripts/bench_echo_server.py``, stdlib only) and, unless ``--no-http``, over
Streamable HTTP in the 2026-07-28 era (against the official SDK's server,
``tests/peers/sdk_server.py``, JSON-response mode). It reports the median
latency and the client's CPU time per call (``time.process_time``, which counts
every thread of the client process). With ``--threads T`` (e.g. 16) each side
also makes ``--calls`` calls from T threads released together over stdio and
reports calls/s, CPU and context switches (``getrusage``, voluntary and not,
and each kind alone: the voluntary ones are the wake-ups, the involuntary ones
mostly the machine's load) per call. With ``--busy`` each side also makes
``--calls`` / 5 sequential stdio calls while another thread of the client
spins in a ``while`` loop (wanting the GIL all the time), and reports their
median and mean latency. The table shows the median over rounds of each figure and the ratio
this tree / REF.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
ECHO_SERVER = ROOT / "scripts" / "bench_echo_server.py"
SDK_SERVER = ROOT / "tests" / "peers" / "sdk_server.py"

CHILD = r"""
import json, resource, statistics, sys, threading, time
import mcp_sync
mode, calls, target = sys.argv[1], int(sys.argv[2]), sys.argv[3]
if mode.startswith("threads"):
    threads = int(mode[len("threads"):])
    session = mcp_sync.connect(server="ab", command=sys.executable, args=[target])
    with session:
        def job(n):
            for _ in range(n):
                session.call_tool("echo", {"message": "hello"})
        def burst(n):
            gate = threading.Barrier(threads + 1)
            def run():
                gate.wait()
                job(n // threads)
            workers = [threading.Thread(target=run) for _ in range(threads)]
            for worker in workers:
                worker.start()
            gate.wait()
            t0 = time.perf_counter()
            for worker in workers:
                worker.join()
            return time.perf_counter() - t0
        burst(min(800, calls))
        usage0, cpu0 = resource.getrusage(resource.RUSAGE_SELF), time.process_time()
        wall = burst(calls)
        cpu, usage = time.process_time() - cpu0, resource.getrusage(resource.RUSAGE_SELF)
    n = calls // threads * threads
    switches = usage.ru_nvcsw + usage.ru_nivcsw - usage0.ru_nvcsw - usage0.ru_nivcsw
    voluntary = usage.ru_nvcsw - usage0.ru_nvcsw
    print(json.dumps({"calls_per_s": n / wall, "cpu_us": cpu / n * 1e6, "switches": switches / n,
                      "voluntary": voluntary / n, "involuntary": (switches - voluntary) / n,
                      "file": mcp_sync.__file__}))
    sys.exit(0)
if mode in ("stdio", "busy"):
    session = mcp_sync.connect(server="ab", command=sys.executable, args=[target])
else:
    session = mcp_sync.connect(server="ab", url=target)
spinning = True
def spin():  # busy: another thread of the process wants the GIL all the time
    while spinning:
        pass
with session:
    for _ in range(min(500, calls)):
        session.call_tool("echo", {"message": "hello"})
    spinner = threading.Thread(target=spin)
    if mode == "busy":
        spinner.start()
    times = []
    cpu0 = time.process_time()
    for _ in range(calls):
        t0 = time.perf_counter()
        session.call_tool("echo", {"message": "hello"})
        times.append(time.perf_counter() - t0)
    cpu = time.process_time() - cpu0
    spinning = False
    if mode == "busy":
        spinner.join()
print(json.dumps({"p50_us": statistics.median(times) * 1e6, "cpu_us": cpu / calls * 1e6,
                  "mean_us": statistics.mean(times) * 1e6, "file": mcp_sync.__file__}))
"""


KEYS = {"stdio": ("p50_us", "cpu_us"), "http": ("p50_us", "cpu_us"), "busy": ("p50_us", "mean_us"),
        "threads": ("calls_per_s", "cpu_us", "switches", "voluntary", "involuntary")}  # fmt: skip


def export(ref: str, into: Path) -> Path:
    archive = subprocess.run(["git", "archive", ref, "mcp_sync"], cwd=ROOT, capture_output=True, check=True)
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive.stdout, check=True)
    return into


def child(tree: Path, mode: str, calls: int, target: str) -> dict[str, Any]:
    env = dict(os.environ, PYTHONPATH=str(tree))
    out = subprocess.run(
        [sys.executable, "-c", CHILD, mode, str(calls), target],
        env=env, cwd=tree, capture_output=True, text=True, check=False, timeout=600,
    )
    if out.returncode != 0:
        sys.exit(f"bench_ab: the {mode} child for {tree} failed:\n{out.stderr}")
    result: dict[str, Any] = json.loads(out.stdout)
    if not result["file"].startswith(str(tree)):
        sys.exit(f"bench_ab: the child imported {result['file']}, not the tree under test {tree}")
    return result


def sdk_http_server() -> tuple[subprocess.Popen[bytes], str]:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    proc = subprocess.Popen(
        [sys.executable, str(SDK_SERVER), "http", "--port", str(port), "--json-response"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return proc, f"http://127.0.0.1:{port}/mcp"
        except OSError:
            if proc.poll() is not None:
                sys.exit("bench_ab: the SDK's HTTP server exited at start")
            time.sleep(0.1)  # polling a port that is not open yet
    proc.kill()
    sys.exit("bench_ab: the SDK's HTTP server did not open its port within 60 s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("ref", help="the git ref to compare against (e.g. a commit before a change)")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--calls", type=int, default=3000)
    parser.add_argument("--no-http", action="store_true")
    parser.add_argument("--threads", type=int, default=0, help="also T threads at once over stdio")
    parser.add_argument("--busy", action="store_true",
                        help="also sequential stdio calls while another thread of the client spins")  # fmt: skip
    options = parser.parse_args()
    modes = ["stdio"] if options.no_http else ["stdio", "http"]
    if options.busy:
        modes.append("busy")
    if options.threads > 1:
        modes.append(f"threads{options.threads}")
    with tempfile.TemporaryDirectory() as tmp:
        trees = {"this": ROOT, options.ref: export(options.ref, Path(tmp))}
        server = sdk_http_server() if "http" in modes else None
        try:
            targets = {"stdio": str(ECHO_SERVER), "busy": str(ECHO_SERVER), "http": server[1] if server else "",
                       f"threads{options.threads}": str(ECHO_SERVER)}  # fmt: skip
            figures: dict[tuple[str, str, str], list[float]] = {}
            for rnd in range(options.rounds):
                order = list(trees) if rnd % 2 == 0 else list(reversed(trees))
                for mode in modes:
                    for side in order:
                        calls = options.calls if mode not in ("http", "busy") else max(300, options.calls // 5)
                        got = child(trees[side], mode, calls, targets[mode])
                        for key in KEYS[mode[:7]]:
                            figures.setdefault((mode, side, key), []).append(got[key])
                print(f"round {rnd + 1}/{options.rounds} done", file=sys.stderr)
        finally:
            if server is not None:
                server[0].kill()
                server[0].wait()
    print(f"load average {os.getloadavg()[0]:.2f} after the run")
    print(f"{'figure':<22}{'this tree':>12}{options.ref[:12]:>14}{'ratio':>9}")
    for mode in modes:
        for key in KEYS[mode[:7]]:
            this = statistics.median(figures[(mode, "this", key)])
            base = statistics.median(figures[(mode, options.ref, key)])
            print(f"{mode + ' ' + key:<22}{this:>12.1f}{base:>14.1f}{this / base:>9.3f}")


if __name__ == "__main__":
    main()
