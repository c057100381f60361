"""Roots: the filesystem locations a client exposes to its server
(``Handlers(roots=...)``, ``session.set_roots(...)``), as checked values.

Value types and their checks only: this module imports nothing of the
session, so the narrow core protocol (``session.feature_contract``) can name them.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .errors import InvalidOption

__all__ = ["MAX_ROOTS", "Root", "RootLike", "RootsProvider", "has_control_chars", "normalize_roots"]

MAX_ROOTS = 1024


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


RootLike = Root | str | os.PathLike[str] | Mapping[str, Any]
RootsProvider = Sequence[RootLike] | Callable[[], Sequence[RootLike]]


def normalize_roots(roots: object) -> tuple[Root, ...]:
    """Roots as given by a caller -> checked :class:`Root` values."""
    if isinstance(roots, (str, bytes, Mapping)) or not isinstance(roots, Sequence):
        raise InvalidOption("roots must be a list of roots (file:// URIs, paths or Root values)")
    if len(roots) > MAX_ROOTS:
        raise InvalidOption(f"roots: more than {MAX_ROOTS} roots")
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
            raise InvalidOption("a root path must be absolute")
        uri = path.as_uri()
    elif isinstance(item, str) and not item.startswith("file:"):
        path = Path(item)
        if not path.is_absolute():
            raise InvalidOption("a root must be a file:// URI or an absolute path")
        uri = path.as_uri()
    else:
        uri = item
    if not isinstance(uri, str) or not uri.startswith("file://") or has_control_chars(uri):
        raise InvalidOption("a root must be a file:// URI without control characters")
    if name is not None and not isinstance(name, str):
        raise InvalidOption("a root's name must be a string")
    return Root(uri, name)


def has_control_chars(text: str) -> bool:
    """Whether ``text`` holds a C0 control character or DEL."""
    return any(ord(ch) < 0x20 or ord(ch) == 0x7F for ch in text)
