"""Jupyter on mcp_sync.Servers: the guide's notebook cells in a real IPython kernel.

Through jupyter_client: the cell that builds the Servers and calls a tool,
run twice, leaves one server; a kernel interrupt during a long call raises
KeyboardInterrupt in the cell and the session stays usable (same server);
shutting the kernel down leaves no process.
"""

from __future__ import annotations

import queue
import time
from pathlib import Path
from typing import Any

from frameworks import doc_cells, environment, make_project, no_server_left, servers_of, wait_for
from jupyter_client import manager
from support import methods

CELL_TIMEOUT = 60.0


def execute(client: Any, code: str) -> tuple[dict[str, Any], list[str]]:
    """Run one cell; return its execute_reply content and its text outputs."""
    outputs: list[str] = []

    def hook(message: dict[str, Any]) -> None:
        content = message["content"]
        if message["msg_type"] in ("execute_result", "display_data"):
            outputs.append(content["data"].get("text/plain", ""))
        elif message["msg_type"] == "stream":
            outputs.append(content["text"])

    reply = client.execute_interactive(code, timeout=CELL_TIMEOUT, output_hook=hook)
    return reply["content"], outputs


def first_message(get: Any, wanted: Any, what: str) -> dict[str, Any]:
    """The first message ``get`` (a channel's get_*_msg) returns that is ``wanted``."""
    deadline = time.monotonic() + CELL_TIMEOUT
    while True:
        try:
            message: dict[str, Any] = get(timeout=max(0.1, deadline - time.monotonic()))
        except queue.Empty:
            raise AssertionError(f"the kernel did not {what}") from None
        if wanted(message):
            return message


def reply_to(client: Any, msg_id: str) -> dict[str, Any]:
    message = first_message(
        client.get_shell_msg, lambda m: m["parent_header"].get("msg_id") == msg_id, "answer the cell"
    )
    return message["content"]  # type: ignore[no-any-return]


def wait_idle(client: Any, msg_id: str) -> None:
    """Wait for the kernel's idle status after the request msg_id.

    After a cell ends in an error, ipykernel aborts execute requests until a
    marker it queues behind the failed request comes through; it queues that
    marker before it reports idle. A cell sent on the error reply alone can
    overtake the marker and come back "aborted".
    """
    first_message(
        client.get_iopub_msg,
        lambda m: (
            m["msg_type"] == "status"
            and m["parent_header"].get("msg_id") == msg_id
            and m["content"]["execution_state"] == "idle"
        ),
        "go idle after the cell",
    )


def test_jupyter_kernel_cells_rerun_interrupt_and_shutdown(tmp_path: Path) -> None:
    build, long_call, after = doc_cells("jupyter")  # the guide's three cells, in order
    log = tmp_path / "server.log"
    project = make_project(tmp_path, extra=("--log", str(log)))
    kernel, client = manager.start_new_kernel(
        kernel_name="python3", startup_timeout=CELL_TIMEOUT, cwd=str(project), env=environment(project)
    )
    try:
        kernel_pid = kernel.provisioner.pid
        # Connect and call in a cell.
        content, outputs = execute(client, build)
        assert (content["status"], outputs) == ("ok", ["5"]), content
        servers = servers_of(project)
        assert list(servers.values()) == [kernel_pid], servers
        (first,) = servers
        # Re-running the cell that built it leaves one server, not two.
        content, outputs = execute(client, build)
        assert (content["status"], outputs) == ("ok", ["5"]), content
        servers = servers_of(project)
        assert len(servers) == 1 and first not in servers, (first, servers)
        (server,) = servers

        # Interrupt the kernel while the long call waits.
        msg_id = client.execute(long_call)
        wait_for(lambda: methods(log).count("tools/call") == 3, "the long call to reach the server")
        kernel.interrupt_kernel()
        content = reply_to(client, msg_id)
        assert (content["status"], content["ename"]) == ("error", "KeyboardInterrupt"), content
        wait_idle(client, msg_id)
        wait_for(lambda: "notifications/cancelled" in methods(log), "the cancellation")

        # The session is still usable: the same server answers the next cell.
        content, outputs = execute(client, after)
        assert (content["status"], outputs) == ("ok", ["'still here'"]), content
        assert list(servers_of(project)) == [server], (server, servers_of(project))
    finally:
        kernel.shutdown_kernel(now=False)
        client.stop_channels()
    no_server_left(project)
