"""An accounting session carried across cluster events (its memos warm) decides exactly as
one built fresh on the same cluster, queue by queue."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from scheduler_core.api.resource import Resource
from scheduler_core.cache.state import ClusterState
from scheduler_core.conf import default_configuration
from scheduler_core.engine import close_session, open_session
from scheduler_core.report import queue_attrs
from tests.builders import accounting, node, pod, podgroup, queue

Row = tuple[object, ...]
Event = Callable[[ClusterState], None]


def _amounts(resource: Resource) -> tuple[float, float, tuple[tuple[str, float], ...]]:
    scalars = tuple(sorted((resource.scalars or {}).items()))
    return resource.milli_cpu, resource.memory, scalars


def _rows(attrs: Any) -> dict[str, Row]:
    return {
        name: (
            _amounts(attr.deserved),
            _amounts(attr.allocated),
            _amounts(attr.request),
            _amounts(attr.real_capability),
            attr.share,
        )
        for name, attr in attrs.items()
    }


def _fresh(state: ClusterState) -> dict[str, Row]:
    """A session with no memo to draw on (none passed: it starts afresh), its queue sums
    taken from walking the jobs."""
    snapshot = state.snapshot()
    snapshot.queue_usage = None
    ssn = open_session(snapshot, default_configuration(), clone=False, read_only=True)
    rows = _rows(queue_attrs(ssn))
    close_session(ssn, update_phases=False)
    return rows


def _group(name: str, queue_name: str, members: int, *, on: str = "") -> Event:
    """A PodGroup and its pods arriving (bound to ``on`` when given)."""
    objs = [podgroup(name, queue=queue_name)]
    objs += [pod(f"{name}-{i}", group=name, cpu="1", node_name=on) for i in range(members)]

    def apply(state: ClusterState) -> None:
        for obj in objs:
            state.upsert(obj["kind"], obj)

    return apply


def _put(obj: dict[str, Any]) -> Event:
    return lambda state: state.upsert(obj["kind"], obj)


def _gone(kind: str, key: str) -> Event:
    return lambda state: state.delete(kind, key)


EVENTS: list[tuple[str, Event]] = [
    ("pending group in q1", _group("g1", "q1", 3)),
    ("running group in q2", _group("g2", "q2", 2, on="n1")),
    ("queue q3 added with a guarantee", _put(queue("q3", 2, guarantee={"cpu": "2"}))),
    ("group in q3", _group("g3", "q3", 4)),
    ("q1 weight and capability updated", _put(queue("q1", 5, capability={"cpu": "3"}))),
    ("a pod of q2 deleted", _gone("Pod", "ns/g2-0")),
    ("a pod of q1 bound", _put(pod("g1-0", group="g1", cpu="1", node_name="n2"))),
    ("node added", _put(node("n3", cpu="16"))),
    ("node resized", _put(node("n1", cpu="2"))),
    ("q3 guarantee raised", _put(queue("q3", 2, guarantee={"cpu": "6"}))),
    ("node removed", _gone("Node", "n3")),
    ("queue q2 removed", _gone("Queue", "q2")),
    ("q2 back with another weight", _put(queue("q2", 7))),
]


def test_an_accounting_carried_across_events_equals_one_built_fresh() -> None:
    acct, _ = accounting([node("n1", cpu="8"), node("n2", cpu="8"), queue("q1", 1), queue("q2", 3)])
    state = acct.state
    acct.session()  # the memos are warm from here on
    for label, event in EVENTS:
        event(state)
        carried = _rows(queue_attrs(acct.session()))
        assert carried == _fresh(state), label
    assert set(carried) >= {"q1", "q2", "q3"}  # every queue with jobs was compared
