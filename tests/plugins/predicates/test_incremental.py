"""The plugin keeps each pod's counts across a session's evictions and placements, counting
only the changed node again: its verdicts always equal counts made afresh."""

from __future__ import annotations

import contextlib
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler_core.api.types import TaskStatus
from scheduler_core.framework.session import Session
from scheduler_core.framework.statement import Statement, StatementError
from scheduler_core.plugins.predicates.inter_pod_affinity import inter_pod_affinity_error
from scheduler_core.plugins.predicates.topology_spread import topology_spread_error
from tests.builders import (
    Obj,
    pod,
    pod_affinity,
    pod_term,
    selector,
    session,
    spread_constraint,
    task_of,
)
from tests.plugins.predicates.conftest import HOST, ZONE, predicates_conf, zoned

NODES = ["n1", "n2", "n3", "n4"]
X = selector({"app": "x"})

PROBES: list[Obj] = [
    pod("probe-anti", labels={"app": "y"}, affinity=pod_affinity(anti=[pod_term(X, HOST)])),
    pod("probe-near", labels={"app": "y"}, affinity=pod_affinity(required=[pod_term(X, ZONE)])),
    pod("probe-spread", labels={"app": "x"}, spread=[spread_constraint(1, HOST, X)]),
    pod("probe-x", labels={"app": "x"}),
]


@st.composite
def placed(draw: st.DrawFn, i: int) -> Obj:
    fields: dict[str, Any] = {"labels": {"app": draw(st.sampled_from(["x", "y"]))}}
    if draw(st.integers(0, 3)) == 0:
        fields["affinity"] = pod_affinity(anti=[pod_term(X, draw(st.sampled_from([HOST, ZONE])))])
    node_name = draw(st.sampled_from(["", *NODES]))
    return pod(f"r{i}", node_name=node_name, cpu="1", **fields)


@st.composite
def worlds(draw: st.DrawFn) -> list[Obj]:
    objs: list[Obj] = [zoned(n, "a" if n in ("n1", "n2") else "b") for n in NODES]
    objs += [draw(placed(i)) for i in range(draw(st.integers(2, 8)))]
    return objs + PROBES


OPS = st.lists(
    st.tuples(
        st.sampled_from(["evict", "pipeline", "discard", "commit"]),
        st.integers(0, 7),
        st.sampled_from(NODES),
    ),
    max_size=12,
)


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
@given(worlds(), OPS)
def test_kept_counts_equal_fresh_ones_after_any_statement_operations(
    objs: list[Obj], ops: list[tuple[str, int, str]]
) -> None:
    ssn = session(objs, predicates_conf())
    assert_fresh(ssn)
    stmt = Statement(ssn)
    for op, index, node_name in ops:
        name = f"ns/r{index}"
        if name not in {t.key for job in ssn.jobs.values() for t in job.tasks.values()}:
            continue
        task = task_of(ssn, name)
        if op == "evict" and task.status == TaskStatus.RUNNING:
            stmt.evict(task, "test")
        elif op == "pipeline" and task.status == TaskStatus.PENDING:
            with contextlib.suppress(StatementError):
                stmt.pipeline(task, node_name)
        elif op == "discard":
            stmt.discard()
        elif op == "commit":
            stmt.commit()
        assert_fresh(ssn)
