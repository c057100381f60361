"""Era negotiation over stdio (mcp_sync.session.eras.negotiation): auto, legacy, modern, pinned versions.

The fake server speaks the handshake era by default, the 2026-07-28 era with
``--era modern``, and both with ``--era dual`` (the first request decides, as in
the official SDK's server). The rule: ``auto`` never connects fewer servers than
the handshake alone would; every case of issue 12's point 2 is here, each against
a handshake-era server that treats the probe its own way.
"""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import assert_no_process_left
from support import connect_fake, fake_pid, logged, methods, timed

import mcp_sync
from mcp_sync.protocol.catalog import freeze
from mcp_sync.session.eras import negotiation as _eras

META_KEYS = {
    "io.modelcontextprotocol/protocolVersion",
    "io.modelcontextprotocol/clientCapabilities",
    "io.modelcontextprotocol/clientInfo",
}


def starts(path: Path) -> list[int]:
    return [int(line) for line in path.read_text().split()] if path.exists() else []


# ------------------------------------------------------------------ the options


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"protocol": "new"}, 'option protocol must be "auto", "legacy" or "modern"'),
        ({"protocol": True}, 'option protocol must be "auto", "legacy" or "modern"'),
        ({"protocol_version": "2026-01-01"}, "option protocol_version must be one of 2026-07-28, "),
        ({"protocol_version": 20250618}, "option protocol_version must be one of"),
        ({"protocol": "legacy", "protocol_version": "2026-07-28"},
         'protocol_version=2026-07-28 belongs to the modern era, but option protocol is "legacy"'),
        ({"protocol": "modern", "protocol_version": "2025-06-18"},
         'protocol_version=2025-06-18 belongs to the legacy era, but option protocol is "modern"'),
    ],
)
def test_protocol_options_are_checked_before_spawning(
    tmp_path: Path, kwargs: dict[str, Any], message: str
) -> None:
    marker = tmp_path / "spawned"
    with pytest.raises(mcp_sync.ProtocolError) as caught:
        connect_fake("--marker", str(marker), **kwargs)
    assert message in str(caught.value)
    assert not marker.exists()


def test_versions_are_exported_newest_first() -> None:
    assert mcp_sync.MODERN_PROTOCOL_VERSIONS == ("2026-07-28",)
    assert mcp_sync.HANDSHAKE_PROTOCOL_VERSIONS == ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")
    assert mcp_sync.SUPPORTED_PROTOCOL_VERSIONS == (
        mcp_sync.MODERN_PROTOCOL_VERSIONS + mcp_sync.HANDSHAKE_PROTOCOL_VERSIONS
    )


# ------------------------------------------------------------------ pinned and legacy


def test_pinned_2025_06_18_reproduces_the_seed_handshake_byte_for_byte(tmp_path: Path) -> None:
    log = tmp_path / "log"
    with connect_fake("--log", str(log), protocol_version="2025-06-18") as session:
        assert (session.era, session.protocol_version) == ("legacy", "2025-06-18")
    lines = log.read_bytes().splitlines()
    version = mcp_sync.__version__.encode()
    assert lines[0] == (
        b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18",'
        b'"capabilities":{},"clientInfo":{"name":"mcp-sync","version":"' + version + b'"}}}'
    )
    assert lines[1] == b'{"jsonrpc":"2.0","method":"notifications/initialized"}'
    assert lines[2] == b'{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{}}'


def test_legacy_proposes_2025_11_25_and_never_probes(tmp_path: Path) -> None:
    log = tmp_path / "log"
    with connect_fake("--era", "dual", "--log", str(log), protocol="legacy") as session:
        assert (session.era, session.protocol_version) == ("legacy", "2025-11-25")
        session.call_tool("echo", {"message": "x"})
    frames = logged(log)
    assert frames[0]["params"]["protocolVersion"] == "2025-11-25"
    assert "server/discover" not in methods(log)
    assert all("_meta" not in (f.get("params") or {}) for f in frames)


def test_legacy_against_a_modern_only_server_names_both_sides() -> None:
    with pytest.raises(mcp_sync.ProtocolError) as caught:
        connect_fake("--era", "modern", protocol="legacy")
    assert str(caught.value) == (
        "server 'fake' speaks protocol versions 2026-07-28; this client speaks "
        "2025-11-25, 2025-06-18, 2025-03-26, 2024-11-05: no version in common"
    )


def test_32022_at_initialize_is_retried_once_at_a_mutual_version(tmp_path: Path) -> None:
    log = tmp_path / "log"
    refusal = ('initialize={"jsonrpc":"2.0","id":{id},"error":{"code":-32022,"message":"no",'
               '"data":{"supported":["2024-11-05"],"requested":"2025-11-25"}}}')
    # Only the first initialize is refused: --answer applies to every one, so
    # the fake is told to refuse once by answering the retry normally.
    with pytest.raises(mcp_sync.McpError):
        connect_fake("--answer", refusal, "--log", str(log), protocol="legacy")
    proposals = [f["params"]["protocolVersion"] for f in logged(log) if f.get("method") == "initialize"]
    assert proposals == ["2025-11-25", "2024-11-05"]  # one retry, at the version it listed


def test_pinned_handshake_version_is_not_retried_elsewhere() -> None:
    refusal = ('initialize={"jsonrpc":"2.0","id":{id},"error":{"code":-32022,"message":"no",'
               '"data":{"supported":["2024-11-05"],"requested":"2025-06-18"}}}')
    with pytest.raises(mcp_sync.ProtocolError) as caught:
        connect_fake("--answer", refusal, protocol_version="2025-06-18")
    assert "speaks protocol versions 2024-11-05; this client speaks 2025-06-18" in str(caught.value)


# ------------------------------------------------------------------ modern


@pytest.mark.parametrize("era", ["modern", "dual"])
def test_auto_negotiates_the_modern_era(tmp_path: Path, era: str) -> None:
    log = tmp_path / "log"
    with connect_fake("--era", era, "--log", str(log)) as session:
        assert (session.era, session.protocol_version) == ("modern", "2026-07-28")
        info = session.server_info
        assert (info.name, info.version, info.title, info.icons) == ("mcp-sync-fake", "1.0", None, ())
        assert info.meta is not None and info.meta["io.modelcontextprotocol/serverInfo"]["name"] == "mcp-sync-fake"
        assert session.call_tool("add", {"a": 1, "b": 2}).structured_content == {"sum": 3}
    frames = logged(log)
    assert methods(log) == ["server/discover", "tools/list", "tools/call"]
    for frame in frames:
        meta = frame["params"]["_meta"]
        assert set(meta) == META_KEYS
        assert meta["io.modelcontextprotocol/protocolVersion"] == "2026-07-28"
        # The fake advertises the tasks extension: a tool call declares it
        # (the server may then answer with a task), nothing else does.
        declared = {"extensions": {"io.modelcontextprotocol/tasks": {}}} if frame["method"] == "tools/call" else {}
        assert meta["io.modelcontextprotocol/clientCapabilities"] == declared
        assert meta["io.modelcontextprotocol/clientInfo"] == dict(mcp_sync.CLIENT_INFO)


def test_modern_pins_and_refuses_a_handshake_era_server() -> None:
    with pytest.raises(mcp_sync.ProtocolError) as caught:
        connect_fake(protocol="modern")
    assert str(caught.value) == (
        "server 'fake' answered server/discover with JSON-RPC error -32601: it does not "
        'speak the modern era (2026-07-28); connect with protocol="auto" or "legacy"'
    )
    with connect_fake("--era", "modern", protocol_version="2026-07-28") as session:
        assert session.era == "modern"


def test_32022_on_the_probe_is_retried_once_at_a_mutual_version(tmp_path: Path) -> None:
    log = tmp_path / "log"
    # The server refuses the first request although it lists the version (as the
    # conformance scenario request-metadata does): one retry, then it works.
    with connect_fake("--era", "modern", "--refuse-first", "--log", str(log)) as session:
        assert session.era == "modern"
    assert methods(log) == ["server/discover", "server/discover", "tools/list"]


def test_a_32022_loop_is_cut_after_one_retry(tmp_path: Path) -> None:
    log = tmp_path / "log"
    with pytest.raises(mcp_sync.ProtocolError) as caught:
        connect_fake("--era", "modern", "--version-loop", "--log", str(log), protocol="modern")
    assert "refused protocol version 2026-07-28 (-32022) again" in str(caught.value)
    assert methods(log) == ["server/discover", "server/discover"]


@pytest.mark.parametrize("protocol", ["auto", "modern"])
def test_disjoint_versions_fail_connect_naming_both_sides(protocol: str) -> None:
    with pytest.raises(mcp_sync.ProtocolError) as caught:
        connect_fake("--era", "modern", "--modern-versions", "2027-01-01,2026-12-01,not-a-date",
                     protocol=protocol)
    ours = "2026-07-28" if protocol == "modern" else ", ".join(mcp_sync.SUPPORTED_PROTOCOL_VERSIONS)
    assert str(caught.value) == (
        "server 'fake' speaks protocol versions 2027-01-01, 2026-12-01 (and 1 other value); "
        f"this client speaks {ours}: no version in common"
    )


def test_a_discover_result_listing_only_handshake_versions_means_legacy(tmp_path: Path) -> None:
    listing = ('server/discover={"jsonrpc":"2.0","id":{id},"result":{"supportedVersions":'
               '["2025-11-25"],"capabilities":{"tools":{}}}}')
    with connect_fake("--answer", listing) as session:
        assert session.era == "legacy"


def test_a_modern_server_without_tools_is_refused() -> None:
    with pytest.raises(mcp_sync.ProtocolError, match="does not offer the tools capability"):
        connect_fake("--era", "modern", "--capabilities", "{}")


def test_server_info_comes_from_the_discover_meta() -> None:
    listing = ('server/discover={"jsonrpc":"2.0","id":{id},"result":{"supportedVersions":'
               '["2026-07-28"],"capabilities":{"tools":{}},'
               '"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"n","version":"v"}}}}')
    with connect_fake("--era", "modern", "--answer", listing) as session:
        stamp = {"io.modelcontextprotocol/serverInfo": {"name": "n", "version": "v"}}
        assert session.server_info == mcp_sync.ServerInfo("n", "v", meta=freeze(stamp))


# ------------------------------------------------------------------ auto never connects fewer


def test_a_probe_answered_with_an_error_costs_one_round_trip(tmp_path: Path) -> None:
    # (a) The usual handshake-era server: -32601 for server/discover.
    log = tmp_path / "log"
    with connect_fake("--log", str(log)) as session:
        assert session.era == "legacy"
    assert methods(log)[:3] == ["server/discover", "initialize", "notifications/initialized"]


def test_a_probe_that_is_ignored_costs_the_probe_grace_only(tmp_path: Path) -> None:
    # (b) A server that never answers unknown methods: once it has read the
    # probe, the handshake follows PROBE_GRACE_MS later; the probe is not sent again.
    log = tmp_path / "log"
    with timed(_eras.PROBE_GRACE_MS / 1000 + 5.0):
        session = connect_fake("--hang-on", "server/discover", "--log", str(log))
    with session:
        assert session.era == "legacy"
        assert session.call_tool("echo", {"message": "x"}).content[0]["text"] == "x"
    assert methods(log)[:2] == ["server/discover", "initialize"]
    assert methods(log).count("server/discover") == 1


def test_a_tight_handshake_budget_still_connects_a_server_that_ignores_the_probe(tmp_path: Path) -> None:
    # The grace is at most a quarter of handshake_timeout_ms, and the handshake
    # gets a full budget of its own after it.
    with connect_fake("--hang-on", "server/discover", handshake_timeout_ms=1_500) as session:
        assert session.era == "legacy"


@pytest.mark.parametrize("protocol", ["auto", "legacy", "modern"])
def test_a_server_that_reads_nothing_runs_out_of_the_start_budget(tmp_path: Path, protocol: str) -> None:
    # Never read within start_timeout_ms: the error names that budget, and it
    # comes when that budget runs out, not the handshake's.
    log = tmp_path / "log"
    started = time.monotonic()
    with pytest.raises(mcp_sync.Timeout, match="start_timeout_ms=800") as caught:
        connect_fake("--start-delay", "30000", "--log", str(log), protocol=protocol,
                     start_timeout_ms=800, handshake_timeout_ms=100)
    took = time.monotonic() - started
    assert 0.8 <= took < 0.8 + 3.0, took
    assert "read nothing" in str(caught.value)


@pytest.mark.parametrize("protocol", ["auto", "legacy", "modern"])
def test_the_handshake_budget_counts_from_the_servers_first_read(tmp_path: Path, protocol: str) -> None:
    # Starting takes six times the handshake budget: it connects all the same.
    era = "dual" if protocol == "auto" else ("modern" if protocol == "modern" else "legacy")
    started = time.monotonic()
    with connect_fake("--era", era, "--start-delay", "1800", protocol=protocol,
                      handshake_timeout_ms=300) as session:
        assert session.call_tool("echo", {"message": "x"}).content[0]["text"] == "x"
    assert time.monotonic() - started >= 1.8


@pytest.mark.parametrize(("protocol", "method"), [("auto", "initialize"), ("legacy", "initialize"),
                                                  ("modern", "server/discover")])
def test_a_server_that_reads_then_stalls_fails_at_the_handshake_bound(
    tmp_path: Path, protocol: str, method: str
) -> None:
    extra = ["--hang-on", "server/discover"] if protocol == "auto" else []
    era = "modern" if protocol == "modern" else "legacy"
    started = time.monotonic()
    with pytest.raises(mcp_sync.Timeout, match=r"handshake_timeout_ms=400\)") as caught:
        connect_fake("--era", era, "--hang-on", method, *extra, protocol=protocol,
                     handshake_timeout_ms=400)
    assert time.monotonic() - started < 0.4 + 3.0
    assert "start_timeout_ms" not in str(caught.value)


@pytest.mark.parametrize(
    "garbage",
    [
        "server/discover=this is not JSON",                                # noise: never answered
        'server/discover={"jsonrpc":"2.0","id":{id},"result":42}',         # not a DiscoverResult
        'server/discover={"jsonrpc":"2.0","id":{id},"result":{"resultType":"weird"}}',
        'server/discover={"jsonrpc":"2.0","id":{id},"result":{"supportedVersions":"2026-07-28"}}',
        'server/discover={"jsonrpc":"2.0","id":{id},"error":{"code":-32022,"message":"x"}}',
    ],
)
def test_a_probe_answered_with_garbage_falls_back(tmp_path: Path, garbage: str) -> None:
    # (c) Garbage that leaves the session open: the same process gets the handshake.
    spawned = tmp_path / "starts"
    with connect_fake("--answer", garbage, "--starts", str(spawned),
                      handshake_timeout_ms=3_000) as session:
        assert session.era == "legacy"
        assert session.call_tool("echo", {"message": "x"}).content[0]["text"] == "x"
    assert len(starts(spawned)) == 1


@pytest.mark.parametrize(
    "garbage",
    [
        'server/discover={"jsonrpc":"2.0","id":{id}}',                     # breaks a frame rule
        'server/discover={"jsonrpc":"1.0","result":{},"id":{id}}',
        'server/discover={"jsonrpc":"2.0","result":{},"id":{id},"error":{}}',
    ],
)
def test_a_probe_answered_with_a_broken_frame_gets_a_fresh_process(
    tmp_path: Path, garbage: str
) -> None:
    # (c) Garbage that ends the session: like (d), a fresh process and the handshake.
    spawned, log = tmp_path / "starts", tmp_path / "log"
    with connect_fake("--answer", garbage, "--starts", str(spawned), "--log", str(log)) as session:
        assert session.era == "legacy"
        second = fake_pid(session)
    first, again = starts(spawned)
    assert again == second != first
    assert_no_process_left(first)
    assert methods(log)[:2] == ["server/discover", "initialize"]


def test_a_server_that_exits_on_the_probe_is_started_again_once(tmp_path: Path) -> None:
    # (d) The fresh process sees only the handshake.
    spawned, log = tmp_path / "starts", tmp_path / "log"
    with connect_fake("--exit-on", "server/discover", "--starts", str(spawned),
                      "--log", str(log)) as session:
        assert session.era == "legacy"
        assert session.call_tool("echo", {"message": "x"}).content[0]["text"] == "x"
    assert len(starts(spawned)) == 2
    assert_no_process_left(starts(spawned)[0])
    assert methods(log)[:3] == ["server/discover", "initialize", "notifications/initialized"]


def test_a_server_that_exits_on_every_request_is_started_twice_at_most(tmp_path: Path) -> None:
    spawned = tmp_path / "starts"
    with pytest.raises(mcp_sync.ConnectionClosed, match="exited with code 3"):
        connect_fake("--exit-on", "server/discover", "--exit-on", "initialize",
                     "--starts", str(spawned))
    assert len(starts(spawned)) == 2
    for pid in starts(spawned):
        assert_no_process_left(pid)


@pytest.mark.parametrize("era", ["dual", "sdk", "modern"])
def test_a_slow_modern_server_settles_on_the_modern_era_however_late(tmp_path: Path, era: str) -> None:
    # (e) A server that starts slowly reads nothing meanwhile: the probe waits in
    # its pipe, it is the first thing the server reads, and no handshake is sent
    # after it (one would pin a dual-era server of the "sdk" kind to the handshake era).
    log = tmp_path / "log"
    with connect_fake("--era", era, "--start-delay", "1500", "--log", str(log)) as session:
        assert (session.era, session.protocol_version) == ("modern", "2026-07-28")
        assert session.call_tool("echo", {"message": "x"}).content[0]["text"] == "x"
    assert methods(log)[:2] == ["server/discover", "tools/list"]


def test_a_modern_answer_after_the_handshake_went_out_waits_for_its_fate(tmp_path: Path) -> None:
    # The server read the probe but answers it late: the handshake went out too.
    # A dual-era server that serves the handshake it read next (the TypeScript
    # SDK's serveStdio) has pinned this process to the handshake era: legacy.
    log = tmp_path / "log"
    with connect_fake("--era", "sdk", "--delay", "server/discover=700", "--log", str(log)) as session:
        assert session.era == "legacy"
        assert session.call_tool("echo", {"message": "x"}).content[0]["text"] == "x"
    assert methods(log)[:3] == ["server/discover", "initialize", "notifications/initialized"]
    # One that refuses the handshake after the probe (first request decides): modern.
    with connect_fake("--era", "dual", "--delay", "server/discover=700", "--log", str(log)) as session:
        assert session.era == "modern"
        assert session.call_tool("echo", {"message": "x"}).content[0]["text"] == "x"


def test_a_refused_probe_leaves_no_diagnostic_event(tmp_path: Path) -> None:
    # An error with a null id (a server that could not read the probe's id) is
    # the probe's refusal: the handshake follows at once, and no remote-error
    # event appears (the handshake alone would cause none).
    events: list[mcp_sync.DiagnosticEvent] = []
    null_id = ('server/discover={"jsonrpc":"2.0","id":null,"error":'
               '{"code":-32600,"message":"Invalid Request"}}')
    method_not_found = 'server/discover={"jsonrpc":"2.0","id":{id},"error":{"code":-32601,"message":"no"}}'
    for answer in (null_id, method_not_found):
        with timed(_eras.PROBE_GRACE_MS / 1000 + 5.0), connect_fake(
            "--answer", answer, diagnostics=events.append
        ) as session:
            assert session.era == "legacy"
    assert [event.kind for event in events] == []


def test_a_null_id_error_after_the_era_is_settled_is_still_reported() -> None:
    events: list[mcp_sync.DiagnosticEvent] = []
    null_id = 'tools/call={"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request"}}'
    with connect_fake("--answer", null_id, diagnostics=events.append, request_timeout_ms=300) as session, \
            pytest.raises(mcp_sync.Timeout):
        session.call_tool("echo", {"message": "x"})
    assert [event.kind for event in events] == ["remote-error"]


def test_an_ignored_probe_then_a_refused_handshake_is_not_probed_again(tmp_path: Path) -> None:
    # The refusal stands, a moment after the handshake alone would have got it:
    # no second probe with the whole handshake budget.
    log, spawned = tmp_path / "log", tmp_path / "starts"
    refusal = 'initialize={"jsonrpc":"2.0","id":{id},"error":{"code":-32601,"message":"no"}}'
    with timed(2 * _eras.PROBE_GRACE_MS / 1000 + 3.0), pytest.raises(mcp_sync.RemoteError) as caught:
        connect_fake("--hang-on", "server/discover", "--answer", refusal, "--log", str(log),
                     "--starts", str(spawned), handshake_timeout_ms=10_000)
    assert caught.value.code == -32601
    assert methods(log) == ["server/discover", "initialize"]
    assert len(starts(spawned)) == 1


def test_a_server_that_exits_on_the_probe_after_the_handshake_went_out(tmp_path: Path) -> None:
    # It reads the probe, says nothing for a while (the handshake goes out),
    # then exits: a fresh process and the handshake alone, as if it had exited at once.
    spawned, log = tmp_path / "starts", tmp_path / "log"
    with connect_fake("--delay", "server/discover=700", "--exit-on", "server/discover",
                      "--starts", str(spawned), "--log", str(log)) as session:
        assert session.era == "legacy"
        assert session.call_tool("echo", {"message": "x"}).content[0]["text"] == "x"
    assert len(starts(spawned)) == 2
    assert_no_process_left(starts(spawned)[0])


def test_a_handshake_refused_after_the_probe_is_the_handshakes_error(tmp_path: Path) -> None:
    # A JSON-RPC refusal of initialize (other than -32022) would meet a fresh
    # process too: no second process, no second probe, the error stands.
    log, spawned = tmp_path / "log", tmp_path / "starts"
    refusal = 'initialize={"jsonrpc":"2.0","id":{id},"error":{"code":-32603,"message":"no"}}'
    with pytest.raises(mcp_sync.RemoteError) as caught:
        connect_fake("--answer", refusal, "--log", str(log), "--starts", str(spawned))
    assert caught.value.code == -32603
    assert methods(log) == ["server/discover", "initialize"]
    assert len(starts(spawned)) == 1


def test_a_server_that_exits_on_initialize_is_not_started_again(tmp_path: Path) -> None:
    # The handshake alone would meet the same exit: one process, its error.
    spawned = tmp_path / "starts"
    with pytest.raises(mcp_sync.ConnectionClosed, match="exited with code 3"):
        connect_fake("--exit-on", "initialize", "--starts", str(spawned))
    assert len(starts(spawned)) == 1


def test_a_dual_server_whose_modern_side_is_broken_still_connects(tmp_path: Path) -> None:
    # The probe locks this server into the modern era, where it refuses every
    # version; protocol="legacy" would connect, so auto does, on a fresh process.
    spawned = tmp_path / "starts"
    with connect_fake("--era", "dual", "--version-loop", "--starts", str(spawned)) as session:
        assert session.era == "legacy"
    assert len(starts(spawned)) == 2


def test_a_handshake_timeout_is_not_retried(tmp_path: Path) -> None:
    spawned = tmp_path / "starts"
    with pytest.raises(mcp_sync.Timeout):
        connect_fake("--hang-on", "initialize", "--starts", str(spawned), handshake_timeout_ms=300)
    # A failed connect stops its server at once: on a loaded machine it may
    # not have written its pid yet. It must never have been started twice.
    assert len(starts(spawned)) <= 1


def test_a_negotiation_that_times_out_leaves_nothing_running(tmp_path: Path) -> None:
    spawned = tmp_path / "starts"
    result: list[BaseException] = []

    def run() -> None:
        try:
            connect_fake("--hang-on", "server/discover", "--hang-on", "initialize",
                         "--starts", str(spawned), handshake_timeout_ms=300)
        except BaseException as exc:
            result.append(exc)

    thread = threading.Thread(target=run)
    thread.start()
    thread.join(10)
    assert isinstance(result[0], mcp_sync.Timeout)
    for pid in starts(spawned):
        assert_no_process_left(pid)


def test_auto_costs_a_handshake_era_server_one_more_request(tmp_path: Path) -> None:
    auto_log, legacy_log = tmp_path / "auto", tmp_path / "legacy"
    with connect_fake("--log", str(auto_log)):
        pass
    with connect_fake("--log", str(legacy_log), protocol="legacy"):
        pass
    assert methods(auto_log) == ["server/discover", *methods(legacy_log)]



# ------------------------------------------------------------------ the era objects


def test_both_eras_implement_the_one_era_contract() -> None:
    from mcp_sync.session.eras.contract import Era
    from mcp_sync.session.eras.handshake import LegacyEra
    from mcp_sync.session.eras.modern import ModernEra

    members = {name for name in vars(Era) if not name.startswith("_")} | set(Era.__annotations__)
    assert {"open", "adopt", "request", "probe", "set_log_level", "listen", "cancel_task"} <= members
    for era in (LegacyEra, ModernEra):
        missing = sorted(name for name in members if not hasattr(era, name))
        assert not missing, f"{era.__name__} lacks {missing}"


@pytest.mark.parametrize(("options", "era", "version"), [((), "legacy", "2025-11-25"),
                                                         (("--era", "modern"), "modern", "2026-07-28")])
def test_the_core_holds_one_era_object_and_the_session_reads_its_name(
    options: tuple[str, ...], era: str, version: str
) -> None:
    with connect_fake(*options) as session:
        core = session._core
        assert session.era == core.era.name == era
        assert session.protocol_version == core.protocol_version == core.era.version == version
        assert not hasattr(core, "modern")
    assert "tools" not in {field.name for field in _eras.Negotiated.__dataclass_fields__.values()}


BUSY_SERVER = """
import sys, time
first = sys.stdin.buffer.readline()
with open(sys.argv[1], "w") as handle:
    handle.write(repr(time.monotonic()))
end = time.monotonic() + 30
while time.monotonic() < end:  # busy, and never answers
    pass
"""


@pytest.mark.parametrize("protocol", ["auto", "legacy"])
def test_a_busy_server_that_never_answers_fails_within_the_handshake_budget(
    tmp_path: Path, protocol: str
) -> None:
    # While the server is seen busy the probe's grace is extended, but never past
    # half the budget, and the handshake after it gets what is left, not a budget
    # of its own: the whole negotiation ends within handshake_timeout_ms of the
    # server's first read (it took 2.6 s for a 500 ms budget when the extension
    # and the handshake each had their own).
    read_at = tmp_path / "read-at"
    with pytest.raises(mcp_sync.Timeout, match=r"handshake_timeout_ms=500\)"):
        mcp_sync.connect(server="busy", command=sys.executable, args=["-c", BUSY_SERVER, str(read_at)],
                         protocol=protocol, handshake_timeout_ms=500)
    after_read = time.monotonic() - float(read_at.read_text())
    assert after_read < 0.5 + 1.2, after_read
