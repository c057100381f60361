"""Checks of the test infrastructure itself (conftest.py, tests/peers/).

Nothing here imports mcp_sync: these tests say whether the peers and helpers the rest of
the suite relies on work, so a red test here points at the environment, not the library.
The wire exchanges are raw JSON-RPC written by hand.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
import threading
import time
import urllib.request
import zipfile
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from conftest import (
    HEARTBEAT_MAX_GAP,
    NPM_PEERS,
    Heartbeat,
    assert_no_process_left,
    descendant_pids,
    is_alive,
    listening_addresses,
    peer_bin,
    pids_in_group,
)

INITIALIZE: dict[str, Any] = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "mcp-sync-infra-test", "version": "0"},
    },
}

# Tool counts of the pinned versions (tests/peers/package.json); a change means the pins
# moved and tests/peers/NOTES.md and /work/shared/PEERS.md facts need re-checking.
EXPECTED_TOOLS = {"everything": 13, "filesystem": 14, "memory": 9, "sdk": 5}


def _stdio_exchange(argv: list[str], env: dict[str, str]) -> tuple[dict[str, Any], list[str]]:
    """initialize + initialized + tools/list over stdio; return (init result, tool names).

    Closes stdin afterwards and checks the server's whole process group is gone.
    """
    proc = subprocess.Popen(
        argv,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
        start_new_session=True,
    )
    assert proc.stdin is not None and proc.stdout is not None
    try:

        def send(message: dict[str, Any]) -> None:
            assert proc.stdin is not None
            proc.stdin.write(json.dumps(message).encode() + b"\n")
            proc.stdin.flush()

        def reply_to(request_id: int) -> dict[str, Any]:
            # Skip notifications (server-everything sends tools/list_changed early).
            assert proc.stdout is not None
            while line := proc.stdout.readline():
                frame = json.loads(line)
                if frame.get("id") == request_id:
                    result: dict[str, Any] = frame["result"]
                    return result
            raise AssertionError(f"stdout closed before the reply to {request_id}")

        send(INITIALIZE)
        init = reply_to(1)
        send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        send({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
        tools = reply_to(2)
        assert "nextCursor" not in tools
        proc.stdin.close()
        # server-everything takes ~350 ms to exit after initialized (a pending timer).
        assert proc.wait(10) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stdout.close()
    assert_no_process_left(proc.pid)  # int: the whole process group
    return init, [tool["name"] for tool in tools["tools"]]


def _child_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    # A small environment like the one mcp_sync gives its children.
    keep = ("PATH", "HOME", "LANG", "TMPDIR")
    return {k: v for k, v in os.environ.items() if k in keep} | (extra or {})


@pytest.mark.peer
@pytest.mark.parametrize("name", sorted(NPM_PEERS))
def test_npm_peer_is_installed(name: str) -> None:
    path = peer_bin(name)
    assert os.access(path.resolve(), os.X_OK), f"{path} is not executable"


@pytest.mark.peer
@pytest.mark.parametrize("name", sorted(NPM_PEERS))
def test_npm_peer_answers_over_stdio(name: str, tmp_path: Path) -> None:
    argv = [str(peer_bin(name))]
    env = _child_env()
    if name == "filesystem":
        argv.append(str(tmp_path))
    elif name == "memory":
        env["MEMORY_FILE_PATH"] = str(tmp_path / "memory.jsonl")
    init, tools = _stdio_exchange(argv, env)
    assert init["protocolVersion"] == "2025-06-18"
    assert isinstance(init["capabilities"]["tools"], dict)
    assert len(tools) == EXPECTED_TOOLS[name]


def test_sdk_peer_answers_over_stdio(sdk_stdio_cmd: list[str]) -> None:
    init, tools = _stdio_exchange(sdk_stdio_cmd, _child_env())
    assert init["serverInfo"]["name"] == "sdk-peer"
    assert tools == ["echo", "add", "fail", "structured", "sleep", "forecast", "connect_account"]


def _post_initialize(url: str) -> tuple[str, str | None, dict[str, Any]]:
    """POST initialize; return (content type, Mcp-Session-Id, the JSON-RPC reply)."""
    request = urllib.request.Request(
        url,
        data=json.dumps(INITIALIZE).encode(),
        method="POST",
        headers={
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
        },
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        content_type = response.headers.get_content_type()
        session_id = response.headers.get("Mcp-Session-Id")
        body = response.read().decode()
    if content_type == "application/json":
        return content_type, session_id, json.loads(body)
    assert content_type == "text/event-stream", content_type
    # Minimal SSE: each event's data lines; skip priming events (an id with empty data).
    datas = []
    for event in body.replace("\r\n", "\n").split("\n\n"):
        data = "\n".join(
            line[5:].removeprefix(" ") for line in event.split("\n") if line.startswith("data:")
        )
        if data:
            datas.append(data)
    assert len(datas) == 1, datas
    return content_type, session_id, json.loads(datas[0])


@pytest.mark.parametrize("json_response", [False, True], ids=["sse", "json"])
@pytest.mark.parametrize("stateless", [False, True], ids=["stateful", "stateless"])
def test_sdk_http_server_answers_initialize(
    sdk_http_server: Callable[..., AbstractContextManager[str]],
    json_response: bool,
    stateless: bool,
) -> None:
    with sdk_http_server(json_response=json_response, stateless=stateless) as url:
        port = urlsplit(url).port
        assert port is not None
        assert listening_addresses(port) == {"127.0.0.1"}
        content_type, session_id, reply = _post_initialize(url)
    assert content_type == ("application/json" if json_response else "text/event-stream")
    assert (session_id is None) == stateless
    assert reply["id"] == 1
    assert reply["result"]["protocolVersion"] == "2025-06-18"
    assert listening_addresses(port) == set(), "server still listening after teardown"


def test_everything_http_server_binds_loopback_only(everything_http_server: str) -> None:
    port = urlsplit(everything_http_server).port
    assert port is not None
    # Without tests/peers/loopback.cjs this would be {"::"} (every interface).
    assert listening_addresses(port) == {"127.0.0.1"}
    content_type, session_id, reply = _post_initialize(everything_http_server)
    assert content_type == "text/event-stream"
    assert session_id
    assert reply["result"]["serverInfo"]["name"] == "mcp-servers/everything"


# --- the /proc and thread helpers themselves ------------------------------------------


def test_process_helpers_track_a_tree_and_its_group() -> None:
    # sh (own session) -> sleep; the grandchild shares the group and is a descendant.
    proc = subprocess.Popen(
        ["sh", "-c", "sleep 30 & wait"], start_new_session=True, stdin=subprocess.DEVNULL
    )
    try:
        deadline = time.monotonic() + 5
        while not descendant_pids(proc.pid) and time.monotonic() < deadline:
            time.sleep(0.01)
        tree = descendant_pids(proc.pid)
        assert len(tree) == 1
        assert pids_in_group(proc.pid) == {proc.pid} | tree
        with pytest.raises(pytest.fail.Exception, match="still alive"):
            assert_no_process_left(proc.pid, timeout=0.2)  # ...and SIGKILLs the leftovers
        proc.wait(5)
        assert_no_process_left({proc.pid} | tree, timeout=5)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_a_zombie_counts_as_gone() -> None:
    proc = subprocess.Popen([sys.executable, "-c", "pass"], stdin=subprocess.DEVNULL)
    try:
        assert_no_process_left([proc.pid], timeout=5)  # not reaped yet: a zombie
        assert not is_alive(proc.pid)
    finally:
        proc.wait()


def test_thread_check_waits_for_a_library_thread_that_is_ending() -> None:
    # Ends 0.2 s after the test body: the autouse check must wait for it, not fail.
    threading.Thread(target=time.sleep, args=(0.2,), name="mcp_sync-infra-reader").start()


def test_thread_check_fails_on_a_leaked_library_thread(pytester: pytest.Pytester) -> None:
    conftest = Path(__file__).with_name("conftest.py").read_text()
    # A short grace period keeps this test fast; the real one is 15 s.
    pytester.makeconftest(conftest + "\nTHREAD_LEAK_GRACE = 0.2\n")
    pytester.makepyfile(
        """
        import threading

        def test_leaks():
            stop = threading.Event()
            threading.Thread(target=stop.wait, args=(3,), name="mcp_sync-x-reader",
                             daemon=True).start()
        """
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(["*library threads still running*mcp_sync-x-reader*"])


REPO = Path(__file__).resolve().parent.parent


def _build(tmp_path: Path) -> tuple[Path, Path, str]:
    """The sdist and the wheel, built offline (``--no-isolation``: the venv's pinned
    setuptools), and what the build printed."""
    done = subprocess.run(
        [sys.executable, "-m", "build", "--no-isolation", "--sdist", "--wheel", "-o", str(tmp_path / "dist"),
         str(REPO)],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    (sdist,) = (tmp_path / "dist").glob("mcp_sync_client-*.tar.gz")
    (wheel,) = (tmp_path / "dist").glob("mcp_sync_client-*.whl")
    return sdist, wheel, done.stdout + done.stderr


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, str]:
    return _build(tmp_path_factory.mktemp("build"))


def test_the_heartbeat_counts_a_thread_that_holds_the_gil() -> None:
    """The hostile marker's heartbeat sees a C call that keeps the GIL (a backtracking
    ``re`` match, about a second here), and not a thread that merely sleeps."""
    import re

    quiet = Heartbeat()
    time.sleep(0.3)
    assert quiet.stop() < 0.2
    beat = Heartbeat()
    time.sleep(0.05)
    start = time.monotonic()
    size = 20
    # Each added "a" doubles the match's time: grow it until one call has used
    # 0.8 s of this thread's CPU (wall-clock time stretches on a busy machine).
    while time.monotonic() - start < 60:
        began = time.thread_time()
        re.match(r"^(a+)+$", "a" * size + "!")
        if time.thread_time() - began > 0.8:
            break
        size += 1
    assert beat.stop() > HEARTBEAT_MAX_GAP


def test_the_build_is_clean_and_passes_twine_check(built: tuple[Path, Path, str]) -> None:
    sdist, wheel, output = built
    assert "Deprecat" not in output and "deprecat" not in output, output
    done = subprocess.run(
        [sys.executable, "-m", "twine", "check", "--strict", str(sdist), str(wheel)],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.count("PASSED") == 2, done.stdout


def test_the_wheel_ships_py_typed_the_testing_package_the_command_and_the_license(
    built: tuple[Path, Path, str],
) -> None:
    _, wheel, _ = built
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        entry_points = next(n for n in names if n.endswith("entry_points.txt"))
        assert "mcp-sync = mcp_sync.cli:main" in archive.read(entry_points).decode()
        meta = archive.read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
    assert {"mcp_sync/py.typed", "mcp_sync/__init__.py", "mcp_sync/testing/__main__.py"} <= names
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names), sorted(names)
    assert "License-Expression: MIT" in meta
    assert "License-File: LICENSE" in meta
    assert "Classifier: Programming Language :: Python :: 3.13" in meta
    assert "Requires-Python: >=3.11" in meta
    # What the tests need is a dependency group, never a published extra.
    extras = {line.split(":", 1)[1].strip() for line in meta.splitlines() if line.startswith("Provides-Extra:")}
    assert extras == {"http", "validation", "auth", "langchain", "otel", "skills", "testing"}
    assert "Requires-Dist: pytest" not in meta


def _runtime_closure(name: str) -> set[str]:
    """The installed distributions ``name`` needs at run time without extras."""
    from importlib import metadata

    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    seen: set[str] = set()
    todo = [name]
    while todo:
        current = canonicalize_name(todo.pop())
        if current in seen:
            continue
        seen.add(current)
        for line in metadata.requires(current) or []:
            requirement = Requirement(line)
            if requirement.marker is None or requirement.marker.evaluate({"extra": ""}):
                todo.append(requirement.name)
    return seen


def _fresh_venv_with(wheel: Path, root: Path) -> Path:
    """A new virtualenv holding the wheel and, offline, only its runtime dependencies
    (linked from this venv through a .pth file, no extras): returns its python."""
    from importlib import metadata

    venv = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "--no-index", "-q",
         "--disable-pip-version-check", str(wheel)],
        check=True, capture_output=True, timeout=300,
    )  # fmt: skip
    deps = root / "deps"
    deps.mkdir()
    for name in _runtime_closure("mcp-sync-client") - {"mcp-sync-client"}:
        dist = metadata.distribution(name)
        tops = {Path(str(f)).parts[0] for f in dist.files or [] if not str(f).startswith("..")}
        for top in tops:
            source = Path(str(dist.locate_file(top)))
            if source.exists() and not (deps / top).exists():
                (deps / top).symlink_to(source)
    site = next((venv / "lib").glob("python3.*/site-packages"))
    (site / "runtime-deps.pth").write_text(f"{deps}\n")
    return python


def test_the_wheel_installed_without_extras_runs_the_demo(built: tuple[Path, Path, str], tmp_path: Path) -> None:
    _, wheel, _ = built
    python = _fresh_venv_with(wheel, tmp_path)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["PATH"] = f"{python.parent}{os.pathsep}{env.get('PATH', '')}"
    probe = subprocess.run(
        [str(python), "-c", "import importlib.util as u, mcp_sync; print(mcp_sync.__file__, u.find_spec('httpx'))"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip
    assert str(tmp_path / "venv") in probe.stdout and probe.stdout.rstrip().endswith("None"), probe.stdout
    for argv, says in (
        ([str(python.parent / "mcp-sync"), "demo"], "Echo a message back."),
        ([str(python), "-m", "mcp_sync", "demo"], "Echo a message back."),
        ([str(python), "-m", "mcp_sync.demo"], "echo -> 'hello from mcp_sync'"),  # what scripts/demo runs
    ):
        done = subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120, check=False)
        assert done.returncode == 0, done.stdout + done.stderr
        assert says in done.stdout, done.stdout
    identity = subprocess.run(
        [str(python), "-c", "from mcp_sync._identity import foreign_install; print(foreign_install())"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip
    assert identity.stdout.strip() == "None", identity.stdout
    # Another install overwriting one of its files (as the unrelated `mcp-sync` does) shows.
    cli = next((tmp_path / "venv" / "lib").glob("python3.*/site-packages/mcp_sync/cli/__init__.py"))
    cli.write_text(cli.read_text() + "\n# overwritten\n")
    identity = subprocess.run(
        [str(python), "-c", "from mcp_sync._identity import foreign_install; print(foreign_install())"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip
    assert "Files of mcp-sync-client that another install changed: mcp_sync/cli/__init__.py." in identity.stdout


def test_the_sdists_tests_run_from_the_unpacked_sdist(built: tuple[Path, Path, str], tmp_path: Path) -> None:
    sdist, _, _ = built
    with tarfile.open(sdist) as archive:
        archive.extractall(tmp_path, filter="data")
    (root,) = tmp_path.glob("mcp_sync_client-*")
    for name in ("LICENSE", "README.md", "tests/support.py", "tests/conftest.py", "docs/index.md",
                 "examples/servers.json", "scripts/test"):  # fmt: skip
        assert (root / name).is_file(), name
    # Every file of tests/ (the peers' .mjs scripts and pins included) and every
    # script the test command or a test runs: scripts/test from the sdist needs them.
    tracked = subprocess.run(["git", "ls-files", "tests"], cwd=REPO, capture_output=True, text=True, check=False)
    if tracked.returncode == 0:  # a git checkout (not the unpacked sdist itself)
        missing = [name for name in tracked.stdout.split() if not (root / name).is_file()]
        assert not missing, f"not in the sdist: {missing}"
    assert (root / "scripts" / "import_cycles").is_file()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = str(root)  # the sdist's mcp_sync, not this checkout's
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "0", "tests/test_config.py",
         "tests/test_identity.py"],
        cwd=root, env=env, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert " passed" in done.stdout and "No module named" not in done.stdout


def test_stress_runs_the_suite_beside_two_cpu_hogs_and_reports_each_run(tmp_path: Path) -> None:
    # One short run of a two-test file (one fails) stands in for N runs of the suite.
    (tmp_path / "test_two.py").write_text("def test_ok():\n    pass\n\n\ndef test_bad():\n    assert False\n")
    env = {**os.environ, "MCP_SYNC_TEST_WORKERS": "0", "MCP_SYNC_STRESS_LOGS": str(tmp_path / "logs")}
    done = subprocess.run(
        [str(REPO / "scripts" / "stress"), "1", str(tmp_path / "test_two.py")],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    out = done.stdout
    assert done.returncode == 1, out + done.stderr
    hogs = [int(pid) for pid in out.split("(pids ", 1)[1].split(")", 1)[0].split()]
    assert len(hogs) == 2
    assert "run 1/1: 1 failed, 1 passed in " in out and "[wall " in out, out
    assert "FAILED " in out and "test_bad" in out, out
    assert "0 of 1 runs green" in out, out
    # The trap killed the hogs (and the script reaped them).
    assert not [pid for pid in hogs if is_alive(pid)]
