"""Celery on mcp_sync.Servers: the guide's tasks.py in a real worker.

The prefork pool with concurrency 2 and a private Redis server (started by the
test) as broker and result backend: the main worker process imports tasks.py (and builds the Servers) and
starts no server; each pool process starts its own when it starts
(``worker_process_init``); tasks call tools through it; the worker's warm
shutdown leaves no server behind.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from frameworks import (
    children,
    environment,
    make_project,
    no_server_left,
    redis_server,
    run,
    servers_of,
    stop,
    wait_for,
)


def test_celery_prefork_pool_processes_each_get_a_server(tmp_path: Path) -> None:
    project = make_project(tmp_path, "tasks.py", scaffold="celery")
    with redis_server(tmp_path) as broker:
        _run_worker_and_client(project, broker)
    no_server_left(project)


def _run_worker_and_client(project: Path, broker: str) -> None:
    env = environment(project)
    env["MCP_SYNC_TEST_BROKER"] = broker
    argv = [
        sys.executable, "-m", "celery", "-A", "tasks", "worker", "--pool", "prefork", "--concurrency", "2",
        "--loglevel", "INFO", "--without-gossip", "--without-mingle", "--without-heartbeat",
        "--hostname", "mcp-sync-test@localhost",
    ]  # fmt: skip
    with run(argv, project, env) as running:
        wait_for(lambda: "ready." in running.output() or running.proc.poll() is not None, "the worker")
        assert running.proc.poll() is None, running.output()
        main = running.proc.pid
        pool = wait_for(lambda: children(main) if len(children(main)) >= 2 else None, "2 pool processes")
        servers = wait_for(lambda: servers_of(project) if len(servers_of(project)) == 2 else None, "2 servers")
        # One server in each pool process, none in the main worker process.
        assert sorted(servers.values()) == sorted(pool), (servers, pool)

        done = subprocess.run(
            [sys.executable, "client.py"], cwd=project, env=env,
            capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
        assert done.returncode == 0, done.stdout + done.stderr + running.output()
        assert json.loads(done.stdout.strip().splitlines()[-1]) == {"results": 16, "wrong": []}
        assert servers_of(project) == servers  # the same two servers served every task

        assert stop(running) == 0, running.output()
