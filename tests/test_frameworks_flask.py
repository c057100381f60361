"""Flask under gunicorn, on mcp_sync.Servers: the guide's app.py in real worker processes.

2 sync workers with --preload (the app, and so the Servers, is built in the
master and forked), and the same with --threads 4. Concurrent requests all
answer correctly; each worker has its own server and the master none; the
server behind one worker is killed mid-traffic and later requests succeed;
after gunicorn stops no server is left.
"""

from __future__ import annotations

import os
import signal
import threading
from pathlib import Path

import pytest
from frameworks import (
    Answer,
    gunicorn,
    make_project,
    marker,
    no_server_left,
    request,
    run,
    servers_of,
    stop,
    traffic,
    wait_for,
    wait_listening,
    workers_of,
)


def check_answers(answers: list[Answer]) -> None:
    for answer in answers:
        assert answer.status == 200, answer
        assert answer.body == {"text": f"message {answer.index}", "tool_error": False}, answer


@pytest.mark.parametrize("threads", [1, 4], ids=["sync-preload", "threads-4"])
def test_flask_under_gunicorn_heals_a_killed_server(tmp_path: Path, threads: int) -> None:
    project = make_project(tmp_path, "app.py", scaffold="flask")
    options = ["--workers", "2", "--preload"] + (["--threads", str(threads)] if threads > 1 else [])
    argv, port = gunicorn(project, "serve:application", *options)

    def send(index: int) -> tuple[int, dict[str, object], str]:
        return request(port, "POST", "/echo", {"message": f"message {index}"})

    with run(argv, project) as running:
        wait_listening(running, port)
        master = running.proc.pid
        workers = wait_for(lambda: workers_of(master) if len(workers_of(master)) == 2 else None, "2 workers")
        # --preload built the app, and the Servers, in the master: nothing started anywhere.
        assert not marker(project).exists() and servers_of(project) == {}

        # Concurrent traffic: every answer right, both workers with a server of their own.
        # (A worker still booting may leave the first requests to the other.)
        answers: list[Answer] = []
        for _ in range(10):
            answers += traffic(send, 60)
            if {a.worker for a in answers} == workers:
                break
        check_answers(answers)
        assert {a.worker for a in answers} == workers, "both workers should have served"
        servers = servers_of(project)
        assert sorted(servers.values()) == sorted(workers), servers  # one each, none in the master

        # Kill the server behind one worker while requests keep coming.
        victim_worker = min(workers)
        (victim,) = [pid for pid, parent in servers.items() if parent == victim_worker]
        progress = threading.Event()
        killer = threading.Thread(target=lambda: (progress.wait(60), os.kill(victim, signal.SIGKILL)))
        killer.start()
        answers = traffic(send, 200, progress=progress, after=40)
        killer.join()
        failed = [a for a in answers if a.status != 200]
        # Only calls under way on the dead server (or sent to it before its end was
        # noticed) fail, as they would on a plain session; each worker thread has at
        # most one such call, and one more in the moment before the end is seen.
        assert all(a.status == 502 and a.body["kind"] == "connection_closed" for a in failed), failed
        assert {a.worker for a in failed} <= {victim_worker}
        assert len(failed) <= 2 * threads, failed
        check_answers([a for a in answers if a.status == 200])

        # Later requests all succeed, the victim's worker on a fresh server.
        later: list[Answer] = []
        for _ in range(5):
            later += traffic(send, 60)
            if sum(a.worker == victim_worker for a in later) >= 5:
                break
        check_answers(later)
        assert sum(a.worker == victim_worker for a in later) >= 5
        servers = servers_of(project)
        assert victim not in servers and sorted(servers.values()) == sorted(workers), servers

        assert stop(running) == 0, running.output()
    no_server_left(project)
