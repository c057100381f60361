#!/usr/bin/env python3
"""Where the context switches of many caller threads go, and what the callers' own
scheduling policy changes.

    .venv/bin/python scripts/bench_sched.py [--rounds R] [--calls N] [--threads T] [--policy both|other|batch]

One session against ``scripts/bench_echo_server.py`` (stdlib only). Each round, T
fresh threads make N ``echo`` calls between them, released together; rounds
alternate between callers left at the default policy (``SCHED_OTHER``) and callers
that first put themselves in ``SCHED_BATCH`` (Linux: a thread that is woken then
does not preempt the running one). The session's own threads are never touched.

Per round it takes, per call: calls/s; the client's user and system CPU
(``getrusage``); the callers' voluntary and involuntary context switches
(``RUSAGE_THREAD`` in each caller); the session's reader thread's (from
``/proc/self/task``); and the share of replies the reader thread dispatched
rather than a calling thread (counted by wrapping the session core's
``receive``: one more Python call per reply, on both sides alike). It prints the
median of each over the rounds of each policy. Linux only.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import sys
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import mcp_sync  # noqa: E402
from mcp_sync.session import core as _session  # noqa: E402

ECHO_SERVER = ROOT / "scripts" / "bench_echo_server.py"
ARGS = {"message": "hello"}


class ReplyCounter:
    """Counts the replies dispatched by the reader thread and by everyone else."""

    def __init__(self) -> None:
        self.reader = 0
        self.others = 0
        self._lock = threading.Lock()
        real = _session._Core.receive

        def receive(core: Any, line: bytes) -> None:
            by_reader = threading.current_thread().name.endswith("-reader")
            with self._lock:
                if by_reader:
                    self.reader += 1
                else:
                    self.others += 1
            real(core, line)

        _session._Core.receive = receive  # type: ignore[method-assign]

    def reset(self) -> None:
        with self._lock:
            self.reader = self.others = 0


def task_switches(native_id: int) -> tuple[int, int]:
    fields = {}
    for line in Path(f"/proc/self/task/{native_id}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        fields[key] = value.strip()
    return int(fields["voluntary_ctxt_switches"]), int(fields["nonvoluntary_ctxt_switches"])


def burst(session: mcp_sync.Session, threads: int, calls: int, batch: bool) -> dict[str, float]:
    per_thread = calls // threads
    gate = threading.Barrier(threads + 1)
    lock = threading.Lock()
    callers = [0, 0]

    def run() -> None:
        if batch:
            os.sched_setscheduler(0, os.SCHED_BATCH, os.sched_param(0))
        gate.wait()
        before = resource.getrusage(resource.RUSAGE_THREAD)
        for _ in range(per_thread):
            session.call_tool("echo", ARGS)
        after = resource.getrusage(resource.RUSAGE_THREAD)
        with lock:
            callers[0] += after.ru_nvcsw - before.ru_nvcsw
            callers[1] += after.ru_nivcsw - before.ru_nivcsw

    reader = next(t for t in threading.enumerate() if t.name.endswith("-reader"))
    assert reader.native_id is not None
    workers = [threading.Thread(target=run) for _ in range(threads)]
    for worker in workers:
        worker.start()
    reader0 = task_switches(reader.native_id)
    usage0 = resource.getrusage(resource.RUSAGE_SELF)
    gate.wait()
    t0 = time.perf_counter()
    for worker in workers:
        worker.join()
    wall = time.perf_counter() - t0
    usage = resource.getrusage(resource.RUSAGE_SELF)
    reader1 = task_switches(reader.native_id)
    n = per_thread * threads
    return {
        "calls/s": n / wall,
        "user us": (usage.ru_utime - usage0.ru_utime) / n * 1e6,
        "system us": (usage.ru_stime - usage0.ru_stime) / n * 1e6,
        "callers vol": callers[0] / n,
        "callers invol": callers[1] / n,
        "reader vol": (reader1[0] - reader0[0]) / n,
        "reader invol": (reader1[1] - reader0[1]) / n,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=6, help="rounds per policy (default 6)")
    parser.add_argument("--calls", type=int, default=16000, help="calls per round (default 16000)")
    parser.add_argument("--threads", type=int, default=16, help="caller threads (default 16)")
    parser.add_argument("--policy", choices=("both", "other", "batch"), default="both",
                        help="run both policies in turns (default), or only one")  # fmt: skip
    options = parser.parse_args()
    if not hasattr(os, "SCHED_BATCH"):
        sys.exit("bench_sched: needs Linux (SCHED_BATCH, RUSAGE_THREAD)")
    counter = ReplyCounter()
    policies = {"both": ("SCHED_OTHER", "SCHED_BATCH"), "other": ("SCHED_OTHER",), "batch": ("SCHED_BATCH",)}[
        options.policy
    ]
    rows: dict[str, list[dict[str, float]]] = {policy: [] for policy in policies}
    with mcp_sync.connect(server="sched", command=sys.executable, args=[str(ECHO_SERVER)]) as session:
        burst(session, options.threads, min(options.calls, 3200), batch=False)  # warm up
        for r in range(options.rounds):
            for policy in policies[:: 1 if r % 2 == 0 else -1]:
                counter.reset()
                row = burst(session, options.threads, options.calls, batch=policy == "SCHED_BATCH")
                row["by reader %"] = 100 * counter.reader / max(1, counter.reader + counter.others)
                rows[policy].append(row)
    keys = list(rows[policies[0]][0])
    print(f"{options.threads} threads, {options.calls} calls per round, median of {options.rounds} rounds")
    print(f"{'':>16}" + "".join(f"{key:>14}" for key in keys))
    for policy, samples in rows.items():
        cells = "".join(f"{statistics.median(s[key] for s in samples):>14,.2f}" for key in keys)
        print(f"{policy:>16}{cells}")
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
