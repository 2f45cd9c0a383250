"""A pod's host ports, pod (anti-)affinity terms and topology spread constraints, as the
predicates read them; a spec the API server would refuse is a conversion error naming the
pod and the field."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler_core.api.pod_constraints import (
    HostPort,
    LabelRequirement,
    LabelSelector,
    PodAffinityTerm,
    TopologySpreadConstraint,
)
from scheduler_core.cache.convert import ConversionError, pod_to_task
from scheduler_core.cache.state import ClusterState
from tests.builders import (
    Obj,
    expr,
    host_port,
    namespace,
    pod,
    pod_affinity,
    pod_term,
    selector,
    spread_constraint,
)

HOST = "kubernetes.io/hostname"


def req(key: str, op: str, *values: str) -> LabelRequirement:
    return LabelRequirement(key, op, frozenset(values))


def test_host_ports_default_protocol_and_address() -> None:
    task = pod_to_task(pod("p", host_ports=[host_port(80), host_port(53, "UDP", "10.0.0.1")]))
    assert task.host_ports == (HostPort(80), HostPort(53, "UDP", "10.0.0.1"))


def test_container_ports_without_a_host_port_are_not_host_ports() -> None:
    task = pod_to_task(pod("p", host_ports=[{"containerPort": 80}]))
    assert task.host_ports == ()


def test_an_affinity_term_defaults_to_the_pods_namespace() -> None:
    task = pod_to_task(pod("p", affinity=pod_affinity(required=[pod_term(selector({"app": "x"}))])))
    assert task.pod_affinity is not None
    assert task.pod_affinity.required == (
        PodAffinityTerm(HOST, LabelSelector((req("app", "In", "x"),)), frozenset({"ns"})),
    )
    assert task.required_anti_affinity is False


def test_a_namespace_selector_replaces_the_default_namespace() -> None:
    term = pod_term(selector({"app": "x"}), namespaceSelector={})
    task = pod_to_task(pod("p", affinity=pod_affinity(anti=[term])))
    assert task.pod_affinity is not None
    (converted,) = task.pod_affinity.required_anti
    assert converted.namespaces == frozenset()
    assert converted.namespace_selector == LabelSelector()
    assert task.required_anti_affinity


def test_match_and_mismatch_label_keys_join_the_selector_with_the_pods_values() -> None:
    term = pod_term(
        selector({"app": "x"}), matchLabelKeys=["version", "absent"], mismatchLabelKeys=["tenant"]
    )
    task = pod_to_task(
        pod("p", labels={"version": "2", "tenant": "a"}, affinity=pod_affinity(anti=[term]))
    )
    assert task.pod_affinity is not None
    assert task.pod_affinity.required_anti[0].selector == LabelSelector(
        (req("app", "In", "x"), req("version", "In", "2"), req("tenant", "NotIn", "a"))
    )


def test_preferred_terms_keep_their_weights() -> None:
    task = pod_to_task(
        pod("p", affinity=pod_affinity(preferred=[(30, pod_term(selector({"app": "x"})))]))
    )
    assert task.pod_affinity is not None
    assert [w.weight for w in task.pod_affinity.preferred] == [30]
    assert task.pod_affinity.required == ()


def test_spread_constraints_with_defaults_and_match_label_keys() -> None:
    constraint = spread_constraint(2, HOST, selector({"app": "x"}), matchLabelKeys=["hash"])
    task = pod_to_task(pod("p", labels={"hash": "abc"}, spread=[constraint]))
    assert task.spread_constraints == (
        TopologySpreadConstraint(
            max_skew=2,
            topology_key=HOST,
            when_unsatisfiable="DoNotSchedule",
            selector=LabelSelector((req("app", "In", "x"), req("hash", "In", "abc"))),
        ),
    )


def test_a_pod_without_constraints_has_none() -> None:
    task = pod_to_task(pod("p"))
    assert (task.host_ports, task.pod_affinity, task.spread_constraints) == ((), None, ())


BAD: list[tuple[str, dict[str, Any], str]] = [
    (
        "unknown operator",
        {"affinity": pod_affinity(required=[pod_term(selector(None, expr("app", "Like", "x")))])},
        "operator",
    ),
    (
        "In without values",
        {"affinity": pod_affinity(anti=[pod_term(selector(None, expr("app", "In")))])},
        "values",
    ),
    (
        "Exists with values",
        {"affinity": pod_affinity(anti=[pod_term(selector(None, expr("app", "Exists", "x")))])},
        "values",
    ),
    (
        "no topology key",
        {"affinity": pod_affinity(required=[pod_term(selector({}), "")])},
        "topologyKey",
    ),
    (
        "a key both matched and mismatched",
        {
            "affinity": pod_affinity(
                anti=[pod_term(selector({}), matchLabelKeys=["a"], mismatchLabelKeys=["a"])]
            )
        },
        "mismatchLabelKeys",
    ),
    (
        "preferred weight out of range",
        {"affinity": pod_affinity(preferred=[(0, pod_term(selector({})))])},
        "weight",
    ),
    ("maxSkew zero", {"spread": [spread_constraint(0, HOST, selector({}))]}, "maxSkew"),
    (
        "unknown whenUnsatisfiable",
        {"spread": [spread_constraint(1, HOST, selector({}), "Maybe")]},
        "whenUnsatisfiable",
    ),
    (
        "minDomains zero",
        {"spread": [spread_constraint(1, HOST, selector({}), minDomains=0)]},
        "minDomains",
    ),
    (
        "minDomains with ScheduleAnyway",
        {"spread": [spread_constraint(1, HOST, selector({}), "ScheduleAnyway", minDomains=2)]},
        "minDomains",
    ),
    (
        "unknown policy",
        {"spread": [spread_constraint(1, HOST, selector({}), nodeTaintsPolicy="Maybe")]},
        "nodeTaintsPolicy",
    ),
    ("host port out of range", {"host_ports": [host_port(70000)]}, "hostPort"),
    ("unknown protocol", {"host_ports": [host_port(80, "ICMP")]}, "protocol"),
]


@pytest.mark.parametrize(("fields", "names"), [c[1:] for c in BAD], ids=[c[0] for c in BAD])
def test_a_spec_the_api_server_would_refuse_is_a_conversion_error(
    fields: dict[str, Any], names: str
) -> None:
    with pytest.raises(ConversionError, match=f"Pod ns/p: .*{names}"):
        pod_to_task(pod("p", **fields))


def test_a_refused_pod_leaves_the_cache_as_it_was() -> None:
    state = ClusterState()
    state.upsert("Pod", pod("p", node_name="n1"))
    state.upsert("Pod", pod("p", node_name="n1", host_ports=[host_port(0x20000)]))
    assert state.rejected["Pod"] == 1
    assert state.snapshot().jobs  # the earlier pod is still there


def test_namespace_labels_reach_the_snapshot() -> None:
    state = ClusterState()
    obj: Obj = namespace("team-a", {"team": "a"})
    state.upsert("Namespace", obj)
    assert state.snapshot().namespace_labels == {"team-a": {"team": "a"}}
    state.delete("Namespace", "team-a")
    assert state.snapshot().namespace_labels == {}
