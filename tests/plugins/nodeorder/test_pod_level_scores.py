"""nodeorder's ``podaffinity.weight``: kube-scheduler's InterPodAffinity score, from the pod's
preferred terms and the placed pods' terms towards it, normalised to 0..100 over the nodes."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler_core.framework.session import Session
from scheduler_core.plugins.nodeorder import NodeOrderPlugin
from tests.builders import (
    Obj,
    node,
    pod,
    pod_affinity,
    pod_term,
    selector,
    session,
    spread_constraint,
    task_of,
    tiers,
)

HOST = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"
X = selector({"app": "x"})


def hosts() -> list[Obj]:
    """n1, n2 in zone a; n3 in zone b."""
    return [
        node(name, labels={HOST: name, ZONE: zone})
        for name, zone in (("n1", "a"), ("n2", "a"), ("n3", "b"))
    ]


def scores(objs: list[Obj], arguments: dict[str, Any] | None = None) -> dict[str, float] | None:
    ssn = open_nodeorder(objs, arguments)
    plugin = ssn.plugins["nodeorder"]
    assert isinstance(plugin, NodeOrderPlugin)
    return plugin.pod_affinity_scores(task_of(ssn, "ns/p"), list(ssn.nodes.values()))


def open_nodeorder(objs: list[Obj], arguments: dict[str, Any] | None = None) -> Session:
    conf = tiers("nodeorder")
    if arguments:
        conf = conf.replace(
            "  - name: nodeorder",
            "  - name: nodeorder\n    arguments:\n"
            + "".join(f"      {k}: {v}\n" for k, v in arguments.items()),
        )
    return session(objs, conf)


CASES: list[tuple[str, list[Obj], dict[str, float] | None]] = [
    (
        "no terms anywhere",
        [*hosts(), pod("x", node_name="n1", labels={"app": "x"}), pod("p")],
        None,
    ),
    (
        "preferred affinity: the node with the pod",
        [
            *hosts(),
            pod("x", node_name="n1", labels={"app": "x"}),
            pod("p", affinity=pod_affinity(preferred=[(10, pod_term(X))])),
        ],
        {"n1": 100.0, "n2": 0.0, "n3": 0.0},
    ),
    (
        "preferred affinity by zone: every node of the zone",
        [
            *hosts(),
            pod("x", node_name="n1", labels={"app": "x"}),
            pod("p", affinity=pod_affinity(preferred=[(10, pod_term(X, ZONE))])),
        ],
        {"n1": 100.0, "n2": 100.0, "n3": 0.0},
    ),
    (
        "preferred anti-affinity: every node but the pod's",
        [
            *hosts(),
            pod("x", node_name="n1", labels={"app": "x"}),
            pod("p", affinity=pod_affinity(preferred_anti=[(10, pod_term(X))])),
        ],
        {"n1": 0.0, "n2": 100.0, "n3": 100.0},
    ),
    (
        "weights add up before normalising",
        [
            *hosts(),
            pod("x", node_name="n1", labels={"app": "x"}),
            pod("y", node_name="n2", labels={"app": "y"}),
            pod(
                "p",
                affinity=pod_affinity(
                    preferred=[(10, pod_term(X)), (40, pod_term(selector({"app": "y"})))]
                ),
            ),
        ],
        {"n1": 25.0, "n2": 100.0, "n3": 0.0},
    ),
    (
        "a placed pod's required affinity to it draws it",
        [
            *hosts(),
            pod("w", node_name="n3", affinity=pod_affinity(required=[pod_term(X)])),
            pod("p", labels={"app": "x"}),
        ],
        {"n1": 0.0, "n2": 0.0, "n3": 100.0},
    ),
    (
        "a placed pod's preferred anti-affinity pushes it away",
        [
            *hosts(),
            pod("w", node_name="n3", affinity=pod_affinity(preferred_anti=[(5, pod_term(X))])),
            pod("p", labels={"app": "x"}),
        ],
        {"n1": 100.0, "n2": 100.0, "n3": 0.0},
    ),
    (
        "a placed pod's terms about other labels change nothing",
        [
            *hosts(),
            pod("w", node_name="n3", affinity=pod_affinity(preferred=[(5, pod_term(X))])),
            pod("p", labels={"app": "y"}),
        ],
        None,
    ),
    (
        "a placed pod's required anti-affinity to it filters but does not score",
        [
            *hosts(),
            pod("w", node_name="n3", affinity=pod_affinity(anti=[pod_term(X)])),
            pod("p", labels={"app": "x"}),
        ],
        None,
    ),
    (
        "a node with a scoring pod beside an anti-affinity-only pod is still scored",
        [
            *hosts(),
            pod("v", node_name="n3", affinity=pod_affinity(anti=[pod_term(X)])),
            pod("w", node_name="n3", affinity=pod_affinity(required=[pod_term(X)])),
            pod("p", labels={"app": "x"}),
        ],
        {"n1": 0.0, "n2": 0.0, "n3": 100.0},
    ),
    (
        "a leaving pod does not count",
        [
            *hosts(),
            pod("x", node_name="n1", labels={"app": "x"}, deleting=True),
            pod("p", affinity=pod_affinity(preferred=[(10, pod_term(X))])),
        ],
        None,
    ),
]


@pytest.mark.parametrize(("objs", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_pod_affinity_score(objs: list[Obj], expected: dict[str, float] | None) -> None:
    assert scores(objs) == expected


def test_weight_zero_switches_it_off() -> None:
    objs = [
        *hosts(),
        pod("x", node_name="n1", labels={"app": "x"}),
        pod("p", affinity=pod_affinity(preferred=[(10, pod_term(X))])),
    ]
    assert scores(objs, {"podaffinity.weight": 0}) is None


def test_the_vector_and_scalar_paths_add_it_the_same_and_weighted() -> None:
    objs = [
        *hosts(),
        pod("x", node_name="n1", labels={"app": "x"}),
        pod("p", affinity=pod_affinity(preferred=[(10, pod_term(X))])),
    ]
    plain = open_nodeorder(objs, {"podaffinity.weight": 0})
    weighted = open_nodeorder(objs, {"podaffinity.weight": 2})
    for ssn in (plain, weighted):
        plugin = ssn.plugins["nodeorder"]
        assert isinstance(plugin, NodeOrderPlugin)
    task_plain, task_weighted = task_of(plain, "ns/p"), task_of(weighted, "ns/p")
    nodes_plain, nodes_weighted = list(plain.nodes.values()), list(weighted.nodes.values())
    base = plain.node_scores(task_plain, nodes_plain)
    with_affinity = weighted.node_scores(task_weighted, nodes_weighted)
    assert {n: with_affinity[n] - base[n] for n in base} == {"n1": 200.0, "n2": 0.0, "n3": 0.0}
    array = weighted.node_score_array(task_weighted, nodes_weighted)
    assert array is not None
    assert list(array) == [with_affinity[n.name] for n in nodes_weighted]


# --- podtopologyspread.weight ---------------------------------------------------------------


def spread_scores_of(objs: list[Obj], arguments: dict[str, Any] | None = None) -> Any:
    ssn = open_nodeorder(objs, arguments)
    plugin = ssn.plugins["nodeorder"]
    assert isinstance(plugin, NodeOrderPlugin)
    return plugin.pod_topology_spread_scores(task_of(ssn, "ns/p"), list(ssn.nodes.values()))


def xs(*hosts: str) -> list[Obj]:
    return [pod(f"x{i}", node_name=h, labels={"app": "x"}) for i, h in enumerate(hosts)]


def soft(key: str = HOST, max_skew: int = 1) -> Obj:
    return pod(
        "p",
        labels={"app": "x"},
        spread=[spread_constraint(max_skew, key, X, "ScheduleAnyway")],
    )


SPREAD_CASES: list[tuple[str, list[Obj], dict[str, float] | None]] = [
    ("no soft constraint", [*hosts(), *xs("n1"), pod("p", labels={"app": "x"})], None),
    (
        "a hard constraint does not score",
        [
            *hosts(),
            *xs("n1"),
            pod("p", labels={"app": "x"}, spread=[spread_constraint(1, HOST, X)]),
        ],
        None,
    ),
    # log(3 + 2) per pod: raw 3, 2, 0 -> 100 * (3 + 0 - raw) // 3
    (
        "by host: the emptier the better",
        [*hosts(), *xs("n1", "n1", "n2"), soft()],
        {"n1": 0.0, "n2": 33.0, "n3": 100.0},
    ),
    # two zones, log(2 + 2) per pod: raw 3, 3, 0
    ("by zone", [*hosts(), *xs("n1", "n2"), soft(ZONE)], {"n1": 0.0, "n2": 0.0, "n3": 100.0}),
    ("all alike: every node 100", [*hosts(), soft()], {"n1": 100.0, "n2": 100.0, "n3": 100.0}),
    (
        "a node without the key scores 0",
        [*hosts(), node("bare"), *xs("n1"), soft(ZONE)],
        {"n1": 0.0, "n2": 0.0, "n3": 100.0, "bare": 0.0},
    ),
]


@pytest.mark.parametrize(
    ("objs", "expected"), [c[1:] for c in SPREAD_CASES], ids=[c[0] for c in SPREAD_CASES]
)
def test_pod_topology_spread_score(objs: list[Obj], expected: dict[str, float] | None) -> None:
    assert spread_scores_of(objs) == expected


def test_spread_weight_zero_switches_it_off() -> None:
    objs = [*hosts(), *xs("n1"), soft()]
    assert spread_scores_of(objs, {"podtopologyspread.weight": 0}) is None


def test_the_spread_score_counts_twice_by_default() -> None:
    objs = [*hosts(), *xs("n1", "n1", "n2"), soft()]
    off = open_nodeorder(objs, {"podtopologyspread.weight": 0})
    on = open_nodeorder(objs)
    base = off.node_scores(task_of(off, "ns/p"), list(off.nodes.values()))
    scored = on.node_scores(task_of(on, "ns/p"), list(on.nodes.values()))
    assert {n: scored[n] - base[n] for n in base} == {"n1": 0.0, "n2": 66.0, "n3": 200.0}
