"""A real server that serves skills: fastmcp (pinned in the dev dependency group) over stdio.

    python fastmcp_skills_server.py SKILLS_ROOT

Every folder below SKILLS_ROOT that holds a SKILL.md is a skill, served with
fastmcp's own SEP-2640 implementation (``skills/list``, ``skills/get``, each
file a ``skill://`` resource). The folders are read again on every request, so
a test can change a file after listing and see the server serve the new bytes
under the old entry. One tool, ``echo``, so the server has a catalog as well.
"""

from __future__ import annotations

import sys

from fastmcp import FastMCP
from fastmcp.skills.provider import SkillsDirectoryProvider

server = FastMCP("fastmcp-skills")
server.add_provider(SkillsDirectoryProvider(sys.argv[1], reload=True))


@server.tool()
def echo(message: str) -> str:
    """Echo the message back."""
    return message


if __name__ == "__main__":
    server.run(show_banner=False)
