"""The plugin keeps each pod's counts across a session's evictions and placements, counting
only the changed node again: its verdicts always equal counts made afresh."""

from __future__ import annotations

from hypothesis import given, settings

from scheduler_core.framework.session import Session
from scheduler_core.plugins.predicates.inter_pod_affinity import inter_pod_affinity_error
from scheduler_core.plugins.predicates.topology_spread import topology_spread_error
from tests.builders import Obj, pod, pod_affinity, pod_term, session, spread_constraint, task_of
from tests.plugins.predicates.conftest import (
    HOST,
    NODES,
    ZONE,
    Operation,
    X,
    apply_operations,
    operations,
    predicates_conf,
    worlds,
)

PROBES: list[Obj] = [
    pod("probe-anti", labels={"app": "y"}, affinity=pod_affinity(anti=[pod_term(X, HOST)])),
    pod("probe-near", labels={"app": "y"}, affinity=pod_affinity(required=[pod_term(X, ZONE)])),
    pod("probe-spread", labels={"app": "x"}, spread=[spread_constraint(1, HOST, X)]),
    pod("probe-x", labels={"app": "x"}),
]


def assert_fresh(ssn: Session) -> None:
    for obj in PROBES:
        probe = task_of(ssn, f"ns/{obj['metadata']['name']}")
        for name in NODES:
            node = ssn.nodes[name]
            kept = ssn.predicate(probe, node)
            fresh = inter_pod_affinity_error(
                probe, node, ssn.nodes, ssn.snapshot.namespace_labels
            ) or topology_spread_error(probe, node, ssn.nodes)
            assert (kept and kept.reasons) == (fresh and fresh.reasons), (probe.name, name)


@settings(max_examples=80, deadline=None, derandomize=True)
@given(worlds(PROBES), operations([f"r{i}" for i in range(8)]))
def test_kept_counts_equal_fresh_ones_after_any_statement_operations(
    objs: list[Obj], ops: list[Operation]
) -> None:
    ssn = session(objs, predicates_conf())
    assert_fresh(ssn)
    apply_operations(ssn, ops, assert_fresh)
