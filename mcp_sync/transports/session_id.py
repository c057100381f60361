"""The ``Mcp-Session-Id`` of a handshake-era Streamable HTTP session.

Adopted from the reply to ``initialize``; sent (with ``MCP-Protocol-Version``)
on every later request; renewed once per loss when the server answers 404 to
a request that carried it (the session core runs the new handshake: see
``Sink.reopen``); ended with a ``DELETE`` at close. The 2026-07-28 era has no
session: no id is adopted and nothing is deleted.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from typing import TYPE_CHECKING, Any

from .. import _log
from ..protocol.errors import ConnectionClosed, McpError, ProtocolError
from ..protocol.versions import MODERN
from .contract import Sink
from .http_options import VISIBLE_ASCII, StaticHeaders
from .http_status import AuthHook, Failure, StatusMap, Stopped

if TYPE_CHECKING:
    import httpx

__all__ = ["DELETE_TIMEOUT", "MAX_SESSION_ID", "SessionId"]

MAX_SESSION_ID = 1024
DELETE_TIMEOUT = 2.0
"""Seconds the closing ``DELETE`` may take; its outcome is ignored."""


class SessionId:
    """One server's session id, from adoption to ``DELETE``."""

    def __init__(self, *, server: str, sink: Sink, status: StatusMap, stopping: threading.Event) -> None:
        self._server = server
        self._sink = sink
        self._status = status
        self._stopping = stopping
        # Guards value. Held by the worker that renews the session through the
        # whole new handshake, so no request is sent without an id meanwhile:
        # workers building a request's headers wait on it, and so does the
        # closing DELETE (at most DELETE_TIMEOUT). Re-entrant: the renewing
        # worker sends the new handshake's requests itself.
        self._lock = threading.RLock()
        self.value: str | None = None
        self._local = threading.local()

    def add_to(self, headers: dict[str, str]) -> None:
        """The session's headers: its id (if any) and the negotiated version."""
        with self._lock:
            session_id = self.value
        if session_id is not None:
            headers["Mcp-Session-Id"] = session_id
        version = self._sink.protocol_version
        if version is not None:
            headers["MCP-Protocol-Version"] = version

    def adopt(self, response: httpx.Response) -> None:
        value = response.headers.get("mcp-session-id")
        if value is None:
            return
        with self._lock:
            if self.value is not None:
                return  # only the reply to initialize assigns it
            if len(value) > MAX_SESSION_ID or not VISIBLE_ASCII.match(value):
                raise Failure(
                    ProtocolError(
                        f"server {self._server!r} sent an Mcp-Session-Id that is not "
                        f"1 to {MAX_SESSION_ID} visible ASCII characters"
                    ),
                    True,
                )
            self.value = value

    def renewing(self) -> bool:
        """Whether the calling thread is renewing the session (its requests
        are then sent from this thread, not queued behind it)."""
        return getattr(self._local, "renewing", False) is True

    def renew(self, stale: str, deadline: float) -> None:
        """Start a new session (the server no longer knows ``stale``): the
        session core's handshake again, without the old id."""
        with self._lock:
            if self.value != stale:
                return  # another worker already renewed it
            if self._sink.protocol_version is None:
                raise Failure(ConnectionClosed(f"server {self._server!r} answered HTTP 404"), True)
            self.value = None
            self._local.renewing = True
            _log.transport_event(
                logging.INFO, "renew", self._server,
                "server %r no longer knows the session (HTTP 404): starting a new one", self._server,
            )  # fmt: skip
            try:
                self._sink.reopen(deadline)
            except McpError as exc:
                # Half a renewal leaves no usable session id: end the session.
                if self._stopping.is_set():
                    raise Stopped from None
                _log.transport_event(
                    logging.WARNING, "renew_failed", self._server,
                    "server %r: a new session after HTTP 404 could not be started (%s)",
                    self._server, exc.kind, error_kind=exc.kind,
                )  # fmt: skip
                raise Failure(
                    ConnectionClosed(
                        f"server {self._server!r} no longer knows the session (HTTP 404) "
                        "and a new one could not be started"
                    ),
                    True,
                ) from None
            finally:
                self._local.renewing = False

    def delete(self, hx: Any, client: httpx.Client, url: str, static: StaticHeaders, auth: AuthHook | None) -> None:
        """Tell the server the session is over; any answer (405 included) is fine."""
        # A renewal stuck connecting holds the lock until its deadline: do not
        # let it hold up close() as well.
        if not self._lock.acquire(timeout=DELETE_TIMEOUT):
            return
        try:
            session_id = self.value
        finally:
            self._lock.release()
        if session_id is None or self._status.refused or self._sink.era.name == MODERN:
            return
        headers = static.build(None)
        headers["Mcp-Session-Id"] = session_id
        if auth is not None:
            with contextlib.suppress(Exception):
                headers.update(auth.current("DELETE", url))
        version = self._sink.protocol_version
        if version is not None:
            headers["MCP-Protocol-Version"] = version
        with contextlib.suppress(Exception):
            client.request("DELETE", url, headers=headers, timeout=hx.Timeout(DELETE_TIMEOUT)).close()
