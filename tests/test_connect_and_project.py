"""flows.connect_and_project: the projection is checked before a server starts."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

import pytest

from mcp_sync import flows
from mcp_sync.config import ConnectOptions
from mcp_sync.testing import server_command


def _fake(marker: Path, server: str = "example") -> dict[str, Any]:
    command, *args = server_command("--marker", str(marker))
    return {"server": server, "command": command, "args": args}


@pytest.mark.parametrize(
    ("projection", "message"),
    [
        ({"name_prefix": ""}, "name_prefix must not be empty"),
        ({"name_prefix": "a//b"}, "name_prefix 'a//b' has an empty segment"),
        ({"name_prefix": "x/../y"}, "has a '..' segment"),
        ({"name_prefix": "bad\u202eprefix"}, "contains the forbidden character U+202E"),
        ({"name_prefix": 5}, "name_prefix must be a string, got int"),
        ({"include": "echo"}, "include must be a list of tool names, not one string"),
        ({"exclude": [1]}, "exclude holds a int; tool names are strings"),
    ],
)
def test_a_bad_projection_spawns_nothing(
    tmp_path: Path, projection: dict[str, Any], message: str
) -> None:
    marker = tmp_path / "spawned"
    with pytest.raises(flows.ProjectionError, match=re.escape(message)):
        flows.connect_and_project(**_fake(marker), **projection)
    assert not marker.exists()


def test_a_bad_default_prefix_spawns_nothing(tmp_path: Path) -> None:
    marker = tmp_path / "spawned"
    with pytest.raises(flows.ProjectionError, match="the default name prefix"):
        flows.connect_and_project(**_fake(marker, server="a\x1bb"))
    assert not marker.exists()


def test_an_entry_with_a_bad_prefix_spawns_nothing(tmp_path: Path) -> None:
    marker = tmp_path / "spawned"
    entry = ConnectOptions.model_validate(_fake(marker))
    with pytest.raises(flows.ProjectionError):
        flows.connect_and_project(entry, name_prefix="a//b")
    assert not marker.exists()


def test_connect_and_project(tmp_path: Path) -> None:
    marker = tmp_path / "spawned"
    with flows.connect_and_project(**_fake(marker), name_prefix="ex", exclude=["fail"]) as source:
        assert marker.exists()
        assert list(source) == ["ex/echo", "ex/add", "ex/sleep", "ex/blob"]
        assert source.invoke("ex/echo", {"message": "hi"}).text == "hi"
        assert isinstance(source, flows.FlowSource)
        assert "ex/echo" in flows.catalog(source)
        session = source.session
    assert session.closed


def test_an_entry_brings_its_projection_and_keywords_win(tmp_path: Path) -> None:
    entry = ConnectOptions.model_validate(
        {**_fake(tmp_path / "m"), "namePrefix": "from-entry", "include": ["echo", "add"]}
    )
    with flows.connect_and_project(entry) as source:
        assert list(source) == ["from-entry/echo", "from-entry/add"]
    with flows.connect_and_project(entry, name_prefix="mine", include=["add"]) as source:
        assert list(source) == ["mine/add"]


def test_an_unknown_include_closes_the_session(tmp_path: Path) -> None:
    with pytest.raises(flows.ProjectionError, match="include names 'nope'"):
        flows.connect_and_project(**_fake(tmp_path / "m"), include=["nope"])
    # The thread/process leak checks of conftest.py prove the session closed.


def test_a_generator_include_is_read_once(tmp_path: Path) -> None:
    with flows.connect_and_project(**_fake(tmp_path / "m"), include=(n for n in ["echo"])) as source:
        assert list(source) == ["mcp/example/echo"]


def test_python_is_the_interpreter() -> None:
    assert server_command()[0] == sys.executable
