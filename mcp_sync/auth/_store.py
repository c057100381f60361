"""Where tokens live between requests and between runs.

A store maps string keys to JSON-able records. The library keys records by
server (the resource URL) and authorization server (its issuer), so
credentials obtained from one authorization server are never offered to
another. Records hold secrets (tokens, a registered client's secret, a DPoP
private key): a store must keep them private.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
import tempfile
import threading
from collections.abc import Iterator, Mapping
from typing import Any, Protocol, runtime_checkable

from ..protocol.errors import AuthError
from ..protocol.frames import json_depth
from ..protocol.limits import MAX_JSON_DEPTH

__all__ = ["FileTokenStore", "MemoryTokenStore", "TokenStore"]

MAX_STORE_BYTES = 4 * 1024 * 1024


@runtime_checkable
class TokenStore(Protocol):
    """The interface of a token store. Implement it over your own storage
    (a database row per user, a secrets manager...). Methods are called from
    the library's threads, one at a time per auth object and server."""

    def get(self, key: str) -> Mapping[str, Any] | None:
        """The record saved under ``key``, or ``None``."""

    def put(self, key: str, value: Mapping[str, Any]) -> None:
        """Save ``value`` (JSON-able) under ``key``, replacing any record."""

    def delete(self, key: str) -> None:
        """Forget ``key`` (no error if absent)."""


class MemoryTokenStore:
    """Records in this process's memory: gone when it exits. The default."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._records: dict[str, dict[str, Any]] = {}

    def get(self, key: str) -> Mapping[str, Any] | None:
        with self._lock:
            record = self._records.get(key)
            return None if record is None else json.loads(json.dumps(record))

    def put(self, key: str, value: Mapping[str, Any]) -> None:
        copy = json.loads(json.dumps(dict(value)))
        with self._lock:
            self._records[key] = copy

    def delete(self, key: str) -> None:
        with self._lock:
            self._records.pop(key, None)

    def __repr__(self) -> str:
        return f"<MemoryTokenStore records={len(self._records)}>"


class FileTokenStore:
    """Records in one JSON file that only its owner can read, for scripts that
    should not log in on every run.

    The file (mode 0600) and, when it creates it, its directory (mode 0700)
    are created on first write; an existing file that other users can read
    or write, or that another user owns, is refused. Writes replace the file
    atomically, under an exclusive lock so two processes do not lose each
    other's records (on platforms with ``fcntl``).
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = os.path.abspath(os.fspath(path))
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"<FileTokenStore path={self.path!r}>"

    def get(self, key: str) -> Mapping[str, Any] | None:
        with self._locked(shared=True):
            record = self._read().get(key)
        return record if isinstance(record, dict) else None

    def put(self, key: str, value: Mapping[str, Any]) -> None:
        with self._locked(shared=False):
            records = self._read()
            records[key] = json.loads(json.dumps(dict(value)))
            self._write(records)

    def delete(self, key: str) -> None:
        with self._locked(shared=False):
            records = self._read()
            if records.pop(key, None) is not None:
                self._write(records)

    # ----------------------------------------------------------- internals

    @contextlib.contextmanager
    def _locked(self, *, shared: bool) -> Iterator[None]:
        with self._lock:
            try:
                import fcntl
            except ImportError:  # not POSIX: one process at a time is the caller's job
                yield
                return
            directory = os.path.dirname(self.path)
            self._ensure_directory(directory)
            fd = os.open(self.path + ".lock", os.O_RDWR | os.O_CREAT, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_SH if shared else fcntl.LOCK_EX)
                yield
            finally:
                os.close(fd)  # releases the lock

    def _ensure_directory(self, directory: str) -> None:
        if not os.path.isdir(directory):
            try:
                os.makedirs(directory, mode=0o700, exist_ok=True)
            except OSError as exc:
                raise AuthError(
                    f"token store {self.path}: its directory cannot be created "
                    f"({exc.strerror or type(exc).__name__})"
                ) from None

    def _check_private(self, st: os.stat_result) -> None:
        if os.name != "posix":
            return
        if st.st_mode & (stat.S_IRWXG | stat.S_IRWXO):
            raise AuthError(
                f"token store {self.path}: other users can access it; "
                "refusing to use it (chmod 600 it, or delete it)"
            )
        if hasattr(os, "getuid") and st.st_uid != os.getuid():
            raise AuthError(f"token store {self.path}: owned by another user; refusing to use it")

    def _read(self) -> dict[str, Any]:
        try:
            fd = os.open(self.path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        except FileNotFoundError:
            return {}
        except OSError as exc:
            raise AuthError(
                f"token store {self.path}: cannot be read ({exc.strerror or type(exc).__name__})"
            ) from None
        with os.fdopen(fd, "rb") as handle:
            st = os.fstat(handle.fileno())
            self._check_private(st)
            data = handle.read(MAX_STORE_BYTES + 1)
        if len(data) > MAX_STORE_BYTES:
            raise AuthError(f"token store {self.path}: larger than {MAX_STORE_BYTES} bytes")
        if not data.strip():
            return {}
        # json's parser recurses: the depth is checked first, without recursion.
        if json_depth(data) > MAX_JSON_DEPTH:
            raise AuthError(
                f"token store {self.path}: not a token store file "
                f"(nests deeper than {MAX_JSON_DEPTH} levels)"
            )
        try:
            document = json.loads(data.decode("utf-8"))
        except (ValueError, UnicodeDecodeError, RecursionError):
            raise AuthError(f"token store {self.path}: not a token store file (invalid JSON)") from None
        records = document.get("records") if isinstance(document, dict) else None
        if not isinstance(records, dict):
            raise AuthError(f"token store {self.path}: not a token store file")
        return records

    def _write(self, records: dict[str, Any]) -> None:
        directory = os.path.dirname(self.path)
        data = json.dumps({"version": 1, "records": records}, indent=1, sort_keys=True).encode()
        try:
            fd, temp = tempfile.mkstemp(prefix=".mcp_sync-", dir=directory)
        except OSError as exc:
            raise AuthError(
                f"token store {self.path}: cannot be written ({exc.strerror or type(exc).__name__})"
            ) from None
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(temp, self.path)
        except OSError as exc:
            with contextlib.suppress(OSError):
                os.unlink(temp)
            raise AuthError(
                f"token store {self.path}: cannot be written ({exc.strerror or type(exc).__name__})"
            ) from None
