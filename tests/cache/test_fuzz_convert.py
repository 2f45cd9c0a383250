"""Kubernetes objects of every watched kind with fields of random types, through the
converters and into the cluster state: a ``ConversionError`` naming the problem (the state
skips the object) or a usable model, never another exception, and the state stays usable."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scheduler_core.accounting.keeper import QueueAccounting
from scheduler_core.cache.convert import (
    ConversionError,
    node_to_info,
    pdb_to_info,
    pod_to_task,
    podgroup_to_info,
    priority_class_value,
    queue_to_info,
)
from scheduler_core.cache.state import ClusterState
from scheduler_core.conf import default_configuration
from tests.builders import node, pdb, pod, podgroup, priority_class, queue

HUGE = 2**70
DELETE = object()

scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-HUGE, max_value=HUGE)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=16)
    | st.sampled_from(["1", "100m", "-1", "1e400", "1Ki", "9" * 30, "Running", "Closed", "true"])
)
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=10,
)


def _paths(obj: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix] if prefix else []
    if isinstance(obj, dict):
        for key, value in obj.items():
            out += _paths(value, (*prefix, key))
    elif isinstance(obj, list):
        for index, value in enumerate(obj):
            out += _paths(value, (*prefix, index))
    return out


def _apply(obj: Any, path: tuple[Any, ...], value: Any) -> None:
    parent = obj
    for step in path[:-1]:
        try:
            parent = parent[step]
        except (KeyError, IndexError, TypeError):
            return
    last = path[-1]
    in_dict = isinstance(parent, dict) and isinstance(last, str)
    in_list = isinstance(parent, list) and isinstance(last, int) and last < len(parent)
    if not (in_dict or in_list):
        return
    if value is not DELETE:
        parent[last] = value
    elif in_list or last in parent:
        del parent[last]


TEMPLATES: dict[str, dict[str, Any]] = {
    "Pod": pod("p", group="g", node_name="n1", priority_class="high"),
    "Node": node("n1", taints=[{"key": "k", "effect": "NoSchedule"}]),
    "Queue": queue("q", capability={"cpu": "4"}),
    "PodGroup": podgroup("g", 2, queue="q"),
    "PriorityClass": priority_class("high", 100),
    "PodDisruptionBudget": pdb("budget", {"app": "x"}, 1),
}
CONVERTERS: dict[str, Callable[[dict[str, Any]], Any]] = {
    "Pod": lambda o: pod_to_task(o, {"high": 100}),
    "Node": node_to_info,
    "Queue": queue_to_info,
    "PodGroup": podgroup_to_info,
    "PriorityClass": priority_class_value,
    "PodDisruptionBudget": pdb_to_info,
}


@st.composite
def mutated(draw: st.DrawFn, kind: str) -> dict[str, Any]:
    obj = copy.deepcopy(TEMPLATES[kind])
    paths = _paths(obj)
    for _ in range(draw(st.integers(min_value=1, max_value=4))):
        _apply(obj, draw(st.sampled_from(paths)), draw(values | st.just(DELETE)))
    return obj


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(sorted(TEMPLATES)).flatmap(lambda k: st.tuples(st.just(k), mutated(k))))
def test_a_malformed_object_is_a_conversion_error_or_a_model(case: tuple[str, Any]) -> None:
    kind, obj = case
    try:
        CONVERTERS[kind](obj)
    except ConversionError as exc:
        assert str(exc)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.sampled_from(sorted(TEMPLATES)).flatmap(lambda k: st.tuples(st.just(k), mutated(k))),
        min_size=1,
        max_size=8,
    )
)
def test_the_state_skips_what_it_cannot_use_and_stays_usable(objects: list[Any]) -> None:
    state = ClusterState()
    for kind in TEMPLATES:  # a sound cluster first, then the malformed objects over it
        state.upsert(kind, copy.deepcopy(TEMPLATES[kind]))
    for kind, obj in objects:
        state.upsert(kind, obj)
    state.counts()
    QueueAccounting(state, default_configuration()).session()
