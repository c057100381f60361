#!/usr/bin/env python3
"""How a blocked caller is best woken: the measurement behind ``mcp_sync.session.pending``.

    .venv/bin/python scripts/bench_wakeups.py [--rounds R] [--calls N] [--threads T]

A stripped-down leader/follower client against an echo child (a forked process
that copies stdin to stdout): T caller threads each write one numbered line and
block; one reader thread reads the replies and wakes each caller. Only the wake-up
differs between the rows, run in turns, R rounds, the median shown:

  lock      a ``threading.Lock`` per call, released by the reader (the GIL held)
  eventfd   a per-thread eventfd: os.eventfd_write by the reader (the GIL released),
            a blocking os.eventfd_read by the caller
  efd+poll  the same, non-blocking, the caller in poll() with a timeout (what a
            caller with a deadline needs; mcp_sync used it until a quiet-machine
            measurement of the whole client showed the lock cheaper)
  pipe      a per-thread pipe: os.write / os.read

It prints calls/s, CPU and context switches (voluntary, involuntary) per call.
Linux only (eventfd).
"""

from __future__ import annotations

import _thread
import argparse
import json
import os
import resource
import select
import statistics
import subprocess
import sys
import threading
import time
from typing import Any

KINDS = ("lock", "eventfd", "efd+poll", "pipe")


class Wakeup:
    """One way to wake a blocked caller: ``make`` in the caller's thread, ``wake`` from
    the reader, ``wait`` in the caller."""

    def __init__(self) -> None:
        self.local = threading.local()

    def make(self) -> Any:
        made = self.local.__dict__.get("w")
        if made is None:
            made = self.local.w = self.new()
        return made

    def new(self) -> Any:
        raise NotImplementedError

    def wake(self, w: Any) -> None:
        raise NotImplementedError

    def wait(self, w: Any) -> None:
        raise NotImplementedError


class LockWakeup(Wakeup):
    def make(self) -> Any:
        lock = _thread.allocate_lock()
        lock.acquire()
        return lock

    def wake(self, w: Any) -> None:
        w.release()

    def wait(self, w: Any) -> None:
        w.acquire()


class EventfdWakeup(Wakeup):
    def new(self) -> Any:
        return os.eventfd(0)

    def wake(self, w: Any) -> None:
        os.eventfd_write(w, 1)

    def wait(self, w: Any) -> None:
        os.eventfd_read(w)


class PolledEventfdWakeup(Wakeup):
    def new(self) -> Any:
        fd = os.eventfd(0, os.EFD_NONBLOCK)
        poller = select.poll()
        poller.register(fd, select.POLLIN)
        return fd, poller

    def wake(self, w: Any) -> None:
        os.eventfd_write(w[0], 1)

    def wait(self, w: Any) -> None:
        w[1].poll(5000)
        os.eventfd_read(w[0])


class PipeWakeup(Wakeup):
    def new(self) -> Any:
        return os.pipe()

    def wake(self, w: Any) -> None:
        os.write(w[1], b"x")

    def wait(self, w: Any) -> None:
        os.read(w[0], 1)


WAKEUPS: dict[str, type[Wakeup]] = {
    "lock": LockWakeup, "eventfd": EventfdWakeup, "efd+poll": PolledEventfdWakeup, "pipe": PipeWakeup,
}  # fmt: skip


def child(kind: str, calls: int, threads: int) -> dict[str, float]:
    to_echo_r, to_echo_w = os.pipe()
    from_echo_r, from_echo_w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the echo server
        os.close(to_echo_w)
        os.close(from_echo_r)
        while data := os.read(to_echo_r, 65536):
            os.write(from_echo_w, data)
        os._exit(0)
    os.close(to_echo_r)
    os.close(from_echo_w)
    slots: dict[int, Any] = {}
    write_lock = _thread.allocate_lock()
    wakeup = WAKEUPS[kind]()
    waiter, wake, wait = wakeup.make, wakeup.wake, wakeup.wait

    def reader() -> None:
        rest = b""
        while data := os.read(from_echo_r, 65536):
            *lines, rest = (rest + data).split(b"\n")
            for line in lines:
                wake(slots.pop(int(line)))

    ids = iter(range(1 << 62))

    def call() -> None:
        request_id = next(ids)
        w = waiter()
        slots[request_id] = w
        with write_lock:
            os.write(to_echo_w, b"%d\n" % request_id)
        wait(w)

    def job() -> None:
        for _ in range(calls // threads):
            call()

    threading.Thread(target=reader, daemon=True).start()
    for _ in range(200):
        call()
    before = resource.getrusage(resource.RUSAGE_SELF)
    cpu0 = time.process_time()
    t0 = time.perf_counter()
    workers = [threading.Thread(target=job) for _ in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_SELF)
    n = calls // threads * threads
    os.close(to_echo_w)
    os.waitpid(pid, 0)
    return {
        "rps": n / wall,
        "cpu_us": (time.process_time() - cpu0) / n * 1e6,
        "vcs": (after.ru_nvcsw - before.ru_nvcsw) / n,
        "nvcs": (after.ru_nivcsw - before.ru_nivcsw) / n,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--calls", type=int, default=16000)
    parser.add_argument("--threads", type=int, default=16)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.child:
        print(json.dumps(child(options.child, options.calls, options.threads)))
        return
    results: dict[str, list[dict[str, float]]] = {kind: [] for kind in KINDS}
    for rnd in range(options.rounds):
        order = KINDS[rnd % len(KINDS) :] + KINDS[: rnd % len(KINDS)]
        for kind in order:
            out = subprocess.run(
                [sys.executable, __file__, "--child", kind, "--calls", str(options.calls),
                 "--threads", str(options.threads)],
                capture_output=True, text=True, check=True,
            )  # fmt: skip
            results[kind].append(json.loads(out.stdout))
    print(f"load average {os.getloadavg()[0]:.2f}; {options.threads} threads, median of {options.rounds}")
    print(f"{'wake-up':<10}{'calls/s':>10}{'CPU/call us':>13}{'vol. cs':>9}{'invol. cs':>11}")
    for kind, rows in results.items():
        med = {key: statistics.median(r[key] for r in rows) for key in rows[0]}
        print(f"{kind:<10}{med['rps']:>10,.0f}{med['cpu_us']:>13.1f}{med['vcs']:>9.2f}{med['nvcs']:>11.2f}")


if __name__ == "__main__":
    main()
