"""In-process rows that replay kube-scheduler's loop: filter, prioritize, bind, pod after pod.

``make bench-e2e`` measures what users see, but it takes minutes and a control plane. These
rows take seconds and show the same thing from inside: the cluster of ``bench-e2e``'s scale
(N nodes of 8 CPU, 5N plain pods of 100m waiting in the queue-scheduler), and for each pod in
turn what kube-scheduler makes the extender do: ``filter`` over every node, ``prioritize``
over the nodes that passed, then the bind arriving through the watch (the pod upserted with
its node). Beside them runs what a leading replica runs in the same process, at its
production interval: the status write-back pass. Its work shares the state's lock and the
interpreter with the verbs, so a pass that holds the lock, or costs a second of CPU, shows as
a slower pod here, as it slows kube-scheduler there. One sample is one pod's three steps, wall
time; the row's judged value is the mean (what throughput sees: a stall is in the mean, not
the median). Before each pod the row waits kube-scheduler's own time for a pod at that scale,
so the pods are bound at the real pace and the background pass meets as many waiting pods.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from functools import partial
from typing import Any, cast

from prometheus_client import CollectorRegistry

from app.backend.engine import BackendOptions, EngineBackend
from bench import Budget, Measurement, measured_or_failed, rss_mib
from scheduler_core.cache.state import KINDS, ClusterState
from scheduler_core.conf import default_configuration
from scheduler_core.controller.runtime import Controller
from scheduler_core.controller.status_writer import StatusWriter
from scheduler_core.extender.holds import hold_reason


@dataclass(frozen=True)
class CycleScale:
    nodes: int
    pods: int
    #: kube-scheduler's own time per pod at this scale, alone (``bench-e2e``'s plain rate on
    #: the 2-core reference machine: 243 pods/s at 200 nodes, 90 at 1,000). The row waits
    #: this long before each pod, so the pods are bound at kube-scheduler's pace and the
    #: background work meets as many waiting pods as it does behind the real scheduler.
    pace_ms: float


#: The scales of ``make bench-e2e``'s small and large rounds.
SCALES: dict[str, CycleScale] = {
    "cycle-200": CycleScale(200, 1_000, 1e3 / 243),
    "cycle-1000": CycleScale(1_000, 5_000, 1e3 / 90),
}

BENCHES: dict[str, str] = {
    name: f"filter + prioritize + bind, pod after pod at kube-scheduler's pace, "
    f"{s.nodes:,} nodes x {s.pods:,} plain pods, the leader's status write-back beside it"
    for name, s in SCALES.items()
}

#: Mean milliseconds per pod. kube-scheduler v1.36 alone binds ~300 pods/s on the 2-core
#: reference machine at 200 nodes (3.3 ms a pod): to keep 0.9 of its no-op-extender rate, our
#: share of a pod's work must stay a small fraction of that.
TARGETS: dict[str, float] = {"cycle-200": 1.5, "cycle-1000": 2.5}

NAMESPACE = "bench"
SCHEDULER = "queue-scheduler"


def node_object(name: str, cpu: str = "8") -> dict[str, Any]:
    """A Ready node of ``cpu`` CPUs, 32 GiB and 110 pod slots, as the API server lists it."""
    allocatable = {"cpu": cpu, "memory": "32Gi", "pods": "110"}
    return {
        "metadata": {
            "name": name,
            "uid": f"uid-{name}",
            "resourceVersion": "1",
            "labels": {"kubernetes.io/hostname": name},
        },
        "spec": {},
        "status": {
            "allocatable": allocatable,
            "capacity": dict(allocatable),
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def pod_object(index: int) -> dict[str, Any]:
    """A pod as ``bench-e2e`` creates it: plain (no PodGroup), 100m and 64Mi."""
    return {
        "metadata": {
            "name": f"p-{index:05d}",
            "namespace": NAMESPACE,
            "uid": f"uid-p-{index:05d}",
            "resourceVersion": str(1_000 + index),
            "creationTimestamp": "2026-11-28T00:00:00Z",
        },
        "spec": {
            "schedulerName": SCHEDULER,
            "containers": [
                {
                    "name": "main",
                    "image": "registry.k8s.io/pause:3.10",
                    "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}},
                }
            ],
        },
        "status": {"phase": "Pending"},
    }


class _AcceptingRest:
    """The API server as the status writer sees it: every write accepted (a cluster of plain
    pods has no PodGroup or Queue to write; a write here costs what building it costs)."""

    def get(self, path: str) -> dict[str, Any]:
        return {"metadata": {"resourceVersion": "1"}, "status": {}}

    def put(self, path: str, body: dict[str, Any], resource: str) -> dict[str, Any]:
        return body

    def merge_patch(self, path: str, body: dict[str, Any], resource: str) -> dict[str, Any]:
        return body


class _Recorder:
    def record(self, *args: Any, **kwargs: Any) -> None:
        del args, kwargs


@dataclass
class _Leader:
    """A controller that leads for the whole row."""

    rest: _AcceptingRest = field(default_factory=_AcceptingRest)
    recorder: _Recorder = field(default_factory=_Recorder)
    registry: CollectorRegistry = field(default_factory=CollectorRegistry)

    def on_leading(self, start: Any = None, stop: Any = None) -> None:
        del start, stop

    def is_leader(self) -> bool:
        return True


@dataclass
class CycleFixture:
    state: ClusterState
    backend: EngineBackend
    names: list[str]
    pods: list[dict[str, Any]]


def build(nodes: int, pods: int, pod: Callable[[int], dict[str, Any]] = pod_object) -> CycleFixture:
    """The cluster of ``nodes`` nodes and ``pods`` waiting pods (``pod(index)`` each), synced
    into a cache, and the engine over it."""
    state = ClusterState()
    names = [f"n{i:04d}" for i in range(nodes)]
    for name in names:
        state.upsert("Node", node_object(name))
    state.upsert(
        "Namespace",
        {"metadata": {"name": NAMESPACE, "labels": {"kubernetes.io/metadata.name": NAMESPACE}}},
    )
    objects = [pod(i) for i in range(pods)]
    for obj in objects:
        state.upsert("Pod", obj)
    for kind in KINDS:
        state.synced(kind)
    backend = EngineBackend(state, default_configuration(), BackendOptions())
    backend.readiness()  # as in production: the synced cluster is frozen out of the GC
    return CycleFixture(state, backend, names, objects)


def status_writer(fixture: CycleFixture) -> StatusWriter:
    """The write-back as ``serve`` wires it on a leader, at its production interval."""
    state, backend = fixture.state, fixture.backend
    locked = cast(Callable[[], AbstractContextManager[Any]], state.locked)
    return StatusWriter(
        cast(Controller, _Leader()),
        state.shared_snapshot,
        lambda: backend.conf,
        locked,
        lambda: state.version,
        lambda ssn, job, task: hold_reason(backend.accounting, ssn, job, task),
        managed_schedulers=(SCHEDULER,),
        interval=1.0,
    )


def bench_cycle(name: str, budget: Budget) -> Measurement:
    scale = SCALES[name]
    pods = scale.pods
    fixture = build(scale.nodes, pods)
    backend, state, names = fixture.backend, fixture.state, fixture.names
    samples: list[float] = []
    outcomes = {"bound": 0, "no-node": 0}
    version = 10_000_000

    def one(index: int) -> float:
        nonlocal version
        pod = fixture.pods[index]
        started = time.perf_counter()
        passed = backend.filter(pod, names).passed
        if passed:
            scores = backend.prioritize(pod, passed)
            best = scores.names[int(scores.scores.argmax())]
            bound = copy.deepcopy(pod)
            bound["spec"]["nodeName"] = best
            version += 1
            bound["metadata"]["resourceVersion"] = str(version)
            state.upsert("Pod", bound)
            outcomes["bound"] += 1
        else:
            outcomes["no-node"] += 1
        return (time.perf_counter() - started) * 1e3

    writer = status_writer(fixture)
    writer.start()
    deadline = time.monotonic() + budget.seconds
    cpu = time.process_time()
    try:
        for index in range(min(pods, budget.warmup + budget.n)):
            time.sleep(scale.pace_ms / 1e3)  # kube-scheduler's own part of the pod
            took = one(index)
            if index >= budget.warmup:
                samples.append(took)
            if time.monotonic() > deadline:
                break
    finally:
        writer.stop()
    cpu = time.process_time() - cpu
    done = outcomes["bound"] + outcomes["no-node"]
    mean = sum(samples) / len(samples) if samples else None
    return Measurement(
        name,
        BENCHES[name],
        samples=samples,
        value=mean,
        target=TARGETS[name],
        target_stat="value",
        extra={
            # What kube-scheduler keeps of its own rate if only our part were added to it.
            "kept_of_plain": round(scale.pace_ms / (scale.pace_ms + mean), 2) if mean else None,
            # Every thread's CPU per pod, the write-back's included: on a machine the
            # extender shares with kube-scheduler and the API server, this is taken from them.
            "cpu_ms_per_pod": round(cpu * 1e3 / done, 2) if done else None,
            "outcomes": outcomes,
            "status_passes": writer.cycles,
        },
        rss_mib=rss_mib(),
    )


def run(selected: set[str], budgets: dict[str, Budget]) -> list[Measurement]:
    return [
        measured_or_failed(name, BENCHES[name], partial(bench_cycle, name, budgets[name]))
        for name in SCALES
        if name in selected
    ]
