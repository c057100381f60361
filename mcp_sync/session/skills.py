"""Skills over MCP: the ``io.modelcontextprotocol/skills`` extension (SEP-2640).

A server that declares the extension publishes *skills*: directories of
files (a ``SKILL.md`` with YAML frontmatter, and supporting files), each file
an ordinary resource. ``Session.list_skills()`` and ``Session.get_skill(uri)``
return :class:`Skill` entries: the skill's frontmatter and a manifest of its
files with a SHA-256 digest and a size each. Nothing else is fetched then.

``Session.load_skill(skill)`` reads the skill's ``SKILL.md`` and
``Session.read_skill_file(skill, path)`` one supporting file, each with
``resources/read``, and checks what came back against the entry before
returning it: the byte length against ``size``, the bytes against ``digest``,
and (for ``SKILL.md``) the parsed frontmatter against the entry's, field by
field. Any difference raises a :class:`SkillVerificationError` subclass and
the content is not returned. A file the entry does not list is refused
before anything is sent, and so is one larger than ``max_frame_bytes`` or a
skill past the extension's limits (512 files, 16 MiB).

The frontmatter check parses YAML, with PyYAML (the ``skills`` extra),
imported only when a ``SKILL.md`` is loaded. This module itself is imported
only when a session's skill method is first called: ``import mcp_sync``
does not load it. Its public names are :mod:`mcp_sync.skills`'s.
"""

from __future__ import annotations

import functools
import hashlib
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

from ..protocol.catalog import PageWalk, freeze, thaw
from ..protocol.errors import InvalidOption, InvalidResponse, McpError, NotSupported, missing_extra
from ..protocol.limits import MAX_JSON_DEPTH, request_budget, seconds
from .eras.contract import SKILLS_EXTENSION
from .resources import MAX_LIST_ITEMS, read_resource, with_meta

if TYPE_CHECKING:
    from ..protocol.limits import Limits
    from .feature_contract import Core

__all__ = [
    "MAX_FRONTMATTER_BYTES",
    "MAX_SKILL_BYTES",
    "MAX_SKILL_RESOURCES",
    "SKILLS_EXTENSION",
    "Skill",
    "SkillDigestMismatch",
    "SkillFile",
    "SkillFileNotListed",
    "SkillFrontmatterMismatch",
    "SkillResource",
    "SkillSizeMismatch",
    "SkillTooLarge",
    "SkillVerificationError",
]

MAX_SKILL_RESOURCES = 512
"""Files one skill may list (the extension's limit; a larger skill is not loaded)."""
MAX_SKILL_BYTES = 16 * 1024 * 1024
"""The sum of a skill's file sizes (the extension's limit)."""
MAX_FRONTMATTER_BYTES = 65_536
"""The largest ``SKILL.md`` frontmatter block this client parses."""

_SKILL_MD = "SKILL.md"
_DIGEST = re.compile(r"sha256:[0-9a-f]{64}")
# The Agent Skills naming rules: 1-64 characters, lowercase letters, digits
# and single hyphens inside.
_NAME = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
_FRONTMATTER = re.compile(r"---\r?\n(.*?)\r?\n---[ \t]*(?:\r?\n|\Z)", re.DOTALL)


def _shown(uri: str) -> str:
    """A URI as messages show it: escaped, and cut to 200 characters."""
    return ascii(uri[:200])


def _bad_segment(segment: str) -> bool:
    """Whether a path segment, as written or percent-decoded, is empty,
    ``.`` or ``..``, or holds a ``/`` or ``\\``: a segment a host mapping
    the URI to a file could not keep inside the skill. A decoded segment
    that still holds an encoded dot or separator (``%252e`` decodes to
    ``%2e``) is refused too, for a host that decodes twice. One decoding
    pass: linear in the segment."""
    if segment in ("", ".", "..") or "/" in segment or "\\" in segment:
        return True
    if "%" not in segment:
        return False
    decoded = unquote(segment)
    if decoded in ("", ".", "..") or "/" in decoded or "\\" in decoded:
        return True
    folded = decoded.lower()
    return "%2e" in folded or "%2f" in folded or "%5c" in folded


def _clean(uri: str) -> bool:
    """Whether every segment of ``uri``'s path after the authority is a
    plain name (see :func:`_bad_segment`); the authority may be empty
    (``file:///...``) but not a dot segment."""
    if "\\" in uri:
        return False
    authority, _, path = uri.partition("://")[2].partition("/")
    if authority and _bad_segment(authority):
        return False
    return not any(_bad_segment(segment) for segment in path.split("/"))


def _inside(uri: str, skill_uri: str, root: str) -> bool:
    """Whether ``uri`` names the skill's ``SKILL.md`` or a file under its
    directory ``root``, with no segment that could lead out of it."""
    return (uri == skill_uri or uri.startswith(root + "/")) and _clean(uri)


# --------------------------------------------------------------------- errors


class SkillVerificationError(InvalidResponse):
    """A skill's content does not match its entry, or the entry cannot be
    acted on; the content was not returned. Subclasses say which check
    failed. An :class:`InvalidResponse`; the session stays open.

    ``uri`` is the file concerned, ``server`` the session's name for its
    origin. The message names both, never the content."""

    kind = "skill_verification_failed"

    def __init__(self, message: str, uri: str = "", server: str = "") -> None:
        super().__init__(message)
        self.uri = uri
        self.server = server

    def _copy(self) -> McpError:
        return type(self)(self.message, self.uri, self.server)


class SkillDigestMismatch(SkillVerificationError):
    """The file's SHA-256 is not the ``digest`` its entry lists."""

    kind = "skill_digest_mismatch"


class SkillSizeMismatch(SkillVerificationError):
    """The file's byte length is not the ``size`` its entry lists (checked
    before the digest: a longer or shorter file is refused as it arrives)."""

    kind = "skill_size_mismatch"


class SkillFrontmatterMismatch(SkillVerificationError):
    """``SKILL.md`` has no parseable YAML frontmatter, or its frontmatter
    differs from the entry's ``frontmatter`` in some field."""

    kind = "skill_frontmatter_mismatch"


class SkillFileNotListed(SkillVerificationError):
    """The file asked for is not in the skill's manifest, or not inside the
    skill's directory; nothing was sent. Also raised by ``list_skills`` and
    ``get_skill`` for an entry whose ``uri`` or manifest names a path that
    could lead out of the skill's directory (an empty, ``.`` or ``..``
    segment or a backslash, written or percent-encoded): the entry is
    refused whole."""

    kind = "skill_file_not_listed"


class SkillTooLarge(SkillVerificationError):
    """The skill is past the extension's limits, or a file's listed size is
    past ``max_frame_bytes``; nothing was sent."""

    kind = "skill_too_large"


# --------------------------------------------------------------------- values


@dataclass(frozen=True, slots=True)
class SkillResource:
    """One file of a skill's manifest."""

    uri: str
    digest: str
    """``sha256:`` and 64 lowercase hex digits: the hash of the file's bytes."""
    size: int
    """The file's length in bytes."""

    def to_dict(self) -> dict[str, Any]:
        return {"uri": self.uri, "digest": self.digest, "size": self.size}


@dataclass(frozen=True, slots=True)
class Skill:
    """One skill entry (``skills/list`` or ``skills/get``). Untrusted text.

    A skill is identified by its origin and its ``uri`` together: two servers
    may serve the same URI. ``server`` is the name this client gave the
    origin (``connect(server=...)``), never the server's own claim."""

    uri: str
    """The URI of the skill's ``SKILL.md``."""
    name: str
    description: str
    frontmatter: Mapping[str, Any]
    """The ``SKILL.md`` frontmatter as the server rendered it (frozen)."""
    resources: tuple[SkillResource, ...] | None
    """Every file of the skill, ``SKILL.md`` included; ``None`` when the
    server publishes no digests (``"dynamic"``)."""
    server: str

    @property
    def dynamic(self) -> bool:
        """Whether the skill's files come without digests (nothing to verify)."""
        return self.resources is None

    @property
    def root(self) -> str:
        """The skill's directory: :attr:`uri` without ``/SKILL.md``."""
        return self.uri[: -len(_SKILL_MD) - 1]

    @property
    def total_size(self) -> int:
        """The sum of the listed sizes (0 for a dynamic skill)."""
        return sum(item.size for item in self.resources or ())

    def resolve(self, path: str) -> str:
        """The URI of ``path``: a URI as it is, or a path relative to the
        skill's root (``"references/FORMS.md"``). A path with empty, ``.`` or
        ``..`` segments is refused (``InvalidOption``)."""
        if not isinstance(path, str) or not path:
            raise InvalidOption("a skill file path must be a non-empty string")
        if "://" in path:
            return path
        if any(_bad_segment(seg) for seg in path.split("/")):
            raise InvalidOption(
                f"skill file path {_shown(path)} must be relative, without empty, . or .. segments "
                "or backslashes (percent-encoded ones included)"
            )
        return f"{self.root}/{path}"

    def to_dict(self) -> dict[str, Any]:
        resources: Any = "dynamic" if self.resources is None else [r.to_dict() for r in self.resources]
        return {"uri": self.uri, "frontmatter": thaw(self.frontmatter), "resources": resources}


@dataclass(frozen=True, slots=True)
class SkillFile:
    """A skill file as read and checked. Untrusted content: tag it with
    :attr:`server` wherever it reaches a model."""

    uri: str
    data: bytes
    """The file's bytes (the text encoded as UTF-8, or the decoded blob)."""
    mime_type: str | None
    server: str
    verified: bool
    """True when size and digest were checked against the entry (always,
    except for a dynamic skill loaded with ``allow_dynamic=True``)."""

    @property
    def text(self) -> str | None:
        """The content as text, or ``None`` when it is not UTF-8."""
        try:
            return self.data.decode("utf-8")
        except UnicodeDecodeError:
            return None


# --------------------------------------------------------------------- parsing entries


def _entry(entry: object, server: str, method: str) -> Skill:
    """One skill entry, checked against the extension's rules."""
    if not isinstance(entry, dict):
        raise InvalidResponse(f"a {method} entry is not an object")
    uri = entry.get("uri")
    if not isinstance(uri, str) or "://" not in uri or not uri.endswith("/" + _SKILL_MD):
        raise InvalidResponse(f"a {method} entry has no uri naming a SKILL.md")
    root = uri[: -len(_SKILL_MD) - 1]
    path = root.split("://", 1)[1]
    segment = path.rsplit("/", 1)[-1]
    where = f"skill {_shown(uri)}"
    if not _clean(uri):
        raise SkillFileNotListed(
            f"{where} from server {server!r} has a uri with empty, . or .. segments or backslashes "
            "(percent-encoded ones included); the entry was refused",
            uri, server,
        )  # fmt: skip
    frontmatter = entry.get("frontmatter")
    if not isinstance(frontmatter, dict):
        raise InvalidResponse(f"{where} has no frontmatter object")
    name, description = frontmatter.get("name"), frontmatter.get("description")
    if not isinstance(name, str) or not isinstance(description, str) or not description:
        raise InvalidResponse(f"{where} has no name and description strings in its frontmatter")
    if len(name) > 64 or not _NAME.fullmatch(name):
        raise InvalidResponse(f"{where} has a name that breaks the Agent Skills naming rules")
    if segment != name:
        raise InvalidResponse(f"{where} has a name that is not the last segment of its path")
    return Skill(
        uri=uri, name=name, description=description, frontmatter=freeze(frontmatter),
        resources=_manifest(entry.get("resources"), uri, root, where, server), server=server,
    )  # fmt: skip


def _manifest(value: object, uri: str, root: str, where: str, server: str) -> tuple[SkillResource, ...] | None:
    if value == "dynamic":
        return None
    if not isinstance(value, list):
        raise InvalidResponse(f'{where} has resources that are neither an array nor "dynamic"')
    files: list[SkillResource] = []
    seen: set[str] = set()
    for item in value:
        if not isinstance(item, dict):
            raise InvalidResponse(f"{where} lists a resource that is not an object")
        file_uri, digest, size = item.get("uri"), item.get("digest"), item.get("size")
        if not isinstance(file_uri, str):
            raise InvalidResponse(f"{where} lists a resource without a uri string")
        if not _inside(file_uri, uri, root):
            # A host that stores a skill's files by path must never be led
            # out of the skill's directory: "a/../../x", "a/%2e%2e/x" and
            # "a%2F..%2F..%2Fx" are refused with the entry that lists them.
            raise SkillFileNotListed(
                f"{where} from server {server!r} lists a resource outside the skill's directory "
                f"({_shown(file_uri)}); the entry was refused",
                file_uri, server,
            )  # fmt: skip
        if file_uri in seen:
            raise InvalidResponse(f"{where} lists a resource twice")
        if not isinstance(digest, str) or not _DIGEST.fullmatch(digest):
            raise InvalidResponse(f"{where} lists a resource whose digest is not sha256:<64 hex digits>")
        if type(size) is not int or size < 0:
            raise InvalidResponse(f"{where} lists a resource without a size in bytes")
        seen.add(file_uri)
        files.append(SkillResource(uri=file_uri, digest=digest, size=size))
    if uri not in seen:
        raise InvalidResponse(f"{where} does not list its own SKILL.md among its resources")
    return tuple(files)


class _SkillWalk(PageWalk):
    method, key = "skills/list", "skills"

    def __init__(self, limits: Limits, server: str) -> None:
        super().__init__(limits)
        self.server = server
        self.items: list[Skill] = []

    def entries(self, entries: list[Any]) -> None:
        if len(self.items) + len(entries) > MAX_LIST_ITEMS:
            raise InvalidResponse(f"{self.what} has more than {MAX_LIST_ITEMS} entries")
        self.items.extend(_entry(entry, self.server, self.method) for entry in entries)


# --------------------------------------------------------------------- frontmatter


class _Refused(Exception):
    """A YAML construct the frontmatter check does not accept."""


@functools.cache
def _loader() -> Any:
    """PyYAML's safe loader, narrowed: no aliases (a few bytes of them can
    stand for a huge document), nesting bounded like a JSON frame, and
    timestamps kept as the strings a JSON entry carries."""
    try:
        import yaml  # type: ignore[import-untyped, unused-ignore]
    except ImportError:
        raise missing_extra("checking a skill's frontmatter", "PyYAML", "skills") from None

    class Loader(yaml.SafeLoader):  # type: ignore[misc]
        def __init__(self, stream: str) -> None:
            super().__init__(stream)
            self.depth = 0

        def compose_node(self, parent: Any, index: Any) -> Any:
            if self.check_event(yaml.AliasEvent):
                raise _Refused("uses a YAML alias")
            self.depth += 1
            if self.depth > MAX_JSON_DEPTH:
                raise _Refused(f"nests deeper than {MAX_JSON_DEPTH} levels")
            try:
                return super().compose_node(parent, index)
            finally:
                self.depth -= 1

    Loader.yaml_implicit_resolvers = {
        first: [(tag, rx) for tag, rx in resolvers if tag != "tag:yaml.org,2002:timestamp"]
        for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
    }
    return yaml, Loader


def parse_frontmatter(text: str) -> dict[str, Any]:
    """The YAML frontmatter block at the start of a ``SKILL.md``, as a dict.
    Raises ``ValueError`` saying what is wrong (``MissingExtra`` without
    PyYAML)."""
    yaml, loader = _loader()
    if text.startswith("\ufeff"):
        text = text[1:]
    match = _FRONTMATTER.match(text)
    if match is None:
        raise ValueError("has no ---delimited YAML frontmatter at its start")
    block = match.group(1)
    if len(block.encode("utf-8")) > MAX_FRONTMATTER_BYTES:
        raise ValueError(f"has a frontmatter block larger than {MAX_FRONTMATTER_BYTES} bytes")
    try:
        value = yaml.load(block, Loader=loader)  # a SafeLoader subclass
    except _Refused as exc:
        raise ValueError(f"has frontmatter that {exc}") from None
    except (yaml.YAMLError, RecursionError):
        raise ValueError("has frontmatter that is not valid YAML") from None
    if not isinstance(value, dict):
        raise ValueError("has frontmatter that is not a mapping")
    return value


def _same(a: object, b: object) -> bool:
    """Equal as JSON values: a bool is never a number, an absent key equals
    ``null``, and keys must be strings. Depth is bounded on both sides."""
    if isinstance(a, bool) or isinstance(b, bool):
        same = type(a) is type(b) and a == b
    elif isinstance(a, (int, float)) and isinstance(b, (int, float)):
        same = a == b
    elif isinstance(a, Mapping) and isinstance(b, Mapping):
        keys = set(a) | set(b)
        same = all(isinstance(k, str) and _same(a.get(k), b.get(k)) for k in keys)
    elif isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        same = len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    else:
        # Strings and null; any other pair (a str and a number, bytes, a date) differs.
        same = type(a) is type(b) and type(a) in (str, type(None)) and a == b
    return same


# --------------------------------------------------------------------- the session's methods


def _require(core: Core, what: str) -> None:
    terminal = core.terminal
    if terminal is not None:
        raise terminal._copy()
    extensions = core.server_capabilities.get("extensions")
    if not isinstance(extensions, Mapping) or not isinstance(extensions.get(SKILLS_EXTENSION), Mapping):
        raise NotSupported(
            f"server {core.server!r} did not declare the {SKILLS_EXTENSION} extension, which {what} needs"
        )


def list_skills(core: Core, timeout_ms: int | None, meta: Mapping[str, Any] | None = None) -> tuple[Skill, ...]:
    """``Session.list_skills``: every page of ``skills/list``, within one deadline."""
    _require(core, "skills/list")
    params = with_meta(core, {}, meta)
    timeout_ms, option = request_budget(core.limits, timeout_ms)
    walk = _SkillWalk(core.limits, core.server)
    deadline = time.monotonic() + seconds(timeout_ms)
    core.walk(walk, seconds(timeout_ms), f"{option}={timeout_ms}", params, deadline=deadline)
    return tuple(walk.items)


def get_skill(core: Core, uri: str, timeout_ms: int | None, meta: Mapping[str, Any] | None = None) -> Skill:
    """``Session.get_skill``: the entry of one skill, by its ``SKILL.md`` URI."""
    _require(core, "skills/get")
    if not isinstance(uri, str) or not uri:
        raise InvalidOption("a skill uri must be a non-empty string")
    params = with_meta(core, {"uri": uri}, meta)
    timeout_ms, option = request_budget(core.limits, timeout_ms)
    server = core.server
    result = core.ask(
        "skills/get", params, seconds(timeout_ms),
        lambda: f"skills/get of {_shown(uri)} on server {server!r} ({option}={timeout_ms})",
    )  # fmt: skip
    if not isinstance(result, dict):
        raise InvalidResponse(f"the skills/get result for {_shown(uri)} is not an object")
    skill = _entry(result.get("skill"), server, "skills/get")
    if skill.uri != uri:
        raise InvalidResponse(f"the skills/get result for {_shown(uri)} describes another skill")
    return skill


def load_skill(
    core: Core, skill: Skill | str, timeout_ms: int | None, allow_dynamic: bool, meta: Mapping[str, Any] | None = None
) -> SkillFile:
    """``Session.load_skill``: read the skill's ``SKILL.md`` and verify it
    (size, digest, frontmatter). Given a URI, the entry comes from ``skills/get``."""
    if isinstance(skill, str):
        skill = get_skill(core, skill, timeout_ms, meta)
    elif not isinstance(skill, Skill):
        raise InvalidOption("load_skill takes a Skill or the URI of a SKILL.md")
    loaded = _fetch(core, skill, skill.uri, timeout_ms, allow_dynamic, meta)
    try:
        found = parse_frontmatter(loaded.text if loaded.text is not None else "")
    except ValueError as exc:
        raise SkillFrontmatterMismatch(
            f"SKILL.md of skill {skill.name!r} from server {core.server!r} {exc}; the skill was not loaded",
            skill.uri, core.server,
        ) from None  # fmt: skip
    if not _same(found, skill.frontmatter):
        differing = sorted(k for k in set(found) | set(skill.frontmatter)
                           if not _same(found.get(k), skill.frontmatter.get(k)))  # fmt: skip
        fields = ", ".join(_shown(str(k)) for k in differing[:8])
        raise SkillFrontmatterMismatch(
            f"SKILL.md of skill {skill.name!r} from server {core.server!r} has frontmatter that differs "
            f"from its entry (fields {fields}); the skill was not loaded",
            skill.uri, core.server,
        )  # fmt: skip
    return loaded


def read_skill_file(  # noqa: PLR0913, PLR0917
    core: Core,
    skill: Skill,
    path: str,
    timeout_ms: int | None,
    allow_dynamic: bool,
    meta: Mapping[str, Any] | None = None,
) -> SkillFile:
    """``Session.read_skill_file``: one file of the skill, verified against the entry."""
    if not isinstance(skill, Skill):
        raise InvalidOption("read_skill_file takes a Skill (from list_skills or get_skill)")
    return _fetch(core, skill, skill.resolve(path), timeout_ms, allow_dynamic, meta)


def _fetch(  # noqa: PLR0913, PLR0917
    core: Core, skill: Skill, uri: str, timeout_ms: int | None, allow_dynamic: bool, meta: Mapping[str, Any] | None
) -> SkillFile:
    """Read one file of ``skill`` and check it against the entry; every
    refusal that needs no content happens before anything is sent."""
    server = core.server
    if not _inside(uri, skill.uri, skill.root):
        raise SkillFileNotListed(
            f"{_shown(uri)} is not inside skill {skill.name!r} from server {server!r}; nothing was read",
            uri, server,
        )  # fmt: skip
    if skill.resources is None:
        if not allow_dynamic:
            raise SkillVerificationError(
                f'skill {skill.name!r} from server {server!r} publishes no digests (resources "dynamic"); '
                "pass allow_dynamic=True to read it unverified",
                uri, server,
            )  # fmt: skip
        listed = None
    else:
        if len(skill.resources) > MAX_SKILL_RESOURCES or skill.total_size > MAX_SKILL_BYTES:
            raise SkillTooLarge(
                f"skill {skill.name!r} from server {server!r} lists {len(skill.resources)} files of "
                f"{skill.total_size} bytes, past the extension's limits ({MAX_SKILL_RESOURCES} files, "
                f"{MAX_SKILL_BYTES} bytes); nothing was read",
                uri, server,
            )  # fmt: skip
        listed = next((item for item in skill.resources if item.uri == uri), None)
        if listed is None:
            raise SkillFileNotListed(
                f"{_shown(uri)} is not listed by skill {skill.name!r} from server {server!r}; nothing was read",
                uri, server,
            )  # fmt: skip
        limit = core.limits.max_frame_bytes
        if listed.size > limit:
            raise SkillTooLarge(
                f"{_shown(uri)} of skill {skill.name!r} from server {server!r} is {listed.size} bytes, "
                f"more than max_frame_bytes={limit} lets through; nothing was read",
                uri, server,
            )  # fmt: skip
    result = read_resource(core, uri, timeout_ms, meta)
    item = next((c for c in result.contents if c.uri == uri), None)
    if item is None and len(result.contents) == 1:
        item = result.contents[0]
    if item is None:
        raise InvalidResponse(f"the resources/read result for {_shown(uri)} has no contents for that uri")
    data = item.blob if item.blob is not None else (item.text or "").encode("utf-8")
    if listed is not None:
        if len(data) != listed.size:
            raise SkillSizeMismatch(
                f"{_shown(uri)} of skill {skill.name!r} from server {server!r} is {len(data)} bytes, "
                f"not the {listed.size} its entry lists; the content was not used",
                uri, server,
            )  # fmt: skip
        if "sha256:" + hashlib.sha256(data).hexdigest() != listed.digest:
            raise SkillDigestMismatch(
                f"{_shown(uri)} of skill {skill.name!r} from server {server!r} does not match the digest "
                "its entry lists; the content was not used",
                uri, server,
            )  # fmt: skip
    return SkillFile(uri=uri, data=data, mime_type=item.mime_type, server=server, verified=listed is not None)
