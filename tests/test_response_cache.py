"""The session's response cache: a list or a read the server marks fresh
(``ttlMs``, ``cacheScope``) is answered without asking again until it
expires or the server announces a change; bounded, thread-safe, private
results kept only for a session of one user, off with ``cache=False``.

Against the official SDK's own cache hints (``MCPServer(cache_hints=...)``,
tests/peers/sdk_cache_server.py) over stdio and Streamable HTTP, and the fake
server's ``--ttl-ms`` for what a real server will not do."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from conftest import connect_sdk_peer
from support import captured_logs, connect_fake, methods

import mcp_sync
from mcp_sync.config import ConnectOptions
from mcp_sync.session import response_cache
from mcp_sync.session.response_cache import MAX_BYTES, MAX_ENTRIES, MAX_TTL_MS, WHOLE, ResponseCache, freshness
from mcp_sync.testing import server_command

WAIT = 30.0  # a cap for a loaded machine, not an expectation


def _events(records: list[Any]) -> list[str]:
    return [record.mcp_event for record in records if getattr(record, "mcp_event", "").startswith("cache_")]


def _wait_for(condition: Any, what: str) -> None:
    deadline = time.monotonic() + WAIT
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.01)


# ------------------------------------------------------------------ the rules, on the cache itself


@pytest.mark.parametrize(
    ("result", "expected"),
    [
        ({"ttlMs": 60_000, "cacheScope": "public"}, (60_000, False)),
        ({"ttlMs": 60_000, "cacheScope": "private"}, (60_000, True)),
        ({"ttlMs": 60_000}, (60_000, True)),  # no scope: private, the stricter reading
        ({"ttlMs": 60_000, "cacheScope": "PUBLIC"}, (60_000, True)),
        ({"ttlMs": 0, "cacheScope": "public"}, (0, False)),
        ({"ttlMs": -5, "cacheScope": "public"}, (0, False)),
        ({"ttlMs": 1.5, "cacheScope": "public"}, (0, False)),
        ({"ttlMs": "60000", "cacheScope": "public"}, (0, False)),
        ({"ttlMs": True, "cacheScope": "public"}, (0, False)),
        ({"cacheScope": "public"}, (0, False)),
        ({"ttlMs": 2**62, "cacheScope": "public"}, (MAX_TTL_MS, False)),
        ({"ttlMs": 10**400, "cacheScope": "public"}, (MAX_TTL_MS, False)),
        ("not an object", (0, True)),
    ],
)
def test_a_result_is_fresh_only_for_a_positive_integer_ttl_capped_at_an_hour(
    result: object, expected: tuple[int, bool]
) -> None:
    assert freshness([result]) == expected


def test_a_whole_list_is_as_fresh_as_its_stalest_page_and_private_if_any_page_is() -> None:
    pages = [{"ttlMs": 60_000, "cacheScope": "public"}, {"ttlMs": 5_000, "cacheScope": "public"}]
    assert freshness(pages) == (5_000, False)
    assert freshness([*pages, {"ttlMs": 90_000, "cacheScope": "private"}]) == (5_000, True)
    assert freshness([*pages, {"cacheScope": "public"}]) == (0, False)
    assert freshness([]) == (0, True)


PUBLIC = {"ttlMs": 60_000, "cacheScope": "public"}
PRIVATE = {"ttlMs": 60_000, "cacheScope": "private"}


def test_the_cache_holds_at_most_its_entries_and_bytes_dropping_the_least_recently_used() -> None:
    cache = ResponseCache("s", keep_private=True)
    for index in range(MAX_ENTRIES + 50):
        cache.store("resources/read", f"u{index}", ("v",), [PUBLIC], cache.epoch)
        if index == MAX_ENTRIES - 1:
            assert cache.lookup("resources/read", "u0") == ("v",)  # u0 is now the most recently used
    assert len(cache) == MAX_ENTRIES
    assert cache.lookup("resources/read", "u0") == ("v",)
    assert cache.lookup("resources/read", "u1") is None  # the least recently used went first
    big = "x" * (MAX_BYTES // 5)
    for index in range(6):
        cache.store("resources/read", f"big{index}", big, [PUBLIC], cache.epoch)
    assert cache._bytes <= MAX_BYTES
    assert cache.lookup("resources/read", "big5") == big
    assert cache.lookup("resources/read", "big0") is None
    cache.store("resources/read", "huge", "x" * (MAX_BYTES // 4 + 1), [PUBLIC], cache.epoch)
    assert cache.lookup("resources/read", "huge") is None


def test_a_change_announced_during_a_fetch_keeps_that_fetch_out() -> None:
    cache = ResponseCache("s", keep_private=True)
    epoch = cache.epoch
    cache.list_changed("resources")  # arrives while resources/list and prompts/list are on their way
    cache.store("resources/list", WHOLE, ("stale",), [PUBLIC], epoch)
    cache.store("prompts/list", WHOLE, ("fresh",), [PUBLIC], epoch)
    assert cache.lookup("resources/list", WHOLE) is None
    assert cache.lookup("prompts/list", WHOLE) == ("fresh",)
    epoch = cache.epoch
    cache.updated({"uri": "note://other"})
    cache.store("resources/read", "note://1", ("fresh",), [PUBLIC], epoch)
    assert cache.lookup("resources/read", "note://1") == ("fresh",)
    epoch = cache.epoch
    cache.updated({"uri": "note://1"})
    cache.store("resources/read", "note://1", ("stale",), [PUBLIC], epoch)
    assert cache.lookup("resources/read", "note://1") is None


def test_changes_are_remembered_in_bounded_memory_and_forgetting_one_errs_on_the_safe_side() -> None:
    cache = ResponseCache("s", keep_private=True)
    epoch = cache.epoch
    cache.updated({"uri": "note://1"})
    for index in range(response_cache.MAX_CHANGES + 10):
        cache.updated({"uri": f"note://other{index}"})
    assert len(cache._changed) == response_cache.MAX_CHANGES
    # note://1's change is forgotten: a read fetched before it is still refused.
    cache.store("resources/read", "note://1", ("stale",), [PUBLIC], epoch)
    assert cache.lookup("resources/read", "note://1") is None
    later = cache.epoch
    cache.store("resources/read", "note://1", ("fresh",), [PUBLIC], later)
    assert cache.lookup("resources/read", "note://1") == ("fresh",)


def test_each_notification_drops_what_it_names_and_nothing_else() -> None:
    cache = ResponseCache("s", keep_private=True)
    for method, part in (
        ("tools/list", WHOLE), ("tools/list", None), ("prompts/list", WHOLE), ("resources/list", WHOLE),
        ("resources/templates/list", "3"), ("resources/read", "note://1"), ("resources/read", "note://2"),
    ):  # fmt: skip
        cache.store(method, part, (method,), [PUBLIC], cache.epoch)
    cache.list_changed("tools")
    assert cache.lookup("tools/list", WHOLE) is None and cache.lookup("tools/list", None) is None
    assert cache.lookup("prompts/list", WHOLE) is not None
    cache.list_changed("resources")
    assert cache.lookup("resources/list", WHOLE) is None and cache.lookup("resources/templates/list", "3") is None
    assert cache.lookup("resources/read", "note://1") is not None
    cache.updated({"uri": "note://1"})
    cache.updated({"uri": 7})  # malformed: nothing more dropped
    cache.updated(None)
    assert cache.lookup("resources/read", "note://1") is None
    assert cache.lookup("resources/read", "note://2") is not None
    assert cache.lookup("prompts/list", WHOLE) is not None


def test_private_results_are_kept_only_where_the_session_speaks_for_one_user() -> None:
    one_user = ResponseCache("s", keep_private=True)
    managed = ResponseCache("s", keep_private=False)  # auth=: the next token may be another user's
    for cache in (one_user, managed):
        cache.store("resources/read", "mine", ("private",), [PRIVATE], cache.epoch)
        cache.store("resources/list", WHOLE, ("public",), [PUBLIC], cache.epoch)
    assert one_user.lookup("resources/read", "mine") == ("private",)
    assert managed.lookup("resources/read", "mine") is None
    assert managed.lookup("resources/list", WHOLE) == ("public",)


def test_an_entry_expires_at_its_ttl(monkeypatch: pytest.MonkeyPatch) -> None:
    now = [1000.0]
    monkeypatch.setattr(response_cache.time, "monotonic", lambda: now[0])
    cache = ResponseCache("s", keep_private=True)
    cache.store("prompts/list", WHOLE, ("p",), [{"ttlMs": 1_500, "cacheScope": "public"}], cache.epoch)
    now[0] += 1.4
    assert cache.lookup("prompts/list", WHOLE) == ("p",)
    now[0] += 0.2
    assert cache.lookup("prompts/list", WHOLE) is None
    assert len(cache) == 0  # an expired entry is dropped when it is found


def test_a_huge_ttl_keeps_a_result_for_an_hour_at_most(monkeypatch: pytest.MonkeyPatch) -> None:
    now = [1000.0]
    monkeypatch.setattr(response_cache.time, "monotonic", lambda: now[0])
    cache = ResponseCache("s", keep_private=True)
    cache.store("resources/read", "u", ("v",), [{"ttlMs": 2**63 - 1, "cacheScope": "public"}], cache.epoch)
    now[0] += MAX_TTL_MS / 1000 - 1
    assert cache.lookup("resources/read", "u") == ("v",)
    now[0] += 2
    assert cache.lookup("resources/read", "u") is None


def test_threads_share_the_cache_and_its_bounds_hold() -> None:
    cache = ResponseCache("s", keep_private=True)
    failures: list[BaseException] = []
    start = threading.Barrier(8)

    def work(worker: int) -> None:
        try:
            start.wait()
            for step in range(3_000):
                key = f"u{(worker * 7 + step) % 400}"
                if cache.lookup("resources/read", key) is None:
                    cache.store("resources/read", key, (key,), [PUBLIC], cache.epoch)
                if step % 97 == 0:
                    cache.updated({"uri": key})
                if step % 501 == 0:
                    cache.list_changed("resources")
        except BaseException as exc:
            failures.append(exc)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(WAIT)
    assert not failures
    assert len(cache) <= MAX_ENTRIES
    assert cache._bytes == sum(entry.size for entry in cache._entries.values())


# ------------------------------------------------------------------ a session, against the fake server


def test_a_fresh_read_is_answered_without_asking_the_server_and_the_log_says_so(tmp_path: Path) -> None:
    log = tmp_path / "frames"
    with (
        connect_fake("--ttl-ms", "60000", "--log", str(log)) as session,
        captured_logs("mcp_sync.cache") as records,
    ):
        first = session.read_resource("fake://text/hello")
        second = session.read_resource("fake://text/hello")
        assert second is first  # the same frozen value, shared
        assert session.list_resources() == session.list_resources()
    assert methods(log).count("resources/read") == 1
    assert methods(log).count("resources/list") == 1
    assert _events(records) == ["cache_miss", "cache_store", "cache_hit"] * 2
    texts = [record.getMessage() for record in records]
    assert texts[:3] == [
        "cache miss: resources/read of 'fake://text/hello' from server 'fake' (nothing kept)",
        "cache kept: resources/read of 'fake://text/hello' from server 'fake' (for 60000 ms, public)",
        texts[2],
    ]
    assert texts[2].startswith("cache hit: resources/read of 'fake://text/hello' from server 'fake' (fresh for ")


def test_cache_false_and_a_config_entry_turn_it_off(tmp_path: Path) -> None:
    log = tmp_path / "frames"
    with connect_fake("--ttl-ms", "60000", "--log", str(log), cache=False) as session:
        session.read_resource("fake://text/hello")
        session.read_resource("fake://text/hello")
    assert methods(log).count("resources/read") == 2
    command, *args = server_command("--ttl-ms", "60000", "--log", str(log))
    entry = ConnectOptions.model_validate({"server": "f", "command": command, "args": args, "cache": False})
    with mcp_sync.connect(entry) as session:
        session.read_resource("fake://text/hello")
        session.read_resource("fake://text/hello")
    assert methods(log).count("resources/read") == 4
    with mcp_sync.connect(entry, cache=True) as session:  # the keyword wins over the entry
        session.read_resource("fake://text/hello")
        session.read_resource("fake://text/hello")
    assert methods(log).count("resources/read") == 5
    with pytest.raises(mcp_sync.InvalidOption, match="option cache must be a bool"):
        mcp_sync.connect(server="f", command=command, args=args, cache="no")  # type: ignore[arg-type]


def test_a_request_with_meta_is_neither_answered_from_nor_kept_in_the_cache(tmp_path: Path) -> None:
    log = tmp_path / "frames"
    with connect_fake("--ttl-ms", "60000", "--log", str(log)) as session:
        session.read_resource("fake://text/hello", meta={"example.com/tenant": "a"})
        session.read_resource("fake://text/hello")
        session.read_resource("fake://text/hello", meta={"example.com/tenant": "b"})
        session.read_resource("fake://text/hello")
    reads = [frame for frame in _frames(log) if frame.get("method") == "resources/read"]
    assert [frame["params"].get("_meta") for frame in reads] == [
        {"example.com/tenant": "a"}, None, {"example.com/tenant": "b"},
    ]  # fmt: skip


def _frames(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def test_a_result_without_ttl_is_never_kept(tmp_path: Path) -> None:
    log = tmp_path / "frames"
    with connect_fake("--log", str(log)) as session:
        for _ in range(3):
            session.read_resource("fake://text/hello")
            session.list_prompts()
    assert methods(log).count("resources/read") == 3
    assert methods(log).count("prompts/list") == 3


@pytest.mark.parametrize("era", ["legacy", "modern"])
def test_announced_changes_drop_what_they_name(era: str, tmp_path: Path) -> None:
    log = tmp_path / "frames"
    updated = threading.Event()
    options = ("--listen", "--era", era, "--ttl-ms", "60000", "--log", str(log))
    with connect_fake(*options, protocol=era, auto_refresh=True) as session:
        session.subscribe_resource("fake://text/hello", lambda uri: updated.set())
        session.read_resource("fake://text/hello")
        session.list_prompts()
        session.list_resources()
        session.call_tool("publish", {"uri": "fake://text/hello"})
        assert updated.wait(WAIT)
        session.read_resource("fake://text/hello")  # asked again
        session.list_prompts()  # still fresh
        session.call_tool("publish", {"kind": "resources"})
        _wait_for(lambda: session.resources_changed, "no resources/list_changed")
        session.list_resources()  # asked again
        session.list_prompts()  # still fresh
    seen = methods(log)
    assert (seen.count("resources/read"), seen.count("resources/list"), seen.count("prompts/list")) == (2, 2, 1)


def test_the_cache_ends_with_the_session() -> None:
    with connect_fake("--ttl-ms", "60000") as session:
        session.read_resource("fake://text/hello")
        cache = session._core.inbound.response_cache()
        assert cache is not None and len(cache) == 1  # type: ignore[arg-type]
    assert len(cache) == 0  # type: ignore[arg-type]


# ------------------------------------------------------------------ the official SDK's cache hints


@contextmanager
def _sdk(transport: str, era: str, *args: str, **kwargs: Any) -> Iterator[mcp_sync.Session]:
    with connect_sdk_peer("sdk_cache_server.py", transport, *args, protocol=era, **kwargs) as session:
        yield session


def _reads(session: mcp_sync.Session) -> int:
    return int(session.call_tool("reads").structured_content["result"])


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_sdk_hints_give_a_hit_and_an_update_drops_it(transport: str) -> None:
    updated = threading.Event()
    with _sdk(transport, "modern", auto_refresh=True) as session, captured_logs("mcp_sync.cache") as records:
        session.subscribe_resource("note://1", lambda uri: updated.set())
        assert session.read_resource("note://1").contents[0].text == "note 1"
        assert session.read_resource("note://1").contents[0].text == "note 1"
        assert _reads(session) == 1  # the second read was the cache's
        session.call_tool("edit", {"uri": "note://1", "text": "changed"})
        assert updated.wait(WAIT)
        assert session.read_resource("note://1").contents[0].text == "changed"
        assert _reads(session) == 2
        first = session.list_resources()
        assert session.list_resources() is first and len(first) == 25
        session.call_tool("add_note", {"name": "new"})
        _wait_for(lambda: session.resources_changed, "no resources/list_changed")
        assert len(session.list_resources()) == 26
    # (A listen stream replaced when the subscription changed marks every
    # list changed: dropped entries there may come before these.)
    reads = _events([r for r in records if r.mcp_method == "resources/read"])
    assert reads == ["cache_miss", "cache_store", "cache_hit", "cache_invalidate", "cache_miss", "cache_store"]
    lists = _events([r for r in records if r.mcp_method == "resources/list"])
    assert lists[lists.index("cache_miss") :] == [
        "cache_miss", "cache_store", "cache_hit", "cache_invalidate", "cache_miss", "cache_store",
    ]  # fmt: skip


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_in_the_handshake_era_the_sdk_sends_no_hints_and_every_read_is_asked(transport: str) -> None:
    with _sdk(transport, "legacy") as session:
        session.read_resource("note://1")
        session.read_resource("note://1")
        assert _reads(session) == 2


def test_a_session_with_auth_keeps_only_public_results() -> None:
    with _sdk("http", "modern", auth=lambda: "a-token") as session:
        session.read_resource("note://1")
        session.read_resource("note://1")
        assert _reads(session) == 2  # private: the next token could be another user's
        first = session.list_resources()
        assert session.list_resources() is first  # public: kept


def test_a_huge_ttl_from_the_sdk_is_held_to_an_hour() -> None:
    with _sdk("stdio", "modern", "huge") as session, captured_logs("mcp_sync.cache") as records:
        session.read_resource("note://1")
        session.read_resource("note://1")
        assert _reads(session) == 1
    kept = [record.getMessage() for record in records if record.mcp_event == "cache_store"]
    assert kept == ["cache kept: resources/read of 'note://1' from server 'sdk' (for 3600000 ms, private)"]


def test_a_replaced_listen_stream_marks_its_lists_changed_before_the_subscriber_returns(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Subscribing replaces the listen stream, and a replacement may have missed
    changes, so its lists count as changed. That happens before
    subscribe_resource returns: a list fetched after it stays cached (with the
    marking late, as on a loaded machine, it was dropped and fetched again)."""
    from mcp_sync.session import listen

    missed = listen.ListenStream._missed

    def late(self: listen.ListenStream) -> None:
        time.sleep(0.3)  # the listen thread scheduled late
        missed(self)

    monkeypatch.setattr(listen.ListenStream, "_missed", late)
    log = tmp_path / "frames"
    options = ("--listen", "--era", "modern", "--ttl-ms", "60000", "--log", str(log))
    # auto_refresh: a stream for the lists opens at connect; the subscription replaces it.
    with connect_fake(*options, protocol="modern", auto_refresh=True) as session:
        session.subscribe_resource("fake://text/hello", lambda uri: None)
        session.list_prompts()
        time.sleep(0.6)  # past the late marking
        session.list_prompts()  # still fresh
    assert methods(log).count("prompts/list") == 1
