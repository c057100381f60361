#!/usr/bin/env python3
"""Per-call latency over Streamable HTTP, in both protocol eras, against a floor.

    .venv/bin/python scripts/bench_http.py [--calls N] [--rounds R] [--json PATH]

One server, the official Python SDK's own (tests/peers/sdk_server.py, uvicorn on
127.0.0.1, dual-era), in SSE mode and in JSON-response mode. Against it, in one
process and interleaved in turns (A B C ..., B C ... A, ...) so drift is shared out:

  floor-modern    a bare ``httpx`` POST of mcp_sync's own modern tools/call frame,
                  with the same headers, and ``json.loads`` of the reply: the floor
  mcp_sync-modern this package, ``protocol="auto"`` (it negotiates 2026-07-28)
  floor-legacy    the same for the handshake era: the legacy frame, with the session
                  id a bare ``initialize`` got
  mcp_sync-legacy this package, ``protocol="legacy"`` (2025-11-25)
  sdk-blocking    the SDK's client (handshake era) as blocking code uses it: an event
                  loop in a background thread, ``run_coroutine_threadsafe(...).result()``
  sdk-async       the SDK natively: each call timed inside its own event loop

Each turn is `--calls` sequential `echo` calls; the figures are the median and p90
of every call's latency. scripts/bench runs this and shows it in its table. Needs
the dev install (`mcp`, `uvicorn`).
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

import httpx  # noqa: E402

import mcp_sync  # noqa: E402

ARGS = {"message": "hello"}
ACCEPT = "application/json, text/event-stream"


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


def reply_of(response: httpx.Response) -> Any:
    """The JSON-RPC reply in a JSON body or an event stream: the least a client parses."""
    body = response.content
    if response.headers.get("content-type", "").startswith("text/event-stream"):
        for line in body.splitlines():
            if line.startswith(b"data:") and len(line) > 6:
                message = json.loads(line[5:])
                if "id" in message and "method" not in message:
                    return message
        raise RuntimeError("no reply in the stream")
    return json.loads(body)


class Floor:
    """A bare httpx POST of one prepared frame with its headers."""

    def __init__(self, url: str, frame: bytes, headers: dict[str, str]) -> None:
        self.client = httpx.Client(headers={"Accept": ACCEPT, "Content-Type": "application/json"})
        self.url, self.frame, self.headers = url, frame, headers

    def call(self) -> Any:
        reply = reply_of(self.client.post(self.url, content=self.frame, headers=self.headers))
        if "result" not in reply:
            raise RuntimeError(f"the floor's call failed: {reply}")
        return reply

    def close(self) -> None:
        self.client.close()


def modern_floor(url: str) -> Floor:
    """The frame and headers mcp_sync sends for this call, POSTed bare."""
    from mcp_sync.session.core import CLIENT_INFO
    from mcp_sync.session.eras.modern import ModernEra

    path = ModernEra("bench", "2026-07-28", http=True, capabilities={}, client_info=CLIENT_INFO)
    params = {"name": "echo", "arguments": ARGS}
    headers = path.headers("tools/call", params) or {}
    frame = json.dumps(
        {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {**params, "_meta": path._meta}},
        separators=(",", ":"), ensure_ascii=False,
    ).encode()
    return Floor(url, frame, headers)


def legacy_floor(url: str) -> Floor:
    client = httpx.Client(headers={"Accept": ACCEPT, "Content-Type": "application/json"})
    init = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "floor", "version": "0"}}}
    response = client.post(url, json=init)
    reply_of(response)
    session = response.headers.get("mcp-session-id")
    headers = {"MCP-Protocol-Version": "2025-11-25"}
    if session:
        headers["Mcp-Session-Id"] = session
    client.post(url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=headers)
    client.close()
    frame = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                        "params": {"name": "echo", "arguments": ARGS}}, separators=(",", ":")).encode()
    return Floor(url, frame, headers)


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
    modern = mcp_sync.connect_http(server="bench", url=url)
    legacy = mcp_sync.connect_http(server="bench", url=url, protocol="legacy")
    assert (modern.era, legacy.era) == ("modern", "legacy")
    floors = {"floor-modern": modern_floor(url), "floor-legacy": legacy_floor(url)}
    try:
        sdk_call = sdk.session.call_tool

        def blocking() -> Any:
            return asyncio.run_coroutine_threadsafe(sdk_call("echo", ARGS), loop.loop).result()

        runners: dict[str, Callable[[int], list[float]]] = {
            "floor-modern": lambda n: timed(floors["floor-modern"].call, n),
            "mcp_sync-modern": lambda n: timed(lambda: modern.call_tool("echo", ARGS), n),
            "floor-legacy": lambda n: timed(floors["floor-legacy"].call, n),
            "mcp_sync-legacy": lambda n: timed(lambda: legacy.call_tool("echo", ARGS), n),
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
        modern.close()
        legacy.close()
        for floor in floors.values():
            floor.close()
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
    print(f"{'server mode':<12} {'client':<16} {'median ms':>10} {'p90 ms':>8} {'vs floor':>9}")
    for mode, json_response in (("sse", False), ("json", True)):
        with sdk_server(json_response) as url:
            samples = measure(url, args.calls, args.rounds, args.warmup)
        figures = {name: summary(values) for name, values in samples.items()}
        report["modes"][mode] = figures
        for name, fig in figures.items():
            era = "legacy" if name.endswith("legacy") or name.startswith("sdk") else "modern"
            floor = figures[f"floor-{era}"]["median_ms"]
            print(
                f"{mode:<12} {name:<16} {fig['median_ms']:>10.3f} {fig['p90_ms']:>8.3f} "
                f"{fig['median_ms'] / floor:>8.2f}x"
            )
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
