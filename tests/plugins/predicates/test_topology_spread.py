"""PodTopologySpread (DoNotSchedule constraints): skew per domain against the smallest
domain, minDomains, the node inclusion policies, matchLabelKeys and the cluster's default
constraints; cases ported in meaning from kube-scheduler's own filter tests."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler_core.plugins.predicates.topology_spread import (
    ERR_REASON_CONSTRAINTS_NOT_MATCH,
    ERR_REASON_NODE_LABEL_NOT_MATCH,
    parse_default_constraints,
)
from tests.builders import Obj, pod, selector, session, spread_constraint, task_of
from tests.plugins.predicates.conftest import (
    HOST,
    UU,
    ZONE,
    U,
    Verdict,
    predicates_conf,
    verdict,
    zoned,
)

SKEW: Verdict = (U, [ERR_REASON_CONSTRAINTS_NOT_MATCH])
NO_LABEL: Verdict = (UU, [ERR_REASON_NODE_LABEL_NOT_MATCH])
X = selector({"app": "x"})
TAINT = {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}


def spread(*constraints: Obj, **kwargs: Any) -> Obj:
    labels = kwargs.pop("labels", {"app": "x"})
    return pod("p", labels=labels, spread=constraints, **kwargs)


def xs(*hosts: str, **kwargs: Any) -> list[Obj]:
    """One ``app=x`` pod on each of ``hosts`` (repeat a host for more)."""
    labels = {"app": "x", **kwargs.pop("labels", {})}
    return [pod(f"x{i}", node_name=h, labels=labels, **kwargs) for i, h in enumerate(hosts)]


def nodes() -> list[Obj]:
    """n1, n2 in zone a; n3, n4 in zone b."""
    return [zoned("n1", "a"), zoned("n2", "a"), zoned("n3", "b"), zoned("n4", "b")]


BY_HOST = spread_constraint(1, HOST, X)
BY_ZONE = spread_constraint(1, ZONE, X)

CASES: list[tuple[str, list[Obj], str, Verdict]] = [
    ("no constraint", [*nodes(), *xs("n1", "n1"), pod("p", labels={"app": "x"})], "n1", None),
    (
        "ScheduleAnyway does not filter",
        [*nodes(), *xs("n1", "n1"), spread(spread_constraint(1, HOST, X, "ScheduleAnyway"))],
        "n1",
        None,
    ),
    ("the empty host is the smallest domain", [*nodes(), *xs("n1"), spread(BY_HOST)], "n2", None),
    (
        "one more on the crowded host is too much",
        [*nodes(), *xs("n1"), spread(BY_HOST)],
        "n1",
        SKEW,
    ),
    (
        "a node without the key",
        [*nodes(), zoned("n5"), *xs("n1"), spread(BY_ZONE)],
        "n5",
        NO_LABEL,
    ),
    (
        "a pod its own selector does not match adds nothing",
        [*nodes(), *xs("n1"), spread(BY_HOST, labels={"app": "y"})],
        "n1",
        None,
    ),
    ("by zone: the crowded zone", [*nodes(), *xs("n1", "n2"), spread(BY_ZONE)], "n1", SKEW),
    ("by zone: the empty zone", [*nodes(), *xs("n1", "n2"), spread(BY_ZONE)], "n3", None),
    (
        "maxSkew 2 allows a second",
        [*nodes(), *xs("n1"), spread(spread_constraint(2, HOST, X))],
        "n1",
        None,
    ),
    (
        "every host holds one: the minimum is one",
        [*nodes(), *xs("n1", "n2", "n3", "n4"), spread(BY_HOST)],
        "n1",
        None,
    ),
    (
        "fewer domains than minDomains: the minimum counts as zero",
        [
            *nodes(),
            *xs("n1", "n2", "n3", "n4"),
            spread(spread_constraint(1, HOST, X, minDomains=5)),
        ],
        "n1",
        SKEW,
    ),
    (
        "as many domains as minDomains",
        [
            *nodes(),
            *xs("n1", "n2", "n3", "n4"),
            spread(spread_constraint(1, HOST, X, minDomains=4)),
        ],
        "n1",
        None,
    ),
    (
        "nodeAffinityPolicy Honor: nodes the pod may not use are no domain",
        [*nodes(), *xs("n1", "n2"), spread(BY_ZONE, node_selector={ZONE: "a"})],
        "n1",
        None,
    ),
    (
        "nodeAffinityPolicy Ignore: they are",
        [
            *nodes(),
            *xs("n1", "n2"),
            spread(
                spread_constraint(1, ZONE, X, nodeAffinityPolicy="Ignore"),
                node_selector={ZONE: "a"},
            ),
        ],
        "n1",
        SKEW,
    ),
    (
        "nodeTaintsPolicy Ignore (default): a tainted empty node is a domain",
        [zoned("n1"), zoned("n2", taints=[TAINT]), *xs("n1"), spread(BY_HOST)],
        "n1",
        SKEW,
    ),
    (
        "nodeTaintsPolicy Honor: a tainted node is no domain",
        [
            zoned("n1"),
            zoned("n2", taints=[TAINT]),
            zoned("n3"),
            *xs("n1", "n3"),
            spread(spread_constraint(1, HOST, X, nodeTaintsPolicy="Honor")),
        ],
        "n1",
        None,
    ),
    (
        "pods of another namespace do not count",
        [*nodes(), *xs("n1", namespace="other"), spread(BY_HOST)],
        "n1",
        None,
    ),
    (
        "matchLabelKeys: another version does not count",
        [
            *nodes(),
            *xs("n1", labels={"version": "1"}),
            spread(
                spread_constraint(1, HOST, X, matchLabelKeys=["version"]),
                labels={"app": "x", "version": "2"},
            ),
        ],
        "n1",
        None,
    ),
    (
        "matchLabelKeys: the same version counts",
        [
            *nodes(),
            *xs("n1", labels={"version": "2"}),
            spread(
                spread_constraint(1, HOST, X, matchLabelKeys=["version"]),
                labels={"app": "x", "version": "2"},
            ),
        ],
        "n1",
        SKEW,
    ),
    (
        "no labelSelector counts nothing",
        [*nodes(), *xs("n1", "n1"), spread(spread_constraint(1, HOST, None))],
        "n1",
        None,
    ),
    (
        "leaving pods do not count",
        [*nodes(), *xs("n1", deleting=True), spread(BY_HOST)],
        "n1",
        None,
    ),
    (
        "every constraint must hold",
        [*nodes(), *xs("n1", "n3"), spread(BY_ZONE, spread_constraint(1, HOST, X))],
        "n1",
        SKEW,
    ),
    (
        "a node lacking another constraint's key is not counted",
        # n5 (no zone) holds no app=x: it would be the smallest host domain if counted.
        [*nodes(), zoned("n5"), *xs("n1", "n2", "n3", "n4"), spread(BY_ZONE, BY_HOST)],
        "n1",
        None,
    ),
]


@pytest.mark.parametrize(
    ("objects", "node_name", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_topology_spread(objects: list[Obj], node_name: str, expected: Verdict) -> None:
    assert verdict(objects, "p", node_name) == expected


HARD_DEFAULT = [{"maxSkew": 1, "topologyKey": HOST, "whenUnsatisfiable": "DoNotSchedule"}]


def test_hard_default_constraints_apply_to_a_pod_without_its_own() -> None:
    objs = [*nodes(), *xs("n1"), pod("p", labels={"app": "x"})]
    args = {"predicate.DefaultTopologySpreadConstraints": HARD_DEFAULT}
    assert verdict(objs, "p", "n1", args) == SKEW
    assert verdict(objs, "p", "n2", args) is None


def test_default_constraints_do_not_apply_to_a_pod_with_its_own() -> None:
    objs = [*nodes(), *xs("n1"), spread(spread_constraint(1, HOST, X, "ScheduleAnyway"))]
    args = {"predicate.DefaultTopologySpreadConstraints": HARD_DEFAULT}
    assert verdict(objs, "p", "n1", args) is None


def test_the_system_defaults_do_not_filter() -> None:
    objs = [*nodes(), *xs("n1", "n1", "n1"), pod("p", labels={"app": "x"})]
    assert verdict(objs, "p", "n1") is None


@pytest.mark.parametrize(
    "raw",
    [
        [{"maxSkew": 0, "topologyKey": HOST, "whenUnsatisfiable": "DoNotSchedule"}],
        [{"maxSkew": 1, "whenUnsatisfiable": "DoNotSchedule"}],
        [{"maxSkew": 1, "topologyKey": HOST, "whenUnsatisfiable": "Sometimes"}],
        {"maxSkew": 1},
    ],
)
def test_malformed_default_constraints_are_refused(raw: Any) -> None:
    with pytest.raises(ValueError, match=r"predicate\.DefaultTopologySpreadConstraints"):
        parse_default_constraints(raw)


def test_the_check_is_off_with_its_argument() -> None:
    objs = [*nodes(), *xs("n1"), spread(BY_HOST)]
    assert verdict(objs, "p", "n1", {"predicate.PodTopologySpreadEnable": False}) is None


def test_a_node_copy_without_a_matching_pod_passes() -> None:
    ssn = session([*nodes(), *xs("n1"), spread(BY_HOST)], predicates_conf())
    p = task_of(ssn, "ns/p")
    copy = ssn.nodes["n1"].clone()
    copy.remove_task(task_of(ssn, "ns/x0"))
    assert ssn.predicate(p, copy) is None
    assert ssn.predicate(p, ssn.nodes["n1"]) is not None


def test_a_node_copy_emptying_the_smallest_domain_lowers_the_minimum() -> None:
    # Every host holds one: n1 is fine. Without n2's pod the minimum drops to 0, and the
    # copy of n2 is fine too, while n1 (judged against the session) still is.
    ssn = session([*nodes(), *xs("n1", "n2", "n3", "n4"), spread(BY_HOST)], predicates_conf())
    p = task_of(ssn, "ns/p")
    copy = ssn.nodes["n2"].clone()
    copy.remove_task(task_of(ssn, "ns/x1"))
    assert ssn.predicate(p, copy) is None
    assert ssn.predicate(p, ssn.nodes["n1"]) is None
