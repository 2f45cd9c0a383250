"""InterPodAffinity (required terms): the incoming pod's affinity and anti-affinity, and the
placed pods' anti-affinity towards it, with kube-scheduler's reasons and codes; cases
ported in meaning from kube-scheduler's own filter tests."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler_core.api.types import TaskStatus
from scheduler_core.plugins.predicates.inter_pod_affinity import (
    ERR_REASON_AFFINITY,
    ERR_REASON_ANTI_AFFINITY,
    ERR_REASON_EXISTING_ANTI_AFFINITY,
    inter_pod_affinity_error,
)
from tests.builders import (
    Obj,
    expr,
    namespace,
    pod,
    pod_affinity,
    pod_term,
    selector,
    session,
    task_of,
)
from tests.plugins.predicates.conftest import (
    UU,
    ZONE,
    U,
    Verdict,
    predicates_conf,
    verdict,
    zoned,
)

AFFINITY: Verdict = (UU, [ERR_REASON_AFFINITY])
ANTI: Verdict = (U, [ERR_REASON_ANTI_AFFINITY])
EXISTING: Verdict = (U, [ERR_REASON_EXISTING_ANTI_AFFINITY])

X = selector({"app": "x"})


def near(*terms: Obj) -> Obj:
    return pod_affinity(required=terms)


def away(*terms: Obj) -> Obj:
    return pod_affinity(anti=terms)


def cluster(*pods: Obj) -> list[Obj]:
    """n1, n2 in zone a; n3 in zone b; n4 without a zone label."""
    return [
        zoned("n1", "a"),
        zoned("n2", "a"),
        zoned("n3", "b"),
        zoned("n4"),
        namespace("ns", {"team": "blue"}),
        namespace("other", {"team": "red"}),
        *pods,
    ]


def x_on(node_name: str, name: str = "x", **kwargs: Any) -> Obj:
    labels = {"app": "x", **kwargs.pop("labels", {})}
    return pod(name, node_name=node_name, labels=labels, **kwargs)


CASES: list[tuple[str, list[Obj], str, Verdict]] = [
    ("no terms", cluster(x_on("n1"), pod("p")), "n1", None),
    # --- the incoming pod's affinity
    (
        "affinity met on the node",
        cluster(x_on("n1"), pod("p", affinity=near(pod_term(X)))),
        "n1",
        None,
    ),
    (
        "affinity to a pod on another host",
        cluster(x_on("n2"), pod("p", affinity=near(pod_term(X)))),
        "n1",
        AFFINITY,
    ),
    (
        "affinity met in the zone",
        cluster(x_on("n2"), pod("p", affinity=near(pod_term(X, ZONE)))),
        "n1",
        None,
    ),
    (
        "affinity not met in another zone",
        cluster(x_on("n2"), pod("p", affinity=near(pod_term(X, ZONE)))),
        "n3",
        AFFINITY,
    ),
    (
        "the node lacks the topology key",
        cluster(x_on("n4"), pod("p", affinity=near(pod_term(X, ZONE)))),
        "n4",
        AFFINITY,
    ),
    (
        "no pod matches anywhere",
        cluster(pod("p", affinity=near(pod_term(X)))),
        "n1",
        AFFINITY,
    ),
    (
        "the first pod of a group with affinity to itself",
        cluster(pod("p", labels={"app": "x"}, affinity=near(pod_term(X)))),
        "n1",
        None,
    ),
    (
        "not the first: a pod of the group runs elsewhere",
        cluster(x_on("n2"), pod("p", labels={"app": "x"}, affinity=near(pod_term(X)))),
        "n1",
        AFFINITY,
    ),
    (
        "a NotIn expression",
        cluster(
            pod("y", node_name="n1", labels={"app": "y"}),
            pod("p", affinity=near(pod_term(selector(None, expr("app", "NotIn", "x"))))),
        ),
        "n1",
        None,
    ),
    (
        "a matching pod of another namespace does not count",
        cluster(x_on("n1", namespace="other"), pod("p", affinity=near(pod_term(X)))),
        "n1",
        AFFINITY,
    ),
    (
        "the namespaces field names the other namespace",
        cluster(
            x_on("n1", namespace="other"),
            pod("p", affinity=near(pod_term(X, namespaces=["other"]))),
        ),
        "n1",
        None,
    ),
    (
        "a namespaceSelector selects the other namespace",
        cluster(
            x_on("n1", namespace="other"),
            pod("p", affinity=near(pod_term(X, namespaceSelector=selector({"team": "red"})))),
        ),
        "n1",
        None,
    ),
    (
        "an empty namespaceSelector selects every namespace",
        cluster(
            x_on("n1", namespace="other"),
            pod("p", affinity=near(pod_term(X, namespaceSelector={}))),
        ),
        "n1",
        None,
    ),
    (
        "a namespaceSelector that selects another team",
        cluster(
            x_on("n1", namespace="other"),
            pod("p", affinity=near(pod_term(X, namespaceSelector=selector({"team": "green"})))),
        ),
        "n1",
        AFFINITY,
    ),
    (
        "one pod must match every term",
        cluster(
            x_on("n1"),
            pod("y", node_name="n1", labels={"tier": "db"}),
            pod("p", affinity=near(pod_term(X), pod_term(selector({"tier": "db"})))),
        ),
        "n1",
        AFFINITY,
    ),
    (
        "a term without a labelSelector matches no pod",
        cluster(x_on("n1"), pod("p", affinity=near(pod_term(None)))),
        "n1",
        AFFINITY,
    ),
    # --- the incoming pod's anti-affinity
    (
        "anti-affinity to a pod on the node",
        cluster(x_on("n1"), pod("p", affinity=away(pod_term(X)))),
        "n1",
        ANTI,
    ),
    (
        "anti-affinity to a pod on another host",
        cluster(x_on("n2"), pod("p", affinity=away(pod_term(X)))),
        "n1",
        None,
    ),
    (
        "anti-affinity to a pod in the zone",
        cluster(x_on("n2"), pod("p", affinity=away(pod_term(X, ZONE)))),
        "n1",
        ANTI,
    ),
    (
        "anti-affinity on a node without the key",
        cluster(x_on("n4"), pod("p", affinity=away(pod_term(X, ZONE)))),
        "n4",
        None,
    ),
    (
        "anti-affinity with matchLabelKeys: another version is no conflict",
        cluster(
            x_on("n1", labels={"version": "1"}),
            pod(
                "p", labels={"version": "2"}, affinity=away(pod_term(X, matchLabelKeys=["version"]))
            ),
        ),
        "n1",
        None,
    ),
    (
        "anti-affinity with matchLabelKeys: the same version conflicts",
        cluster(
            x_on("n1", labels={"version": "1"}),
            pod(
                "p", labels={"version": "1"}, affinity=away(pod_term(X, matchLabelKeys=["version"]))
            ),
        ),
        "n1",
        ANTI,
    ),
    (
        "anti-affinity with mismatchLabelKeys: another tenant conflicts",
        cluster(
            x_on("n1", labels={"tenant": "a"}),
            pod(
                "p",
                labels={"tenant": "b"},
                affinity=away(pod_term(X, mismatchLabelKeys=["tenant"])),
            ),
        ),
        "n1",
        ANTI,
    ),
    (
        "anti-affinity with mismatchLabelKeys: the same tenant is welcome",
        cluster(
            x_on("n1", labels={"tenant": "a"}),
            pod(
                "p",
                labels={"tenant": "a"},
                affinity=away(pod_term(X, mismatchLabelKeys=["tenant"])),
            ),
        ),
        "n1",
        None,
    ),
    (
        "a leaving pod is no conflict",
        cluster(x_on("n1", deleting=True), pod("p", affinity=away(pod_term(X)))),
        "n1",
        None,
    ),
    # --- placed pods' anti-affinity towards the incoming pod
    (
        "a placed pod keeps the incoming one off its host",
        cluster(
            pod("guard", node_name="n1", affinity=away(pod_term(X))), pod("p", labels={"app": "x"})
        ),
        "n1",
        EXISTING,
    ),
    (
        "... and only its host",
        cluster(
            pod("guard", node_name="n1", affinity=away(pod_term(X))), pod("p", labels={"app": "x"})
        ),
        "n2",
        None,
    ),
    (
        "... or its whole zone",
        cluster(
            pod("guard", node_name="n1", affinity=away(pod_term(X, ZONE))),
            pod("p", labels={"app": "x"}),
        ),
        "n2",
        EXISTING,
    ),
    (
        "a placed pod's anti-affinity to other labels",
        cluster(
            pod("guard", node_name="n1", affinity=away(pod_term(X))), pod("p", labels={"app": "y"})
        ),
        "n1",
        None,
    ),
    (
        "a placed pod's anti-affinity in its own namespace only",
        cluster(
            pod("guard", node_name="n1", namespace="other", affinity=away(pod_term(X))),
            pod("p", labels={"app": "x"}),
        ),
        "n1",
        None,
    ),
    (
        "a placed pod's anti-affinity by namespaceSelector",
        cluster(
            pod(
                "guard",
                node_name="n1",
                namespace="other",
                affinity=away(pod_term(X, namespaceSelector=selector({"team": "blue"}))),
            ),
            pod("p", labels={"app": "x"}),
        ),
        "n1",
        EXISTING,
    ),
    (
        "affinity met but anti-affinity broken: the anti-affinity reason",
        cluster(
            x_on("n1"),
            pod("y", node_name="n1", labels={"app": "y"}),
            pod(
                "p",
                affinity=pod_affinity(
                    required=[pod_term(X)], anti=[pod_term(selector({"app": "y"}))]
                ),
            ),
        ),
        "n1",
        ANTI,
    ),
]


@pytest.mark.parametrize(
    ("objects", "node_name", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_inter_pod_affinity(objects: list[Obj], node_name: str, expected: Verdict) -> None:
    assert verdict(objects, "p", node_name) == expected


def test_the_check_is_off_with_its_argument() -> None:
    objs = cluster(x_on("n1"), pod("p", affinity=away(pod_term(X))))
    assert verdict(objs, "p", "n1", {"predicate.PodAffinityEnable": False}) is None


def test_a_node_copy_without_the_conflicting_pod_passes_and_the_session_node_still_fails() -> None:
    ssn = session(
        cluster(x_on("n1"), pod("y", node_name="n1"), pod("p", affinity=away(pod_term(X)))),
        predicates_conf(),
    )
    p = task_of(ssn, "ns/p")
    node = ssn.nodes["n1"]
    copy = node.clone()
    copy.remove_task(task_of(ssn, "ns/x"))
    assert ssn.predicate(p, copy) is None
    err = ssn.predicate(p, node)
    assert err is not None and err.reasons == [ERR_REASON_ANTI_AFFINITY]


def test_a_node_copy_without_the_guarding_pod_passes() -> None:
    ssn = session(
        cluster(
            pod("guard", node_name="n1", affinity=away(pod_term(X))), pod("p", labels={"app": "x"})
        ),
        predicates_conf(),
    )
    copy = ssn.nodes["n1"].clone()
    copy.remove_task(task_of(ssn, "ns/guard"))
    assert ssn.predicate(task_of(ssn, "ns/p"), copy) is None


def test_a_node_copy_without_the_pod_it_wants_fails() -> None:
    ssn = session(cluster(x_on("n1"), pod("p", affinity=near(pod_term(X)))), predicates_conf())
    copy = ssn.nodes["n1"].clone()
    copy.remove_task(task_of(ssn, "ns/x"))
    err = ssn.predicate(task_of(ssn, "ns/p"), copy)
    assert err is not None and err.code == UU


def test_counts_follow_an_eviction_in_the_session() -> None:
    ssn = session(cluster(x_on("n1"), pod("p", affinity=away(pod_term(X)))), predicates_conf())
    p, x = task_of(ssn, "ns/p"), task_of(ssn, "ns/x")
    assert ssn.predicate(p, ssn.nodes["n1"]) is not None
    x.status = TaskStatus.RELEASING
    ssn.nodes["n1"].update_task(x)
    ssn.fire_deallocate(x)
    assert ssn.predicate(p, ssn.nodes["n1"]) is None


def test_the_pure_function_agrees_with_the_plugin() -> None:
    ssn = session(cluster(x_on("n1"), pod("p", affinity=away(pod_term(X)))), predicates_conf())
    p = task_of(ssn, "ns/p")
    for name in ("n1", "n2"):
        err = inter_pod_affinity_error(p, ssn.nodes[name], ssn.nodes, ssn.snapshot.namespace_labels)
        plugin = ssn.predicate(p, ssn.nodes[name])
        assert (err is None) == (plugin is None)
