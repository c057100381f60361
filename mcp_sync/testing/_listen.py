"""The fake server's change notifications (``--listen``): the 2026-07-28
``subscriptions/listen`` stream, ``resources/subscribe`` in the handshake era,
and the ``publish`` tool that announces changes -- politely or not.

With ``--listen`` the server declares ``resources.subscribe``, serves
``subscriptions/listen`` (modern era: the acknowledgment first, then each
published change the stream's filter asks for, tagged with the stream's id)
and ``resources/subscribe``/``resources/unsubscribe`` (handshake era), and
lists ``publish``: ``add`` tools added, then ``kind`` (``tools``,
``resources``, ``prompts``) list changes and/or an update of ``uri``,
``count`` times each. Over stdio a stream's frames are written as they come;
over HTTP the stream's own request thread writes them (its reply stream).

Misbehaviours: ``--listen-flood N`` (right after each acknowledgment, N list
changes of each kind and N updates of each subscribed URI), ``--listen-long-uri``
(after each acknowledgment, an update of a 100 000-character URI),
``--listen-drop N`` (the first N streams end right after their
acknowledgment: over stdio with an error reply, over HTTP without any),
``--listen-refuse-reopen N`` (the N requests after the first are refused
with an error reply and no acknowledgment), ``--listen-refuse-every K``
(every K-th request is refused so).
"""

from __future__ import annotations

import argparse
import queue
import threading
from typing import Any

from ._host import Host

__all__ = ["LISTEN_TOOLS", "ListenHub", "add_options", "instructions"]

SUBSCRIPTION_ID = "io.modelcontextprotocol/subscriptionId"
_LIST_KEYS = {"tools": "toolsListChanged", "resources": "resourcesListChanged", "prompts": "promptsListChanged"}

LISTEN_TOOLS: list[dict[str, Any]] = [
    {"name": "publish", "inputSchema": {"type": "object"},
     "description": "Add `add` tools, then announce `count` changes of list `kind` and/or of resource `uri`."},
]  # fmt: skip


def add_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--listen",
        action="store_true",
        help="serve subscriptions/listen and resources/subscribe; list the publish tool",
    )
    parser.add_argument(
        "--listen-flood",
        type=int,
        default=0,
        metavar="N",
        help="after each acknowledgment, N changes of each kind and N updates of each URI",
    )
    parser.add_argument(
        "--listen-long-uri", action="store_true", help="after each acknowledgment, an update of a 100 000-character URI"
    )
    parser.add_argument(
        "--listen-drop",
        type=int,
        default=0,
        metavar="N",
        help="end the first N listen streams right after their acknowledgment",
    )
    parser.add_argument(
        "--listen-refuse-reopen",
        type=int,
        default=0,
        metavar="N",
        help="answer the N listen requests after the first with an error, never acknowledged",
    )
    parser.add_argument(
        "--listen-refuse-every",
        type=int,
        default=0,
        metavar="K",
        help="answer every K-th listen request with an error, never acknowledged",
    )
    parser.add_argument(
        "--instructions",
        metavar="TEXT",
        help="the server's instructions (in initialize and server/discover); @N: N bytes of them",
    )


def instructions(options: argparse.Namespace) -> dict[str, Any]:
    """The ``instructions`` field of an opening result, if ``--instructions`` asks for one."""
    text = options.instructions
    if text is None:
        return {}
    if text.startswith("@") and text[1:].isdigit():
        text = ("Use the tools with care. " * (int(text[1:]) // 25 + 1))[: int(text[1:])]
    return {"instructions": text}


class _Stream:
    def __init__(self, rid: object, honored: dict[str, Any]) -> None:
        self.rid = rid
        self.honored = honored
        self.uris = set(honored.get("resourceSubscriptions") or ())
        self.frames: queue.Queue[dict[str, Any] | None] = queue.Queue()

    def wants(self, kind: str | None, uri: str | None) -> bool:
        if kind is not None:
            return self.honored.get(_LIST_KEYS.get(kind, "")) is True
        return uri in self.uris


class ListenHub:
    """The open listen streams and handshake-era subscriptions of one fake server."""

    def __init__(self, server: Host) -> None:
        self.server = server
        self.lock = threading.Lock()  # guards streams, subscribed and opened
        self.streams: dict[object, _Stream] = {}
        self.subscribed: set[str] = set()
        self.opened = 0

    def methods(self) -> dict[str, Any]:
        if not self.server.opt.listen:
            return {}
        return {
            "subscriptions/listen": self.listen,
            "resources/subscribe": lambda rid, p: self.subscription(rid, p, True),
            "resources/unsubscribe": lambda rid, p: self.subscription(rid, p, False),
        }

    def subscription(self, rid: object, params: dict[str, Any], on: bool) -> None:
        uri = str(params.get("uri"))
        with self.lock:
            if on:
                self.subscribed.add(uri)
            else:
                self.subscribed.discard(uri)
        self.server.reply(rid, {})

    def listen(self, rid: object, params: dict[str, Any]) -> None:
        asked = params.get("notifications")
        wanted: dict[str, Any] = asked if isinstance(asked, dict) else {}
        honored: dict[str, Any] = {key: True for key in _LIST_KEYS.values() if wanted.get(key) is True}
        uris = wanted.get("resourceSubscriptions")
        if isinstance(uris, list) and uris:
            honored["resourceSubscriptions"] = [str(uri) for uri in uris]
        stream = _Stream(rid, honored)
        opt = self.server.opt
        with self.lock:
            self.opened += 1
            opened = self.opened
            every = opt.listen_refuse_every
            refused = 1 < opened <= 1 + opt.listen_refuse_reopen or (every > 0 and opened % every == 0)
            if not refused:
                self.streams[rid] = stream
        if refused:
            self.server.error(rid, -32603, "listen stream refused on purpose")
            return
        self.server.send(self._frame(rid, "notifications/subscriptions/acknowledged", {"notifications": honored}))
        self._after_ack(rid, stream, opt)
        if opened <= opt.listen_drop:
            with self.lock:
                self.streams.pop(rid, None)
            if not self.server.inline:
                self.server.error(rid, -32603, "listen stream dropped on purpose")
            return  # over HTTP: the reply stream ends without a reply
        if self.server.inline:
            # Over HTTP this thread writes the stream until it is cancelled.
            while True:
                frame = stream.frames.get()
                if frame is None:
                    return
                self.server.send(frame)

    def _after_ack(self, rid: object, stream: _Stream, opt: argparse.Namespace) -> None:
        """The misbehaviours right after an acknowledgment: a flood, a long URI."""
        for _ in range(opt.listen_flood):
            for kind in _LIST_KEYS:
                if stream.wants(kind, None):
                    self.server.send(self._frame(rid, f"notifications/{kind}/list_changed", {}))
            for uri in sorted(stream.uris):
                self.server.send(self._frame(rid, "notifications/resources/updated", {"uri": uri}))
        if opt.listen_long_uri:
            self.server.send(self._frame(rid, "notifications/resources/updated", {"uri": "fake://" + "x" * 100_000}))

    def cancelled(self, params: object) -> None:
        rid = params.get("requestId") if isinstance(params, dict) else None
        with self.lock:
            stream = self.streams.pop(rid, None)
        if stream is not None:
            stream.frames.put(None)

    def publish(self, rid: object, args: dict[str, Any], modern: bool) -> None:
        server = self.server
        for _ in range(int(args.get("add", 0))):
            name = f"published_{len(server.tools)}"
            server.tools.append({"name": name, "description": "Added by publish.", "inputSchema": {"type": "object"}})
        kind = args.get("kind")
        uri = args.get("uri")
        for _ in range(int(args.get("count", 1))):
            if kind is not None:
                self._announce(str(kind), None, modern)
            if uri is not None:
                self._announce(None, str(uri), modern)
        server.reply(rid, server.text("published"))

    def _announce(self, kind: str | None, uri: str | None, modern: bool) -> None:
        method = f"notifications/{kind}/list_changed" if kind is not None else "notifications/resources/updated"
        params = {"uri": uri} if uri is not None else {}
        if not modern:
            with self.lock:
                # Any URI that starts with a subscribed one (a client must
                # tell a sub-resource from a longer name).
                subscribed = uri is None or any(uri.startswith(each) for each in self.subscribed)
            if subscribed:
                self.server.send({"jsonrpc": "2.0", "method": method, **({"params": params} if params else {})})
            return
        with self.lock:
            streams = [stream for stream in self.streams.values() if stream.wants(kind, uri)]
        for stream in streams:
            frame = self._frame(stream.rid, method, params)
            if self.server.inline:
                stream.frames.put(frame)
            else:
                self.server.send(frame)

    @staticmethod
    def _frame(rid: object, method: str, params: dict[str, Any]) -> dict[str, Any]:
        return {"jsonrpc": "2.0", "method": method, "params": {"_meta": {SUBSCRIPTION_ID: rid}, **params}}
