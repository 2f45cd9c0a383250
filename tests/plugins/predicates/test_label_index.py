"""The label index narrows the pods a PreFilter walks, and pods with the same constraints
share one state: the states and verdicts stay those of a walk over every pod, whatever a
statement does (evictions, placements of other pods and of the judged pods themselves)."""

from __future__ import annotations

import dataclasses
from collections import Counter
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler_core.api.pod_constraints import (
    DOES_NOT_EXIST,
    EXISTS,
    IN,
    NOT_IN,
    LabelRequirement,
    LabelSelector,
)
from scheduler_core.cache.state import ClusterState
from scheduler_core.conf import load_configuration
from scheduler_core.controller.snapshot import sharing_tasks
from scheduler_core.framework.framework import open_session
from scheduler_core.framework.memo import SessionMemos
from scheduler_core.framework.session import Session
from scheduler_core.plugins.predicates.inter_pod_affinity import (
    AffinityState,
    inter_pod_affinity_error,
)
from scheduler_core.plugins.predicates.label_index import LabelIndex
from scheduler_core.plugins.predicates.plugin import PredicatesPlugin
from scheduler_core.plugins.predicates.topology_spread import SpreadState, topology_spread_error
from tests.builders import (
    Obj,
    expr,
    pod,
    pod_affinity,
    pod_term,
    selector,
    session,
    spread_constraint,
    task_of,
)
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
    zoned,
)

X_OR_Y = selector(None, expr("app", "In", "x", "y"))
HAS_TIER = selector(None, expr("tier", "Exists"))
NOT_X = selector(None, expr("app", "NotIn", "x"))


def twins(name: str, **fields: Any) -> list[Obj]:
    """Two waiting pods with the same constraints (they share their states)."""
    return [pod(f"{name}-{i}", cpu="1", **fields) for i in (1, 2)]


PROBES: list[Obj] = [
    *twins("anti", labels={"app": "y"}, affinity=pod_affinity(anti=[pod_term(X, HOST)])),
    *twins("anti-xy", labels={"app": "z"}, affinity=pod_affinity(anti=[pod_term(X_OR_Y, ZONE)])),
    *twins("near", labels={"app": "y"}, affinity=pod_affinity(required=[pod_term(X, ZONE)])),
    *twins("tiered", labels={"app": "y"}, affinity=pod_affinity(anti=[pod_term(HAS_TIER, HOST)])),
    *twins("not-x", labels={"app": "y"}, affinity=pod_affinity(anti=[pod_term(NOT_X, HOST)])),
    *twins("spread", labels={"app": "x"}, spread=[spread_constraint(1, ZONE, X)]),
    *twins("spread-host", labels={"app": "x"}, spread=[spread_constraint(1, HOST, X_OR_Y)]),
    *twins(
        "spread-zone-a",
        labels={"app": "x"},
        node_selector={ZONE: "a"},
        spread=[spread_constraint(1, HOST, X)],
    ),
    *twins("plain", labels={"app": "x"}),
]
PROBE_NAMES = [obj["metadata"]["name"] for obj in PROBES]


OPS = operations([*(f"r{i}" for i in range(10)), *PROBE_NAMES])


def label_worlds() -> st.SearchStrategy[list[Obj]]:
    """Up to ten placed pods, with app x, y or z and maybe a tier, beside the probes."""
    return worlds(PROBES, most=10, apps=("x", "y", "z"), anti=(X, X_OR_Y), tiers=True)


def plugin_of(ssn: Session) -> PredicatesPlugin:
    plugin = ssn.plugins["predicates"]
    assert isinstance(plugin, PredicatesPlugin)
    return plugin


def assert_as_walked(ssn: Session) -> None:
    plugin = plugin_of(ssn)
    namespaces = ssn.snapshot.namespace_labels
    for name in PROBE_NAMES:
        probe = task_of(ssn, f"ns/{name}")
        for node_name in NODES:
            node = ssn.nodes[node_name]
            kept = plugin.pod_filters.check(probe, node)  # the static checks are not at stake
            fresh = inter_pod_affinity_error(
                probe, node, ssn.nodes, namespaces
            ) or topology_spread_error(probe, node, ssn.nodes)
            assert (kept and (kept.task, kept.code, kept.reasons)) == (
                fresh and (fresh.task, fresh.code, fresh.reasons)
            ), (name, node_name)
        walked = AffinityState.build(probe, ssn.nodes.values(), namespaces)
        walked_spread = SpreadState.build(probe, ssn.nodes.values())
        kept_states = plugin.pod_filters.states(probe)
        # States built now from the index as it stands (a pod placed nowhere gets the
        # shared kind), not only those kept and recounted since the session opened.
        shared = probe.uid not in ssn.nodes[probe.node_name].tasks if probe.node_name else True
        stand_in = dataclasses.replace(probe, uid="") if shared else probe
        new_states = plugin.pod_filters.build_states(stand_in, ssn, shared=shared)
        for affinity, spread in (kept_states, new_states):
            if affinity is not None:
                for kind in ("affinity", "anti", "existing"):
                    assert +Counter(getattr(affinity.counts, kind)) == +Counter(
                        getattr(walked.counts, kind)
                    ), (name, kind)
            else:
                assert walked.trivial, name
            kept_counts = [c.counts for c in spread.constraints] if spread is not None else []
            assert kept_counts == [c.counts for c in walked_spread.constraints], name
    index = plugin.pod_filters._index
    if index is not None:
        fresh_index = LabelIndex(ssn.nodes)
        kept_values = index.values_snapshot()
        fresh_index.index_keys(kept_values[0])
        assert kept_values == fresh_index.values_snapshot()
        assert index.anti_snapshot() == fresh_index.anti_snapshot()


@settings(max_examples=60, deadline=None, derandomize=True)
@given(label_worlds(), OPS)
def test_indexed_shared_states_equal_walked_ones_after_any_statement_operations(
    objs: list[Obj], ops: list[Operation]
) -> None:
    ssn = session(objs, predicates_conf())
    assert_as_walked(ssn)
    apply_operations(ssn, ops, assert_as_walked)


def test_twins_share_one_state_and_each_verdict_names_its_pod() -> None:
    objs = [zoned("n1", "a"), pod("x", node_name="n1", labels={"app": "x"}), *PROBES]
    ssn = session(objs, predicates_conf())
    plugin = plugin_of(ssn)
    one, two = task_of(ssn, "ns/anti-1"), task_of(ssn, "ns/anti-2")
    err_one = ssn.predicate(one, ssn.nodes["n1"])
    err_two = ssn.predicate(two, ssn.nodes["n1"])
    assert err_one is not None and err_one.task == "ns/anti-1"
    assert err_two is not None and err_two.task == "ns/anti-2"
    assert plugin.pod_filters.states(one) is plugin.pod_filters.states(two)


def _sel(*reqs: tuple[str, str, tuple[str, ...]]) -> LabelSelector:
    return LabelSelector(tuple(LabelRequirement(k, op, frozenset(v)) for k, op, v in reqs))


@pytest.mark.parametrize(
    ("selector_", "expected"),
    [
        (None, set()),  # no selector selects no pod
        (_sel(), None),  # an empty selector selects every pod
        (_sel(("app", IN, ("x",))), {"n1", "n2"}),
        (_sel(("app", IN, ("x", "y"))), {"n1", "n2", "n3"}),
        (_sel(("app", IN, ("nope",))), set()),
        (_sel(("tier", EXISTS, ())), {"n2"}),
        (_sel(("app", IN, ("x", "y")), ("tier", EXISTS, ())), {"n2"}),  # the smaller
        (_sel(("app", NOT_IN, ("x",))), None),
        (_sel(("tier", DOES_NOT_EXIST, ())), None),
        (_sel(("app", NOT_IN, ("x",)), ("app", IN, ("y",))), {"n3"}),
    ],
)
def test_candidates_come_from_the_most_selective_in_or_exists_requirement(
    selector_: LabelSelector | None, expected: set[str] | None
) -> None:
    objs = [
        *(zoned(n) for n in ("n1", "n2", "n3", "n4")),
        pod("a", node_name="n1", labels={"app": "x"}),
        pod("b", node_name="n2", labels={"app": "x", "tier": "web"}),
        pod("c", node_name="n3", labels={"app": "y"}),
    ]
    ssn = session(objs, predicates_conf())
    assert LabelIndex(ssn.nodes).candidates(selector_) == expected


# --- label values kept for the owner's next session ---------------------------------------


def _cycle(state: ClusterState, memos: SessionMemos) -> Session:
    """A session as the reclaim loop opens one: private jobs and nodes over the cache's
    task objects, with the loop's memos."""
    with state.locked():
        snapshot = sharing_tasks(state.shared_snapshot())
    return open_session(
        snapshot, load_configuration(predicates_conf()), clone=False, shared_tasks=True, memos=memos
    )


def _index_of(ssn: Session) -> LabelIndex:
    index = plugin_of(ssn).pod_filters.label_index()
    index.index_keys(["app"])
    return index


@settings(max_examples=40, deadline=None, derandomize=True)
@given(label_worlds(), OPS, OPS)
def test_a_session_at_the_same_epoch_starts_from_kept_values_that_equal_a_walk(
    objs: list[Obj], first_ops: list[Operation], later_ops: list[Operation]
) -> None:
    state = ClusterState()
    for obj in objs:
        state.upsert(str(obj["kind"]), obj)
    memos = SessionMemos()
    for ops in (first_ops, later_ops, []):  # the third one only looks
        ssn = _cycle(state, memos)
        index = _index_of(ssn)
        walked = LabelIndex(ssn.nodes)
        walked.index_keys(["app"])
        assert index.values_snapshot() == walked.values_snapshot()
        # What a session's statements do to its own index never reaches the next one.
        apply_operations(ssn, ops, assert_as_walked)


def test_a_pod_placed_in_the_cluster_is_seen_by_the_next_session() -> None:
    state = ClusterState()
    for obj in (zoned("n1"), zoned("n2"), pod("x", node_name="n1", labels={"app": "x"})):
        state.upsert(str(obj["kind"]), obj)
    memos = SessionMemos()
    first = _index_of(_cycle(state, memos))
    assert first.candidates(_sel(("app", IN, ("x",)))) == {"n1"}
    state.upsert("Pod", pod("y", node_name="n2", labels={"app": "x"}))
    assert _index_of(_cycle(state, memos)).candidates(_sel(("app", IN, ("x",)))) == {"n1", "n2"}


def test_a_forked_cluster_at_an_equal_epoch_value_does_not_take_the_others_values() -> None:
    state = ClusterState()
    for obj in (zoned("n1"), zoned("n2"), pod("x", node_name="n1", labels={"app": "x"})):
        state.upsert(str(obj["kind"]), obj)
    memos = SessionMemos()
    fork = state.fork()
    # One new pod placed in each: the two clusters' epochs move alike, to equal values.
    state.upsert("Pod", pod("y", node_name="n2", labels={"app": "x"}))
    fork.upsert("Pod", pod("z", node_name="n1", labels={"app": "z"}))
    ours, theirs = (s.shared_snapshot().placement_epoch for s in (state, fork))
    assert ours.value == theirs.value and not ours.same_placements(theirs)
    _index_of(_cycle(state, memos))
    forked = _index_of(_cycle(fork, memos))
    assert forked.candidates(_sel(("app", IN, ("x",)))) == {"n1"}
