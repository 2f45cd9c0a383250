"""Replay every request kube-scheduler v1.36 sent (tests/app/wire_fixtures) through real HTTP
against the real engine, with the cluster changing between requests as the captures'
``_cluster-observations.txt`` record it (binds, preemption deletions).

The capturing extender passed everything through; here the answers must carry the engine's
meaning: low pods pass filter while their queue has room, the first preemption takes exactly
one low-priority victim per node, the 2-CPU preemption takes exactly the two low pods of its
node, and every answer has kube-scheduler's shape (PascalCase, nulls, the mode it was asked in).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import orjson
import pytest

from app.backend.engine import BackendOptions, EngineBackend
from app.serving.guard import ListenerLimits
from app.serving.server import ServerSettings, create_app
from scheduler_core.cache.state import KINDS, ClusterState
from scheduler_core.conf import default_configuration
from tests.app.captured import FULL, NODE_CACHE, body, doc
from tests.app.live import serve

TIMEOUT = "run3-timeout-nodecache-true"  # the extender answered after 6 s
PRIORITY_CLASSES = [
    {"kind": "PriorityClass", "metadata": {"name": "low"}, "value": 10},
    {"kind": "PriorityClass", "metadata": {"name": "high"}, "value": 1000},
]


def real_nodes() -> list[dict[str, Any]]:
    """The two nodes exactly as kube-scheduler sent them in full-object mode."""
    nodes: list[dict[str, Any]] = doc(FULL, "001-filter.req.json")["Nodes"]["items"]
    return [{"kind": "Node", **n} for n in nodes]


class Replay:
    """A server over a static cluster the test changes between requests."""

    def __init__(self, run: str, client: httpx.Client, state: ClusterState) -> None:
        self.run, self.client, self.state = run, client, state
        self.pods: dict[str, dict[str, Any]] = {}

    def post(self, name: str) -> Any:
        verb = name.split("-", 1)[1].split(".")[0]
        request = doc(self.run, name)
        pod = request["Pod"]
        self.pods[pod["metadata"]["name"]] = pod
        response = self.client.post(
            f"/{verb}", content=body(self.run, name), headers={"Content-Type": "application/json"}
        )
        assert response.status_code == 200, response.text
        return response.json()

    def bind(self, pod_name: str, node: str) -> None:
        pod = orjson.loads(orjson.dumps(self.pods[pod_name]))
        pod["kind"] = "Pod"
        pod["spec"]["nodeName"] = node
        pod["status"] = {"phase": "Pending"}  # no kubelet in the capture: bound, not running
        self.state.upsert("Pod", pod)

    def delete(self, *pod_names: str) -> None:
        for name in pod_names:
            self.state.delete("Pod", f"harness/{name}")

    def uid(self, pod_name: str) -> str:
        return str(self.pods[pod_name]["metadata"]["uid"])


@contextmanager
def replay(run: str) -> Iterator[Replay]:
    state = ClusterState()
    for obj in (*real_nodes(), *PRIORITY_CLASSES):
        state.upsert(obj["kind"], obj)
    for kind in KINDS:
        state.synced(kind)
    backend = EngineBackend(
        state, default_configuration(), BackendOptions(scheduler_names=("default-scheduler",))
    )
    with (
        serve(create_app(backend, ServerSettings()), limits=ListenerLimits()) as url,
        httpx.Client(base_url=url) as c,
    ):
        yield Replay(run, c, state)


def assert_passes_node_cache(answer: dict[str, Any], nodes: list[str]) -> None:
    assert answer == {
        "Nodes": None,
        "NodeNames": nodes,
        "FailedNodes": {},
        "FailedAndUnresolvableNodes": {},
        "Error": "",
    }


def assert_passes_full(answer: dict[str, Any], nodes: list[str]) -> None:
    assert answer["NodeNames"] is None
    assert [n["metadata"]["name"] for n in answer["Nodes"]["items"]] == nodes
    assert answer["FailedNodes"] == {} and answer["FailedAndUnresolvableNodes"] == {}


def victims(answer: dict[str, Any]) -> dict[str, list[str]]:
    assert set(answer) == {"NodeNameToMetaVictims"}
    result = {}
    for node, meta in answer["NodeNameToMetaVictims"].items():
        assert set(meta) == {"Pods", "NumPDBViolations"} and meta["NumPDBViolations"] == 0
        result[node] = [p["UID"] for p in meta["Pods"]]
    return result


def scores_ok(answer: Any, nodes: list[str]) -> None:
    assert [h["Host"] for h in answer] == nodes
    assert all(set(h) == {"Host", "Score"} and 0 <= h["Score"] <= 10 for h in answer)


def low_pods_fill_the_nodes(r: Replay, passes: Callable[[dict[str, Any], list[str]], None]) -> None:
    for step, (pod, node) in enumerate(
        [("low-1", "node-a"), ("low-2", "node-b"), ("low-3", "node-b")]
    ):
        filter_file, prioritize_file = (
            f"{2 * step + 1:03d}-filter.req.json",
            f"{2 * step + 2:03d}-prioritize.req.json",
        )
        passes(r.post(filter_file), ["node-a", "node-b"])
        scores_ok(r.post(prioritize_file), ["node-a", "node-b"])
        r.bind(pod, node)
    passes(r.post("007-filter.req.json"), ["node-a"])
    r.bind("low-4", "node-a")


def test_node_cache_run_replays_with_engine_answers() -> None:
    with replay(NODE_CACHE) as r:
        low_pods_fill_the_nodes(r, assert_passes_node_cache)
        # high-1 (1 CPU): both nodes are full of low pods; one victim per node is enough
        first = victims(r.post("008-preempt.req.json"))
        assert set(first) == {"node-a", "node-b"}
        assert first["node-a"] in ([r.uid("low-1")], [r.uid("low-4")])
        assert first["node-b"] in ([r.uid("low-2")], [r.uid("low-3")])
        r.delete("low-1")  # kube-scheduler chose node-a and deleted low-1
        assert_passes_node_cache(r.post("009-filter.req.json"), ["node-a"])
        r.bind("high-1", "node-a")
        # high-2 (2 CPU): node-b holds two 1-CPU low pods, both must go; none of high-1
        second = victims(r.post("010-preempt.req.json"))
        assert set(second) == {"node-b"}
        assert sorted(second["node-b"]) == sorted([r.uid("low-2"), r.uid("low-3")])
        r.delete("low-2", "low-3")
        assert_passes_node_cache(r.post("011-filter.req.json"), ["node-b"])


def test_full_object_run_replays_with_engine_answers() -> None:
    with replay(FULL) as r:
        low_pods_fill_the_nodes(r, assert_passes_full)
        first = victims(r.post("008-preempt.req.json"))  # asked with full pods: meta answer
        assert set(first) == {"node-a", "node-b"}
        assert all(len(v) == 1 for v in first.values())
        r.delete("low-2")  # this time kube-scheduler chose node-b
        assert_passes_full(r.post("009-filter.req.json"), ["node-b"])
        r.bind("high-1", "node-b")
        second = victims(r.post("010-preempt.req.json"))
        assert sorted(second["node-a"]) == sorted([r.uid("low-1"), r.uid("low-4")])
        r.delete("low-1", "low-4")
        assert_passes_full(r.post("011-filter.req.json"), ["node-a"])


@pytest.mark.parametrize("name", [f"00{i}-filter.req.json" for i in range(1, 5)])
def test_timeout_run_retries_are_answered_promptly(name: str) -> None:
    with replay(TIMEOUT) as r:
        nodes = doc(TIMEOUT, name)["NodeNames"]
        assert_passes_node_cache(r.post(name), nodes)


def test_a_low_pod_beyond_the_queue_share_is_refused_with_a_reason() -> None:
    with replay(NODE_CACHE) as r:
        low_pods_fill_the_nodes(r, assert_passes_node_cache)
        answer = r.post("009-filter.req.json")  # high-1 before any victim is gone
        assert answer["NodeNames"] == []
        assert set(answer["FailedNodes"]) == {"node-a"}
        reason = answer["FailedNodes"]["node-a"]
        assert "queue default" in reason and "harness/podgroup-" in reason
