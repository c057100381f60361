"""In-process servers for tests: a session on an official-SDK server object.

:func:`connect_in_process` takes an ``mcp.server.mcpserver.MCPServer`` (or a
low-level ``mcp.server.Server``) and returns the same :class:`~mcp_sync.Session`
as :func:`mcp_sync.connect`, without a subprocess or a socket. The server is
asynchronous: its event loop runs on one library thread
(``mcp_sync-in-process-<server>``), which the session owns. The
:class:`InProcessTransport` moves frames between the session core and the
SDK's in-memory streams (the ones its own ``InMemoryTransport`` uses):

- the caller's thread puts an outbound frame on a bounded stream
  (``queue_capacity``) with a deadline, as over stdio; a writer task on the
  loop parses it with the SDK's own JSON-RPC model and hands it to the server;
- a pump task serialises what the server writes and gives it to the core
  (``Sink.receive``), which checks it like any other inbound frame;
- ``close()`` ends the server's input (it sees EOF and returns), waits a
  grace period, cancels what is left, stops the loop and joins the thread.

``close()`` returns within :data:`STOP_GRACE` + :data:`STOP_MARGIN` seconds
whatever the server does. A coroutine of the server that calls blocking code
(``time.sleep``, a lock, a socket read) holds the loop, and nothing can take
it back from Python: the loop thread (a daemon, so the interpreter does not
wait for it at exit) is then left to end by itself once that call returns,
and ``close()`` logs a WARNING on ``mcp_sync.session`` (event
``in_process_stuck``) naming the requests left unanswered and where the loop
thread was.

The ``mcp`` SDK (and anyio) are imported by the first call, never by
``import mcp_sync.testing``; without them the call raises ``MissingExtra``
(extra ``testing``). This is the one place in the package with an event
loop, and it belongs to the server under test.
"""

from __future__ import annotations

import contextlib
import sys
import sysconfig
import threading
from typing import TYPE_CHECKING, Any

from .. import _log
from ..protocol.errors import ConnectionClosed, InvalidOption, McpError, ProtocolError, missing_extra
from ..protocol.limits import Limits, seconds
from ..session.handlers import Handlers
from ..transports.contract import REPLY, REQUEST, Outbound, ShutdownOnce

if TYPE_CHECKING:
    from types import FrameType

    from ..protocol.redaction import Diagnostics, MessageHook
    from ..session.api import Session
    from ..transports.contract import Sink

__all__ = ["InProcessTransport", "connect_in_process"]

START_TIMEOUT = 10.0
"""Seconds the loop thread may take to start serving."""
STOP_GRACE = 2.0
"""Seconds the server may take to return after its input ends, before its
tasks are cancelled."""
STOP_MARGIN = 1.0
"""Seconds ``close()`` waits for the loop thread beyond :data:`STOP_GRACE`
(the cancelled tasks ending, on a loaded machine) before it gives the thread
up as stuck."""


def _sdk() -> Any:
    """The SDK pieces, imported on first use."""
    try:
        import anyio
        import mcp_types
        from mcp.server.lowlevel.server import Server
        from mcp.shared.memory import create_client_server_memory_streams
        from mcp.shared.message import SessionMessage
    except ImportError:
        raise missing_extra("connect_in_process", "the mcp SDK (2.3 or later)", "testing") from None
    return anyio, mcp_types, Server, create_client_server_memory_streams, SessionMessage


def _lowlevel(server_object: object, server_class: type) -> Any:
    """The low-level ``Server`` inside an ``MCPServer`` (or the object itself)."""
    if isinstance(server_object, server_class):
        return server_object
    inner = getattr(server_object, "_lowlevel_server", None)
    if isinstance(inner, server_class):
        return inner
    raise InvalidOption(
        "connect_in_process takes an mcp.server.mcpserver.MCPServer or an mcp.server.Server, "
        f"not {type(server_object).__name__}"
    )


class InProcessTransport:
    """A :class:`~mcp_sync.transports.contract.Transport` whose peer is a
    server object served on a loop thread of its own."""

    leader = None

    def __init__(self, sink: Sink, server_object: object, *, name: str, limits: Limits) -> None:
        anyio, types, server_class, streams, message_class = _sdk()
        self._server = _lowlevel(server_object, server_class)
        self._anyio, self._types, self._streams, self._message = anyio, types, streams, message_class
        self._sink = sink
        self._limits = limits
        self._once = ShutdownOnce()
        # Set by the loop thread once it serves (or failed to start).
        self._ready = threading.Event()
        self._loop: Any = None
        self._out: Any = None  # the outbound stream's send side (loop thread only)
        self._stop: Any = None  # an anyio.Event (loop thread only)
        self._failure: BaseException | None = None
        # Set when the loop thread itself began the teardown (the server
        # stopped on its own): it then reports transport_closed as it ends.
        self._ended_by_loop = False
        # Set on the loop thread when it takes the stop: a loop that never
        # does is held by blocking code.
        self._stop_seen = threading.Event()
        # The requests written to the server and not yet answered (id ->
        # what it asked), touched on the loop thread only; read by a stuck
        # close() as one dict copy, for its report.
        self._asked: dict[object, str] = {}
        self._name = name
        self._thread = threading.Thread(target=self._run, name=f"mcp_sync-in-process-{name}", daemon=True)
        self._thread.start()
        if not self._ready.wait(START_TIMEOUT) or self._loop is None:
            self.shutdown(True)
            raise ConnectionClosed(f"in-process server {name!r} did not start")

    # ------------------------------------------------------------ the loop thread

    def _run(self) -> None:
        try:
            self._anyio.run(self._main)
        except BaseException as exc:  # the server's failure ends the session
            self._failure = exc
        finally:
            self._ready.set()
            self._loop = None
            if self._failure is not None:
                self._sink.terminate(
                    ConnectionClosed(f"in-process server stopped: {type(self._failure).__name__}")
                )
            else:
                self._sink.terminate(ConnectionClosed("in-process server stopped"))
            if self._ended_by_loop:
                self._sink.transport_closed("")

    async def _main(self) -> None:
        import asyncio

        anyio = self._anyio
        self._loop = asyncio.get_running_loop()
        self._stop = anyio.Event()
        send, receive = anyio.create_memory_object_stream(self._limits.queue_capacity)
        self._out = send
        async with self._streams() as (client_streams, server_streams):
            client_read, client_write = client_streams
            server_read, server_write = server_streams
            served = anyio.Event()

            async def serve() -> None:
                try:
                    await self._server.run(server_read, server_write, self._server.create_initialization_options())
                finally:
                    served.set()
                    self._stop.set()

            async with anyio.create_task_group() as group:
                group.start_soon(serve)
                group.start_soon(self._pump, client_read)
                group.start_soon(self._write, receive, client_write)
                self._ready.set()
                await self._stop.wait()
                # The server sees the end of its input and returns; one that
                # does not within the grace is cancelled.
                await send.aclose()
                await client_write.aclose()
                with anyio.move_on_after(STOP_GRACE):
                    await served.wait()
                group.cancel_scope.cancel()

    async def _write(self, receive: Any, client_write: Any) -> None:
        adapter = self._types.jsonrpc_message_adapter
        async with receive:
            async for item in receive:
                if item.kind == REQUEST and item.request_id is not None and not self._sink.claim(item.request_id):
                    continue  # its caller gave up before it was written
                try:
                    message = adapter.validate_json(item.frame, by_name=False)
                except ValueError:
                    if item.kind == REQUEST and item.request_id is not None:
                        self._sink.fail(
                            item.request_id, ProtocolError("the in-process server's SDK refused the request frame")
                        )
                    continue
                if item.kind == REQUEST and item.request_id is not None:
                    self._asked[item.request_id] = _what(item.method, getattr(message, "params", None))
                await client_write.send(self._message(message))

    async def _pump(self, client_read: Any) -> None:
        async for message in client_read:
            if isinstance(message, Exception):
                continue  # the SDK's own parse failure of a frame we wrote
            if getattr(message.message, "method", None) is None:  # a reply
                self._asked.pop(getattr(message.message, "id", None), None)
            frame = message.message.model_dump_json(by_alias=True, exclude_unset=True).encode()
            if len(frame) > self._limits.max_frame_bytes:
                self._sink.terminate(
                    ProtocolError(f"an inbound frame exceeded max_frame_bytes={self._limits.max_frame_bytes}")
                )
                return
            self._sink.receive(frame)

    # ------------------------------------------------------------ Transport

    def send(self, item: Outbound, timeout: float) -> bool:
        loop = self._loop
        if loop is None or self._once.begun:
            return False
        if threading.current_thread() is self._thread:
            # Called while the loop delivers a frame: waiting here would stall
            # the loop itself, so the frame goes only if there is room now.
            return self._put_now(item)
        import asyncio

        coroutine = self._out.send(item)
        try:
            future = asyncio.run_coroutine_threadsafe(coroutine, loop)
        except RuntimeError:  # the loop has just stopped
            coroutine.close()
            return False
        try:
            future.result(timeout)
        except TimeoutError:  # (concurrent.futures.TimeoutError since 3.11)
            future.cancel()  # the frame was not queued: no room came in time
            self._drop(coroutine, loop)
            return False
        except Exception:  # the stream closed: the session is ending
            self._drop(coroutine, loop)
            return False
        return True

    @staticmethod
    def _drop(coroutine: Any, loop: Any) -> None:
        # A loop that stopped before running the send never will: close the
        # coroutine so it is not reported as never awaited.
        if not loop.is_running():
            with contextlib.suppress(RuntimeError, ValueError):
                coroutine.close()

    def _put_now(self, item: Outbound) -> bool:
        try:
            self._out.send_nowait(item)
        except Exception:  # full or closed
            return False
        return True

    def send_nowait(self, item: Outbound) -> bool:
        loop = self._loop
        if loop is None or self._once.begun:
            return False

        def put() -> None:
            with contextlib.suppress(Exception):
                self._out.send_nowait(item)

        try:
            loop.call_soon_threadsafe(put)
        except RuntimeError:
            return False
        return True

    def reply(self, frame: bytes) -> bool:
        return self.send(Outbound(frame, REPLY), seconds(self._limits.request_timeout_ms))

    def listen(self) -> None:
        """Nothing to open: the server's messages come on the same stream."""

    def _take_stop(self) -> None:
        """(On the loop) the stop the closing thread asked for."""
        self._stop_seen.set()
        self._stop.set()

    def shutdown(self, wait: bool) -> None:
        mine = self._once.begin()
        if mine:
            loop = self._loop
            if loop is not None:
                with contextlib.suppress(RuntimeError):
                    loop.call_soon_threadsafe(self._take_stop)
        if threading.current_thread() is self._thread:
            if mine:
                self._ended_by_loop = True
                self._once.finished()
            return  # the loop thread ends on its own once the stop is seen
        if mine or wait:
            self._thread.join(STOP_GRACE + STOP_MARGIN)
        if mine:
            if self._thread.is_alive():
                self._report_stuck()
            self._once.finished()
            self._sink.transport_closed("")

    def _report_stuck(self) -> None:
        """The loop thread outlived the stop: say so, with what it was doing."""
        asked = ", ".join(sorted(dict(self._asked).values())) or "none"
        if self._stop_seen.is_set():
            why = "its tasks did not end once cancelled"
        else:
            why = "its event loop never took the stop (a coroutine is running blocking code)"
        where = _where(sys._current_frames().get(self._thread.ident or -1))
        # An application's filter or handler must not make close() raise.
        with contextlib.suppress(Exception):
            _log.SESSION.warning(
                "in-process server %r: close() returned after %.1f s with the loop thread still running: "
                "%s; unanswered requests: %s; the loop thread was at %s. The thread is a daemon and "
                "ends by itself when that code returns.",
                self._name, STOP_GRACE + STOP_MARGIN, why, asked, where,
                extra={"mcp_event": "in_process_stuck", "mcp_server": self._name, "mcp_requests": asked,
                       "mcp_where": where},
            )  # fmt: skip


def _what(method: str | None, params: object) -> str:
    """A request as the stuck-close report names it: ``tool 'name'`` for a
    tool call, its method otherwise (names escaped: they are the caller's)."""
    if method == "tools/call" and isinstance(params, dict) and isinstance(params.get("name"), str):
        return f"tool {params['name']!a}"
    return ascii(method or "?")


def _where(frame: FrameType | None) -> str:
    """Where a thread is: the innermost frame of its stack outside the
    standard library (the server's code that called the blocking function)."""
    if frame is None:
        return "an unknown place"
    paths = sysconfig.get_paths()
    stdlib = tuple({paths["stdlib"], paths["platstdlib"]})
    innermost = frame
    while frame is not None and frame.f_code.co_filename.startswith(stdlib):
        frame = frame.f_back
    chosen = frame if frame is not None else innermost
    return f"{chosen.f_code.co_name} ({chosen.f_code.co_filename}:{chosen.f_lineno})"


def connect_in_process(  # noqa: PLR0913 (connect's own options)
    server_object: object,
    *,
    server: str = "in-process",
    limits: Limits | None = None,
    handlers: Handlers | None = None,
    protocol: str | None = None,
    protocol_version: str | None = None,
    diagnostics: Diagnostics | None = None,
    auto_refresh: bool = False,
    validate_output: bool | None = None,
    cache: bool = True,
    on_message: MessageHook | None = None,
    **limit_options: int,
) -> Session:
    """A :class:`~mcp_sync.Session` on an official-SDK server object
    (``MCPServer`` or a low-level ``Server``) served in this process.

    Same API and rules as :func:`mcp_sync.connect` (``protocol``, the era,
    ``handlers``, ``on_message``, the limits, given as a ``Limits`` or as keywords);
    ``close()`` stops the server's loop and joins its thread. Needs the
    ``mcp`` SDK (extra ``testing``)."""
    from ..session.connect import _negotiated
    from ..session.core import _Core
    from ..session.eras.negotiation import check_protocol

    _sdk()  # MissingExtra before anything starts
    if validate_output is True:
        from ..protocol.output_check import require_jsonschema

        require_jsonschema()
    if handlers is not None and not isinstance(handlers, Handlers):
        raise InvalidOption("option handlers must be a mcp_sync.Handlers")
    if on_message is not None and not callable(on_message):
        raise InvalidOption("option on_message must be callable")
    base = limits if limits is not None else Limits()
    if not isinstance(base, Limits):
        raise InvalidOption("option limits must be a Limits")
    settled = Limits.create(**{**base.as_options(), **limit_options})
    if not isinstance(server, str) or not server:
        raise InvalidOption("option server must be a non-empty string")
    try:
        mode, pinned = check_protocol(protocol, protocol_version)
    except ProtocolError as exc:
        raise InvalidOption(exc.message) from None

    def open_core() -> _Core:
        core = _Core(
            server, settled, diagnostics, handlers=handlers, auto_refresh=auto_refresh,
            validate_output=validate_output is not False, cache="all" if cache else "off", on_message=on_message,
        )  # fmt: skip
        try:
            core.transport = InProcessTransport(core, server_object, name=server, limits=settled)
        except McpError:
            core.terminate(ConnectionClosed("in-process server did not start"), wait=True)
            raise
        return core

    return _negotiated(open_core, mode, pinned, http=False)
