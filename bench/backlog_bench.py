"""In-process rows: one reclaim-loop cycle over a standing backlog of waiting pods.

A busy cluster keeps pods waiting for hours: every queue holds its deserved share and has
more demand than that, so no queue is overused and nothing may be evicted. The loop still
runs a cycle each second once kube-scheduler has found one of those pods unschedulable, and
each cycle orders every waiting job of every queue before it can tell that nothing is to be
done. That work, not the evictions, is what these rows measure: a cycle that decides nothing
must stay cheap however many pods wait.

The cluster: ``nodes`` nodes of 8 CPU, each full with one pod group of four 2-CPU pods; four
queues of equal weight, each running a quarter of the nodes and with ``waiting`` plain 1-CPU
pods between them (each its own job, as a plain pod is), of mixed priorities and creation
times, all marked unschedulable by kube-scheduler.
"""

from __future__ import annotations

import gc
import time
from dataclasses import dataclass
from functools import partial
from typing import Any

from bench import Budget, Measurement, measured_or_failed, rss_mib, sample
from bench.cycle_bench import node_object as cycle_node
from scheduler_core.cache.list_pager import GC_PAUSE
from scheduler_core.cache.state import KINDS, ClusterState
from scheduler_core.conf import default_configuration
from scheduler_core.controller.decision import decide, live_configuration
from scheduler_core.controller.snapshot import loop_snapshot
from scheduler_core.framework.memo import SessionMemos


@dataclass(frozen=True)
class BacklogScale:
    nodes: int
    waiting: int
    #: p50 milliseconds of one cycle
    target_ms: float


SCALES: dict[str, BacklogScale] = {
    "reclaim-backlog-1000": BacklogScale(1_000, 1_000, 150.0),
    "reclaim-backlog-5000": BacklogScale(5_000, 10_000, 1_000.0),
}

BENCHES: dict[str, str] = {
    name: f"one reclaim-loop cycle (snapshot + decide), {s.nodes:,} full nodes, "
    f"{s.waiting:,} waiting plain pods in 4 queues at their deserved share"
    for name, s in SCALES.items()
}

QUEUES = 4
NODE_CPU = 8
RUNNING_PER_NODE = 4
NAMESPACE = "backlog"
SCHEDULER = "queue-scheduler"
CREATED = "2026-11-28T00:00:00Z"
QUEUE_ANNOTATION = "scheduling.volcano.sh/queue-name"
GROUP_ANNOTATION = "scheduling.k8s.io/group-name"


def queue_name(index: int) -> str:
    return f"q{index % QUEUES}"


def queue_object(index: int) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": {
            "name": queue_name(index),
            "uid": f"uid-queue-{index}",
            "creationTimestamp": CREATED,
        },
        "spec": {"weight": 1, "reclaimable": True},
        "status": {"state": "Open"},
    }


def node_object(index: int) -> dict[str, Any]:
    return cycle_node(f"n{index:05d}", str(NODE_CPU))


def podgroup_object(node: int) -> dict[str, Any]:
    """The running group that fills node ``node``; its queue by node, round robin."""
    name = f"run-{node:05d}"
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {
            "name": name,
            "namespace": NAMESPACE,
            "uid": f"uid-pg-{name}",
            "creationTimestamp": CREATED,
        },
        "spec": {"minMember": 1, "queue": queue_name(node)},
        "status": {"phase": "Running", "running": RUNNING_PER_NODE},
    }


def _container(cpu: int) -> dict[str, Any]:
    return {
        "name": "main",
        "image": "registry.k8s.io/pause:3.10",
        "resources": {"requests": {"cpu": str(cpu), "memory": f"{cpu}Gi"}},
    }


def running_pod(node: int, slot: int) -> dict[str, Any]:
    name = f"run-{node:05d}-{slot}"
    return {
        "metadata": {
            "name": name,
            "namespace": NAMESPACE,
            "uid": f"uid-{name}",
            "resourceVersion": "1",
            "creationTimestamp": CREATED,
            "annotations": {GROUP_ANNOTATION: f"run-{node:05d}"},
        },
        "spec": {
            "schedulerName": SCHEDULER,
            "nodeName": f"n{node:05d}",
            "priority": 0,
            "containers": [_container(NODE_CPU // RUNNING_PER_NODE)],
        },
        "status": {"phase": "Running", "startTime": CREATED},
    }


def waiting_pod(index: int) -> dict[str, Any]:
    """A plain pod kube-scheduler found no room for: its own job in queue ``index % 4``,
    priority 0 or 10 and one of 60 creation seconds, so every job-order rule has work."""
    name = f"wait-{index:05d}"
    return {
        "metadata": {
            "name": name,
            "namespace": NAMESPACE,
            "uid": f"uid-{name}",
            "resourceVersion": "1",
            "creationTimestamp": f"2026-11-28T01:00:{index % 60:02d}Z",
            "annotations": {QUEUE_ANNOTATION: queue_name(index)},
        },
        "spec": {
            "schedulerName": SCHEDULER,
            "priority": 10 if index % 3 == 0 else 0,
            "containers": [_container(1)],
        },
        "status": {
            "phase": "Pending",
            "conditions": [
                {
                    "type": "PodScheduled",
                    "status": "False",
                    "reason": "Unschedulable",
                    "message": f"0/{NODE_CPU} nodes are available: Insufficient cpu.",
                }
            ],
        },
    }


def build(nodes: int, waiting: int) -> ClusterState:
    state = ClusterState()
    state.upsert(
        "Namespace",
        {"metadata": {"name": NAMESPACE, "labels": {"kubernetes.io/metadata.name": NAMESPACE}}},
    )
    for q in range(QUEUES):
        state.upsert("Queue", queue_object(q))
    for n in range(nodes):
        state.upsert("Node", node_object(n))
        state.upsert("PodGroup", podgroup_object(n))
        for slot in range(RUNNING_PER_NODE):
            state.upsert("Pod", running_pod(n, slot))
    for i in range(waiting):
        state.upsert("Pod", waiting_pod(i))
    for kind in KINDS:
        state.synced(kind)
    return state


def bench_backlog(name: str, budget: Budget) -> Measurement:
    scale = SCALES[name]
    started = time.perf_counter()
    state = build(scale.nodes, scale.waiting)
    build_seconds = time.perf_counter() - started
    # As the service does once the cluster is loaded (``app/backend/engine.py``): the
    # synced cluster moves to the collector's permanent generation, so a full collection
    # does not walk its million objects in the middle of a cycle.
    gc.collect()
    gc.freeze()
    conf = live_configuration(default_configuration())
    memos = SessionMemos()  # the loop's own, kept from one cycle to the next
    parts: dict[str, Any] = {}

    def call(_: int) -> None:
        # As the loop runs a cycle (``ReclaimLoop.run_once``): the collector paused from
        # the copy until the copy is dropped.
        with GC_PAUSE.paused():
            began = time.perf_counter()
            snapshot = loop_snapshot(state)
            copied = time.perf_counter()
            decision = decide(snapshot, conf, memos=memos)
            del snapshot
        parts["snapshot_ms"] = round((copied - began) * 1e3, 1)
        for action, ms in decision.latency_ms.items():
            parts[f"{action}_ms"] = round(ms, 1)
        parts["evictions"] = len(decision.evictions)

    try:
        samples = sample(call, budget)
    finally:
        gc.unfreeze()
    return Measurement(
        name,
        BENCHES[name],
        samples=samples,
        target=scale.target_ms,
        target_stat="p50",
        extra={**parts, "build_s": round(build_seconds, 1)},
        rss_mib=rss_mib(),
    )


def run(selected: set[str], budgets: dict[str, Budget]) -> list[Measurement]:
    return [
        measured_or_failed(name, BENCHES[name], partial(bench_backlog, name, budgets[name]))
        for name in SCALES
        if name in selected
    ]
