"""mcp_sync._identity: the unrelated PyPI project ``mcp-sync`` installs a package of the
same name (``mcp_sync``) and an ``mcp-sync`` command; the CLI says so when it finds one."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from mcp_sync._identity import foreign_install, verdict

REPO = Path(__file__).resolve().parent.parent


def test_this_install_alone_is_not_reported() -> None:
    assert foreign_install() is None


def test_nothing_found_is_no_message() -> None:
    assert verdict(["mcp-sync-client"], ["mcp-sync-client"], []) is None
    assert verdict([], [], []) is None  # a checkout on sys.path, installed by nobody
    assert verdict(["mcp_sync_client"], [], []) is None  # names compare normalised


def test_the_other_project_is_named_with_the_fix() -> None:
    message = verdict(["mcp-sync", "mcp-sync-client"], ["mcp-sync"], [])
    assert message is not None
    assert message.splitlines()[0] == "warning: the installed mcp_sync package is not (only) mcp-sync-client's."
    assert "mcp-sync also installs a package named mcp_sync" in message
    assert "The mcp-sync command may belong to mcp-sync." in message
    assert "'pip uninstall mcp-sync mcp-sync-client'" in message


def test_overwritten_files_are_named() -> None:
    message = verdict(["mcp-sync-client"], [], ["mcp_sync/cli.py"])
    assert message is not None
    assert "Files of mcp-sync-client that another install changed: mcp_sync/cli.py." in message
    assert "'pip uninstall mcp-sync-client'" in message


def _fake_foreign_distribution(site: Path) -> None:
    """What `pip install mcp-sync==0.4.2` leaves in site-packages, metadata only."""
    info = site / "mcp_sync-0.4.2.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: mcp-sync\nVersion: 0.4.2\n")
    (info / "RECORD").write_text(
        "mcp_sync/__init__.py,,\nmcp_sync/cli.py,,\nmcp_sync-0.4.2.dist-info/METADATA,,\n"
    )
    (info / "entry_points.txt").write_text("[console_scripts]\nmcp-sync = mcp_sync.cli:main\n")
    # Python 3.12+ lists only the RECORD entries that exist.
    (site / "mcp_sync").mkdir()
    for name in ("__init__.py", "cli.py"):
        (site / "mcp_sync" / name).write_text("")


def test_the_other_project_installed_beside_this_one_is_detected(tmp_path: Path) -> None:
    _fake_foreign_distribution(tmp_path / "site")
    # This checkout first: `import mcp_sync` is this one, the other is metadata and files.
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), str(tmp_path / "site")])}
    done = subprocess.run(
        [sys.executable, "-c", "from mcp_sync._identity import foreign_install; print(foreign_install())"],
        env=env, capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    assert "mcp-sync also installs a package named mcp_sync" in done.stdout, done.stdout + done.stderr
    assert "The mcp-sync command may belong to mcp-sync." in done.stdout
