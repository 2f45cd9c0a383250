"""Choosing the network domain of a topology gang: the trial the first member's filter runs
(every later member's filter reuses the kept choice).

Each row has a cluster of its own: nodes of 16 CPU in a 3-tier tree from label levels
(8 nodes a leaf, 8 leaves a block, 8 blocks a spine), each node carrying a background pod of
0 to 12 CPU, so that leaves hold between none and all of the gang; and one pending gang of
16 pods of 8 CPU asking for one domain of tier ≤ 2 (hard). The session is opened once; the
row times ``choose_domain`` alone (the first, cold, call is reported beside it).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any

from bench import Budget, Measurement, rss_mib, sample
from scheduler_core.accounting.keeper import QueueAccounting
from scheduler_core.api.job import JobInfo
from scheduler_core.api.topology import NetworkTopologyRequest, TopologyMode, build_from_labels
from scheduler_core.cache.builder import build_snapshot
from scheduler_core.cache.objects import collect
from scheduler_core.cache.state import ClusterState
from scheduler_core.conf import default_configuration
from scheduler_core.engine import open_session
from scheduler_core.extender.filter_verb import filter_pod
from scheduler_core.framework.topology_fit import choose_domain

#: Nodes per row.
SCALES: dict[str, int] = {"topology-choose-1000": 1_000, "topology-choose-5000": 5_000}
FILTER_ROW = "topology-filter-5000"

BENCHES: dict[str, str] = {
    **{
        name: f"choose_domain for a 16-pod gang (hard, tier ≤ 2), {nodes:,} nodes, 3 tiers, "
        "8 nodes a leaf"
        for name, nodes in SCALES.items()
    },
    FILTER_ROW: "filter_pod of a topology gang member once its domain is kept, 5,000 names "
    "(extra: a plain gang member's p50 on the same cluster, and the ratio)",
}

#: Milliseconds, p50, at 5,000 nodes; the 1,000-node row is informative.
TARGET_MS = 20.0
LEVELS = ("spine", "block", "leaf")
GANG = 16


def _objects(nodes: int) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for i in range(nodes):
        name = f"node-{i:05d}"
        labels = {"spine": f"s{i // 512}", "block": f"b{i // 64}", "leaf": f"l{i // 8}"}
        out.append(
            {
                "kind": "Node",
                "metadata": {"name": name, "labels": labels},
                "spec": {},
                "status": {
                    "allocatable": {"cpu": "16", "memory": "64Gi", "pods": "110"},
                    "conditions": [{"type": "Ready", "status": "True"}],
                },
            }
        )
        busy = (i * 7919) % 13
        if busy:
            out.append(_pod(f"bg-{i}", f"{busy}", name, ""))
    out.append(
        {
            "kind": "PodGroup",
            "metadata": {"name": "gang", "namespace": "bench"},
            "spec": {"minMember": GANG, "queue": "default"},
            "status": {"phase": "Inqueue"},
        }
    )
    out += [_pod(f"gang-{i}", "8", "", "gang") for i in range(GANG)]
    return out


def _pod(name: str, cpu: str, node: str, group: str) -> dict[str, Any]:
    annotations = {"scheduling.k8s.io/group-name": group} if group else {}
    spec: dict[str, Any] = {
        "schedulerName": "queue-scheduler",
        "containers": [{"name": "c", "resources": {"requests": {"cpu": cpu, "memory": "1Gi"}}}],
    }
    if node:
        spec["nodeName"] = node
    return {
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "bench", "uid": name, "annotations": annotations},
        "spec": spec,
        "status": {"phase": "Running" if node else "Pending"},
    }


def bench_choose(name: str, nodes: int, budget: Budget) -> Measurement:
    snapshot = build_snapshot(collect(_objects(nodes)))
    snapshot.topology = build_from_labels(
        LEVELS, {n.name: n.labels for n in snapshot.nodes.values()}
    )
    job: JobInfo = snapshot.jobs["bench/gang"]
    job.network_topology = NetworkTopologyRequest(TopologyMode.HARD, highest_tier_allowed=2)
    ssn = open_session(snapshot, default_configuration(), clone=False)
    found: dict[str, Any] = {}

    def call(_: int) -> None:
        choice = choose_domain(ssn, job)
        assert choice is not None
        found["domain"] = choice.domain.name if choice.domain is not None else None
        found["tiers_tried"] = len(choice.trials) + (choice.domain is not None)

    # The first choice reads every node; later ones read the nodes whose tasks changed
    # (none here) and take the others' rows from the session's memos, as the first member
    # of the next gang does on the keeper's session.
    started = time.perf_counter()
    call(-1)
    cold_ms = round((time.perf_counter() - started) * 1e3, 2)
    samples = sample(call, budget)
    return Measurement(
        name,
        BENCHES[name],
        samples=samples,
        target=TARGET_MS if nodes >= 5_000 else None,
        target_stat="p50",
        extra={"nodes": nodes, "first_choice_ms": cold_ms, **found},
        rss_mib=rss_mib(),
    )


def bench_filter(budget: Budget) -> Measurement:
    """A member's filter after its gang's domain is kept, beside a plain gang's member on the
    same cluster: the choice must cost the later members nothing measurable."""
    objects = _objects(5_000)
    for pg in (o for o in objects if o["kind"] == "PodGroup"):
        pg["spec"]["networkTopology"] = {"mode": "hard", "highestTierAllowed": 2}
    objects.append(
        {
            "kind": "PodGroup",
            "metadata": {"name": "plain", "namespace": "bench"},
            "spec": {"minMember": GANG, "queue": "default"},
            "status": {"phase": "Inqueue"},
        }
    )
    objects += [_pod(f"plain-{i}", "8", "", "plain") for i in range(GANG)]
    state = ClusterState()
    conf = default_configuration()
    state.set_topology_levels(LEVELS)
    state.apply_objects(collect(objects))
    acct = QueueAccounting(state, conf)
    names = sorted(n for n in state.shared_snapshot().nodes)

    def member_filter(group: str) -> Callable[[int], None]:
        pod = next(o for o in objects if o["metadata"]["name"] == f"{group}-1")

        def call(_: int) -> None:
            with state.locked():
                acct.release(f"bench/{group}-1")
                filter_pod(acct, pod, names)

        return call

    topo = member_filter("gang")
    topo(-1)  # the first member's filter: the choice is made and kept
    plain = sample(member_filter("plain"), budget)
    samples = sample(topo, budget)
    plain_p50 = statistics.median(plain)
    return Measurement(
        FILTER_ROW,
        BENCHES[FILTER_ROW],
        samples=samples,
        extra={
            "plain_member_p50_ms": round(plain_p50, 3),
            "ratio_p50": round(statistics.median(samples) / plain_p50, 3),
            "domains_made": acct.domains.made,
        },
        rss_mib=rss_mib(),
    )


def run(selected: set[str], budgets: dict[str, Budget]) -> list[Measurement]:
    out = [
        bench_choose(name, nodes, budgets[name])
        for name, nodes in SCALES.items()
        if name in selected
    ]
    if FILTER_ROW in selected:
        out.append(bench_filter(budgets[FILTER_ROW]))
    return out
