"""What the fake server's era gate and feature set need from the server that
holds them: a narrow view, so neither module imports the server itself (the
server imports both)."""

from __future__ import annotations

import argparse
import threading
from typing import Any, Protocol

__all__ = ["EraView", "Host", "ProgressSink"]


class ProgressSink(Protocol):
    def notify_progress(self, token: object, progress: float, total: float, message: str) -> None: ...


class EraView(Protocol):
    def modern(self, rid: object) -> bool: ...

    def missing_tasks_capability(self, rid: object) -> None: ...


class Host(Protocol):
    """The parts of :class:`~mcp_sync.testing.FakeServer` that its helpers use."""

    opt: argparse.Namespace
    tools: list[dict[str, Any]]
    pending_client: dict[object, threading.Event]
    client_replies: dict[object, Any]
    next_client_id: int
    inline: bool

    @property
    def features(self) -> ProgressSink: ...

    @property
    def eras(self) -> EraView: ...

    def send(self, message: dict[str, Any]) -> None: ...

    def write_raw(self, data: bytes) -> None: ...

    def reply(self, request_id: object, result: Any) -> None: ...

    def error(self, request_id: object, code: int, message: str, data: Any = None) -> None: ...

    def text(self, value: str, **extra: Any) -> dict[str, Any]: ...

    def capabilities(self) -> Any: ...
