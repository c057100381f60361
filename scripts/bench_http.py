#!/usr/bin/env python3
"""Per-call latency over Streamable HTTP: mcp_sync versus the official SDK's client.

    .venv/bin/python scripts/bench_http.py [--calls N] [--rounds R] [--json PATH]

One server, the official Python SDK's own (tests/peers/sdk_server.py, uvicorn on
127.0.0.1), in SSE mode and in JSON-response mode. Against it, in one process and
interleaved in turns (A B C, B C A, C A B, ...) so drift is shared out evenly:

  mcp_sync      this package: connect_http(), then session.call_tool(...)
  sdk-blocking  the SDK as blocking code uses it: its ClientSession on an event
                loop in a background thread, asyncio.run_coroutine_threadsafe(...)
                .result() per call
  sdk-async     the SDK natively: each call timed inside its own event loop

Each turn is `--calls` sequential `echo` calls on an open session; the figures are
the median and p90 of every call's latency. Needs the dev install (`mcp`, `uvicorn`).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Coroutine, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SDK_SERVER = ROOT / "tests" / "peers" / "sdk_server.py"
sys.path.insert(0, str(ROOT))

import mcp_sync  # noqa: E402

ARGS = {"message": "hello"}


@contextmanager
def sdk_server(json_response: bool) -> Iterator[str]:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    argv = [sys.executable, str(SDK_SERVER), "http", "--port", str(port)]
    if json_response:
        argv.append("--json-response")
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("the SDK server did not start") from None
                time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        proc.wait(10)


class LoopThread:
    """An asyncio event loop running on a daemon thread."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        threading.Thread(target=self.loop.run_forever, name="sdk-loop", daemon=True).start()

    def run(self, coro: Coroutine[Any, Any, Any]) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result()


class SdkSession:
    """One SDK session held open by a task (anyio scopes must exit in their task)."""

    session: Any

    async def open(self, url: str) -> None:
        from mcp import ClientSession
        from mcp.client.streamable_http import streamable_http_client

        ready: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._stop = asyncio.Event()

        async def hold() -> None:
            async with (
                streamable_http_client(url) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                await session.list_tools()
                ready.set_result(session)
                await self._stop.wait()

        self._task = asyncio.create_task(hold())
        await asyncio.wait({ready, self._task}, return_when=asyncio.FIRST_COMPLETED)
        if not ready.done():
            self._task.result()
            raise RuntimeError("the SDK session ended during connect")
        self.session = ready.result()

    async def close(self) -> None:
        self._stop.set()
        await self._task

    async def timed_calls(self, n: int) -> list[float]:
        out = []
        for _ in range(n):
            start = time.perf_counter()
            await self.session.call_tool("echo", ARGS)
            out.append(time.perf_counter() - start)
        return out


def timed(call: Callable[[], Any], n: int) -> list[float]:
    out = []
    for _ in range(n):
        start = time.perf_counter()
        call()
        out.append(time.perf_counter() - start)
    return out


def measure(url: str, calls: int, rounds: int, warmup: int) -> dict[str, list[float]]:
    loop = LoopThread()
    sdk = SdkSession()
    loop.run(sdk.open(url))
    session = mcp_sync.connect_http(server="bench", url=url)
    try:
        call_tool = session.call_tool
        sdk_call = sdk.session.call_tool

        def blocking() -> Any:
            return asyncio.run_coroutine_threadsafe(sdk_call("echo", ARGS), loop.loop).result()

        runners: dict[str, Callable[[int], list[float]]] = {
            "mcp_sync": lambda n: timed(lambda: call_tool("echo", ARGS), n),
            "sdk-blocking": lambda n: timed(blocking, n),
            "sdk-async": lambda n: loop.run(sdk.timed_calls(n)),
        }
        names = list(runners)
        for name in names:
            runners[name](warmup)
        samples: dict[str, list[float]] = {name: [] for name in names}
        for r in range(rounds):
            order = names[r % len(names) :] + names[: r % len(names)]
            for name in order:
                samples[name].extend(runners[name](calls))
        return samples
    finally:
        session.close()
        loop.run(sdk.close())


def summary(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    return {
        "median_ms": statistics.median(ordered) * 1000,
        "p90_ms": ordered[int(len(ordered) * 0.9)] * 1000,
        "mean_ms": statistics.fmean(ordered) * 1000,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=200, help="calls per client per turn")
    parser.add_argument("--rounds", type=int, default=6, help="turns per client")
    parser.add_argument("--warmup", type=int, default=50)
    parser.add_argument("--json", metavar="PATH", help="also write the figures here")
    args = parser.parse_args()

    report: dict[str, Any] = {
        "python": sys.version.split()[0],
        "cpus": os.cpu_count(),
        "calls": args.calls * args.rounds,
        "modes": {},
    }
    print(f"echo round trips, {args.calls} x {args.rounds} per client, interleaved")
    print(f"{'server mode':<12} {'client':<14} {'median ms':>10} {'p90 ms':>8} {'vs mcp_sync':>12}")
    for mode, json_response in (("sse", False), ("json", True)):
        with sdk_server(json_response) as url:
            samples = measure(url, args.calls, args.rounds, args.warmup)
        figures = {name: summary(values) for name, values in samples.items()}
        report["modes"][mode] = figures
        base = figures["mcp_sync"]["median_ms"]
        for name, fig in figures.items():
            ratio = fig["median_ms"] / base
            print(
                f"{mode:<12} {name:<14} {fig['median_ms']:>10.3f} {fig['p90_ms']:>8.3f} "
                f"{ratio:>11.2f}x"
            )
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
