"""nodeorder: kube-scheduler's scores on a small node set, checked against hand computation,
and the extender's 0..10 rescaling."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from scheduler_core.api.node import NodeInfo
from scheduler_core.api.resource import Resource
from scheduler_core.api.task import NodeSelectorRequirement, TaskInfo
from scheduler_core.extender.prioritize import extender_scores
from scheduler_core.framework.hooks import BATCH_NODE_ORDER, NODE_ORDER
from scheduler_core.plugins.nodeorder.scores import (
    PodRequests,
    balanced_scores,
    cpu_memory_requests,
    least_requested_scores,
    most_requested_scores,
    node_affinity_scores,
    normalize_reverse_scores,
)
from scheduler_core.plugins.util.scored_nodes import GivenNodes
from tests.builders import node, pod, session, task_of, tiers


def conf(**weights: int) -> str:
    if not weights:
        return tiers("nodeorder")
    args = ", ".join(f"{k}.weight: {w}" for k, w in weights.items())
    return f'actions: ""\ntiers:\n- plugins:\n  - name: nodeorder\n    arguments: {{{args}}}\n'


def cluster(task: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        node("n1", "4", "8Gi"),
        node("n2", "4", "8Gi"),
        node("n3", "2", "8Gi"),
        pod("busy2", node_name="n2", cpu="2", memory="2Gi"),
        pod("busy3", node_name="n3", cpu="2", memory="2Gi"),
        task,
    ]


def scores(conf_text: str, task: dict[str, Any] | None = None) -> dict[str, float]:
    ssn = session(cluster(task or pod("p", cpu="1", memory="2Gi")), conf_text)
    return ssn.node_scores(task_of(ssn, "ns/p"), list(ssn.nodes.values()))


def test_default_weights() -> None:
    # least: n1 cpu (4-1)/4 -> 75, mem (8-2)/8 -> 75 => 75; n2 cpu 1/4 -> 25, mem 4/8 -> 50 => 37
    #        n3 cpu 3 > 2 -> 0, mem 50 => 25
    # balanced: n1 .25/.25 -> 100; n2 .75/.5 -> 87; n3 min(1.5,1)/.5 -> std .25 -> 75
    # taint toleration: no taints anywhere -> 100 each
    assert scores(conf()) == {"n1": 275.0, "n2": 224.0, "n3": 200.0}


def test_nodeorder_scores_through_a_batch_hook_only() -> None:
    # per-node scores and taint toleration in one vectorised call; registering the per-node
    # hook as well would count them twice
    ssn = session(cluster(pod("p")), conf())
    assert "nodeorder" in ssn.hook_fns(BATCH_NODE_ORDER)
    assert "nodeorder" not in ssn.hook_fns(NODE_ORDER)


def test_three_balanced_resources_for_a_gpu_pod() -> None:
    # n4 has GPUs: fractions cpu (0+1)/4 = .25, memory 2/8 = .25, gpu (1+1)/4 = .5;
    # mean 1/3, std sqrt((2 * (1/12)^2 + (1/6)^2) / 3) = .1179 -> 88.
    # The GPU-less nodes balance cpu and memory only: 100.
    objs = [
        node("n1", "4", "8Gi"),
        node("n4", "4", "8Gi", extra={"nvidia.com/gpu": "4"}),
        pod("busy", node_name="n4", cpu=None, memory=None, extra={"nvidia.com/gpu": "1"}),
        pod("p", cpu="1", memory="2Gi", extra={"nvidia.com/gpu": "1"}),
    ]
    ssn = session(objs, conf(leastrequested=0, tainttoleration=0))
    got = ssn.node_scores(task_of(ssn, "ns/p"), list(ssn.nodes.values()))
    assert got == {"n1": 100.0, "n4": 88.0}


def test_most_requested_weight() -> None:
    # most: n1 25/25 => 25; n2 75/50 => 62; n3 cpu capped at capacity 100, mem 50 => 75
    got = scores(conf(leastrequested=0, mostrequested=2, balancedresource=0, tainttoleration=0))
    assert got == {"n1": 50.0, "n2": 124.0, "n3": 150.0}


def test_weights_multiply_each_score() -> None:
    got = scores(conf(leastrequested=3, balancedresource=0, tainttoleration=0))
    assert got == {"n1": 225.0, "n2": 111.0, "n3": 75.0}


def test_pod_without_requests_gets_kube_scheduler_defaults() -> None:
    # 100m / 200Mi: n1 cpu 3900/4000 -> 97, mem (8Gi-200Mi)/8Gi -> 97; balanced skips
    # best-effort pods (0)
    got = scores(conf(tainttoleration=0), pod("p", cpu=None, memory=None))
    assert got["n1"] == 97.0


@pytest.mark.parametrize(
    ("tolerations", "expected"),
    [
        ([], {"t1": 150.0, "t2": 0.0, "t3": 300.0}),
        # tolerating "b" leaves one intolerable taint on t1 and on t2
        (
            [{"key": "b", "operator": "Exists", "effect": "PreferNoSchedule"}],
            {"t1": 0.0, "t2": 0.0, "t3": 300.0},
        ),
    ],
)
def test_taint_toleration_counts_prefer_no_schedule_taints(
    tolerations: list[dict[str, str]], expected: dict[str, float]
) -> None:
    a = {"key": "a", "value": "", "effect": "PreferNoSchedule"}
    b = {"key": "b", "value": "", "effect": "PreferNoSchedule"}
    hard = {"key": "c", "value": "", "effect": "NoSchedule"}  # a predicate's business
    objs = [
        node("t1", taints=[a]),
        node("t2", taints=[a, b]),
        node("t3", taints=[hard]),
        pod("p", tolerations=tolerations),
    ]
    ssn = session(objs, conf(leastrequested=0, balancedresource=0, tainttoleration=3))
    got = ssn.node_scores(task_of(ssn, "ns/p"), list(ssn.nodes.values()))
    assert got == expected


@pytest.mark.parametrize(
    ("requested", "capacity", "least", "most"),
    [
        (0, 4000, 100, 0),
        (1000, 4000, 75, 25),
        (3999, 4000, 0, 99),
        (5000, 4000, 0, 100),
        (1, 0, 0, 0),
    ],
)
def test_resource_scorers(requested: int, capacity: int, least: int, most: int) -> None:
    req, cap = np.array([requested]), np.array([capacity])
    assert least_requested_scores(req, cap).tolist() == [least]
    assert most_requested_scores(req, cap).tolist() == [most]


def test_requested_amounts_are_truncated_to_whole_units() -> None:
    # kube-scheduler's amounts are int64: 0.5 + 1.0 requested of 3 is 1 of 3, least 66 (a
    # rounded 2 would give 33); past int64 the amounts stay exact Python ints
    small = NodeInfo.new("small", Resource(3.0, 3.0))
    small.used = Resource(0.5, 2.5)
    big = NodeInfo.new("big", Resource(2.0**70, 2.0**70 + 2.0**20))
    big.used = Resource(2.0**69 + 2.0**18, 0.0)  # + 1.0 (the pod) is below float's step here
    pod = PodRequests(cpu=1.0, memory=1.0, balanced=(), best_effort=True)
    (cpu, cpu_capacity), (memory, memory_capacity) = cpu_memory_requests(pod, GivenNodes([small]))
    assert (cpu.tolist(), cpu_capacity.tolist()) == ([1], [3])
    assert (memory.tolist(), memory_capacity.tolist()) == ([3], [3])
    assert least_requested_scores(cpu, cpu_capacity).tolist() == [66]
    (cpu, cpu_capacity), (memory, memory_capacity) = cpu_memory_requests(pod, GivenNodes([big]))
    assert (cpu.tolist(), cpu_capacity.tolist()) == ([2**69 + 2**18], [2**70])
    assert (memory.tolist(), memory_capacity.tolist()) == ([1], [2**70 + 2**20])
    assert most_requested_scores(cpu, cpu_capacity).tolist() == [(2**69 + 2**18) * 100 // 2**70]


@pytest.mark.parametrize(
    ("fractions", "score"),
    [([0.5, 0.5], 100), ([0.75, 0.5], 87), ([1.5, 0.0], 50), ([0.2, 0.4, 0.6], 83), ([0.3], 100)],
)
def test_balanced_score(fractions: list[float], score: int) -> None:
    every = [np.array([True])] * len(fractions)
    assert balanced_scores([np.array([f]) for f in fractions], every).tolist() == [score]


def test_node_affinity_sums_matching_preferred_weights() -> None:
    zone_a = (NodeSelectorRequirement("zone", "In", ("a",)),)
    has_gpu = (NodeSelectorRequirement("gpu", "Exists"),)
    terms = [(10, zone_a), (5, has_gpu), (0, has_gpu), (7, ())]
    labels: list[dict[str, str]] = [{"zone": "a", "gpu": "1"}, {"zone": "b", "gpu": "1"}, {}]
    nodes = [NodeInfo.new(f"n{i}", Resource(), labels=x) for i, x in enumerate(labels)]
    assert node_affinity_scores(terms, GivenNodes(nodes)).tolist() == [15, 5, 0]


def test_normalize_reverse() -> None:
    assert normalize_reverse_scores(np.array([0, 3, 1])).tolist() == [100, 0, 67]
    assert normalize_reverse_scores(np.array([0, 0])).tolist() == [100, 100]


# --- extender scale -------------------------------------------------------------------------


def test_extender_scores_for_the_default_weights() -> None:
    ssn = session(cluster(pod("p", cpu="1", memory="2Gi")), conf())
    got = extender_scores(ssn, task_of(ssn, "ns/p"), list(ssn.nodes.values()))
    # 275 -> 10, 224 -> floor(8.1), 200 -> floor(7.3)
    assert got == {"n1": 10, "n2": 8, "n3": 7}


def test_extender_scores_rescale_linearly_from_zero() -> None:
    ssn = session([node(f"n{i}") for i in range(1, 6)] + [pod("p")], tiers("nodeorder"))
    raw = {"n1": 50.0, "n2": 25.0, "n3": -5.0, "n4": 0.0, "n5": 33.3}

    def fixed(_task: TaskInfo, nodes: list[NodeInfo]) -> dict[str, float]:
        return {n.name: raw[n.name] for n in nodes}

    ssn.add_hook(BATCH_NODE_ORDER, "nodeorder", fixed)  # in place of the plugin's own
    got = extender_scores(ssn, task_of(ssn, "ns/p"), list(ssn.nodes.values()))
    assert got == {"n1": 10, "n2": 5, "n3": 0, "n4": 0, "n5": 6}


def test_extender_scores_all_zero_when_nothing_scores() -> None:
    ssn = session(cluster(pod("p")), conf(leastrequested=0, balancedresource=0, tainttoleration=0))
    got = extender_scores(ssn, task_of(ssn, "ns/p"), list(ssn.nodes.values()))
    assert got == {"n1": 0, "n2": 0, "n3": 0}
