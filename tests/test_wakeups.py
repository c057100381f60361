"""Wake-ups and writes at the limit: a blocked caller is woken once, through its
entry's lock; a frame queued while stdin is busy leaves with the holder of
stdin, never through a hand-off to the writer thread; waiting opens no
descriptor and works in a forked child; callers' pipe reads and writes keep
the GIL and behave as the os functions do (which stand in without ctypes)."""

from __future__ import annotations

import concurrent.futures
import gc
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from support import connect_fake

from mcp_sync.session import pending as _pending


def _fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_frames_queued_while_stdin_is_busy_leave_with_its_holder(monkeypatch: pytest.MonkeyPatch) -> None:
    from mcp_sync.transports import stdio as _stdio

    with connect_fake() as session:
        stdin = session._core.transport._stdin  # type: ignore[union-attr]
        stdin_fd = stdin._fd
        writers: list[str] = []
        real_write, callers_write = os.write, stdin._write

        def write(fd: int, data: Any) -> int:  # the writer thread's
            if fd == stdin_fd:
                writers.append(threading.current_thread().name)
            return real_write(fd, data)

        def direct(fd: int, data: bytes, size: int) -> int:  # a caller's
            writers.append(threading.current_thread().name)
            return callers_write(fd, data, size)

        monkeypatch.setattr(_stdio.os, "write", write)
        monkeypatch.setattr(stdin, "_write", direct)
        answers: list[str] = []

        def caller(index: int) -> None:
            for n in range(40):
                message = f"{index}-{n}"
                answers.append(session.call_tool("echo", {"message": message}).content[0]["text"] == message)

        threads = [threading.Thread(target=caller, args=(i,)) for i in range(16)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
        monkeypatch.undo()
    assert answers == [True] * 640
    # The pipe never filled: no frame needed the writer thread.
    assert [name for name in writers if name.endswith("-writer")] == []
    assert 0 < len(writers) <= 640


def test_the_main_threads_frames_still_leave_while_others_hold_stdin() -> None:
    with connect_fake() as session:
        stop = threading.Event()

        def hammer() -> None:
            while not stop.is_set():
                session.call_tool("echo", {"message": "other"})

        others = [threading.Thread(target=hammer) for _ in range(8)]
        for thread in others:
            thread.start()
        try:
            for n in range(300):
                text = session.call_tool("echo", {"message": f"main{n}"}, timeout_ms=20_000).content[0]["text"]
                assert text == f"main{n}"
        finally:
            stop.set()
            for thread in others:
                thread.join(30)


def test_a_blocked_waiter_is_woken_by_another_thread() -> None:
    entry = _pending._Pending()
    threading.Timer(0.05, entry._arrived, args=("answer",)).start()
    started = time.monotonic()
    assert entry.wait(10.0)
    assert time.monotonic() - started < 5.0
    assert entry.outcome() == "answer"
    assert entry.done() and entry.wait(0.0)  # stays completed


def test_several_threads_may_wait_on_one_entry() -> None:
    entry = _pending._Pending()
    woken: list[bool] = []
    threads = [threading.Thread(target=lambda: woken.append(entry.wait(20.0))) for _ in range(4)]
    for thread in threads:
        thread.start()
    time.sleep(0.1)  # let them block (a test's pacing, not synchronisation in the library)
    entry._arrived("all")
    for thread in threads:
        thread.join(30)
    assert woken == [True] * 4
    assert entry.outcome() == "all"


def test_a_wait_that_timed_out_leaves_the_entry_usable() -> None:
    entry = _pending._Pending()
    started = time.monotonic()
    assert not entry.wait(0.2)  # nobody completes it: a timeout, not a false result
    assert time.monotonic() - started >= 0.15
    entry._failed(ValueError("boom"))
    assert entry.wait(0.0) and entry.wait(5.0)  # the lock was given back for the next wait
    with pytest.raises(ValueError, match="boom"):
        entry.outcome()


def test_waiting_opens_no_descriptor() -> None:
    gc.collect()
    before = _fds()

    def waits() -> None:
        entry = _pending._Pending()
        threading.Timer(0.02, entry._arrived, args=(1,)).start()
        assert entry.wait(10.0)

    threads = [threading.Thread(target=waits) for _ in range(20)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert _fds() == before


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_forked_child_waits_on_its_own_entries() -> None:
    read_end, write_end = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover - runs in the child
        try:
            entry = _pending._Pending()
            threading.Timer(0.02, entry._arrived, args=(1,)).start()
            os.write(write_end, b"ok" if entry.wait(10.0) and entry.outcome() == 1 else b"stuck")
        finally:
            os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as pipe:
        report = pipe.read()
    os.waitpid(child, 0)
    assert report == b"ok"
    entry = _pending._Pending()
    threading.Timer(0.02, entry._arrived, args=(2,)).start()
    assert entry.wait(10.0) and entry.outcome() == 2


def test_a_lone_caller_rarely_reads_an_empty_stdout(monkeypatch: pytest.MonkeyPatch) -> None:
    # A leader reads before polling only while such reads find the reply
    # waiting; after one that finds stdout empty the next _PEEK_AFTER_MISS
    # leaders poll first. Here the server answers on its own time, so at most
    # one call in _PEEK_AFTER_MISS + 1 pays for an empty read.
    from mcp_sync.transports import stdio as _stdio

    calls = 340
    with connect_fake() as session:
        transport = session._core.transport
        stdout_fd = transport._stdout_fd  # type: ignore[union-attr]
        empty: list[int] = []
        reads: list[int] = []
        lines = transport._lines  # type: ignore[union-attr]
        real_read = lines.read

        def read(fd: int, size: int) -> bytes:
            reads.append(fd)
            try:
                return real_read(fd, size)
            except BlockingIOError:
                if fd == stdout_fd:
                    empty.append(fd)
                raise

        monkeypatch.setattr(lines, "read", read)
        for n in range(calls):
            assert session.call_tool("echo", {"message": str(n)}).content[0]["text"] == str(n)
        monkeypatch.undo()
    assert len(reads) >= calls  # (the reads went through the stand-in)
    assert len(empty) <= calls // (_stdio._PEEK_AFTER_MISS + 1) + 1


class _CountingPoll:
    """Stands in for a leader's poll (the transport keeps the bound ``poll``)."""

    def __init__(self, poll: Any) -> None:
        self.real = poll
        self.calls = 0

    def __call__(self, timeout: int) -> Any:
        self.calls += 1
        return self.real(timeout)


def test_a_reply_already_waiting_is_read_without_a_poll(monkeypatch: pytest.MonkeyPatch) -> None:
    # As on a busy or one-CPU machine, where the server runs while we write:
    # each frame's write returns only once the reply is in stdout. Once the
    # leaders that poll after a miss (the connect's own reads may have met
    # one) have passed, each reads its reply without polling.
    import select

    from mcp_sync.transports import stdio as _stdio

    with connect_fake() as session:
        transport = session._core.transport
        stdout_fd = transport._stdout_fd  # type: ignore[union-attr]
        stdin_fd = transport._stdin._fd  # type: ignore[union-attr]
        counting = _CountingPoll(transport._lead_poll)  # type: ignore[union-attr]
        monkeypatch.setattr(transport, "_lead_poll", counting)
        real_write = transport._stdin._write  # type: ignore[union-attr]
        ready = select.poll()
        ready.register(stdout_fd, select.POLLIN)

        def write(fd: int, data: bytes, size: int) -> int:
            written = real_write(fd, data, size)
            if fd == stdin_fd:
                assert ready.poll(10_000), "the fake server did not answer within 10 s"
            return written

        monkeypatch.setattr(transport._stdin, "_write", write)  # type: ignore[union-attr]
        settle = _stdio._PEEK_AFTER_MISS + 1
        for n in range(settle + 50):
            if n == settle:
                counting.calls = 0
            assert session.call_tool("echo", {"message": str(n)}).content[0]["text"] == str(n)
        monkeypatch.undo()
    assert counting.calls == 0


def _pending_call(session: Any) -> Any:
    """A call left pending (a 10 s sleep), its frame written by the time this
    returns: submitted from a thread of its own, which writes it itself (the
    main thread's frames go through the writer thread, which could still
    hold stdin as the caller's next calls are sent)."""
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(session.submit_tool, "sleep", {"ms": 10_000}).result()


def test_a_lone_caller_keeps_stdout_between_calls_and_hands_it_back_when_others_wait() -> None:
    # A lone caller keeps stdout for a moment after each call (it is usually
    # back sooner); its calls are all answered, whether the next comes before
    # or after that moment. Once another call waits for a reply that nobody
    # reads for, the caller hands stdout back: that reply arrives through the
    # reader thread although no thread reads for it (wait() never reads).
    with connect_fake() as session:
        for n in range(200):
            assert session.call_tool("echo", {"message": str(n)}).content[0]["text"] == str(n)
            if n % 50 == 49:
                time.sleep(0.02)  # past the lease: the reader thread has stdout again
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            # Submitted from a thread that writes it itself and never waits.
            pending = pool.submit(session.submit_tool, "sleep", {"ms": 200}).result()
        for n in range(3):
            assert session.call_tool("echo", {"message": str(n)}).content[0]["text"] == str(n)
        done, _ = concurrent.futures.wait([pending], timeout=10)
        assert done == {pending} and pending.result(0).is_error is False


def test_a_leader_reads_once_more_while_other_calls_wait() -> None:
    # Its own reply in and another call still pending: one more read before
    # it hands stdout back, so that replies already there are settled by it
    # rather than by the reader thread.
    with connect_fake() as session:
        transport: Any = session._core.transport
        real = transport._lines.read
        reads = [0]

        def counting(fd: int, count: int) -> bytes:
            if threading.current_thread() is threading.main_thread():
                reads[0] += 1
            return real(fd, count)  # type: ignore[no-any-return]

        def calls(n: int) -> int:
            reads[0] = 0
            for i in range(n):
                assert session.call_tool("echo", {"message": str(i)}).content[0]["text"] == str(i)
            return reads[0]

        transport._lines.read = counting
        try:
            alone = calls(50)
            pending = _pending_call(session)
            beside = calls(50)
            pending.cancel()
        finally:
            transport._lines.read = real
        # Alone: one read per call, and one more per miss of a read before
        # the poll (at most one call in _PEEK_AFTER_MISS + 1). Beside the
        # pending call: two per call (a call that found stdin busy goes the
        # slower way, without the read ahead: a few are allowed for).
        assert alone <= 60
        assert beside >= 90


def test_the_gil_keeping_pipe_io_behaves_as_os_reads_and_writes(tmp_path: Path) -> None:
    from mcp_sync.transports import fdio as _fdio

    write, read = _fdio.held_write(), _fdio.held_reader(64)
    if sys.platform.startswith("linux"):  # libc's, through ctypes
        assert write is not _fdio.plain_write and read is not os.read
    r, w = os.pipe()
    try:
        os.set_blocking(r, False)
        os.set_blocking(w, False)
        with pytest.raises(BlockingIOError):
            read(r, 64)  # empty: as os.read says
        assert write(w, b"hello\n", 6) == 6
        assert read(r, 64) == b"hello\n"
        assert write(w, b"x" * 100, 100) == 100
        assert read(r, 1000) == b"x" * 64  # never more than its buffer
        assert read(r, 10) == b"x" * 10
        assert read(r, 64) == b"x" * 26
        block = b"y" * 4096
        while write(w, block, len(block)) > 0:
            pass  # until full: then nothing is written, and it says so
        assert write(w, block, len(block)) < 0
        os.close(r)
        r = -1
        assert write(w, b"z\n", 2) < 0  # broken (Python ignores SIGPIPE)
    finally:
        for fd in (r, w):
            if fd >= 0:
                os.close(fd)
    r, w = os.pipe()
    os.close(w)
    try:
        os.set_blocking(r, False)
        assert read(r, 64) == b""  # the end
    finally:
        os.close(r)
    folder = os.open(tmp_path, os.O_RDONLY)
    try:
        with pytest.raises(IsADirectoryError):  # any other failure: os.read's own error
            read(folder, 64)
    finally:
        os.close(folder)


def test_without_ctypes_the_os_functions_stand_in(monkeypatch: pytest.MonkeyPatch) -> None:
    from mcp_sync.transports import fdio as _fdio

    monkeypatch.setattr(_fdio, "_libc", False)
    assert _fdio.held_write() is _fdio.plain_write
    assert _fdio.held_reader(64) is os.read
    r, w = os.pipe()
    try:
        os.set_blocking(w, False)
        assert _fdio.plain_write(w, b"ok", 2) == 2
        while _fdio.plain_write(w, b"y" * 4096, 4096) > 0:
            pass
        assert _fdio.plain_write(w, b"y", 1) < 0
    finally:
        os.close(r)
        os.close(w)


def test_an_audit_hook_that_refuses_ctypes_gets_the_os_functions() -> None:
    # Audit hooks cannot be removed, so this runs in a process of its own.
    code = (
        "import os, sys\n"
        "def hook(event, args):\n"
        "    if event.startswith('ctypes.'):\n"
        "        raise RuntimeError('no ctypes here')\n"
        "sys.addaudithook(hook)\n"
        "from mcp_sync.transports import fdio as _fdio\n"
        "assert _fdio.held_write() is _fdio.plain_write\n"
        "assert _fdio.held_reader(64) is os.read\n"
        "print('ok')\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False)
    assert done.stdout.strip() == "ok", done.stderr


def test_the_plain_path_is_forced_by_its_switch(monkeypatch: pytest.MonkeyPatch) -> None:
    # MCP_SYNC_PLAIN_STDIO=1: what systems without epoll run (a blocking
    # reader thread reads every reply; callers never read for themselves),
    # with the os functions in place of ctypes. Calls from many threads are
    # still all answered.
    from mcp_sync.transports import fdio as _fdio

    monkeypatch.setenv("MCP_SYNC_PLAIN_STDIO", "1")
    with connect_fake() as session:
        transport: Any = session._core.transport
        assert transport._epoll is None and transport.leader is transport
        assert transport._stdin._write is _fdio.plain_write
        assert transport._lines.read is os.read
        answers: list[bool] = []

        def caller(index: int) -> None:
            for n in range(20):
                message = f"{index}-{n}"
                answers.append(session.call_tool("echo", {"message": message}).content[0]["text"] == message)

        threads = [threading.Thread(target=caller, args=(i,)) for i in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(30)
        assert answers == [True] * 160
