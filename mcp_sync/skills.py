"""Skills over MCP: the ``io.modelcontextprotocol/skills`` extension (SEP-2640).

A server that declares the extension publishes *skills*: directories of files
(a ``SKILL.md`` with YAML frontmatter, and supporting files), each an ordinary
resource. ``Session.list_skills()`` and ``Session.get_skill(uri)`` return
:class:`Skill` entries (frontmatter, and a manifest of files with a SHA-256
digest and a size each); ``Session.load_skill(skill)`` and
``Session.read_skill_file(skill, path)`` read and check files against the
entry, raising a :class:`SkillVerificationError` subclass when they differ.
The work is done in ``mcp_sync.session.skills``; these are its public names.
"""

from __future__ import annotations

from .session.skills import (
    MAX_FRONTMATTER_BYTES,
    MAX_SKILL_BYTES,
    MAX_SKILL_RESOURCES,
    SKILLS_EXTENSION,
    Skill,
    SkillDigestMismatch,
    SkillFile,
    SkillFileNotListed,
    SkillFrontmatterMismatch,
    SkillResource,
    SkillSizeMismatch,
    SkillTooLarge,
    SkillVerificationError,
    parse_frontmatter,
)

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
    "parse_frontmatter",
]
