"""The ``on_message`` hook of a session (``connect(on_message=...)``), and
how the session runs a caller's observer on its own threads (:func:`run_observer`).

``_Core.receive`` hands each inbound message, once it is past the inbound
limits and before the session acts on it, to the session's :class:`MessageTap`,
if it has one: a session without a hook pays one attribute check per message
and nothing else. The tap shows the hook a deep-frozen copy, so nothing the
hook does reaches the session, and counts and logs what it raises.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, TypeVar

from .. import _log
from ..protocol.catalog import freeze
from ..protocol.redaction import InboundMessage, MessageHook

__all__ = ["MessageTap", "run_observer"]

_T = TypeVar("_T")


def run_observer(callback: threading.local, observer: Callable[[_T], object], value: _T) -> Exception | None:
    """Call ``observer(value)`` (the caller's diagnostic observer or message
    hook) on this thread with the core's ``callback.active`` flag set, so that
    a ``close()`` from inside it ends the session without waiting for this
    very thread. Returns what it raised: an observer's own bug never takes
    the session down with it."""
    callback.active = True
    try:
        observer(value)
    except Exception as exc:
        return exc
    finally:
        callback.active = False
    return None


class MessageTap:
    """One session's hook, and how many times it raised."""

    __slots__ = ("_callback", "_hook", "_lock", "_server", "failures")

    def __init__(self, server: str, hook: MessageHook, callback: threading.local) -> None:
        self._server = server
        self._hook = hook
        self._callback = callback  # the core's (see run_observer)
        self._lock = threading.Lock()  # (several HTTP workers may read at once)
        self.failures = 0

    def __call__(self, message: dict[str, Any]) -> None:
        """Show the hook a frozen copy of ``message``, on this thread."""
        failed = run_observer(self._callback, self._hook, InboundMessage(self._server, freeze(message)))
        if failed is not None:  # the hook's own bug: the session goes on
            with self._lock:
                self.failures += 1
                count = self.failures
            _log.hook_failed(self._server, failed, count)
