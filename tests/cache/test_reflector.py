"""Reflector behaviour against the stand-in API server, through the real kubernetes client."""

from __future__ import annotations

import gc
import logging
import socket
import time
import types
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from scheduler_core.cache.informers import build_api_client
from scheduler_core.cache.kinds import NODE, POD, QUEUE, KindSpec
from scheduler_core.cache.reflector import Backoff, Phase, Reflector, ReflectorOptions
from tests.cache.conftest import FAST as INFORMERS_FAST
from tests.fakeapi import FakeApiServer, RecordingSink, wait_until, write_kubeconfig

PODS = "/api/v1/pods"
NODES = "/api/v1/nodes"

FAST = replace(INFORMERS_FAST, progress_log_interval=0)

StartReflector = Callable[..., tuple[Reflector, RecordingSink]]


def pod(name: str, namespace: str = "default", **labels: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": namespace, "labels": labels}}


@pytest.fixture
def api_client(fake_api: FakeApiServer, tmp_path: Path) -> Iterator[Any]:
    fake_api.token = "test-token"
    path = write_kubeconfig(tmp_path / "kubeconfig", fake_api.url, token="test-token")
    client = build_api_client(str(path))
    yield client
    client.close()


@pytest.fixture
def start_reflector(api_client: Any) -> Iterator[StartReflector]:
    started: list[Reflector] = []

    def start(
        spec: KindSpec,
        sink: Any = None,
        namespace: str | None = None,
        **overrides: Any,
    ) -> tuple[Reflector, Any]:
        sink = sink if sink is not None else RecordingSink()
        reflector = Reflector(
            spec, api_client, sink, namespace=namespace, options=replace(FAST, **overrides)
        )
        reflector.start()
        started.append(reflector)
        return reflector, sink

    yield start
    for reflector in started:
        reflector.stop()


def lists(server: FakeApiServer, path: str = PODS) -> list[Any]:
    return server.requests(path, watch=False)


def watches(server: FakeApiServer, path: str = PODS) -> list[Any]:
    return server.requests(path, watch=True)


def synced_and_watching(server: FakeApiServer, reflector: Reflector, path: str = PODS) -> None:
    assert reflector.wait_for_sync(5), "initial sync"
    wait_until(
        lambda: len(watches(server, path)) >= 1 and server.open_watches >= 1, message="watch"
    )


def test_initial_sync_is_paginated_and_watch_starts_at_the_list_version(
    fake_api: FakeApiServer, start_reflector: StartReflector
) -> None:
    for i in range(23):
        fake_api.add("Pod", pod(f"p{i:02}", namespace=f"ns{i % 3}"))
    list_rv = str(fake_api.resource_version)
    reflector, sink = start_reflector(POD)
    synced_and_watching(fake_api, reflector)

    assert len(sink.keys("Pod")) == 23
    assert "ns1/p01" in sink.keys("Pod")
    assert sink.synced_count["Pod"] == 1
    assert reflector.has_synced()
    assert reflector.last_sync_resource_version == list_rv
    pages = lists(fake_api)
    assert [p.param("limit") for p in pages] == ["5"] * 5
    assert pages[0].param("continue") is None
    assert all(p.param("continue") for p in pages[1:])
    watch = watches(fake_api)[0]
    assert watch.param("resourceVersion") == list_rv
    assert watch.param("allowWatchBookmarks") == "true"
    timeout = int(watch.param("timeoutSeconds") or 0)
    assert 60 <= timeout <= 120
    assert reflector.stats.events["LISTED"] == 23


def test_not_synced_while_the_list_fails(
    fake_api: FakeApiServer, start_reflector: StartReflector
) -> None:
    fake_api.fail_next(1_000, 500, path=PODS)
    reflector, sink = start_reflector(POD)
    wait_until(lambda: len(lists(fake_api)) >= 2, message="list retried")
    status = reflector.status()
    assert not status.synced
    assert status.phase is Phase.FAILING
    assert "HTTP 500" in status.reason
    assert sink.synced_count["Pod"] == 0
    fake_api.fail_next(0)
    assert reflector.wait_for_sync(5)
    assert reflector.status().reason == ""


def test_watch_events_reach_the_sink(
    fake_api: FakeApiServer, start_reflector: StartReflector
) -> None:
    fake_api.add("Pod", pod("keep"))
    fake_api.add("Pod", pod("doomed"))
    reflector, sink = start_reflector(POD)
    synced_and_watching(fake_api, reflector)

    fake_api.add("Pod", pod("new", "team-a"))
    updated = fake_api.update("Pod", pod("keep", tier="gold"))
    fake_api.delete("Pod", "default/doomed")
    wait_until(lambda: sink.keys("Pod") == {"default/keep", "team-a/new"}, message="converged")
    keep = sink.get("Pod", "default/keep")
    assert keep is not None
    assert keep["metadata"]["labels"] == {"tier": "gold"}
    assert sink.count("delete", "Pod", "default/doomed") == 1
    wait_until(
        lambda: reflector.last_sync_resource_version == str(fake_api.resource_version),
        message="version follows the events",
    )
    assert int(updated["metadata"]["resourceVersion"]) < fake_api.resource_version
    assert reflector.stats.events["ADDED"] == 1
    assert reflector.stats.events["MODIFIED"] == 1
    assert reflector.stats.events["DELETED"] == 1
    assert reflector.object_count == 2


def test_bookmark_advances_the_resource_version_of_the_next_watch(
    fake_api: FakeApiServer, start_reflector: StartReflector
) -> None:
    fake_api.add("Node", {"metadata": {"name": "n1"}})
    reflector, _ = start_reflector(NODE)
    synced_and_watching(fake_api, reflector, NODES)
    list_rv = reflector.last_sync_resource_version

    for i in range(3):  # other kinds move the cluster's version on; nodes see nothing
        fake_api.add("Pod", pod(f"p{i}"))
    bookmark_rv = str(fake_api.bookmark())
    assert bookmark_rv != list_rv
    wait_until(
        lambda: reflector.last_sync_resource_version == bookmark_rv, message="bookmark applied"
    )
    assert reflector.stats.events["BOOKMARK"] == 1

    fake_api.drop_watches()
    wait_until(lambda: len(watches(fake_api, NODES)) >= 2, message="re-watch")
    first, second = watches(fake_api, NODES)[:2]
    assert first.param("resourceVersion") == list_rv
    assert second.param("resourceVersion") == bookmark_rv
    assert len(lists(fake_api, NODES)) == 1  # no relist


@pytest.mark.parametrize("mode", ["http", "event"])
def test_relist_after_410_reconciles_what_changed_while_disconnected(
    fake_api: FakeApiServer, start_reflector: StartReflector, mode: str
) -> None:
    for i in range(8):
        fake_api.add("Pod", pod(f"p{i}"))
    reflector, sink = start_reflector(POD)
    synced_and_watching(fake_api, reflector)

    # Disconnect the reflector and keep it out while the cluster changes and compacts.
    fake_api.fail_next(1_000_000, 500, watch=True)
    fake_api.drop_watches()
    fake_api.delete("Pod", "default/p1")
    fake_api.delete("Pod", "default/p7")
    fake_api.update("Pod", pod("p2", changed="yes"))
    fake_api.add("Pod", pod("p9"))
    fake_api.compact()
    fake_api.set_expired_mode("http" if mode == "http" else "event")
    lists_before = len(lists(fake_api))
    fake_api.fail_next(0)

    wait_until(lambda: sink.keys("Pod") == fake_api.keys("Pod"), message="sink converged")
    p2 = sink.get("Pod", "default/p2")
    assert p2 is not None
    assert p2["metadata"]["labels"] == {"changed": "yes"}
    assert sink.count("delete", "Pod", "default/p1") == 1
    assert sink.count("delete", "Pod", "default/p7") == 1
    # Unchanged objects are not offered again; changed and new ones once each.
    assert sink.count("upsert", "Pod", "default/p0") == 1
    assert sink.count("upsert", "Pod", "default/p2") == 2
    assert sink.count("upsert", "Pod", "default/p9") == 1
    assert reflector.stats.events["LIST_DELETED"] == 2
    assert reflector.stats.relists == 1
    assert reflector.stats.watch_restarts["expired"] == 1
    relist = lists(fake_api)[lists_before:]
    assert relist and relist[0].param("continue") is None
    wait_until(lambda: sink.synced_count["Pod"] == 2, message="relist reported synced")
    # Watching again from the relist's version.
    fake_api.add("Pod", pod("after"))
    wait_until(lambda: "default/after" in sink.keys("Pod"), message="watching after relist")


def test_an_expired_watch_is_relisted_at_once_not_after_the_backoff(
    fake_api: FakeApiServer, start_reflector: StartReflector
) -> None:
    """A restarted API server expires every old resourceVersion; the server has answered,
    so waiting out a backoff grown during its outage would only delay the catch-up."""
    reflector, sink = start_reflector(POD, backoff_initial=60.0, backoff_cap=60.0)
    synced_and_watching(fake_api, reflector)
    fake_api.add("Pod", pod("while-expiring"))
    fake_api.compact()
    fake_api.watch_error(410, "too old resource version")
    wait_until(lambda: len(lists(fake_api)) == 2, message="relisted without the 60 s backoff")
    wait_until(lambda: "default/while-expiring" in sink.keys("Pod"), message="caught up")
    assert reflector.stats.relists == 1


def test_a_server_nobody_answers_for_is_retried_on_the_short_backoff(tmp_path: Path) -> None:
    """Connections refused (an API server restarting) are retried within seconds, whatever
    the backoff for failures of a server that answers has grown to."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        dead = probe.getsockname()[1]
    client = build_api_client(
        str(write_kubeconfig(tmp_path / "dead", f"http://127.0.0.1:{dead}", token="t"))
    )
    options = replace(FAST, backoff_initial=60.0, backoff_cap=60.0, unreachable_backoff_cap=0.02)
    reflector = Reflector(POD, client, RecordingSink(), options=options)
    attempts: list[int] = []
    opened = reflector._open

    def counting(*args: Any, **kwargs: Any) -> Any:
        attempts.append(1)
        return opened(*args, **kwargs)

    reflector._open = counting  # type: ignore[method-assign]
    reflector.start()
    try:
        wait_until(lambda: len(attempts) >= 3, message="three attempts, not one per minute")
        assert "list failed" in reflector.status().reason
    finally:
        reflector.stop()
        client.close()


@pytest.mark.parametrize("expirations", [1, 2])
def test_expired_continue_token_restarts_the_list(
    fake_api: FakeApiServer, start_reflector: StartReflector, expirations: int
) -> None:
    for i in range(12):
        fake_api.add("Pod", pod(f"p{i:02}"))
    fake_api.fail_next(expirations, 410, with_continue=True)
    reflector, sink = start_reflector(POD)
    assert reflector.wait_for_sync(5)
    assert len(sink.keys("Pod")) == 12
    assert sink.synced_count["Pod"] == 1
    requests = lists(fake_api)
    statuses = [(r.param("limit"), bool(r.param("continue")), r.status) for r in requests]
    if expirations == 1:
        # page 1, page 2 expired; then a fresh paginated list of three pages.
        assert statuses == [
            ("5", False, 200),
            ("5", True, 410),
            ("5", False, 200),
            ("5", True, 200),
            ("5", True, 200),
        ]
    else:
        # Expired twice: one unpaginated list, which cannot expire.
        assert statuses[-1] == (None, False, 200)
        assert [s[2] for s in statuses].count(410) == 2
    # Each object was handed over once: the repeated pages had unchanged versions.
    assert sink.count("upsert", "Pod") == 12


def test_reconnects_after_an_abrupt_drop_without_relisting(
    fake_api: FakeApiServer, start_reflector: StartReflector
) -> None:
    reflector, sink = start_reflector(POD)
    synced_and_watching(fake_api, reflector)
    fake_api.add("Pod", pod("before-drop"))
    wait_until(lambda: "default/before-drop" in sink.keys("Pod"), message="event")
    rv_at_drop = reflector.last_sync_resource_version

    fake_api.drop_watches()
    fake_api.add("Pod", pod("after-drop"))
    wait_until(lambda: "default/after-drop" in sink.keys("Pod"), message="event after drop")
    assert reflector.stats.watch_restarts["dropped"] == 1
    assert len(lists(fake_api)) == 1
    assert watches(fake_api)[1].param("resourceVersion") == rv_at_drop


def test_server_errors_are_retried_with_backoff(
    fake_api: FakeApiServer, start_reflector: StartReflector
) -> None:
    reflector, sink = start_reflector(
        POD, backoff_initial=0.05, backoff_cap=0.4, backoff_jitter=0.0
    )
    synced_and_watching(fake_api, reflector)
    fake_api.fail_next(1_000_000, 500, watch=True)
    fake_api.drop_watches()
    wait_until(lambda: len(watches(fake_api)) >= 3, message="retries started")
    before = len(watches(fake_api))
    time.sleep(1.0)  # the window in which requests are counted (not timed)
    during = len(watches(fake_api)) - before
    # 0.05, 0.1, 0.2, 0.4, 0.4 ... at most a handful; no backoff would be hundreds.
    assert 1 <= during < 20
    assert reflector.stats.watch_restarts["http_error"] >= 3
    assert "HTTP 500" in reflector.status().reason

    fake_api.fail_next(0)
    fake_api.add("Pod", pod("recovered"))
    wait_until(lambda: "default/recovered" in sink.keys("Pod"), timeout=5, message="recovery")
    assert len(lists(fake_api)) == 1


def test_in_stream_error_event_rewatches_from_the_same_version(
    fake_api: FakeApiServer, start_reflector: StartReflector
) -> None:
    reflector, _ = start_reflector(POD)
    synced_and_watching(fake_api, reflector)
    rv = reflector.last_sync_resource_version
    fake_api.watch_error(500, "etcd leader changed")
    wait_until(lambda: len(watches(fake_api)) >= 2, message="re-watch")
    assert reflector.stats.watch_restarts["error_event"] == 1
    assert watches(fake_api)[1].param("resourceVersion") == rv
    assert len(lists(fake_api)) == 1


def test_watch_is_renewed_when_the_server_times_it_out(
    fake_api: FakeApiServer, start_reflector: StartReflector
) -> None:
    reflector, sink = start_reflector(POD, min_watch_timeout=1)
    synced_and_watching(fake_api, reflector)
    fake_api.add("Pod", pod("during-first-watch"))
    wait_until(lambda: len(watches(fake_api)) >= 2, timeout=5, message="renewed watch")
    first, second = watches(fake_api)[:2]
    assert first.param("timeoutSeconds") in ("1", "2")
    assert second.param("timeoutSeconds") in ("1", "2")
    assert int(second.param("resourceVersion") or 0) > int(first.param("resourceVersion") or 0)
    assert reflector.stats.watch_restarts["closed"] >= 1
    assert len(lists(fake_api)) == 1
    assert "default/during-first-watch" in sink.keys("Pod")


def test_a_watch_silent_past_the_stall_bound_is_a_stall_relisted_and_stale_meanwhile(
    fake_api: FakeApiServer, start_reflector: StartReflector
) -> None:
    reflector, _ = start_reflector(POD, watch_read_timeout=0.3)
    synced_and_watching(fake_api, reflector)
    wait_until(lambda: reflector.stats.stalls >= 1, message="stall")
    assert reflector.stats.watch_restarts["read_timeout"] >= 1
    wait_until(lambda: len(lists(fake_api)) >= 2, message="relist")
    wait_until(lambda: len(watches(fake_api)) >= 2, message="re-watch")


def test_a_stalled_reflector_is_stale_until_its_relist_is_applied() -> None:
    reflector = Reflector(POD, object(), RecordingSink(), options=FAST)
    reflector._synced.set()
    reflector.stats.last_event_at = 100.0
    assert reflector.stale(now=100.0 + FAST.watch_read_timeout) == ""
    assert reflector.stale(now=101.0 + FAST.watch_read_timeout).startswith("no event or bookmark")
    assert reflector.heard_since(99.0) and not reflector.heard_since(100.0)
    reflector._stalled = True
    assert reflector.stale(now=100.0) == "its watch stalled; relisting"
    assert not reflector.heard_since(99.0)


@pytest.mark.parametrize(
    ("min_watch", "stall", "expected"),
    [(300.0, 90.0, (30, 60)), (300.0, 900.0, (300, 600)), (5.0, 90.0, (5, 10)), (1.0, 1.0, (1, 2))],
)
def test_every_watch_is_asked_to_end_before_the_stall_bound(
    min_watch: float, stall: float, expected: tuple[int, int]
) -> None:
    options = ReflectorOptions(min_watch_timeout=min_watch, watch_read_timeout=stall)
    low, high = options.watch_timeout_range()
    assert (low, high) == expected
    assert high < stall or stall < 3  # a server ending the watch is heard from in time


def test_missing_crd_is_reported_and_retried_until_installed(
    fake_api: FakeApiServer, start_reflector: StartReflector
) -> None:
    path = "/apis/scheduling.volcano.sh/v1beta1/queues"
    fake_api.set_crd_installed("scheduling.volcano.sh", "queues", False)
    reflector, sink = start_reflector(QUEUE)
    wait_until(lambda: len(lists(fake_api, path)) >= 2, message="list retried")
    status = reflector.status()
    assert status.phase is Phase.NOT_INSTALLED
    assert status.reason == "CRD queues.scheduling.volcano.sh/v1beta1 not installed"
    assert not reflector.has_synced()

    fake_api.set_crd_installed("scheduling.volcano.sh", "queues", True)
    fake_api.add("Queue", {"metadata": {"name": "research"}, "spec": {"weight": 2}})
    assert reflector.wait_for_sync(5)
    assert sink.keys("Queue") == {"research"}
    assert reflector.status().phase is Phase.WATCHING


def test_namespace_restriction_uses_the_namespaced_path(
    fake_api: FakeApiServer, start_reflector: StartReflector
) -> None:
    fake_api.add("Pod", pod("mine", "team-a"))
    fake_api.add("Pod", pod("theirs", "team-b"))
    reflector, sink = start_reflector(POD, namespace="team-a")
    path = "/api/v1/namespaces/team-a/pods"
    synced_and_watching(fake_api, reflector, path)
    fake_api.add("Pod", pod("mine-too", "team-a"))
    fake_api.add("Pod", pod("theirs-too", "team-b"))
    wait_until(lambda: "team-a/mine-too" in sink.keys("Pod"), message="namespaced event")
    assert sink.keys("Pod") == {"team-a/mine", "team-a/mine-too"}
    assert fake_api.requests(PODS) == []
    assert reflector.name == "pods in team-a"


def test_sink_failures_do_not_stop_the_reflector_and_are_retried_on_relist(
    fake_api: FakeApiServer, start_reflector: StartReflector
) -> None:
    class FlakySink(RecordingSink):
        def __init__(self) -> None:
            super().__init__()
            self.failures_left = 1

        def upsert(self, kind: str, obj: dict[str, Any]) -> None:
            if obj["metadata"]["name"] == "poison" and self.failures_left:
                self.failures_left -= 1
                raise ValueError("cannot convert")
            super().upsert(kind, obj)

    fake_api.add("Pod", pod("poison"))
    fake_api.add("Pod", pod("fine"))
    reflector, sink = start_reflector(POD, sink=FlakySink())
    synced_and_watching(fake_api, reflector)
    assert sink.keys("Pod") == {"default/fine"}
    assert reflector.stats.sink_errors == 1
    fake_api.add("Pod", pod("later"))
    wait_until(lambda: "default/later" in sink.keys("Pod"), message="still watching")

    # The refused object's version was not recorded, so a relist offers it again.
    fake_api.fail_next(1_000_000, 500, watch=True)
    fake_api.drop_watches()
    fake_api.add("Pod", pod("while-away"))
    fake_api.compact()
    fake_api.fail_next(0)
    wait_until(lambda: "default/poison" in sink.keys("Pod"), message="offered again")
    assert reflector.stats.relists == 1


def test_keeps_versions_not_objects_and_pauses_gc_only_while_listing(
    fake_api: FakeApiServer, start_reflector: StartReflector
) -> None:
    class GcProbe(RecordingSink):
        def __init__(self) -> None:
            super().__init__()
            self.gc_enabled: dict[str, bool] = {}

        def upsert(self, kind: str, obj: dict[str, Any]) -> None:
            self.gc_enabled[obj["metadata"]["name"]] = gc.isenabled()
            super().upsert(kind, obj)

    assert gc.isenabled()
    for i in range(12):
        fake_api.add("Pod", pod(f"p{i}"))
    sink = GcProbe()
    reflector, _ = start_reflector(POD, sink=sink)
    synced_and_watching(fake_api, reflector)
    fake_api.add("Pod", pod("watched"))
    wait_until(lambda: "default/watched" in sink.keys("Pod"), message="event")
    assert not any(sink.gc_enabled[f"p{i}"] for i in range(12))
    assert sink.gc_enabled["watched"]
    assert gc.isenabled()

    obj = sink.get("Pod", "default/p3")
    assert obj is not None
    holders = [
        r
        for r in gc.get_referrers(obj)
        if r is not sink.objects["Pod"] and not isinstance(r, types.FrameType)
    ]
    assert holders == []
    assert reflector.object_count == 13


def test_logs_initial_sync_progress(
    fake_api: FakeApiServer, start_reflector: StartReflector, caplog: pytest.LogCaptureFixture
) -> None:
    for i in range(11):
        fake_api.add("Pod", pod(f"p{i}"))
    with caplog.at_level(logging.INFO, logger="scheduler_core.cache.reflector"):
        reflector, _ = start_reflector(POD)
        assert reflector.wait_for_sync(5)
    messages = [r.getMessage() for r in caplog.records]
    assert "pods: listed 5 objects so far (1 pages)" in messages
    assert "pods: listed 10 objects so far (2 pages)" in messages
    assert any(m.startswith("pods: synced 11 objects at resourceVersion") for m in messages)


def test_stop_interrupts_a_watch_and_a_backoff(
    fake_api: FakeApiServer, start_reflector: StartReflector
) -> None:
    watching, _ = start_reflector(POD)
    synced_and_watching(fake_api, watching)
    watching.stop(timeout=5)
    assert not watching.running
    assert watching.status().phase is Phase.STOPPED
    wait_until(lambda: fake_api.open_watches == 0, message="watch closed by stop")

    fake_api.fail_next(1_000_000, 503, path=NODES)
    backing_off, _ = start_reflector(NODE, backoff_initial=30, backoff_cap=30)
    wait_until(lambda: len(lists(fake_api, NODES)) >= 1, message="first failure")
    backing_off.stop(timeout=5)
    assert not backing_off.running


def test_backoff_grows_caps_and_resets_after_quiet() -> None:
    class FixedRandom:
        def random(self) -> float:
            return 0.5

    backoff = Backoff(0.8, 30.0, 2.0, 1.0, reset_after=3600, rng=FixedRandom())  # type: ignore[arg-type]
    delays = [backoff.next_delay() for _ in range(8)]
    # base 0.8, 1.6, ... capped at 30; jitter adds base * 1.0 * 0.5.
    assert delays[:3] == pytest.approx([1.2, 2.4, 4.8])
    assert delays[-1] == pytest.approx(45.0)
    quick_reset = Backoff(0.8, 30.0, 2.0, 0.0, reset_after=0.0)
    quick_reset.next_delay()
    quick_reset.next_delay()
    time.sleep(0.01)
    assert quick_reset.next_delay() == pytest.approx(0.8)
