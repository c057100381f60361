"""``python -m mcp_sync.testing``: parse the options, then serve the fake over
stdio or (``--http``) Streamable HTTP. Kept apart from the server so the HTTP
front end can import the server without a cycle."""

from __future__ import annotations

import os
import signal
import sys
import threading
import time

from ._server import FakeServer, parse_args, spawn_grandchild

__all__ = ["main"]


def main(argv: list[str] | None = None) -> None:
    options = parse_args(argv)
    if options.marker:
        with open(options.marker, "w", encoding="utf-8") as handle:
            handle.write(str(os.getpid()))
    if options.starts:
        with open(options.starts, "a", encoding="utf-8") as handle:
            handle.write(f"{os.getpid()}\n")
    if options.ignore_sigterm:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    if options.grandchild_pidfile:
        with open(options.grandchild_pidfile, "w", encoding="utf-8") as handle:
            handle.write(str(spawn_grandchild()))
    for text in options.stderr:
        sys.stderr.write(text + "\n")
    sys.stderr.flush()
    if options.stderr_flood:
        def flood() -> None:
            line = b"e" * 1023 + b"\n"
            for _ in range(options.stderr_flood // 1024):
                sys.stderr.buffer.write(line)
            sys.stderr.buffer.flush()
        threading.Thread(target=flood, daemon=True).start()
    if options.http:
        from ._http import serve  # http.server only when asked for: stdio starts faster

        serve(options)
        return
    if options.start_delay:
        time.sleep(options.start_delay / 1000)
    out = sys.stdout.buffer
    server = FakeServer(options, out)
    if options.stdout_flood:
        server.call(None, "flood", {"bytes": options.stdout_flood})
    stdin = sys.stdin.buffer
    while True:
        delay = server.stall_until - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        try:
            line = stdin.readline()
        except (OSError, ValueError):
            line = b""
        if not line:
            break
        server.handle_line(line)
    if options.ignore_stdin_eof:
        while True:
            time.sleep(60)


if __name__ == "__main__":
    main()
