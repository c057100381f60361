"""The bounded pool that runs what the reading thread must not."""

from __future__ import annotations

import threading

from mcp_sync.transports.workers import Workers


def test_jobs_run_on_at_most_max_workers_threads_and_the_backlog_is_bounded() -> None:
    pool = Workers("mcp_sync-test-pool", max_workers=2, backlog=3)
    release = threading.Event()
    started = threading.Semaphore(0)
    ran: list[str] = []

    def blocker() -> None:
        started.release()
        release.wait(10)
        ran.append(threading.current_thread().name)

    try:
        assert pool.submit(blocker) and pool.submit(blocker)
        assert started.acquire(timeout=5) and started.acquire(timeout=5)  # both threads busy
        assert all(pool.submit(lambda: ran.append("queued")) for _ in range(3))
        assert not pool.submit(lambda: ran.append("refused"))  # the backlog is full
        assert pool.busy == 2
        release.set()
    finally:
        release.set()
        pool.close(5)
    assert ran.count("queued") <= 3 and "refused" not in ran
    assert {name for name in ran if name != "queued"} <= {"mcp_sync-test-pool-1", "mcp_sync-test-pool-2"}


def test_a_job_that_raises_does_not_kill_its_worker() -> None:
    pool = Workers("mcp_sync-test-pool", max_workers=1, backlog=4)
    done = threading.Event()

    def boom() -> None:
        raise RuntimeError("job bug")

    try:
        assert pool.submit(boom) and pool.submit(done.set)
        assert done.wait(5)
    finally:
        pool.close(5)


def test_close_drops_queued_jobs_and_refuses_new_ones() -> None:
    pool = Workers("mcp_sync-test-pool", max_workers=1, backlog=4)
    release = threading.Event()
    entered = threading.Event()
    ran: list[int] = []

    def first() -> None:
        entered.set()
        release.wait(10)

    assert pool.submit(first)
    assert entered.wait(5)
    assert pool.submit(lambda: ran.append(1))
    pool.close(0)
    assert not pool.submit(lambda: ran.append(2))
    release.set()
    pool.close(5)
    assert ran == []


def test_a_submitter_may_wait_for_room_in_the_backlog() -> None:
    pool = Workers("mcp_sync-test-pool", max_workers=1, backlog=1)
    release = threading.Event()
    entered = threading.Event()
    ran: list[str] = []

    def first() -> None:
        entered.set()
        release.wait(10)
        ran.append("first")

    try:
        assert pool.submit(first) and entered.wait(5)
        assert pool.submit(lambda: ran.append("queued"))
        assert not pool.submit(lambda: ran.append("refused"), 0.05)  # still full
        threading.Timer(0.1, release.set).start()
        assert pool.submit(lambda: ran.append("waited"), 5.0)
        assert not pool.running_here()
        here: list[bool] = []
        done = threading.Event()
        assert pool.submit(lambda: (here.append(pool.running_here()), done.set()), 5.0)
        assert done.wait(5) and here == [True]
    finally:
        release.set()
        pool.close(5)
    assert ran == ["first", "queued", "waited"]
