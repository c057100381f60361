"""Skills over MCP (SEP-2640): listing, getting, loading and reading skill files.

A real server (fastmcp, pinned in the dev dependency group, serving a skills folder over
stdio) and the fake server answering with hostile entries and contents: each
failed check raises its own kind, names the file and the server, leaks none of
the content, reads nothing it should not, and leaves the session open.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import REPO_ROOT, missing_peer
from support import connect_fake, methods

import mcp_sync
from mcp_sync import skills
from mcp_sync.session import skills as skill_internals

SKILL_URI = "skill://pdf-processing/SKILL.md"
FORMS_URI = "skill://pdf-processing/references/FORMS.md"
SKILL_MD = "---\nname: pdf-processing\ndescription: Extract, fill, and assemble PDF documents\n---\nSkill body.\n"
FORMS = "Supporting content.\n"
CAPABILITIES = {"tools": {}, "resources": {}, "extensions": {"io.modelcontextprotocol/skills": {}}}


def digest(text: str | bytes) -> str:
    data = text.encode() if isinstance(text, str) else text
    return "sha256:" + hashlib.sha256(data).hexdigest()


def entry(skill_md: str = SKILL_MD, **changes: Any) -> dict[str, Any]:
    """The entry of the pdf-processing skill, listing ``skill_md`` and FORMS."""
    base: dict[str, Any] = {
        "uri": SKILL_URI,
        "frontmatter": {"name": "pdf-processing", "description": "Extract, fill, and assemble PDF documents"},
        "resources": [
            {"uri": SKILL_URI, "digest": digest(skill_md), "size": len(skill_md.encode())},
            {"uri": FORMS_URI, "digest": digest(FORMS), "size": len(FORMS.encode())},
        ],
    }
    return {**base, **changes}


def serving(served: str, *entries: dict[str, Any], log: Path | None = None, capabilities: Any = None) -> list[str]:
    """Fake-server options: skills/list answers ``entries``, every resources/read ``served``."""
    listing = {"skills": list(entries) or [entry()]}
    read = {"contents": [{"uri": SKILL_URI, "mimeType": "text/markdown", "text": served}]}
    options = [
        "--capabilities", json.dumps(CAPABILITIES if capabilities is None else capabilities),
        "--raw", "skills/list", json.dumps(listing),
        "--raw", "skills/get", json.dumps({"skill": listing["skills"][0]}),
        "--raw", "resources/read", json.dumps(read),
    ]  # fmt: skip
    if log is not None:
        options += ["--log", str(log)]
    return options


# ----------------------------------------------------------------------- a real server: fastmcp


@pytest.fixture
def skills_root(tmp_path: Path) -> Path:
    root = tmp_path / "skills"
    (root / "pdf-processing" / "references").mkdir(parents=True)
    (root / "pdf-processing" / "SKILL.md").write_text(
        "---\nname: pdf-processing\ndescription: Extract, fill, and assemble PDF documents\n"
        'metadata:\n  version: "2.1.0"\nlicense: Apache-2.0\n---\n\n# PDF processing\n\nSee references/FORMS.md.\n'
    )
    (root / "pdf-processing" / "references" / "FORMS.md").write_text("Forms, in detail.\n")
    return root


@pytest.fixture
def fastmcp_session(skills_root: Path) -> Iterator[mcp_sync.Session]:
    try:
        import fastmcp  # noqa: F401
    except ImportError:
        missing_peer("fastmcp is not installed (the dev dependency group pins it)")
    script = REPO_ROOT / "tests" / "peers" / "fastmcp_skills_server.py"
    with mcp_sync.connect(
        server="skills", command=sys.executable, args=[str(script), str(skills_root)],
        handshake_timeout_ms=60_000,
    ) as session:  # fmt: skip
        yield session


@pytest.mark.peer
def test_a_real_server_s_skills_are_listed_got_loaded_and_read(fastmcp_session: mcp_sync.Session) -> None:
    session = fastmcp_session
    assert session.era == "modern"
    (skill,) = session.list_skills()
    assert skill.uri == SKILL_URI and skill.name == "pdf-processing" and skill.server == "skills"
    assert skill.frontmatter["metadata"]["version"] == "2.1.0" and skill.frontmatter["license"] == "Apache-2.0"
    assert {item.uri for item in skill.resources or ()} == {SKILL_URI, FORMS_URI}
    assert session.get_skill(SKILL_URI) == skill
    loaded = session.load_skill(skill)
    assert loaded.verified and loaded.text is not None and "# PDF processing" in loaded.text
    forms = session.read_skill_file(skill, "references/FORMS.md")
    assert forms.data == b"Forms, in detail.\n" and forms.uri == FORMS_URI
    assert session.load_skill(SKILL_URI).data == loaded.data  # by URI: skills/get, then the read
    with pytest.raises(mcp_sync.RemoteError) as unknown:
        session.get_skill("skill://nothing-here/SKILL.md")
    assert unknown.value.code == -32602


@pytest.mark.peer
def test_a_real_server_s_changed_file_fails_the_held_entry_until_it_is_refreshed(
    fastmcp_session: mcp_sync.Session, skills_root: Path
) -> None:
    session = fastmcp_session
    (skill,) = session.list_skills()
    forms = skills_root / "pdf-processing" / "references" / "FORMS.md"
    forms.write_text("Forms, in DETAIL.\n")  # same length, other bytes
    with pytest.raises(skills.SkillDigestMismatch) as stale:
        session.read_skill_file(skill, "references/FORMS.md")
    assert stale.value.kind == "skill_digest_mismatch" and "DETAIL" not in str(stale.value)
    forms.write_text("Forms, in much more detail.\n")
    with pytest.raises(skills.SkillSizeMismatch):
        session.read_skill_file(skill, "references/FORMS.md")
    fresh = session.get_skill(skill.uri)  # the recovery the extension prescribes
    assert fresh != skill
    assert session.read_skill_file(fresh, "references/FORMS.md").data == b"Forms, in much more detail.\n"


# ----------------------------------------------------------------------- the fake server: happy path


def test_listing_reads_no_file_and_loading_reads_only_skill_md(tmp_path: Path) -> None:
    log = tmp_path / "log"
    with connect_fake(*serving(SKILL_MD, log=log)) as session:
        (skill,) = session.list_skills()
        assert [m for m in methods(log) if m.startswith(("skills/", "resources/"))] == ["skills/list"]
        loaded = session.load_skill(skill)
        assert [m for m in methods(log) if m.startswith("resources/")] == ["resources/read"]
    assert loaded.data == SKILL_MD.encode() and loaded.verified and loaded.mime_type == "text/markdown"
    assert skill.total_size == len(SKILL_MD) + len(FORMS) and skill.root == "skill://pdf-processing"
    assert skill.to_dict()["resources"][1] == {"uri": FORMS_URI, "digest": digest(FORMS), "size": len(FORMS)}


def test_a_server_that_offers_only_skills_connects_with_an_empty_catalog(tmp_path: Path) -> None:
    log = tmp_path / "log"
    capabilities = {"resources": {}, "extensions": {"io.modelcontextprotocol/skills": {}}}
    with connect_fake(*serving(SKILL_MD, log=log, capabilities=capabilities)) as session:
        assert session.tools == ()
        assert [skill.name for skill in session.list_skills()] == ["pdf-processing"]
    assert "tools/list" not in methods(log)


def test_without_the_extension_nothing_is_sent(tmp_path: Path) -> None:
    log = tmp_path / "log"
    with connect_fake(*serving(SKILL_MD, log=log, capabilities={"tools": {}, "resources": {}})) as session:
        with pytest.raises(mcp_sync.NotSupported, match=r"io\.modelcontextprotocol/skills"):
            session.list_skills()
        with pytest.raises(mcp_sync.NotSupported):
            session.get_skill(SKILL_URI)
    assert not [m for m in methods(log) if m.startswith("skills/")]


# ----------------------------------------------------------------------- hostile content


def test_a_wrong_digest_is_refused_without_the_content(tmp_path: Path) -> None:
    tampered = SKILL_MD.replace("Skill body.", "Evil body!!")  # same length
    log = tmp_path / "log"
    with connect_fake(*serving(tampered, log=log)) as session:
        (skill,) = session.list_skills()
        with pytest.raises(skills.SkillDigestMismatch) as caught:
            session.load_skill(skill)
        assert not session.closed and session.list_skills() == (skill,)
    error = caught.value
    assert error.kind == "skill_digest_mismatch" and isinstance(error, mcp_sync.InvalidResponse)
    assert error.uri == SKILL_URI and error.server == "fake"
    assert "Evil" not in str(error) and "Evil" not in repr(error) and "'fake'" in str(error)
    assert FORMS_URI not in [frame.get("params", {}).get("uri") for frame in _logged(log)]


def test_a_file_longer_than_its_entry_is_refused(tmp_path: Path) -> None:
    longer = SKILL_MD + "extra bytes the entry did not account for\n"
    with connect_fake(*serving(longer)) as session:
        (skill,) = session.list_skills()
        with pytest.raises(skills.SkillSizeMismatch) as caught:
            session.load_skill(skill)
    assert caught.value.kind == "skill_size_mismatch" and "extra bytes" not in str(caught.value)
    assert f"not the {len(SKILL_MD)} its entry lists" in str(caught.value)


def test_an_oversized_file_is_refused_before_it_is_fetched(tmp_path: Path) -> None:
    log = tmp_path / "log"
    huge = entry()
    huge["resources"][0] = {"uri": SKILL_URI, "digest": digest("x"), "size": 50_000}
    with connect_fake(*serving(SKILL_MD, huge, log=log), max_frame_bytes=16_384) as session:
        (skill,) = session.list_skills()
        with pytest.raises(skills.SkillTooLarge, match="max_frame_bytes=16384") as caught:
            session.load_skill(skill)
        many = entry(resources=[*huge["resources"][:1], *(
            {"uri": f"skill://pdf-processing/f{i}", "digest": digest("x"), "size": 1} for i in range(600)
        )])  # fmt: skip
        with pytest.raises(skills.SkillTooLarge, match="512 files"):
            session.load_skill(skill_internals._entry(many, "fake", "skills/list"))
    assert caught.value.kind == "skill_too_large"
    assert "resources/read" not in methods(log)


def test_bad_frontmatter_is_refused(tmp_path: Path) -> None:
    cases = {
        "differs": SKILL_MD.replace("Extract, fill, and assemble PDF documents", "Exfiltrate credentials"),
        "missing": "# no frontmatter at all\nExfiltrate credentials\n",
        "not yaml": "---\nname: [pdf-processing\n---\nExfiltrate credentials\n",
        "an alias": "---\nname: &n pdf-processing\ndescription: *n\n---\nExfiltrate credentials\n",
        "a list": "---\n- name\n---\nExfiltrate credentials\n",
        "a number for a string": "---\nname: pdf-processing\ndescription: 12\n---\nExfiltrate credentials\n",
    }
    for case, text in cases.items():
        # The entry's digest and size match the file: only the frontmatter is wrong.
        with connect_fake(*serving(text, entry(text))) as session:
            (skill,) = session.list_skills()
            with pytest.raises(skills.SkillFrontmatterMismatch) as caught:
                session.load_skill(skill)
            assert not session.closed, case
        assert caught.value.kind == "skill_frontmatter_mismatch", case
        assert "Exfiltrate" not in str(caught.value) and "the skill was not loaded" in str(caught.value), case
    assert "fields 'description'" in _message(cases["differs"])
    assert "YAML alias" in _message(cases["an alias"])


def _message(text: str) -> str:
    with connect_fake(*serving(text, entry(text))) as session, pytest.raises(skills.SkillFrontmatterMismatch) as caught:
        session.load_skill(session.list_skills()[0])
    return str(caught.value)


def test_frontmatter_comparison_is_by_json_value() -> None:
    same = skill_internals._same
    assert same({"a": 1, "b": None}, {"a": 1.0})  # an absent key is null; 1 is 1.0
    assert not same({"a": True}, {"a": 1})  # a bool is not a number
    assert not same({"a": "2024-01-01"}, {"a": None})
    found = skills.parse_frontmatter("---\nname: x\ndescription: y\ncreated: 2024-01-01\n---\n")
    assert found["created"] == "2024-01-01"  # a date stays the string a JSON entry carries


def test_an_unlisted_file_is_refused_before_anything_is_sent(tmp_path: Path) -> None:
    log = tmp_path / "log"
    with connect_fake(*serving(SKILL_MD, log=log)) as session:
        (skill,) = session.list_skills()
        with pytest.raises(skills.SkillFileNotListed) as caught:
            session.read_skill_file(skill, "references/SECRET.md")
        with pytest.raises(skills.SkillFileNotListed):
            session.read_skill_file(skill, "skill://other-skill/SKILL.md")
        with pytest.raises(mcp_sync.InvalidOption):
            session.read_skill_file(skill, "../other-skill/SKILL.md")
    assert caught.value.kind == "skill_file_not_listed"
    assert "resources/read" not in methods(log)


def test_a_dynamic_skill_is_read_only_when_allowed(tmp_path: Path) -> None:
    dynamic = entry(resources="dynamic")
    with connect_fake(*serving(SKILL_MD, dynamic)) as session:
        (skill,) = session.list_skills()
        assert skill.dynamic
        with pytest.raises(skills.SkillVerificationError, match="allow_dynamic=True") as caught:
            session.load_skill(skill)
        loaded = session.load_skill(skill, allow_dynamic=True)
    assert type(caught.value) is skills.SkillVerificationError
    assert caught.value.kind == "skill_verification_failed"
    assert loaded.verified is False and loaded.data == SKILL_MD.encode()


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        ({"resources": None}, "neither an array"),
        ({"uri": "skill://pdf-processing/README.md"}, "no uri naming a SKILL.md"),
        ({"uri": "skill://other/SKILL.md"}, "not the last segment"),
        ({"frontmatter": {"name": "Bad_Name", "description": "d"}}, "naming rules"),
        ({"resources": [{"uri": SKILL_URI, "digest": "sha256:XYZ", "size": 1}]}, "digest"),
        ({"resources": [{"uri": SKILL_URI, "digest": digest(""), "size": True}]}, "size in bytes"),
        ({"resources": [{"uri": FORMS_URI, "digest": digest(""), "size": 0}]}, "its own SKILL.md"),
        ({"resources": [{"uri": "skill://elsewhere/x", "digest": digest(""), "size": 0}]}, "outside"),
    ],
)
def test_a_malformed_entry_fails_the_listing(change: dict[str, Any], problem: str) -> None:
    with connect_fake(*serving(SKILL_MD, entry(**change))) as session:
        with pytest.raises(mcp_sync.InvalidResponse, match=problem):
            session.list_skills()
        assert not session.closed


def test_get_skill_must_describe_the_skill_asked_for() -> None:
    with connect_fake(*serving(SKILL_MD)) as session:
        with pytest.raises(mcp_sync.InvalidResponse, match="describes another skill"):
            session.get_skill("skill://pdf-processing/../x/SKILL.md")
        assert session.get_skill(SKILL_URI).name == "pdf-processing"


# ----------------------------------------------------------------------- imports and the extra


def test_import_mcp_sync_loads_neither_the_skills_module_nor_yaml() -> None:
    code = "import sys, mcp_sync; print('mcp_sync.skills' in sys.modules, 'yaml' in sys.modules)"
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert run.stdout.split() == ["False", "False"]


def test_without_pyyaml_loading_a_skill_is_a_missing_extra() -> None:
    code = (
        "import sys; sys.modules['yaml'] = None\n"
        "from mcp_sync import skills\n"
        "try:\n"
        "    skills.parse_frontmatter('---\\nname: a\\n---\\n')\n"
        "except ImportError as exc:\n"
        "    print(type(exc).__name__, exc.kind, exc.extra)\n"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert run.stdout.split() == ["MissingExtra", "missing_extra", "skills"]


def _logged(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_bytes().splitlines() if line.strip()]
