"""The session's cache of the results a server says may be reused.

A server may put two fields on the results of ``tools/list``,
``prompts/list``, ``resources/list``, ``resources/templates/list`` and
``resources/read``: ``ttlMs``, how many milliseconds the result stays fresh,
and ``cacheScope``, ``"public"`` (the same for every user) or ``"private"``
(for the user who asked). A session keeps such a result and answers the
same request from it while it is fresh, so a web request that reads a
resource or lists prompts costs no round trip.

The rules, in one place:

- A result is kept only when its ``ttlMs`` is a positive integer (absent,
  0, negative, a fraction or another type: not kept), for at most
  :data:`MAX_TTL_MS`, however long the server asks.
- ``cacheScope`` other than ``"public"`` (absent included) counts as
  ``"private"``. A user is an authorization context: the credential the
  requests carry. The cache belongs to one session and ends with it; a
  session without ``auth=`` (stdio, a static token or headers) sends one
  credential for its whole life, so it speaks for one user and keeps
  private results too. A session whose credential is managed while it runs
  (``auth=``: OAuth, or a token provider that may hand it another user's
  token; an ``http_client`` with its own auth) keeps only public results:
  nothing tells the library whose token the next request carries.
- A list walked whole is one entry (fresh while every page of it is: the
  smallest ``ttlMs`` of its pages; private if any page is), so a walk is
  never put together from pages fetched at different times; a page asked
  for by its cursor is an entry of its own.
- A request that carries the caller's ``meta=`` is neither answered from
  nor kept in the cache (its ``_meta`` may change the answer).
- ``notifications/tools/list_changed`` drops the ``tools/list`` entries,
  ``prompts/list_changed`` the prompt lists, ``resources/list_changed`` the
  resource and template lists, ``notifications/resources/updated`` the read
  of that URI. A result fetched while a change of what it is made of was
  announced is not kept, so a change announced mid-request is never hidden
  (the last :data:`MAX_CHANGES` changes are remembered one by one; older
  ones count as having come just before the last one forgotten).
- Bounded: :data:`MAX_ENTRIES` entries and about :data:`MAX_BYTES` bytes of
  text, the least recently used going first; one result over a quarter of
  that is not kept.

Thread-safe: one lock guards the table, held for dictionary operations only
(the reader thread takes it to drop entries when a notification arrives).
Values are frozen, so every thread is given the same object. Hits, misses
and what was kept or not are DEBUG records on ``mcp_sync.cache``.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterable, Mapping
from dataclasses import fields, is_dataclass
from typing import Any, NamedTuple

__all__ = ["MAX_BYTES", "MAX_CHANGES", "MAX_ENTRIES", "MAX_TTL_MS", "WHOLE", "ResponseCache", "freshness"]

MAX_ENTRIES = 256
"""Entries one session's cache holds at most."""
MAX_BYTES = 32 * 1024 * 1024
"""About how many bytes of text and data one session's cache holds at most."""
MAX_TTL_MS = 3_600_000
"""The longest a result is kept (one hour), whatever ``ttlMs`` says."""
MAX_CHANGES = 1024
"""Announced changes remembered one by one (per list, per resource URI)."""

class _Whole:
    def __repr__(self) -> str:
        return "WHOLE"


WHOLE: Any = _Whole()
"""The key part of a list walked whole (never equal to a cursor or a URI)."""

_LISTS = {
    "tools": ("tools/list",),
    "prompts": ("prompts/list",),
    "resources": ("resources/list", "resources/templates/list"),
}
_READ = "resources/read"
_EVERY = object()  # (for the log: every entry of a list)

_log = logging.getLogger("mcp_sync.cache")


def freshness(results: Iterable[object]) -> tuple[int, bool]:
    """``(ttl_ms, private)`` of the results one answer is made of: the
    smallest usable ``ttlMs`` (0 when any has none), capped at
    :data:`MAX_TTL_MS`; private unless every one says ``"public"``."""
    ttl, private, counted = MAX_TTL_MS, False, False
    for result in results:
        counted = True
        value = result.get("ttlMs") if isinstance(result, Mapping) else None
        ttl = min(ttl, value) if type(value) is int and value > 0 else 0
        private = private or not isinstance(result, Mapping) or result.get("cacheScope") != "public"
    return (ttl, private) if counted else (0, True)


class _Entry(NamedTuple):
    value: Any
    expires: float  # time.monotonic()
    size: int
    private: bool


class ResponseCache:
    """One session's cache (see the module's docstring)."""

    def __init__(self, server: str, *, keep_private: bool) -> None:
        self.server = server
        self.keep_private = keep_private
        self._lock = threading.Lock()
        self._entries: dict[tuple[str, object], _Entry] = {}
        self._bytes = 0
        # Each announced change is numbered; _changed holds the number of the
        # last change of each list method and of each read URI (("read", uri)),
        # and _floor the number of the last change forgotten to stay bounded.
        self._seq = 0
        self._changed: dict[object, int] = {}
        self._floor = 0

    @property
    def epoch(self) -> int:
        """The number of the last announced change: read before a request,
        given to :meth:`store` with its result."""
        return self._seq

    def __len__(self) -> int:
        return len(self._entries)

    def lookup(self, method: str, part: object) -> Any:
        """The fresh value kept for ``(method, part)``, or ``None``.
        ``part``: the URI of a read, the cursor of a page (``None``: the
        first), :data:`WHOLE` for a list walked whole."""
        key = (method, part)
        now = time.monotonic()
        with self._lock:
            entry = self._entries.get(key)
            if entry is not None:
                if now < entry.expires:
                    self._entries[key] = self._entries.pop(key)  # the most recently used now
                else:
                    self._drop(key)
        if entry is not None and now < entry.expires:
            if _log.isEnabledFor(logging.DEBUG):
                self._debug("cache_hit", "hit", method, part, f"fresh for {entry.expires - now:.1f} s more")
            return entry.value
        if _log.isEnabledFor(logging.DEBUG):
            self._debug("cache_miss", "miss", method, part, "expired" if entry is not None else "nothing kept")
        return None

    def store(self, method: str, part: object, value: Any, results: Iterable[object], epoch: int) -> None:
        """Keep ``value``, made from the raw ``results`` (one per page, or the
        read's), if their ``ttlMs`` and ``cacheScope`` allow it and nothing
        was invalidated since ``epoch``."""
        ttl, private = freshness(results)
        why = None
        size = _size(value)
        if ttl <= 0:
            why = "the server gave it no ttlMs"
        elif private and not self.keep_private:
            why = "private to its user, and this session's credentials (auth=) may change user"
        elif size > MAX_BYTES // 4:
            why = f"{size} bytes, over a quarter of the cache"
        else:
            group = ("read", part) if method == _READ else method
            with self._lock:
                if self._changed.get(group, self._floor) > epoch:
                    why = "the server announced a change while it was fetched"
                else:
                    key = (method, part)
                    self._drop(key)
                    self._entries[key] = _Entry(value, time.monotonic() + ttl / 1000, size, private)
                    self._bytes += size
                    while len(self._entries) > MAX_ENTRIES or self._bytes > MAX_BYTES:
                        self._drop(next(iter(self._entries)))
        if _log.isEnabledFor(logging.DEBUG):
            said = f"for {ttl} ms, {'private' if private else 'public'}" if why is None else why
            self._debug("cache_store", "kept" if why is None else "not kept", method, part, said)

    def list_changed(self, kind: str) -> None:
        """``notifications/<kind>/list_changed``: drop that kind's lists."""
        methods = _LISTS.get(kind, ())
        with self._lock:
            for method in methods:
                self._note(method)
            for key in [key for key in self._entries if key[0] in methods]:
                self._drop(key)
        if _log.isEnabledFor(logging.DEBUG):
            for method in methods:
                self._debug("cache_invalidate", "dropped", method, _EVERY, f"notifications/{kind}/list_changed")

    def updated(self, params: object) -> None:
        """``notifications/resources/updated``: drop the read of its URI."""
        uri = params.get("uri") if isinstance(params, Mapping) else None
        if not isinstance(uri, str):
            return
        with self._lock:
            self._note(("read", uri))
            self._drop((_READ, uri))
        if _log.isEnabledFor(logging.DEBUG):
            self._debug("cache_invalidate", "dropped", _READ, uri, "notifications/resources/updated")

    def clear(self) -> None:
        with self._lock:
            self._seq += 1
            self._floor = self._seq
            self._changed.clear()
            self._entries.clear()
            self._bytes = 0

    def _note(self, group: object) -> None:
        # Under the lock: one more change, of ``group``.
        self._seq += 1
        self._changed.pop(group, None)
        self._changed[group] = self._seq
        if len(self._changed) > MAX_CHANGES:
            oldest = next(iter(self._changed))
            self._floor = max(self._floor, self._changed.pop(oldest))

    def _drop(self, key: tuple[str, object]) -> None:
        # Under the lock.
        entry = self._entries.pop(key, None)
        if entry is not None:
            self._bytes -= entry.size

    def _debug(self, event: str, verb: str, method: str, part: object, detail: str) -> None:
        if method == _READ:
            what = f"{method} of {str(part)[:200]!a}"
        else:
            shown = {WHOLE: "the whole list", None: "first page", _EVERY: "every entry"}.get(part, "a later page")
            what = f"{method} ({shown})"
        _log.debug(
            "cache %s: %s from server %r (%s)", verb, what, self.server, detail,
            extra={"mcp_event": event, "mcp_server": self.server, "mcp_method": method},
        )  # fmt: skip


def _size(value: Any) -> int:
    """About how many bytes ``value`` (a frozen result, a page or a tuple of
    entries) holds: the lengths of its strings and data, and 64 per object.
    Linear in the value; recursion only through the result types' fields."""
    total = 64
    if isinstance(value, (str, bytes)):
        return total + len(value)
    if isinstance(value, Mapping):
        return total + sum(len(key) + _size(item) for key, item in value.items())
    if isinstance(value, (tuple, list)):
        return total + sum(_size(item) for item in value)
    if is_dataclass(value):
        return total + sum(_size(getattr(value, field.name)) for field in fields(value))
    return total
