"""Django on mcp_sync.Servers: the guide's view in a small project.

``manage.py check`` and ``migrate`` load the project (and build the Servers)
without starting a server; the view answers through Django's test client from
8 threads with one server, and under gunicorn (2 workers, --preload) with one
server per worker and none in the master; nothing is left afterwards.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from frameworks import (
    environment,
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
from support import methods


def manage(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "manage.py", *args], cwd=project, env=environment(project),
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip


def test_django_management_commands_start_no_server(tmp_path: Path) -> None:
    project = make_project(tmp_path, "myapp/views.py", scaffold="django")
    for command in (["check"], ["migrate", "--no-input"]):
        done = manage(project, *command)
        assert done.returncode == 0, done.stdout + done.stderr
    assert "System check identified no issues" in manage(project, "check").stdout
    assert (project / "db.sqlite3").exists()
    assert not marker(project).exists() and servers_of(project) == {}


def test_django_test_client_from_many_threads_uses_one_server(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    project = make_project(tmp_path, "myapp/views.py", scaffold="django", extra=("--log", str(log)))
    done = subprocess.run(
        [sys.executable, "client.py"], cwd=project, env=environment(project),
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report == {"answers": 160, "wrong": []}
    assert methods(log).count("initialize") == 1
    assert methods(log).count("tools/call") == 160
    no_server_left(project)


def test_django_under_gunicorn(tmp_path: Path) -> None:
    project = make_project(tmp_path, "myapp/views.py", scaffold="django")
    argv, port = gunicorn(project, "mysite.wsgi:application", "--workers", "2", "--preload")

    def send(index: int) -> tuple[int, dict[str, object], str]:
        return request(port, "GET", f"/echo?m=message%20{index}")

    with run(argv, project) as running:
        wait_listening(running, port)
        master = running.proc.pid
        workers = wait_for(lambda: workers_of(master) if len(workers_of(master)) == 2 else None, "2 workers")
        assert servers_of(project) == {}
        answers = traffic(send, 80)
        for answer in answers:
            assert (answer.status, answer.body) == (200, {"text": f"message {answer.index}", "tool_error": False})
        served = {a.worker for a in answers}
        assert served <= workers
        assert sorted(servers_of(project).values()) == sorted(served)  # one per worker that served
        assert master not in servers_of(project).values()
        assert stop(running) == 0, running.output()
    no_server_left(project)
