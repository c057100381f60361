"""Bounded HTTP exchanges with authorization servers and metadata endpoints.

Every exchange is bounded by the caller's deadline and by a byte limit on the
body, never follows a redirect, asks for an uncompressed body, and turns every
failure into a typed error that names what was being fetched, never the URL
(its query may carry a secret) nor the body.
"""

from __future__ import annotations

import contextlib
import json
import math
import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode

from ..protocol.errors import AuthError, Timeout
from ..protocol.frames import json_depth
from ..protocol.limits import MAX_JSON_DEPTH

if TYPE_CHECKING:
    import httpx

    from ..transports.http_status import Beside

__all__ = ["Fetcher", "Reply"]


@dataclass(frozen=True)
class Reply:
    status: int
    headers: httpx.Headers
    body: Any
    """The decoded JSON body, or ``None`` when it was empty or not JSON."""


def _refuse(_: str) -> Any:
    raise ValueError("not a JSON number")


def _finite(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        raise ValueError("a number overflows")
    return value


_DECODER = json.JSONDecoder(parse_constant=_refuse, parse_float=_finite)


def decode_json(data: bytes) -> Any:
    """JSON from an untrusted body, or ``None``: too deep, invalid, NaN..."""
    if not data or json_depth(data) > MAX_JSON_DEPTH:
        return None
    try:
        return _DECODER.decode(data.decode("utf-8-sig"))
    except (ValueError, UnicodeDecodeError, RecursionError):
        return None


class Fetcher:
    """OAuth HTTP on one ``httpx.Client`` (the session's, so its proxies and
    TLS settings apply), for the server named ``server`` in messages."""

    def __init__(
        self,
        client: httpx.Client,
        *,
        server: str,
        max_bytes: int,
        stopping: threading.Event | None = None,
        beside: Beside | None = None,
    ) -> None:
        import httpx

        self._httpx = httpx
        self.client = client
        self.server = server
        self.max_bytes = max_bytes
        self.stopping = stopping
        # The transport's hook: a closing session wakes this client's fetches too.
        self.beside = beside

    def request(
        self,
        method: str,
        url: str,
        deadline: float,
        *,
        what: str,
        form: dict[str, str] | None = None,
        json_body: Any = None,
        headers: dict[str, str] | None = None,
    ) -> Reply:
        hx = self._httpx
        remaining = deadline - time.monotonic()
        if remaining <= 0 or (self.stopping is not None and self.stopping.is_set()):
            raise Timeout(f"server {self.server!r}: {what} missed its deadline")
        sent = {"Accept": "application/json", "Accept-Encoding": "identity"}
        content: bytes | None = None
        if form is not None:
            content = urlencode(form).encode("ascii")
            sent["Content-Type"] = "application/x-www-form-urlencoded"
        elif json_body is not None:
            content = json.dumps(json_body, separators=(",", ":")).encode("utf-8")
            sent["Content-Type"] = "application/json"
        if headers:
            sent.update(headers)
        from ..transports.http_status import Stopped

        beside = contextlib.nullcontext(None) if self.beside is None else self.beside()
        try:
            with beside as trace, self.client.stream(
                method,
                url,
                content=content,
                headers=sent,
                timeout=hx.Timeout(min(remaining, threading.TIMEOUT_MAX)),
                follow_redirects=False,
                extensions={} if trace is None else {"trace": trace},
            ) as response:
                data = self._read(response, what)
                return Reply(response.status_code, response.headers, decode_json(data))
        except (hx.TimeoutException, Stopped):  # (Stopped: the session is closing)
            raise Timeout(f"server {self.server!r}: {what} missed its deadline") from None
        except hx.HTTPError as exc:
            raise AuthError(f"server {self.server!r}: {what} failed ({type(exc).__name__})") from None

    def _read(self, response: httpx.Response, what: str) -> bytes:
        encoding = response.headers.get("content-encoding", "").strip().lower()
        if encoding not in ("", "identity"):
            raise AuthError(f"server {self.server!r}: {what} came back compressed")
        limit = self.max_bytes
        length = response.headers.get("content-length", "")
        if length.strip().isdigit() and len(length) < 19 and int(length) > limit:
            raise self._too_big(what)
        parts: list[bytes] = []
        held = 0
        for chunk in response.iter_raw():
            held += len(chunk)
            if held > limit:
                raise self._too_big(what)
            parts.append(chunk)
        return b"".join(parts)

    def _too_big(self, what: str) -> AuthError:
        return AuthError(
            f"server {self.server!r}: {what} sent a body larger than max_frame_bytes={self.max_bytes}"
        )
