"""The handshake era (2025-11-25 and every revision before it).

A session opens with ``initialize`` and ``notifications/initialized``; its
requests are plain JSON-RPC; the server sends requests of its own
(elicitation, sampling, roots, ping), answered by the handlers on the
library's threads; ``ping`` proves the server answers; ``logging/setLevel``
sets the log level; a task (experimental in 2025-11-25) is created by a
``task`` field in ``tools/call`` and polled with ``tasks/get``.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from ...protocol.catalog import ServerInfo, Tool, bounded_instructions
from ...protocol.errors import ProtocolError
from ...protocol.limits import request_budget, seconds
from ...protocol.versions import HANDSHAKE_PROTOCOL_VERSIONS, LEGACY
from ..tool_tasks import TTL_SLACK_MS, check_task_option, poll_task, server_cancels
from .contract import COMPLETE, TASK, EraCore, check_capabilities, server_info

if TYPE_CHECKING:
    from ..pending import Watch
    from .contract import Route

__all__ = ["TASKS_SINCE", "LegacyEra", "handshake_capabilities", "initialize_params"]

TASKS_SINCE = "2025-11-25"
"""The first revision with tasks, and so with the client's ``tasks`` capability."""


def handshake_capabilities(core: EraCore, version: str) -> Mapping[str, Any]:
    """The client capabilities ``initialize`` declares at ``version``: the
    handlers', plus ``tasks`` from 2025-11-25 on when the handlers run server
    requests as tasks (the modern era has no server requests to run)."""
    tasks = core.inbound.requests.task_capability() if version >= TASKS_SINCE else None
    if tasks is None:
        return core.client_capabilities
    return {**core.client_capabilities, "tasks": tasks}


def initialize_params(
    protocol_version: str, capabilities: Mapping[str, Any] | None, client_info: Mapping[str, str]
) -> dict[str, Any]:
    """The params of our ``initialize`` request. ``capabilities`` declares
    only what the caller's handlers serve."""
    return {
        "protocolVersion": protocol_version,
        "capabilities": dict(capabilities) if capabilities else {},
        "clientInfo": dict(client_info),
    }


class LegacyEra:
    """A session opened by the ``initialize`` handshake. Before negotiation
    settles an era, a session core holds one without a version: what it
    sends then (the probe, the handshake) is plain JSON-RPC."""

    __slots__ = ("_client_info", "_version")

    name = LEGACY
    any_structured = False
    input_rounds = False  # no input_required in this era
    version_retry = False  # a refusal of a request is that request's answer
    plain_requests = True  # request() below adds nothing: the call plan may skip it

    def __init__(self, version: str | None, *, client_info: Mapping[str, str]) -> None:
        self._version = version
        self._client_info = client_info

    @property
    def version(self) -> str | None:
        return self._version

    # ------------------------------------------------------------ opening

    def initialize_params(self, core: EraCore) -> dict[str, Any]:
        """The params of ``initialize`` at this era's version, built here for
        every handshake this client sends (alone, raced against the probe
        under ``auto``, renewing an HTTP session), so each declares the same
        capabilities, ``tasks`` included."""
        version = self._version
        assert version is not None
        return initialize_params(version, handshake_capabilities(core, version), self._client_info)

    def open(self, core: EraCore, watch: Watch, describe: Callable[[], str]) -> Any:
        assert self._version is not None
        return core.request(
            "initialize",
            self.initialize_params(core),
            max(0.0, watch.deadline - time.monotonic()),
            describe,
            cancellable=False,
            watch=watch,
        )

    def adopt(self, core: EraCore, result: Any, *, strict: bool = True) -> ServerInfo:
        """The handshake's checks, then ``initialized``. Always strict: a
        server that answered ``initialize`` at all speaks this era."""
        where = f"server {core.server!r}"
        if not isinstance(result, dict):
            raise ProtocolError(f"{where} answered initialize with a result that is not an object")
        version = result.get("protocolVersion")
        if not isinstance(version, str) or version not in HANDSHAKE_PROTOCOL_VERSIONS:
            raise ProtocolError(f"{where} answered initialize with an unsupported protocolVersion")
        check_capabilities(result.get("capabilities"), where, "initialize")
        instructions = bounded_instructions(core.server, core.limits, result.get("instructions"))
        info = server_info(result.get("serverInfo"), instructions, result, core)
        # The server chose the version: the HTTP transport sends it from now on.
        self._version = version
        core.adopt(self, result["capabilities"])
        core.notify("notifications/initialized", seconds(core.limits.handshake_timeout_ms))
        self.listen(core)
        return info

    def listen(self, core: EraCore) -> None:
        if core.inbound.wants_server_messages():
            # Over HTTP, what the server sends outside a request's reply comes
            # on a stream of its own (a no-op over stdio).
            assert core.transport is not None
            core.transport.listen()

    def reopen(self, core: EraCore, deadline: float) -> None:
        """``initialize`` again at the version in use (the answer must keep
        that version and the tools capability), then ``initialized``."""
        version = self._version
        assert version is not None  # a transport renews only a session it had
        where = f"server {core.server!r}"
        result = core.request(
            "initialize",
            self.initialize_params(core),
            max(0.0, deadline - time.monotonic()),
            lambda: f"initialize of a new session with {where}",
            cancellable=False,
        )
        if not isinstance(result, dict) or result.get("protocolVersion") != version:
            # (the new session must keep the version in use)
            raise ProtocolError(f"{where} answered initialize with an unsupported protocolVersion")
        check_capabilities(result.get("capabilities"), where, "initialize")
        core.notify("notifications/initialized", max(0.0, deadline - time.monotonic()))

    def load_catalog(self, core: EraCore) -> tuple[Tool, ...]:
        return core.load_catalog()

    # ------------------------------------------------------------ requests

    def frame(
        self, method: str, params: Mapping[str, Any], *, tasks: bool = False
    ) -> tuple[dict[str, Any], dict[str, str] | None]:
        """Plain JSON-RPC: the params as they are, no headers of its own."""
        return (params if type(params) is dict else dict(params)), None

    def request(  # noqa: PLR0917
        self,
        core: EraCore,
        method: str,
        params: Mapping[str, Any],
        deadline: float,
        describe: Callable[[], str],
        # Not keyword-only (callers name them): a keyword-only default costs
        # a dict lookup on every request, and a plain one leaves all three out.
        cancellable: bool = True,
        watch: Watch | None = None,
        tasks: bool = False,
    ) -> Any:
        """Plain JSON-RPC. A request that may create a task is not watched: a
        progress callback that raised then would lose the task id, and with it
        the means to cancel the task (its progress waits in the route and is
        delivered at the first poll)."""
        if watch is None:
            timeout = deadline - time.monotonic()
        elif tasks:
            watch, timeout = None, deadline - time.monotonic()
        else:
            timeout = watch.deadline - time.monotonic()
        return core.request(
            method,
            params if type(params) is dict else dict(params),
            timeout if timeout > 0.0 else 0.0,
            describe,
            cancellable=cancellable,
            watch=watch,
        )

    def result_kind(self, result: object, method: str, *, tasks: bool = False) -> str:
        # A task-augmented call answers with {"task": ...}; a server may also
        # answer it directly. No input_required in this era.
        if tasks and isinstance(result, dict) and "task" in result:
            return TASK
        return COMPLETE

    def server_request(self, core: EraCore, request_id: int | str, method: str, params: object) -> None:
        core.inbound.request(request_id, method, params)

    def probe(self, core: EraCore, deadline: float, budget: str) -> None:
        core.request(
            "ping",
            {},
            max(0.0, deadline - time.monotonic()),
            lambda: f"ping of server {core.server!r} ({budget})",
            # A probe has no effect on the server: nothing to cancel.
            cancellable=False,
        )

    def set_log_level(self, core: EraCore, level: str, timeout_ms: int | None) -> None:
        timeout_ms, option = request_budget(core.limits, timeout_ms)
        server = core.server
        core.request(
            "logging/setLevel",
            {"level": level},
            seconds(timeout_ms),
            lambda: f"logging/setLevel on server {server!r} ({option}={timeout_ms})",
        )

    def notification_meta(self) -> dict[str, Any] | None:
        return None  # plain JSON-RPC

    def subscribe(self, core: EraCore, uri: str, deadline: float) -> None:
        """``resources/subscribe``; over HTTP the updates come on the GET
        stream, opened first (the session now serves what the server sends unasked)."""
        self.listen(core)
        self._subscription(core, "resources/subscribe", uri, deadline)

    def unsubscribe(self, core: EraCore, uri: str, deadline: float) -> None:
        self._subscription(core, "resources/unsubscribe", uri, deadline)

    def _subscription(self, core: EraCore, method: str, uri: str, deadline: float) -> None:
        server = core.server
        core.request(
            method,
            {"uri": uri},
            max(0.0, deadline - time.monotonic()),
            lambda: f"{method} of {uri[:200]!a} on server {server!r}",
        )

    # ------------------------------------------------------------ tasks

    def use_task(self, core: EraCore, tool: Tool, task: bool | None) -> bool:
        """A ``required`` tool always goes as a task (when the server takes
        task-augmented ``tools/call`` at all), an ``optional`` one when asked."""
        if task is None and (tool.execution is None or tool.task_support != "required"):
            return False  # the common case, decided without a look at the capabilities
        takes = _server_takes_tool_tasks(core.server_capabilities)
        if task is None:
            return takes
        return check_task_option(core, tool, task, takes)

    def task_params(self, params: dict[str, Any], route: Route) -> dict[str, Any]:
        # Asked-for lifetime: the furthest the caller may wait, and some slack
        # so the result is still there to fetch.
        ttl_ms = math.ceil((route.hard_deadline - time.monotonic()) * 1000) + TTL_SLACK_MS
        meta = params.get("_meta")
        return {
            **params,
            "task": {"ttl": ttl_ms},
            "_meta": {**(meta if isinstance(meta, dict) else {}), "progressToken": route.token},
        }

    def follow_task(
        self, core: EraCore, name: str, created: dict[str, Any], route: Route, describe: Callable[[], str]
    ) -> Any:
        return poll_task(core, self, name, created, route, describe)

    def cancel_task(self, core: EraCore, task_id: str, describe: Callable[[], str]) -> None:
        if server_cancels(core.server_capabilities):
            core.send_and_forget("tasks/cancel", {"taskId": task_id})


def _server_takes_tool_tasks(capabilities: Mapping[str, Any]) -> bool:
    tasks = capabilities.get("tasks")
    requests = tasks.get("requests") if isinstance(tasks, Mapping) else None
    tools = requests.get("tools") if isinstance(requests, Mapping) else None
    return isinstance(tools, Mapping) and isinstance(tools.get("call"), Mapping)
