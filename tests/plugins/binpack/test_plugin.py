"""binpack: Volcano's formula on a small node set, checked against hand computation."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler_core.framework.hooks import BATCH_NODE_ORDER, NODE_ORDER
from tests.builders import node, pod, session, task_of, tiers

GPU = "nvidia.com/gpu"


def conf(arguments: str = "") -> str:
    if not arguments:
        return tiers("binpack")
    return f'actions: ""\ntiers:\n- plugins:\n  - name: binpack\n    arguments: {{{arguments}}}\n'


def cluster(task: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        node("n1", "4", "8Gi"),
        node("n2", "4", "8Gi"),
        node("n3", "2", "8Gi"),
        node("n4", "4", "8Gi", extra={GPU: "4"}),
        pod("busy1", node_name="n1", cpu="2", memory="2Gi"),
        pod("busy3", node_name="n3", cpu="1500m", memory="1Gi"),
        pod("busy4", node_name="n4", cpu=None, memory=None, extra={GPU: "1"}),
        task,
    ]


def scores(conf_text: str, task: dict[str, Any] | None = None) -> dict[str, float]:
    ssn = session(cluster(task or pod("p", cpu="1", memory="2Gi")), conf_text)
    return ssn.node_scores(task_of(ssn, "ns/p"), list(ssn.nodes.values()))


GPU_TASK = pod("p", cpu="1", memory="2Gi", extra={GPU: "1"})


@pytest.mark.parametrize(
    ("arguments", "task", "expected"),
    [
        # n1: cpu (2+1)/4 = .75, mem (2+2)/8 = .5 -> .625 * 100; n2: .25/.25 -> 25;
        # n3: cpu 1.5 + 1 > 2 -> the node scores 0; n4: .25/.25 (gpu not weighted) -> 25
        ("", None, {"n1": 62.5, "n2": 25.0, "n3": 0.0, "n4": 25.0}),
        # weights cpu 3, memory 1, times binpack.weight 10:
        # n1 (.75*3 + .5) / 4 * 1000 = 687.5; n2 (.25*3 + .25) / 4 * 1000 = 250
        (
            "binpack.weight: 10, binpack.cpu: 3, binpack.memory: 1",
            None,
            {"n1": 687.5, "n2": 250.0, "n3": 0.0, "n4": 250.0},
        ),
        # a negative resource weight counts as 1
        ("binpack.cpu: -5", None, {"n1": 62.5, "n2": 25.0, "n3": 0.0, "n4": 25.0}),
        # gpu weighted 2: n4 (.25 + .25 + (1+1)/4*2) / 4 = .375; on nodes without gpu the
        # weight still counts: n2 (.25 + .25 + 0) / 4 = .125, n1 (.75 + .5 + 0) / 4
        (
            f"binpack.resources: '{GPU}, example.com/foo', binpack.resources.{GPU}: 2",
            GPU_TASK,
            {"n1": 31.25, "n2": 12.5, "n3": 0.0, "n4": 37.5},
        ),
        # listed without a weight: 1
        (
            f"binpack.resources: {GPU}",
            GPU_TASK,
            {"n1": 62.5 * 2 / 3, "n2": 50 / 3, "n3": 0.0, "n4": 100 / 3},
        ),
    ],
)
def test_binpack_scores(
    arguments: str, task: dict[str, Any] | None, expected: dict[str, float]
) -> None:
    got = scores(conf(arguments), task)
    assert got == pytest.approx(expected)


def test_resources_the_pod_does_not_request_are_not_scored() -> None:
    # memory-only pod: only memory counts. n1 (2+2)/8 -> 50, n2 2/8 -> 25, n3 (1+2)/8 -> 37.5
    got = scores(conf(), pod("p", cpu=None, memory="2Gi"))
    assert got == pytest.approx({"n1": 50.0, "n2": 25.0, "n3": 37.5, "n4": 25.0})


def test_binpack_scores_through_a_batch_hook_only() -> None:
    # one vectorised call for all nodes; a per-node hook as well would count it twice
    ssn = session(cluster(pod("p")), conf())
    assert "binpack" in ssn.hook_fns(BATCH_NODE_ORDER)
    assert "binpack" not in ssn.hook_fns(NODE_ORDER)


def test_zero_weight_registers_no_node_order() -> None:
    ssn = session(cluster(pod("p")), conf("binpack.weight: 0"))
    assert "binpack" not in ssn.hook_fns(NODE_ORDER)
    assert "binpack" not in ssn.hook_fns(BATCH_NODE_ORDER)
    got = ssn.node_scores(task_of(ssn, "ns/p"), list(ssn.nodes.values()))
    assert set(got.values()) == {0.0}


def test_binpack_prefers_the_fuller_node_in_a_real_tier() -> None:
    ssn = session(cluster(pod("p", cpu="1", memory="2Gi")), tiers("predicates, binpack"))
    got = ssn.node_scores(task_of(ssn, "ns/p"), list(ssn.nodes.values()))
    assert max(got, key=lambda name: got[name]) == "n1"


def test_a_node_the_pod_fills_exactly_is_full_not_overflowing() -> None:
    # n1: cpu (3+1)/4, memory (6+2)/8: 1.0 each -> 100; only beyond allocatable scores 0
    objs = [
        node("n1", "4", "8Gi"),
        node("n2", "4", "8Gi"),
        pod("busy", node_name="n1", cpu="3", memory="6Gi"),
        pod("busy2", node_name="n2", cpu="3", memory="6500Mi"),
        pod("p", cpu="1", memory="2Gi"),
    ]
    ssn = session(objs, conf())
    got = ssn.node_scores(task_of(ssn, "ns/p"), list(ssn.nodes.values()))
    assert got == {"n1": 100.0, "n2": 0.0}
