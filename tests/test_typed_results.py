"""Typed results (``call_tool(result_type=...)``, ``Tool.output_model()``) and
URL elicitation's ``-32042`` (``UrlElicitationRequired``), with the fake
server and the official SDK's server."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
import typing
from collections.abc import Callable
from contextlib import AbstractContextManager
from types import MappingProxyType
from typing import Any, NotRequired

import pytest
from pydantic import BaseModel
from support import connect_fake
from typing_extensions import TypedDict

import mcp_sync
from mcp_sync.protocol.catalog import freeze


class Sum(BaseModel):
    sum: float


class Day(BaseModel):
    day: str
    high: float
    rain: bool = False


class Forecast(BaseModel):
    city: str
    days: list[Day]
    note: str | None = None


# typing.TypedDict (not typing_extensions'): pydantic refuses it before Python 3.12,
# so the session rebuilds it. At module level: their annotations are strings here
# (``from __future__ import annotations``), resolved in this module's namespace.
class PlainSum(typing.TypedDict):
    sum: float


class DayDict(typing.TypedDict):
    day: str
    high: float
    rain: NotRequired[bool]


class ForecastBase(typing.TypedDict, total=False):
    note: str | None


class ForecastDict(ForecastBase):
    city: str
    days: list[DayDict]
    by_day: NotRequired[dict[str, DayDict | None]]


class Tree(typing.TypedDict):
    children: list[Tree]


@dataclasses.dataclass
class Wrapper:
    inner: PlainSum


def _tool(schema: Any, name: str = "t") -> mcp_sync.Tool:
    return mcp_sync.Tool(name=name, description=None, input_schema=freeze({"type": "object"}),
                         output_schema=freeze(schema))  # fmt: skip


def _result(structured: Any, *, is_error: bool = False) -> mcp_sync.CallToolResult:
    return mcp_sync.CallToolResult(content=(), is_error=is_error, structured_content=freeze(structured))


# ------------------------------------------------------------------ result_type


def test_result_type_validates_structured_content_into_a_model() -> None:
    # (Off, the outputSchema check would refuse bad_structured first: see test_output_checked.)
    with connect_fake("--features", validate_output=False) as session:
        with pytest.raises(mcp_sync.ResultMismatch) as caught:
            session.call_tool("bad_structured", result_type=Sum)
        plain = session.call_tool("bad_structured")
    error = caught.value
    assert error.kind == "invalid_response" and isinstance(error, mcp_sync.InvalidResponse)
    assert error.field == "sum" and error.reason == "invalid"
    assert str(error) == "the structuredContent of tool 'bad_structured' does not fit Sum: field 'sum' (float_parsing)"
    assert "not a number" not in str(error)  # never the server's value
    assert error.result == plain


def test_result_type_accepts_what_pydantic_accepts() -> None:
    from mcp_sync.protocol.typed_results import validate_result

    class Point(TypedDict):
        x: int

    @dataclasses.dataclass
    class Box:
        x: int

    assert validate_result(_result({"x": 1}), Point, "t") == {"x": 1}
    assert validate_result(_result({"x": 1}), Box, "t") == Box(1)
    assert validate_result(_result([1, 2]), list[int], "t") == [1, 2]  # any JSON value (2026-07-28)
    nested = {"city": "Oslo", "days": [{"day": "mon", "high": 1}, {"day": "tue", "high": "warm"}]}
    with pytest.raises(mcp_sync.ResultMismatch, match=r"field 'days\[1\]\.high' \(float_parsing\)") as caught:
        validate_result(_result(nested), Forecast, "t")
    assert caught.value.field == "days[1].high"
    with pytest.raises(mcp_sync.ResultMismatch, match=r"\(and 1 more\)"):
        validate_result(_result({"days": "no"}), Forecast, "t")


def test_a_result_type_pydantic_cannot_use_is_refused_before_sending(tmp_path: Any) -> None:
    class Opaque:
        pass

    log = tmp_path / "log"
    with (
        connect_fake("--features", "--log", str(log)) as session,
        pytest.raises(mcp_sync.InvalidOption, match="cannot be validated with pydantic"),
    ):
        session.call_tool("bad_structured", result_type=Opaque)
    assert "bad_structured" not in log.read_text()


def test_a_typing_typeddict_works_as_a_result_type_on_every_python() -> None:
    from mcp_sync.protocol.typed_results import validate_result

    with connect_fake() as session:
        assert session.call_tool("add", {"a": 2, "b": 3}, result_type=PlainSum) == {"sum": 5}
        with pytest.raises(mcp_sync.ResultMismatch, match=r"does not fit DayDict: field 'day' \(missing\)"):
            session.call_tool("add", {"a": 2, "b": 3}, result_type=DayDict)
    forecast = {"city": "Oslo", "days": [{"day": "mon", "high": 1}], "by_day": {"mon": None}}
    assert validate_result(_result(forecast), ForecastDict, "t") == forecast  # note: not required
    assert validate_result(_result([{"sum": 1}]), list[PlainSum], "t") == [{"sum": 1}]
    assert validate_result(_result({"sum": 1}), typing.Optional[PlainSum], "t") == {"sum": 1}  # noqa: UP045
    bad = {**forecast, "days": [{"day": "mon", "high": "warm"}]}
    with pytest.raises(mcp_sync.ResultMismatch, match=r"field 'days\[0\]\.high' \(float_parsing\)"):
        validate_result(_result(bad), ForecastDict, "t")
    with pytest.raises(mcp_sync.ResultMismatch, match=r"field 'city' \(missing\)"):
        validate_result(_result({"days": [], "by_day": {}}), ForecastDict, "t")


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="pydantic takes typing.TypedDict from 3.12")
def test_a_typing_typeddict_that_cannot_be_rebuilt_names_typing_extensions(tmp_path: Any) -> None:
    log = tmp_path / "log"
    with connect_fake("--log", str(log)) as session:
        for bad in (Tree, Wrapper, list[Wrapper]):
            with pytest.raises(mcp_sync.InvalidOption, match=r"declare it with typing_extensions\.TypedDict"):
                session.call_tool("add", {"a": 1, "b": 2}, result_type=bad)
    assert "tools/call" not in log.read_text()


def test_an_error_result_or_none_structured_is_a_mismatch_with_the_result() -> None:
    from mcp_sync.protocol.typed_results import validate_result

    failed = _result(None, is_error=True)
    with pytest.raises(mcp_sync.ResultMismatch, match="reported an error instead of a Sum") as caught:
        validate_result(failed, Sum, "t")
    assert caught.value.reason == "is_error" and caught.value.result is failed and caught.value.field is None
    with pytest.raises(mcp_sync.ResultMismatch, match="returned no structuredContent to validate as Sum") as caught:
        validate_result(_result(None), Sum, "t")
    assert caught.value.reason == "missing"
    copy = caught.value._copy()
    assert isinstance(copy, mcp_sync.ResultMismatch) and copy.reason == "missing"


def test_result_type_against_the_official_sdk_server(sdk_stdio_cmd: list[str]) -> None:
    command, *args = sdk_stdio_cmd
    for protocol in ("auto", "legacy"):
        with mcp_sync.connect(server="sdk", command=command, args=args, protocol=protocol) as session:
            forecast = session.call_tool("forecast", {"city": "Oslo"}, result_type=Forecast)
            days = [Day(day="mon", high=21.5), Day(day="tue", high=18, rain=True)]
            assert forecast == Forecast(city="Oslo", days=days)
            built = session.tool("forecast").output_model()
            typed = session.call_tool("forecast", {"city": "Oslo"}, result_type=built)
            assert isinstance(typed, built) and typed.days[1].rain is True and typed.note is None  # type: ignore[attr-defined]
            assert type(typed.days[0]).__name__ == "Day"  # type: ignore[attr-defined]
            structured = session.tool("structured").output_model()
            assert session.call_tool("structured", result_type=structured).tags == ["a", "b"]  # type: ignore[attr-defined]
            added = session.call_tool("add", {"a": 2, "b": 3}, result_type=session.tool("add").output_model())
            assert added.result == 5  # type: ignore[attr-defined]
            as_dict = session.call_tool("forecast", {"city": "Oslo"}, result_type=ForecastDict)
            assert as_dict["days"][1] == {"day": "tue", "high": 18, "rain": True}
            with pytest.raises(mcp_sync.ResultMismatch) as caught:
                session.call_tool("fail", result_type=Sum)
            assert caught.value.reason == "is_error" and caught.value.result is not None
            assert "deliberate failure" in caught.value.result.content[0]["text"]


# ------------------------------------------------------------------ output_model


def test_output_model_builds_plain_schemas() -> None:
    schema = {
        "type": "object",
        "description": "A thing.",
        "properties": {
            "name": {"type": "string", "description": "Its name"},
            "count": {"type": "integer", "default": 3},
            "ratio": {"type": ["number", "null"]},
            "tags": {"type": "array", "items": {"type": "string"}},
            "kind": {"enum": ["a", "b"]},
            "fixed": {"const": 1},
            "inner": {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]},
            "free": {"type": "object"},
            "anything": {},
            "class": {"type": "string"},
            "model_config": {"type": "string"},
            "two words": {"type": "string"},
        },
        "required": ["name", "tags"],
    }
    model = _tool(schema, "get-thing").output_model()
    assert model.__name__ == "GetThingOutput" and model.__doc__ == "A thing."
    value = model.model_validate({
        "name": "x", "tags": ["t"], "inner": {"ok": True}, "kind": "a", "fixed": 1, "free": {"k": [1]},
        "class": "c", "model_config": "m", "two words": "w", "extra": 1,
    })  # fmt: skip
    assert value.name == "x" and value.count == 3 and value.ratio is None and value.inner.ok is True
    assert value.model_dump(by_alias=True)["class"] == "c"
    assert value.model_dump(by_alias=True)["two words"] == "w"
    assert value.model_dump(by_alias=True)["model_config"] == "m"
    assert model.model_fields["name"].description == "Its name"
    with pytest.raises(Exception, match="kind"):
        model.model_validate({"name": "x", "tags": [], "kind": "c"})
    with pytest.raises(Exception, match="name"):
        model.model_validate({"tags": []})


@pytest.mark.parametrize(
    ("schema", "why"),
    [
        ({"type": "object", "properties": {"a": {"oneOf": [{"type": "string"}, {"type": "integer"}]}}},
         "'oneOf' at /properties/a"),
        ({"type": "object", "properties": {"a": {"anyOf": [{"type": "string"}, {"type": "integer"}]}}},
         "'anyOf' other than T-or-null at /properties/a"),
        ({"type": "object", "properties": {"a": {"$ref": "https://example.com/s.json"}}},
         "a $ref that is not local"),
        ({"type": "object", "properties": {"a": {"$ref": "#/$defs/Node"}},
          "$defs": {"Node": {"type": "object", "properties": {"next": {"$ref": "#/$defs/Node"}}}}},
         "a recursive $ref at /$defs/Node/properties/next"),
        ({"type": "object", "properties": {"a": {"$ref": "#/$defs/Missing"}}}, "does not exist"),
        ({"type": "object", "properties": {"a": {"allOf": [{"type": "string"}]}}}, "'allOf'"),
        ({"type": "object", "patternProperties": {"^x": {"type": "string"}}}, "'patternProperties' at /"),
        ({"type": "array", "items": {"type": "string"}}, "a root that is not an object"),
        ({"type": "object", "properties": {"a": {"type": ["string", "integer"]}}}, "a type list"),
        ({"type": "object", "properties": {"a": {"enum": [{"x": 1}]}}}, "an enum of anything but"),
    ],
)  # fmt: skip
def test_output_model_says_what_it_cannot_build(schema: Any, why: str) -> None:
    with pytest.raises(mcp_sync.NotSupported, match="output_model\\(\\) cannot build a model") as caught:
        _tool(schema, "weird").output_model()
    assert why in str(caught.value), str(caught.value)
    assert "tool 'weird'" in str(caught.value)


def test_output_model_without_a_schema_or_too_deep() -> None:
    with pytest.raises(mcp_sync.NotSupported, match="publishes no outputSchema"):
        mcp_sync.Tool(name="t", description=None, input_schema=MappingProxyType({})).output_model()
    deep: dict[str, Any] = {"type": "string"}
    for _ in range(40):
        deep = {"type": "object", "properties": {"a": deep}}
    with pytest.raises(mcp_sync.NotSupported, match="nesting deeper than 32"):
        _tool(deep).output_model()


def test_import_mcp_sync_does_not_load_pydantic() -> None:
    code = (
        "import sys, mcp_sync; "
        "print(sorted(m for m in sys.modules if m.startswith(('pydantic', 'mcp_sync.protocol.typed_results'))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


# ------------------------------------------------------------------ -32042


def test_url_elicitation_required_carries_the_url_and_id() -> None:
    with connect_fake("--features") as session:
        with pytest.raises(mcp_sync.UrlElicitationRequired) as caught:
            session.call_tool("needs_url", {})
        assert session.call_tool("needs_url", {}).content[0]["text"] == "connected account"  # the retry
    error = caught.value
    assert isinstance(error, mcp_sync.RemoteError) and error.kind == "url_elicitation_required"
    assert error.code == -32042
    assert error.url == "https://auth.example.com/connect?elicitation=elicit-account"
    assert error.display_url == error.url and error.elicitation_id == "elicit-account"
    assert str(error) == (
        "server 'fake' answered with JSON-RPC error -32042: the user must complete a URL elicitation first, then retry"
    )
    assert error.detail.reveal()["data"]["elicitations"][0]["message"] == "Connect your account first."
    copy = error._copy()
    assert isinstance(copy, mcp_sync.UrlElicitationRequired) and copy.elicitations == error.elicitations


@pytest.mark.parametrize(
    ("urls", "expected"),
    [
        ([{"mode": "url", "url": "javascript:alert(1)", "elicitationId": "a"}], None),
        ([{"mode": "url", "url": "https://x.example/\x1b[31m", "elicitationId": "a"}], None),
        ([{"mode": "url", "url": "https://x.example/a b"}], None),
        ([{"mode": "form", "url": "https://x.example/"}], None),
        ("not a list", None),
        ([{"url": "https://x.example/" + "a" * 9000}], None),
        ([{"url": "https://x.example/ok", "elicitationId": 5}], ("https://x.example/ok", None)),
        ([7, {"url": "ftp://x.example/"}, {"url": "https://y.example/", "elicitationId": "i"}],
         ("https://y.example/", "i")),
    ],
)  # fmt: skip
def test_a_hostile_32042_is_checked(urls: Any, expected: tuple[str, str | None] | None) -> None:
    with connect_fake("--features") as session, pytest.raises(mcp_sync.RemoteError) as caught:
        session.call_tool("needs_url", {"urls": urls})
    error = caught.value
    assert error.code == -32042
    if expected is None:
        assert type(error) is mcp_sync.RemoteError  # nothing usable: a plain remote error
    else:
        assert isinstance(error, mcp_sync.UrlElicitationRequired)
        assert (error.url, error.elicitation_id) == expected


def test_a_32042_url_is_escaped_for_display_and_its_list_bounded() -> None:
    from mcp_sync.protocol.errors import MAX_PENDING_ELICITATIONS, url_elicitations

    data = {"elicitations": [{"url": "https://x.example/\u202egnp.exe"}]}
    ((url, _),) = url_elicitations(data)
    error = mcp_sync.UrlElicitationRequired("m", elicitations=((url, None),))
    assert error.display_url == "https://x.example/\\u202egnp.exe"
    many = {"elicitations": [{"url": f"https://x.example/{n}"} for n in range(100)]}
    assert len(url_elicitations(many)) == MAX_PENDING_ELICITATIONS


def test_url_elicitation_required_from_the_official_sdk_server(
    sdk_stdio_cmd: list[str], sdk_http_server: Callable[..., AbstractContextManager[str]]
) -> None:
    command, *args = sdk_stdio_cmd
    with mcp_sync.connect(server="sdk", command=command, args=args) as session:
        with pytest.raises(mcp_sync.UrlElicitationRequired) as caught:
            session.call_tool("connect_account")
        assert (caught.value.url, caught.value.elicitation_id) == ("https://auth.example.com/connect?id=e1", "e1")
        assert session.call_tool("connect_account").content[0]["text"] == "connected"
    with sdk_http_server() as url, mcp_sync.connect_http(server="sdk", url=url, protocol="legacy") as session:
        with pytest.raises(mcp_sync.UrlElicitationRequired) as caught:
            session.call_tool("connect_account")
        assert caught.value.elicitation_id == "e1"
