"""Server-to-client requests: ``connect(handlers=Handlers(...))``.

A server may ask its client for things: to elicit input from the user
(``elicitation/create``, form or URL mode), to sample a language model
(``sampling/createMessage``), for the filesystem roots it may use
(``roots/list``), or just whether it is alive (``ping``). Each is served only
when the caller gave what serves it, and declared as a client capability only
then; any other method is answered ``-32601`` "Method not
found", as before.

:class:`ServerRequests` is the one place that decides how a method is
answered. The thread reading the server's output never runs a handler: it
hands the request to a small bounded pool of library threads
(``Handlers.max_concurrency``), so a handler waiting on a human does not hold
up anybody's reply. A handler that raises, returns something unusable or
outlives ``Handlers.timeout_ms`` becomes an error reply; the reader never
sees it. In the 2026-07-28 era the same handlers answer the questions of an
``input_required`` result (:meth:`ServerRequests.answer_input_request`), on
the same pool, under the same timeout and failure rules; the caller waits for
the answer no longer than its own deadline.
"""

from __future__ import annotations

import logging
import math
import os
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import urlsplit

from ._catalog import freeze, thaw
from ._errors import InputRequired, McpError, ProtocolError, Timeout
from ._jsonrpc import encode
from ._limits import check_limit, reply_not_queued, seconds
from ._workers import Workers

if TYPE_CHECKING:
    from ._session import _Core

__all__ = [
    "ElicitationRequest",
    "ElicitationResult",
    "HandlerError",
    "Handlers",
    "Root",
    "SamplingRequest",
    "SamplingResult",
    "RootsMixin",
    "ServerRequests",
]

DEFAULT_MAX_CONCURRENCY = 4
MAX_FORM_FIELDS = 100
"""An elicitation form with more fields than this is refused (-32602)."""
MAX_URL_CHARS = 8192
MAX_ROOTS = 1024

# JSON-RPC codes of our error replies.
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
REQUEST_TIMEOUT = -32001  # what the official SDKs use for a request that timed out
HANDLER_FAILED = "the client's handler failed"
HANDLER_LATE = "the client's handler did not answer in time"

_log = logging.getLogger("mcp_sync.handlers")


# --------------------------------------------------------------------- public types


@dataclass(frozen=True, slots=True)
class Root:
    """A filesystem root the client exposes: a ``file://`` URI and an optional name."""

    uri: str
    name: str | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"uri": self.uri}
        if self.name is not None:
            out["name"] = self.name
        return out


@dataclass(frozen=True, slots=True)
class ElicitationRequest:
    """A server asks for input from the user.

    Form mode: show ``message`` and a form built from ``requested_schema``
    (a flat object of string, number, integer, boolean and enum fields),
    pre-filled with ``defaults``. URL mode: show ``message`` and the full
    ``url`` and ask for consent before opening it; never open or fetch it
    without that consent. All text here came from the server: untrusted.
    """

    server: str
    mode: Literal["form", "url"]
    message: str
    requested_schema: Mapping[str, Any] | None = None
    defaults: Mapping[str, Any] = field(default_factory=lambda: freeze({}))
    url: str | None = None
    elicitation_id: str | None = None
    cancelled: threading.Event = field(default_factory=threading.Event, compare=False, repr=False)
    """Set when the server cancels the request (the answer will be dropped)."""


@dataclass(frozen=True, slots=True)
class ElicitationResult:
    """The user's answer: ``accept`` (with the form's ``content``), ``decline``
    or ``cancel``. Accepted form content that omits a field with a default
    gets the default, as if the user left the pre-filled value (SEP-1034)."""

    action: Literal["accept", "decline", "cancel"]
    content: Mapping[str, Any] | None = None

    @classmethod
    def accept(cls, content: Mapping[str, Any] | None = None) -> ElicitationResult:
        return cls("accept", freeze(dict(content)) if content is not None else None)

    @classmethod
    def decline(cls) -> ElicitationResult:
        return cls("decline")

    @classmethod
    def cancel(cls) -> ElicitationResult:
        return cls("cancel")

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"action": self.action}
        if self.content is not None:
            out["content"] = thaw(self.content)
        return out


@dataclass(frozen=True, slots=True)
class SamplingRequest:
    """A server asks for a model's completion of ``messages`` (frozen MCP
    JSON, untrusted). ``params`` holds the whole request."""

    server: str
    messages: tuple[Mapping[str, Any], ...]
    max_tokens: int
    system_prompt: str | None = None
    temperature: float | None = None
    stop_sequences: tuple[str, ...] | None = None
    model_preferences: Mapping[str, Any] | None = None
    tools: tuple[Mapping[str, Any], ...] | None = None
    tool_choice: Mapping[str, Any] | None = None
    params: Mapping[str, Any] = field(default_factory=lambda: freeze({}))
    cancelled: threading.Event = field(default_factory=threading.Event, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class SamplingResult:
    """The model's answer to a :class:`SamplingRequest`."""

    content: Mapping[str, Any] | Sequence[Mapping[str, Any]]
    model: str
    role: Literal["assistant", "user"] = "assistant"
    stop_reason: str | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"role": self.role, "content": thaw(self.content), "model": self.model}
        if self.stop_reason is not None:
            out["stopReason"] = self.stop_reason
        return out


class HandlerError(Exception):
    """Raise in a handler to answer the server with this JSON-RPC error
    (e.g. ``HandlerError("User rejected sampling request", code=-1)``).
    ``message`` goes to the server as is."""

    def __init__(self, message: str, code: int = INTERNAL_ERROR) -> None:
        super().__init__(message)
        self.message = message
        self.code = code


ElicitationHandler = Callable[[ElicitationRequest], ElicitationResult | Mapping[str, Any]]
SamplingHandler = Callable[[SamplingRequest], SamplingResult | Mapping[str, Any]]
RootLike = Root | str | os.PathLike[str] | Mapping[str, Any]
RootsProvider = Sequence[RootLike] | Callable[[], Sequence[RootLike]]


@dataclass(frozen=True)
class Handlers:
    """What a session answers when its server asks. Each one given is also
    declared to the server as a client capability; none given, none declared.

    - ``elicitation``: form-mode elicitation (``ElicitationRequest`` ->
      ``ElicitationResult``);
    - ``url_elicitation``: URL-mode elicitation (same types);
    - ``sampling``: ``SamplingRequest`` -> ``SamplingResult``;
      ``sampling_tools=True`` also declares tool use in sampling;
    - ``roots``: a list of roots (``Root``, ``file://`` URIs, absolute paths)
      or a callable returning one; change it later with
      ``session.set_roots(...)``;
    - ``timeout_ms``: how long a handler may take before the server gets an
      error instead (default: the session's ``request_timeout_ms``);
    - ``max_concurrency``: handler threads per session (default 4).

    Handlers run on the library's threads, never on the one reading the
    server's output, possibly several at once.
    """

    elicitation: ElicitationHandler | None = None
    url_elicitation: ElicitationHandler | None = None
    sampling: SamplingHandler | None = None
    sampling_tools: bool = False
    roots: RootsProvider | None = None
    timeout_ms: int | None = None
    max_concurrency: int = DEFAULT_MAX_CONCURRENCY

    def __post_init__(self) -> None:
        for name in ("elicitation", "url_elicitation", "sampling"):
            value = getattr(self, name)
            if value is not None and not callable(value):
                raise ProtocolError(f"handler {name} must be callable")
        if type(self.sampling_tools) is not bool:
            raise ProtocolError("option sampling_tools must be a bool")
        if self.roots is not None and not callable(self.roots):
            object.__setattr__(self, "roots", normalize_roots(self.roots))
        if self.timeout_ms is not None:
            check_limit("timeout_ms", self.timeout_ms)
        check_limit("max_concurrency", self.max_concurrency)

    def capabilities(self) -> dict[str, Any]:
        """The client capabilities these handlers serve."""
        out: dict[str, Any] = {}
        if self.elicitation is not None or self.url_elicitation is not None:
            modes: dict[str, Any] = {}
            if self.elicitation is not None:
                modes["form"] = {}
            if self.url_elicitation is not None:
                modes["url"] = {}
            out["elicitation"] = modes
        if self.sampling is not None:
            out["sampling"] = {"tools": {}} if self.sampling_tools else {}
        if self.roots is not None:
            out["roots"] = {"listChanged": True}
        return out


def normalize_roots(roots: object) -> tuple[Root, ...]:
    """Roots as given by a caller -> checked :class:`Root` values."""
    if isinstance(roots, (str, bytes, Mapping)) or not isinstance(roots, Sequence):
        raise ProtocolError("roots must be a list of roots (file:// URIs, paths or Root values)")
    if len(roots) > MAX_ROOTS:
        raise ProtocolError(f"roots: more than {MAX_ROOTS} roots")
    return tuple(_root(item) for item in roots)


def _root(item: object) -> Root:
    name: object = None
    uri: object
    if isinstance(item, Root):
        uri, name = item.uri, item.name
    elif isinstance(item, Mapping):
        uri, name = item.get("uri"), item.get("name")
    elif isinstance(item, os.PathLike):
        path = Path(os.fspath(item))
        if not path.is_absolute():
            raise ProtocolError("a root path must be absolute")
        uri = path.as_uri()
    elif isinstance(item, str) and not item.startswith("file:"):
        path = Path(item)
        if not path.is_absolute():
            raise ProtocolError("a root must be a file:// URI or an absolute path")
        uri = path.as_uri()
    else:
        uri = item
    if not isinstance(uri, str) or not uri.startswith("file://") or _unsafe(uri):
        raise ProtocolError("a root must be a file:// URI without control characters")
    if name is not None and not isinstance(name, str):
        raise ProtocolError("a root's name must be a string")
    return Root(uri, name)


def _unsafe(text: str) -> bool:
    return any(ord(ch) < 0x20 or ord(ch) == 0x7F for ch in text)


# --------------------------------------------------------------------- the dispatcher


class _Refused(Exception):
    """An error reply decided while preparing an answer."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class _InFlight:
    """A server request being answered: whoever pops it from the table
    (the handler's thread, the timer, a cancellation) decides the reply."""

    __slots__ = ("cancelled", "timer")

    def __init__(self) -> None:
        self.cancelled = threading.Event()
        self.timer: threading.Timer | None = None


@dataclass(frozen=True, slots=True)
class _Failure:
    """The error that answers a server request: ``source`` says whether the
    request was refused before any handler ran, the handler refused it
    (``HandlerError``), or the handler raised (or returned nonsense)."""

    code: int
    message: str
    source: Literal["refused", "handler", "raised"]


class _Answer:
    """One ``input_required`` question answered on the handler pool for a
    caller that waits for it (modern era). A bare lock, released once the
    outcome is set: the caller acquires it with its timeout."""

    __slots__ = ("_done", "cancelled", "outcome")

    def __init__(self) -> None:
        self._done = threading.Lock()
        self._done.acquire()
        self.cancelled = threading.Event()
        self.outcome: tuple[Any, _Failure | None] = (None, None)

    def run(
        self,
        outcome: Callable[[str, object, threading.Event], tuple[Any, _Failure | None]],
        method: str,
        params: object,
    ) -> None:
        # What escapes _outcome is no Exception (a SystemExit, say, in the
        # handler): the waiting caller still gets a failure, not a None answer.
        self.outcome = (None, _Failure(INTERNAL_ERROR, HANDLER_FAILED, "raised"))
        try:
            self.outcome = outcome(method, params, self.cancelled)
        finally:
            self._done.release()

    def wait(self, until: float) -> bool:
        return self._done.acquire(True, min(max(0.0, until - time.monotonic()), threading.TIMEOUT_MAX))


class ServerRequests:
    """Answers one session's server requests, and in the modern era the
    questions of ``input_required`` results: one handler pool, one timeout
    and one set of failure rules for both."""

    def __init__(self, core: _Core, handlers: Handlers | None) -> None:
        self._core = core
        self._handlers = handlers if handlers is not None else Handlers()
        limits = core.limits
        self._name = f"mcp_sync-{core.server}"
        self._timeout = seconds(
            self._handlers.timeout_ms if self._handlers.timeout_ms is not None else limits.request_timeout_ms
        )
        backlog = max(64, limits.queue_capacity)
        self._pool_backlog = backlog
        self._pool = Workers(
            f"{self._name}-handler", max_workers=self._handlers.max_concurrency, backlog=backlog
        )
        # Guards _inflight and _roots.
        self._lock = threading.Lock()
        self._inflight: dict[int | str, _InFlight] = {}
        roots = self._handlers.roots
        self._roots: RootsProvider | None = roots

    # ------------------------------------------------------- reader side

    def receive(self, request_id: int | str, method: str, params: object) -> None:
        """A server request, from the thread reading the server's output:
        answered at once when that costs nothing, else handed to the pool."""
        if method == "ping":
            self._reply_soon(request_id, result={})
            return
        if not self._serves(method):
            self._reply_soon(request_id, error=(METHOD_NOT_FOUND, "Method not found"))
            return
        entry = _InFlight()
        with self._lock:
            if request_id in self._inflight:
                duplicate = True
            else:
                duplicate = False
                self._inflight[request_id] = entry
        if duplicate:
            self._reply_soon(request_id, error=(INVALID_PARAMS, "a request with this id is already in progress"))
            return
        if not self._pool.submit(lambda: self._run(request_id, method, params, entry)):
            with self._lock:
                self._inflight.pop(request_id, None)
            self._overwhelmed()

    def cancelled(self, params: object) -> None:
        """``notifications/cancelled`` for one of the server's requests: its
        answer is dropped and its handler told (``request.cancelled``)."""
        if not isinstance(params, Mapping):
            return
        request_id = params.get("requestId")
        if type(request_id) not in (int, str):
            return
        with self._lock:
            entry = self._inflight.pop(request_id, None)  # type: ignore[arg-type]
        if entry is not None:
            entry.cancelled.set()
            if entry.timer is not None:
                entry.timer.cancel()

    def _serves(self, method: str) -> bool:
        handlers = self._handlers
        if method == "elicitation/create":
            return handlers.elicitation is not None or handlers.url_elicitation is not None
        if method == "sampling/createMessage":
            return handlers.sampling is not None
        if method == "roots/list":
            return self._roots is not None
        return False

    # ------------------------------------------------------- pool side

    def _run(self, request_id: int | str, method: str, params: object, entry: _InFlight) -> None:
        timer = threading.Timer(self._timeout, self._timed_out, args=(request_id,))
        timer.name = f"{self._name}-handler-timer"
        timer.daemon = True
        entry.timer = timer
        try:
            timer.start()
        except RuntimeError:
            entry.timer = None
        try:
            result, failure = self._outcome(method, params, entry.cancelled)
        finally:
            timer.cancel()
        with self._lock:
            mine = self._inflight.pop(request_id, None) is entry
        if mine:
            error = None if failure is None else (failure.code, failure.message)
            self._send(_reply(request_id, result=result, error=error))

    def _outcome(self, method: str, params: object, cancelled: threading.Event) -> tuple[Any, _Failure | None]:
        """Run the handler for one request: its result, or the error that
        answers it (a handler that raises, refuses or returns nonsense is an
        error, never an exception out of here). Both eras go through this."""
        try:
            return self.answer(method, params, cancelled), None
        except _Refused as refused:
            return None, _Failure(refused.code, refused.message, "refused")
        except HandlerError as failure:
            code = failure.code if type(failure.code) is int else INTERNAL_ERROR
            return None, _Failure(code, str(failure.message), "handler")
        except Exception:
            _log.exception(
                "the %s handler of server %r raised", method, self._core.server,
                extra={"mcp_event": "handler_failed", "mcp_server": self._core.server, "mcp_method": method},
            )  # fmt: skip
            return None, _Failure(INTERNAL_ERROR, HANDLER_FAILED, "raised")

    def _timed_out(self, request_id: int | str) -> None:
        with self._lock:
            entry = self._inflight.pop(request_id, None)
        if entry is None:
            return
        entry.cancelled.set()
        _log.warning(
            "a handler of server %r did not answer within %.0f ms", self._core.server, self._timeout * 1000,
            extra={"mcp_event": "handler_timeout", "mcp_server": self._core.server},
        )  # fmt: skip
        self._send(_reply(request_id, error=(REQUEST_TIMEOUT, HANDLER_LATE)))

    def answer(self, method: str, params: object, cancelled: threading.Event) -> dict[str, Any]:
        """The result for one server request (``_Refused`` for an error reply).
        Runs a handler: never called on the reading thread."""
        if params is None:
            params = {}
        if not isinstance(params, Mapping):
            raise _Refused(INVALID_PARAMS, "params must be an object")
        server = self._core.server
        handlers = self._handlers
        if method == "elicitation/create":
            request = parse_elicitation(server, params, cancelled)
            handler = handlers.elicitation if request.mode == "form" else handlers.url_elicitation
            if handler is None:
                raise _Refused(INVALID_PARAMS, f"this client does not support {request.mode} mode elicitation")
            return elicitation_reply(request, handler(request))
        if method == "sampling/createMessage":
            assert handlers.sampling is not None
            sampling = parse_sampling(server, params, cancelled)
            return sampling_reply(handlers.sampling(sampling))
        if method == "roots/list":
            return {"roots": [root.to_dict() for root in self._current_roots()]}
        raise _Refused(METHOD_NOT_FOUND, "Method not found")

    def answer_input_request(self, method: str, params: object, deadline: float) -> dict[str, Any]:
        """Answer one question of an ``input_required`` result (2026-07-28)
        the way a server request is answered: on the handler pool, within
        ``Handlers.timeout_ms``, the handler's failure decided by the same
        rules. The caller waits until ``deadline`` at most; a handler still
        running then is told (``request.cancelled``) and its answer dropped.

        Raises :class:`InputRequired` when no handler answers ``method``,
        :class:`Timeout` when the deadline or ``Handlers.timeout_ms`` passes
        first, and :class:`ProtocolError` for what would be an error reply in
        the handshake era (unusable params, a handler that raised or refused)."""
        server = self._core.server
        if not self._serves(method):
            # The call plan names every request it could not answer.
            raise InputRequired(f"no handler answers {method[:64]!a}", (method,))
        now = time.monotonic()
        if deadline <= now:
            raise Timeout(f"server {server!r} asked for {method!a} after the caller's deadline")
        job = _Answer()
        if not self._pool.submit(lambda: job.run(self._outcome, method, params)):
            terminal = self._core.terminal
            if terminal is not None:
                raise terminal._copy()
            raise ProtocolError(
                f"server {server!r} asked for {method!a} while every handler thread was busy "
                f"and {self._pool_backlog} more were waiting"
            )
        late = now + self._timeout < deadline  # Handlers.timeout_ms comes before the caller's deadline
        try:
            answered = job.wait(min(deadline, now + self._timeout))
        except BaseException:  # an interrupt while waiting: the answer is no longer wanted
            job.cancelled.set()
            raise
        if not answered:
            job.cancelled.set()
            if late:
                raise Timeout(
                    f"the {method} handler did not answer server {server!r} within "
                    f"{self._timeout * 1000:.0f} ms (Handlers.timeout_ms)"
                )
            raise Timeout(
                f"server {server!r} asked for {method!a} and the handler had not answered by the caller's deadline"
            )
        result, failure = job.outcome
        if failure is None:
            return result  # type: ignore[no-any-return]
        # What the handshake era would have replied to the server, raised to
        # the caller: the revision has no error answer to an input request.
        if failure.source == "refused":
            raise ProtocolError(f"server {server!r} asked for {method!a} with unusable params: {failure.message}")
        if failure.source == "raised":
            raise ProtocolError(
                f"the {method} handler failed on a request of server {server!r} "
                f"(error {failure.code}: {failure.message})"
            )
        raise ProtocolError(f"the {method} handler refused the request of server {server!r} (error {failure.code})")

    # ------------------------------------------------------- roots

    def _current_roots(self) -> tuple[Root, ...]:
        with self._lock:
            provider = self._roots
        if callable(provider):
            try:
                return normalize_roots(provider())
            except ProtocolError as exc:
                raise HandlerError(f"the client's roots are unusable: {exc.message}") from None
        return provider if isinstance(provider, tuple) else ()

    @property
    def roots_provider(self) -> RootsProvider | None:
        with self._lock:
            return self._roots

    def set_roots(self, roots: RootsProvider) -> None:
        if self._roots is None:
            raise ProtocolError("set_roots needs a session connected with Handlers(roots=...)")
        value: RootsProvider = roots if callable(roots) else normalize_roots(roots)
        with self._lock:
            self._roots = value

    # ------------------------------------------------------- replies

    def _reply_soon(
        self, request_id: int | str, *, result: Any = None, error: tuple[int, str] | None = None
    ) -> None:
        """Answer at once, from the thread that read the request (a ping, a
        refusal): the transport's ``reply`` never makes a reading caller wait
        for room in the outbound queue (it may be the only thread reading)."""
        self._send(_reply(request_id, result=result, error=error))

    def _send(self, message: dict[str, Any]) -> None:
        """Send one reply through the transport's ``reply``, the one way every
        answer to a server request leaves; the session ends if it cannot be
        queued within ``request_timeout_ms`` (a server that reads nothing)."""
        core = self._core
        transport = core.transport
        if core.terminal is not None or transport is None:
            return  # nothing is sent once the session is over
        limits = core.limits
        try:
            frame = encode(message, limits.max_outbound_frame_bytes)
        except ProtocolError:  # an answer too large (or unencodable) to send
            frame = encode(
                _error_message(message["id"], INTERNAL_ERROR, "the client's answer could not be sent"),
                limits.max_outbound_frame_bytes,
            )
        try:
            queued = transport.reply(frame)
        except McpError:
            return  # the transport already ended the session if it had to
        if not queued:
            core.terminate(reply_not_queued(limits))

    def _overwhelmed(self) -> None:
        limits = self._core.limits
        self._core.terminate(
            ProtocolError(
                "server requests arrive faster than they can be answered "
                f"(queue_capacity={limits.queue_capacity})"
            )
        )

    def close(self, deadline: float) -> None:
        """Drop what is in flight (no reply is sent after the end) and wait
        for the threads until ``deadline`` at most."""
        with self._lock:
            entries = list(self._inflight.values())
            self._inflight.clear()
        for entry in entries:
            entry.cancelled.set()
            if entry.timer is not None:
                entry.timer.cancel()
        self._pool.close(max(0.0, deadline - time.monotonic()))


def _error_message(request_id: int | str, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}


def _reply(request_id: int | str, *, result: Any = None, error: tuple[int, str] | None = None) -> dict[str, Any]:
    if error is not None:
        return _error_message(request_id, *error)
    return {"jsonrpc": "2.0", "id": request_id, "result": result}


# --------------------------------------------------------------------- elicitation

_STRING_FORMATS = frozenset({"email", "uri", "date", "date-time"})


def parse_elicitation(server: str, params: Mapping[str, Any], cancelled: threading.Event) -> ElicitationRequest:
    mode = params.get("mode", "form")
    if mode not in ("form", "url"):
        raise _Refused(INVALID_PARAMS, "unknown elicitation mode")
    message = params.get("message")
    if not isinstance(message, str):
        raise _Refused(INVALID_PARAMS, "an elicitation needs a message")
    if mode == "url":
        url = params.get("url")
        if not isinstance(url, str) or not _valid_url(url):
            raise _Refused(INVALID_PARAMS, "a URL elicitation needs an absolute http(s) url")
        elicitation_id = params.get("elicitationId")
        if elicitation_id is not None and not isinstance(elicitation_id, str):
            raise _Refused(INVALID_PARAMS, "elicitationId must be a string")
        return ElicitationRequest(
            server=server, mode="url", message=message, url=url,
            elicitation_id=elicitation_id, cancelled=cancelled,
        )  # fmt: skip
    schema = params.get("requestedSchema")
    defaults = form_defaults(schema)
    return ElicitationRequest(
        server=server,
        mode="form",
        message=message,
        requested_schema=freeze(schema),
        defaults=freeze(defaults),
        cancelled=cancelled,
    )


def _valid_url(url: str) -> bool:
    if len(url) > MAX_URL_CHARS or _unsafe(url) or any(ch.isspace() for ch in url):
        return False
    try:
        parts = urlsplit(url)
    except ValueError:
        return False
    return parts.scheme.lower() in ("http", "https") and bool(parts.hostname)


def form_defaults(schema: object) -> dict[str, Any]:
    """Check a form's ``requestedSchema`` (a flat object of primitive fields)
    and return the valid ``default`` of each field that has one."""
    if not isinstance(schema, Mapping) or schema.get("type") != "object":
        raise _Refused(INVALID_PARAMS, 'requestedSchema must be a schema of "type": "object"')
    properties = schema.get("properties", {})
    if not isinstance(properties, Mapping):
        raise _Refused(INVALID_PARAMS, "requestedSchema.properties must be an object")
    if len(properties) > MAX_FORM_FIELDS:
        raise _Refused(INVALID_PARAMS, f"requestedSchema has more than {MAX_FORM_FIELDS} fields")
    required = schema.get("required", [])
    if not isinstance(required, list) or not all(isinstance(name, str) for name in required):
        raise _Refused(INVALID_PARAMS, "requestedSchema.required must be a list of names")
    defaults: dict[str, Any] = {}
    for name, prop in properties.items():
        if not isinstance(prop, Mapping):
            raise _Refused(INVALID_PARAMS, "each requestedSchema property must be an object")
        choices = _field_choices(prop)
        if "default" in prop and _fits(prop, choices, prop["default"]):
            defaults[name] = prop["default"]
    return defaults


def _field_choices(prop: Mapping[str, Any]) -> frozenset[str] | None:
    """The allowed values of an enum field (``None``: not an enum); refuses
    anything but the primitive field kinds a form may hold."""
    kind = prop.get("type")
    if kind == "string":
        if "enum" in prop:
            return _choices(prop["enum"])
        if "oneOf" in prop:
            return _titled_choices(prop["oneOf"])
        return None
    if kind in ("number", "integer", "boolean"):
        return None
    if kind == "array":
        items = prop.get("items")
        if not isinstance(items, Mapping):
            raise _Refused(INVALID_PARAMS, "a multi-select field needs items")
        if "enum" in items and items.get("type") == "string":
            return _choices(items["enum"])
        if "anyOf" in items:
            return _titled_choices(items["anyOf"])
        raise _Refused(INVALID_PARAMS, "a multi-select field must list its choices")
    raise _Refused(INVALID_PARAMS, "requestedSchema may hold only string, number, integer, boolean and enum fields")


def _choices(values: object) -> frozenset[str]:
    if not isinstance(values, list) or not all(isinstance(value, str) for value in values):
        raise _Refused(INVALID_PARAMS, "an enum must be a list of strings")
    return frozenset(values)


def _titled_choices(options: object) -> frozenset[str]:
    if not isinstance(options, list) or not all(
        isinstance(option, Mapping) and isinstance(option.get("const"), str) for option in options
    ):
        raise _Refused(INVALID_PARAMS, "titled choices must be objects with a string const")
    return frozenset(option["const"] for option in options)


def _fits(prop: Mapping[str, Any], choices: frozenset[str] | None, value: object) -> bool:
    kind = prop.get("type")
    if kind == "string":
        return isinstance(value, str) and (choices is None or value in choices)
    if kind == "integer":
        return type(value) is int or (type(value) is float and value.is_integer())
    if kind == "number":
        return type(value) in (int, float) and math.isfinite(value)  # type: ignore[arg-type]
    if kind == "boolean":
        return type(value) is bool
    if kind == "array":
        return (
            isinstance(value, list)
            and all(isinstance(item, str) for item in value)
            and (choices is None or all(item in choices for item in value))
        )
    return False


_ACTIONS = ("accept", "decline", "cancel")
_CONTENT_TYPES = (str, int, float, bool)


def _content_value(value: object) -> bool:
    if isinstance(value, _CONTENT_TYPES):
        return True
    return isinstance(value, (list, tuple)) and all(isinstance(item, str) for item in value)


def elicitation_reply(request: ElicitationRequest, answer: object) -> dict[str, Any]:
    """A handler's answer as an ``ElicitResult``, with the form's defaults
    filled in for the fields an accepted answer left out."""
    action: object
    content: object
    if isinstance(answer, ElicitationResult):
        action, content = answer.action, answer.content
    elif isinstance(answer, Mapping):
        action, content = answer.get("action"), answer.get("content")
    else:
        raise TypeError("an elicitation handler must return an ElicitationResult")
    if action not in _ACTIONS:
        raise TypeError("an elicitation result's action must be accept, decline or cancel")
    if action != "accept" or request.mode == "url":
        return {"action": action}
    if content is None:
        content = {}
    if not isinstance(content, Mapping) or not all(
        isinstance(key, str) and _content_value(value) for key, value in content.items()
    ):
        raise TypeError("accepted elicitation content must map names to strings, numbers, booleans or lists of strings")
    filled = {key: thaw(value) for key, value in request.defaults.items()}
    filled.update(thaw(content))
    return {"action": "accept", "content": filled}


# --------------------------------------------------------------------- sampling


def parse_sampling(server: str, params: Mapping[str, Any], cancelled: threading.Event) -> SamplingRequest:
    messages = params.get("messages")
    if not isinstance(messages, list) or not all(
        isinstance(message, Mapping) and message.get("role") in ("user", "assistant") and "content" in message
        for message in messages
    ):
        raise _Refused(INVALID_PARAMS, "messages must be a list of user and assistant messages")
    max_tokens = params.get("maxTokens")
    if type(max_tokens) is not int or max_tokens < 1:
        raise _Refused(INVALID_PARAMS, "maxTokens must be a positive integer")
    system = params.get("systemPrompt")
    temperature = params.get("temperature")
    stops = params.get("stopSequences")
    prefs = params.get("modelPreferences")
    tools = params.get("tools")
    choice = params.get("toolChoice")
    return SamplingRequest(
        server=server,
        messages=freeze(messages),
        max_tokens=max_tokens,
        system_prompt=system if isinstance(system, str) else None,
        temperature=float(temperature) if isinstance(temperature, (int, float)) else None,
        stop_sequences=tuple(stops) if isinstance(stops, list) and all(isinstance(s, str) for s in stops) else None,
        model_preferences=freeze(prefs) if isinstance(prefs, Mapping) else None,
        tools=freeze(tools) if isinstance(tools, list) and all(isinstance(t, Mapping) for t in tools) else None,
        tool_choice=freeze(choice) if isinstance(choice, Mapping) else None,
        params=freeze(dict(params)),
        cancelled=cancelled,
    )


def sampling_reply(answer: object) -> dict[str, Any]:
    if isinstance(answer, SamplingResult):
        out = answer.to_dict()
    elif isinstance(answer, Mapping):
        out = thaw(answer)
    else:
        raise TypeError("a sampling handler must return a SamplingResult")
    content = out.get("content")
    if (
        out.get("role") not in ("assistant", "user")
        or not isinstance(out.get("model"), str)
        or not (isinstance(content, dict) or (isinstance(content, list) and all(isinstance(c, dict) for c in content)))
    ):
        raise TypeError("a sampling result needs a role, a model and content")
    return out



class RootsMixin:
    """``Session`` methods for the roots a session exposes."""

    __slots__ = ()

    if TYPE_CHECKING:
        _core: _Core

    def set_roots(self, roots: RootsProvider) -> None:
        """Replace the roots given to ``Handlers(roots=...)`` and tell the
        server (``notifications/roots/list_changed``)."""
        core = self._core
        core.inbound.requests.set_roots(roots)
        self.roots_changed()

    def roots_changed(self) -> None:
        """Tell the server the roots changed (say, what a roots callable
        returns), so it asks again."""
        core = self._core
        if core.inbound.requests.roots_provider is None:
            raise ProtocolError("roots_changed needs a session connected with Handlers(roots=...)")
        core.notify("notifications/roots/list_changed", seconds(core.limits.request_timeout_ms))
