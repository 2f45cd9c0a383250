"""InformerSet: every kind from one kubeconfig, readiness, namespaces, metrics."""

from __future__ import annotations

import re
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import prometheus_client
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from prometheus_client import CollectorRegistry, generate_latest

from scheduler_core.cache import informers as informers_module
from scheduler_core.cache.informers import InformerSet
from scheduler_core.cache.kinds import ALL_KINDS, HYPERNODES, NODE, POD, QUEUE
from scheduler_core.cache.native import NATIVE_KIND, NATIVE_PODGROUPS, native_pod_group_kind
from tests.cache.conftest import FAST, MakeInformers
from tests.fakeapi import FakeApiServer, RecordingSink, wait_until, write_kubeconfig


def seed_one_of_each(server: FakeApiServer, namespace: str = "default") -> None:
    server.add("Pod", {"metadata": {"name": "p", "namespace": namespace}})
    server.add("Node", {"metadata": {"name": "n"}})
    server.add("PriorityClass", {"metadata": {"name": "high"}, "value": 1000})
    server.add("PodDisruptionBudget", {"metadata": {"name": "pdb", "namespace": namespace}})
    server.add("Queue", {"metadata": {"name": "q"}, "spec": {"weight": 1}})
    server.add("PodGroup", {"metadata": {"name": "g", "namespace": namespace}})
    server.add("PersistentVolumeClaim", {"metadata": {"name": "c", "namespace": namespace}})
    server.add("PersistentVolume", {"metadata": {"name": "v"}})
    server.add("StorageClass", {"metadata": {"name": "fast"}})
    server.add("CSINode", {"metadata": {"name": "n"}})
    server.add("ResourceClaim", {"metadata": {"name": "gpu", "namespace": namespace}})
    server.add("ResourceClaimTemplate", {"metadata": {"name": "t", "namespace": namespace}})
    server.add(
        "ResourceSlice", {"metadata": {"name": "s"}, "spec": {"driver": "d", "nodeName": "n"}}
    )
    server.add("DeviceClass", {"metadata": {"name": "gpu.example.com"}})
    server.add("Namespace", {"metadata": {"name": namespace}})


def test_every_kind_syncs_through_the_kubeconfig(
    fake_api: FakeApiServer, make_informers: MakeInformers
) -> None:
    seed_one_of_each(fake_api)
    informers, sink = make_informers()
    assert informers.wait_for_sync(5)
    assert informers.readiness() == (True, "all 15 informers synced")
    expected = {
        "Pod": {"default/p"},
        "Node": {"n"},
        "PriorityClass": {"high"},
        "PodDisruptionBudget": {"default/pdb"},
        "Queue": {"q"},
        "PodGroup": {"default/g"},
        "PersistentVolumeClaim": {"default/c"},
        "PersistentVolume": {"v"},
        "StorageClass": {"fast"},
        "CSINode": {"n"},
        "ResourceClaim": {"default/gpu"},
        "ResourceClaimTemplate": {"default/t"},
        "ResourceSlice": {"s"},
        "DeviceClass": {"gpu.example.com"},
        "Namespace": {"default"},
    }
    assert {spec.kind: sink.keys(spec.kind) for spec in ALL_KINDS} == expected
    assert all(sink.synced_count[spec.kind] == 1 for spec in ALL_KINDS)
    paths = {r.path for r in fake_api.request_log if r.status == 200}
    assert paths == {
        "/api/v1/pods",
        "/api/v1/nodes",
        "/apis/scheduling.k8s.io/v1/priorityclasses",
        "/apis/policy/v1/poddisruptionbudgets",
        "/apis/scheduling.volcano.sh/v1beta1/queues",
        "/apis/scheduling.volcano.sh/v1beta1/podgroups",
        "/api/v1/persistentvolumeclaims",
        "/api/v1/persistentvolumes",
        "/apis/storage.k8s.io/v1/storageclasses",
        "/apis/storage.k8s.io/v1/csinodes",
        "/apis/resource.k8s.io/v1/resourceclaims",
        "/apis/resource.k8s.io/v1/resourceclaimtemplates",
        "/apis/resource.k8s.io/v1/resourceslices",
        "/apis/resource.k8s.io/v1/deviceclasses",
        "/api/v1/namespaces",
    }
    assert {r.user_agent for r in fake_api.request_log} == {"kube-queue-extender/informers"}
    fake_api.add("Queue", {"metadata": {"name": "q2"}, "spec": {"weight": 3}})
    wait_until(lambda: sink.keys("Queue") == {"q", "q2"}, message="queue event")


def test_not_ready_until_every_kind_synced_and_the_reason_names_them(
    fake_api: FakeApiServer, make_informers: MakeInformers
) -> None:
    for i in range(8):
        fake_api.add("Pod", {"metadata": {"name": f"p{i}", "namespace": "default"}})
    fake_api.set_crd_installed("scheduling.volcano.sh", "queues", False)
    # Pods get stuck after their first page; PDBs are forbidden.
    fake_api.fail_next(1_000_000, 500, path="/api/v1/pods", with_continue=True)
    fake_api.fail_next(1_000_000, 403, path="/apis/policy/v1/poddisruptionbudgets")
    informers, sink = make_informers()

    def reason() -> str:
        return informers.readiness()[1]

    wait_until(lambda: "queues (CRD" in reason() and "5 listed;" in reason(), message="reasons")
    ready, text = informers.readiness()
    assert not ready
    assert text.startswith("waiting for initial sync: ")
    assert "queues (CRD queues.scheduling.volcano.sh/v1beta1 not installed)" in text
    assert "pods (5 listed; list failed: HTTP 500" in text
    assert "poddisruptionbudgets (0 listed; list failed: HTTP 403 Forbidden" in text
    # Synced kinds are not named (a word of its own: "csinodes" may still be listing).
    assert not re.search(r"\bnodes\b", text)
    assert not informers.wait_for_sync(0.2)
    assert not informers.has_synced()

    fake_api.fail_next(0)
    fake_api.set_crd_installed("scheduling.volcano.sh", "queues", True)
    assert informers.wait_for_sync(5)
    assert informers.readiness()[0]
    assert len(sink.keys("Pod")) == 8


def test_readiness_before_start_and_after_stop(
    fake_api: FakeApiServer, make_informers: MakeInformers
) -> None:
    informers, _ = make_informers(start=False)
    assert informers.readiness() == (False, "informers not started")
    informers.start()
    assert informers.wait_for_sync(5)
    informers.stop()
    assert informers.readiness() == (False, "informers stopped")
    assert not any(r.running for r in informers.all_reflectors())
    wait_until(lambda: fake_api.open_watches == 0, message="watches closed")


def test_bad_credentials_are_the_reason(
    fake_api: FakeApiServer, make_informers: MakeInformers, tmp_path: Path
) -> None:
    wrong = write_kubeconfig(tmp_path / "wrong", fake_api.url, token="not-the-token")
    informers, _ = make_informers(kubeconfig=str(wrong))
    wait_until(lambda: "HTTP 401" in informers.readiness()[1], message="401 reported")
    assert not informers.readiness()[0]


def test_namespace_restriction(fake_api: FakeApiServer, make_informers: MakeInformers) -> None:
    for namespace in ("team-a", "team-b", "team-c"):
        fake_api.add("Pod", {"metadata": {"name": "p", "namespace": namespace}})
        fake_api.add("PodGroup", {"metadata": {"name": "g", "namespace": namespace}})
        fake_api.add("PodDisruptionBudget", {"metadata": {"name": "b", "namespace": namespace}})
    fake_api.add("Node", {"metadata": {"name": "n"}})
    slow_b = "/api/v1/namespaces/team-b/pods"
    fake_api.fail_next(1_000_000, 500, path=slow_b)
    informers, sink = make_informers(namespaces=["team-a", "team-b"])

    team_b_failing = "pods in team-b (0 listed; list failed: HTTP 500"
    wait_until(lambda: team_b_failing in informers.readiness()[1], message="team-b failing")
    wait_until(lambda: informers.reflectors["Pod"][0].has_synced(), message="team-a pods synced")
    # One namespace listed is not the kind synced.
    assert sink.synced_count["Pod"] == 0
    assert "pods in team-a" not in informers.readiness()[1]
    fake_api.fail_next(0)
    assert informers.wait_for_sync(5)
    assert sink.synced_count["Pod"] == 1

    assert sink.keys("Pod") == {"team-a/p", "team-b/p"}
    assert sink.keys("PodGroup") == {"team-a/g", "team-b/g"}
    assert sink.keys("PodDisruptionBudget") == {"team-a/b", "team-b/b"}
    assert sink.keys("Node") == {"n"}  # cluster-scoped kinds are not restricted
    listed_paths = {r.path for r in fake_api.requests(watch=False)}
    assert "/api/v1/pods" not in listed_paths
    assert "/api/v1/namespaces/team-a/pods" in listed_paths
    assert "/apis/scheduling.volcano.sh/v1beta1/namespaces/team-b/podgroups" in listed_paths
    assert "/apis/scheduling.volcano.sh/v1beta1/queues" in listed_paths

    fake_api.add("Pod", {"metadata": {"name": "q", "namespace": "team-b"}})
    fake_api.add("Pod", {"metadata": {"name": "q", "namespace": "team-c"}})
    fake_api.add("Pod", {"metadata": {"name": "q", "namespace": "team-a"}})
    wait_until(lambda: "team-a/q" in sink.keys("Pod") and "team-b/q" in sink.keys("Pod"))
    assert "team-c/q" not in sink.keys("Pod")


def test_metrics_on_the_callers_registry_only(
    fake_api: FakeApiServer, make_informers: MakeInformers
) -> None:
    for i in range(3):
        fake_api.add("Pod", {"metadata": {"name": f"p{i}", "namespace": "default"}})
    registry = CollectorRegistry()
    informers, sink = make_informers(registry=registry)
    assert informers.registry is registry
    assert informers.wait_for_sync(5)
    wait_until(lambda: fake_api.open_watches == len(ALL_KINDS), message="all watching")

    def sample(name: str, **labels: str) -> float | None:
        value: float | None = registry.get_sample_value(f"queue_extender_informer_{name}", labels)
        return value

    fake_api.add("Pod", {"metadata": {"name": "new", "namespace": "default"}})
    wait_until(lambda: sample("events_total", kind="Pod", type="added") == 1, message="added")
    assert sample("events_total", kind="Pod", type="listed") == 3
    assert sample("synced", kind="Queue") == 1
    assert sample("objects", kind="Pod") == 4
    duration = sample("sync_duration_seconds", kind="Pod")
    assert duration is not None and duration >= 0
    age = sample("last_event_age_seconds", kind="Pod")
    assert age is not None and age >= 0

    # Force a relist of pods: disconnected while history is compacted away.
    fake_api.fail_next(1_000_000, 500, watch=True, path="/api/v1/pods")
    fake_api.drop_watches()
    fake_api.delete("Pod", "default/p0")
    fake_api.compact()
    fake_api.fail_next(0)
    wait_until(lambda: sample("relists_total", kind="Pod") == 1, message="relist counted")
    wait_until(lambda: "default/p0" not in sink.keys("Pod"), message="deletion reconciled")
    assert sample("watch_restarts_total", kind="Pod", reason="expired") == 1
    assert (sample("watch_restarts_total", kind="Node", reason="dropped") or 0) >= 1
    assert sample("events_total", kind="Pod", type="list_deleted") == 1

    assert (
        prometheus_client.REGISTRY.get_sample_value(
            "queue_extender_informer_events_total", {"kind": "Pod", "type": "added"}
        )
        is None
    )
    text = generate_latest(registry).decode()
    assert "# TYPE queue_extender_informer_events_total counter" in text
    assert "# TYPE queue_extender_informer_last_event_age_seconds gauge" in text


def test_each_informer_set_gets_its_own_registry_by_default(
    fake_api: FakeApiServer, make_informers: MakeInformers
) -> None:
    first, _ = make_informers(start=False)
    second, _ = make_informers(start=False)
    assert first.registry is not second.registry
    assert first.registry is not prometheus_client.REGISTRY


def test_restricting_kinds_and_sharing_options(
    fake_api: FakeApiServer, make_informers: MakeInformers
) -> None:
    from scheduler_core.cache.kinds import NODE, QUEUE

    fake_api.set_crd_installed("scheduling.volcano.sh", "podgroups", False)
    informers, sink = make_informers(kinds=[NODE, QUEUE], options=replace(FAST, page_size=1))
    assert informers.wait_for_sync(5)  # podgroups are not watched, so they cannot block
    assert set(informers.reflectors) == {"Node", "Queue"}
    assert informers.readiness() == (True, "all 2 informers synced")
    assert all(r.options.page_size == 1 for r in informers.all_reflectors())
    assert sink.synced_count == {"Node": 1, "Queue": 1}


def test_a_stalled_watch_makes_the_cache_stale_unready_and_counted(
    fake_api: FakeApiServer, make_informers: MakeInformers
) -> None:
    seed_one_of_each(fake_api)
    registry = CollectorRegistry()
    informers, _ = make_informers(registry=registry)
    assert informers.wait_for_sync(10)
    assert informers.fresh() and informers.readiness()[0]
    started = time.monotonic()
    [pods] = informers.reflectors["Pod"]
    pods._stalled = True  # what the reflector sets when its watch stalls, until it relists
    ready, reason = informers.readiness()
    assert not ready and not informers.fresh()
    assert reason == (
        "cache stale, nothing decided until it catches up: pods (its watch stalled; relisting)"
    )
    assert registry.get_sample_value("queue_extender_informer_stale", {"kind": "Pod"}) == 1.0
    assert registry.get_sample_value("queue_extender_informer_stale", {"kind": "Node"}) == 0.0
    assert not informers.heard_since(started - 3600)
    pods._stalled = False
    assert informers.fresh() and informers.heard_since(started - 3600)
    assert not informers.heard_since(time.monotonic() + 1)


def test_an_optional_kind_the_server_serves_is_watched_and_part_of_readiness(
    fake_api: FakeApiServer, make_informers: MakeInformers
) -> None:
    fake_api.add("Node", {"metadata": {"name": "n"}})
    fake_api.add("HyperNode", {"metadata": {"name": "leaf-a"}, "spec": {"tier": 1}})
    informers, sink = make_informers(kinds=[NODE], optional_kinds=[HYPERNODES])
    assert informers.wait_for_sync(5)
    assert informers.readiness() == (True, "all 2 informers synced")
    assert sink.keys("HyperNode") == {"leaf-a"}
    fake_api.add("HyperNode", {"metadata": {"name": "leaf-b"}, "spec": {"tier": 1}})
    wait_until(lambda: sink.keys("HyperNode") == {"leaf-a", "leaf-b"}, message="hypernode")


def test_an_optional_kind_not_served_is_not_watched_and_holds_nothing(
    fake_api: FakeApiServer, make_informers: MakeInformers
) -> None:
    fake_api.set_crd_installed("topology.volcano.sh", "hypernodes", False)
    informers, _sink = make_informers(
        kinds=[NODE], optional_kinds=[HYPERNODES], discovery_interval=3600
    )
    assert informers.wait_for_sync(5)
    assert informers.readiness() == (True, "all 1 informers synced")
    assert "HyperNode" not in informers.reflectors
    paths = {r.path for r in fake_api.request_log}
    assert "/apis/topology.volcano.sh/v1alpha1/hypernodes" not in paths
    assert "/apis/topology.volcano.sh/v1alpha1" in paths


def test_an_optional_kind_installed_later_is_found_by_discovery_and_watched(
    fake_api: FakeApiServer, make_informers: MakeInformers
) -> None:
    fake_api.set_crd_installed("topology.volcano.sh", "hypernodes", False)
    informers, sink = make_informers(
        kinds=[NODE], optional_kinds=[HYPERNODES], discovery_interval=0.05
    )
    assert informers.wait_for_sync(5)
    fake_api.set_crd_installed("topology.volcano.sh", "hypernodes", True)
    fake_api.add("HyperNode", {"metadata": {"name": "leaf-a"}, "spec": {"tier": 1}})
    wait_until(lambda: sink.keys("HyperNode") == {"leaf-a"}, message="hypernode listed")
    wait_until(lambda: informers.readiness()[0], message="ready with the new kind")
    assert informers.readiness() == (True, "all 2 informers synced")


def test_an_optional_kind_whose_crd_is_deleted_holds_neither_readiness_nor_reclaim(
    fake_api: FakeApiServer, make_informers: MakeInformers
) -> None:
    fake_api.add("Node", {"metadata": {"name": "n"}})
    informers, _ = make_informers(kinds=[NODE], optional_kinds=[HYPERNODES])
    assert informers.wait_for_sync(5)
    started = time.monotonic()
    [hypernodes] = informers.reflectors["HyperNode"]
    fake_api.set_crd_installed("topology.volcano.sh", "hypernodes", False)
    fake_api.drop_watches()
    wait_until(
        lambda: hypernodes.status().phase.value == "not_installed", message="CRD seen deleted"
    )
    hypernodes.stats.last_event_at = started - 3600  # nothing heard since, long ago
    assert informers.readiness()[0]
    assert informers.heard_since(started - 60)


def test_discovery_that_fails_is_asked_again_and_the_kind_then_watched(
    fake_api: FakeApiServer, make_informers: MakeInformers
) -> None:
    fake_api.add("HyperNode", {"metadata": {"name": "leaf-a"}, "spec": {"tier": 1}})
    fake_api.fail_next(1, 500, path="/apis/topology.volcano.sh/v1alpha1")
    _informers, sink = make_informers(
        kinds=[NODE], optional_kinds=[HYPERNODES], discovery_interval=0.05
    )
    wait_until(lambda: sink.keys("HyperNode") == {"leaf-a"}, message="hypernode listed")
    statuses = [r.status for r in fake_api.requests("/apis/topology.volcano.sh/v1alpha1")]
    assert statuses[:2] == [500, 200]


def test_a_cluster_without_native_podgroups_is_watched_as_before(
    fake_api: FakeApiServer, make_informers: MakeInformers
) -> None:
    """Discovery asks of each version (404 here): no informer and no watch on a resource
    the cluster lacks, and readiness counts the same informers as before."""
    seed_one_of_each(fake_api)
    informers, _ = make_informers(optional_kinds=[NATIVE_PODGROUPS], discovery_interval=3600)
    assert informers.wait_for_sync(5)
    assert informers.readiness() == (True, "all 15 informers synced")
    asked = {r.path for r in fake_api.request_log if "scheduling.k8s.io" in r.path}
    assert asked == {
        "/apis/scheduling.k8s.io/v1beta1",
        "/apis/scheduling.k8s.io/v1alpha2",
        "/apis/scheduling.k8s.io/v1/priorityclasses",
    }


def test_a_discovered_namespaced_kind_gets_an_informer_per_namespace(
    fake_api: FakeApiServer, make_informers: MakeInformers
) -> None:
    fake_api.set_crd_installed("scheduling.k8s.io", "podgroups", True, version="v1alpha2")
    informers, _ = make_informers(
        kinds=[NODE], namespaces=["a", "b"], optional_kinds=[NATIVE_PODGROUPS]
    )
    native = native_pod_group_kind("v1alpha2")
    assert informers.kinds[-1] == native
    assert [(r.spec, r.namespace) for r in informers.reflectors[NATIVE_KIND]] == [
        (native, "a"),
        (native, "b"),
    ]
    assert informers.wait_for_sync(5)


class _Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def monotonic(self) -> float:
        return self.now


_STEPS = st.one_of(
    st.tuples(st.just("sync"), st.integers(0, 2)),
    st.tuples(st.just("hear"), st.integers(0, 2)),
    st.tuples(st.just("stall"), st.integers(0, 2)),
    st.tuples(st.just("relist"), st.integers(0, 2)),
    st.tuples(st.just("wait"), st.sampled_from([0.0, 0.0005, 0.001, 1.0, 29.0, 30.0, 31.0])),
)


@settings(max_examples=300, deadline=None, database=None)
@given(st.sampled_from([3, 3, 2, 0]), st.lists(_STEPS, max_size=30))
def test_stale_answers_as_asking_every_reflector_after_any_events(
    synced_at_start: int, steps: list[tuple[str, Any]]
) -> None:
    """The one-comparison answer of ``stale`` against every reflector's own, with the
    clock, syncs, events, stalls and relists in any order."""
    clock = _Clock()
    options = replace(FAST, watch_read_timeout=30.0)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(informers_module, "time", clock)
        informers = InformerSet(
            RecordingSink(), kinds=[NODE, POD, QUEUE], options=options, api_client=object()
        )
        flat = list(informers.all_reflectors())
        for reflector in flat[:synced_at_start]:  # (the usual case: all of them)
            reflector._synced.set()
            reflector.stats.last_event_at = clock.now
        for action, arg in steps:
            if action == "wait":
                clock.now += arg
            else:
                reflector = flat[arg]
                if action == "sync":
                    reflector._synced.set()
                if action in ("hear", "relist"):
                    reflector.stats.last_event_at = clock.now
                if action == "stall":
                    reflector._stalled = True
                if action == "relist":
                    reflector._stalled = False
            expected = [f"{r.name} ({why})" for r in flat if (why := r.stale(clock.now))]
            assert informers.stale() == expected
