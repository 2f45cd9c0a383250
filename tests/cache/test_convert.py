"""Kubernetes objects become engine objects with Volcano's rules, and bad fields are named."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import replace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler_core.api.types import PodGroupPhase, QueueState, TaskStatus
from scheduler_core.cache.builder import build_snapshot
from scheduler_core.cache.convert import (
    ConversionError,
    node_to_info,
    pdb_to_info,
    placement_convertible,
    pod_to_task,
    podgroup_to_info,
    queue_to_info,
    replaced_placement,
)
from scheduler_core.cache.objects import collect
from tests.builders import pod


def test_pod_request_sums_containers_and_adds_one_pod() -> None:
    p = pod(
        "p",
        spec={
            "containers": [
                {"resources": {"requests": {"cpu": "500m", "memory": "1Gi"}}},
                {"resources": {"requests": {"cpu": "250m", "nvidia.com/gpu": "1"}}},
            ]
        },
    )
    t = pod_to_task(p)
    assert t.resreq.milli_cpu == 750
    assert t.resreq.memory == 2**30
    assert t.resreq.get("nvidia.com/gpu") == 1000  # scalars in milli units
    assert t.resreq.get("pods") == 1


def test_init_containers_take_the_max_and_sidecars_add_up() -> None:
    p = pod(
        "p",
        spec={
            "containers": [{"resources": {"requests": {"cpu": "1"}}}],
            "initContainers": [
                {"resources": {"requests": {"cpu": "3"}}},
                {"restartPolicy": "Always", "resources": {"requests": {"cpu": "500m"}}},
                {"resources": {"requests": {"cpu": "2"}}},
            ],
            "overhead": {"cpu": "100m"},
        },
    )
    # regular init max(3, 2 + 0.5 sidecar) = 3; containers 1 + sidecar 0.5 = 1.5; + overhead
    assert pod_to_task(p).resreq.milli_cpu == 3100


def test_pod_level_resources_take_precedence() -> None:
    p = pod("p", spec={"resources": {"requests": {"cpu": "4"}}})
    assert pod_to_task(p).resreq.milli_cpu == 4000


def test_a_pod_that_requests_nothing_is_best_effort() -> None:
    assert pod_to_task(pod("p", spec={"containers": [{"name": "c"}]})).best_effort


@pytest.mark.parametrize(
    ("annotations", "labels", "expected"),
    [
        ({}, {}, True),
        ({"volcano.sh/preemptable": "false"}, {}, False),
        ({"volcano.sh/preemptable": "true"}, {"volcano.sh/preemptable": "false"}, True),
        ({}, {"volcano.sh/preemptable": "false"}, False),
        ({"volcano.sh/preemptable": "nope"}, {}, False),
    ],
)
def test_preemptable_annotation_then_label_default_true(
    annotations: dict[str, str], labels: dict[str, str], expected: bool
) -> None:
    p = pod("p")
    p["metadata"]["annotations"] = annotations
    p["metadata"]["labels"] = labels
    assert pod_to_task(p).preemptable is expected


def test_task_priority_defaults_to_one_and_the_annotation_overrides() -> None:
    assert pod_to_task(pod("p")).priority == 1
    assert pod_to_task(pod("p", priority=100)).priority == 100
    p = pod("p", priority=100)
    p["metadata"]["annotations"] = {"volcano.sh/task-priority": "7"}
    t = pod_to_task(p)
    assert t.priority == 7 and t.pod_priority == 100


def test_pod_status_fields() -> None:
    p = pod("p", node_name="n1", preemption_policy="Never")
    p["status"] = {
        "phase": "Running",
        "nominatedNodeName": "n2",
        "conditions": [
            {"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler"}
        ],
    }
    t = pod_to_task(p)
    assert t.status == TaskStatus.RUNNING and t.node_name == "n1"
    assert t.preemption_policy == "Never" and t.nominated_node_name == "n2"
    assert t.disruption_target


@pytest.mark.parametrize(
    ("condition", "unschedulable"),
    [
        ({"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}, True),
        ({"type": "PodScheduled", "status": "False", "reason": "SchedulingGated"}, False),
        ({"type": "PodScheduled", "status": "False", "reason": "SchedulerError"}, False),
        ({"type": "PodScheduled", "status": "True"}, False),
        ({"type": "Ready", "status": "False", "reason": "Unschedulable"}, False),
        (None, False),
    ],
)
def test_a_pod_is_unschedulable_only_when_kube_scheduler_found_no_node_for_it(
    condition: dict[str, str] | None, unschedulable: bool
) -> None:
    p = pod("p", cpu="1")
    if condition is not None:
        p["status"]["conditions"] = [condition]
    assert pod_to_task(p).unschedulable is unschedulable
    assert pod_to_task(p).clone().unschedulable is unschedulable


def test_invalid_quantity_names_the_pod_and_the_field() -> None:
    p = pod("p", spec={"containers": [{"resources": {"requests": {"cpu": "1.2.3"}}}]})
    with pytest.raises(ConversionError) as err:
        pod_to_task(p)
    assert "Pod ns/p" in str(err.value)
    assert "spec.containers[0].resources.requests" in str(err.value)
    assert "1.2.3" in str(err.value)


def test_queue_defaults_open_weight_one_reclaimable() -> None:
    q = queue_to_info({"kind": "Queue", "metadata": {"name": "q"}})
    assert q.state == QueueState.OPEN and q.weight == 1 and q.reclaimable()
    assert q.capability is None and q.guarantee is None


def test_queue_fields() -> None:
    q = queue_to_info(
        {
            "kind": "Queue",
            "metadata": {"name": "q"},
            "spec": {
                "weight": 3,
                "capability": {"cpu": "10"},
                "guarantee": {"resource": {"cpu": "2"}},
                "reclaimable": False,
                "parent": "eng",
                "priority": 5,
            },
            "status": {"state": "Closed"},
        }
    )
    assert (q.weight, q.parent, q.priority, q.reclaimable()) == (3, "eng", 5, False)
    assert q.capability is not None and q.capability.milli_cpu == 10000
    assert q.guarantee is not None and q.guarantee.milli_cpu == 2000
    assert q.state == QueueState.CLOSED


@pytest.mark.parametrize(
    ("spec", "status", "message"),
    [
        ({"weight": "heavy"}, {}, "spec.weight: expected an integer"),
        ({"capability": {"cpu": "lots"}}, {}, "spec.capability"),
        ({"capability": {"cpu": "-1"}}, {}, "spec.capability.cpu.*must not be negative"),
        ({"deserved": {"memory": "-1Gi"}}, {}, "spec.deserved.memory.*must not be negative"),
        ({"reclaimable": "no"}, {}, "spec.reclaimable must be true or false"),
        ({}, {"state": "Sleeping"}, "status.state 'Sleeping'"),
    ],
)
def test_bad_queue_fields_are_named(
    spec: dict[str, Any], status: dict[str, Any], message: str
) -> None:
    with pytest.raises(ConversionError, match=message):
        queue_to_info({"kind": "Queue", "metadata": {"name": "q"}, "spec": spec, "status": status})


def test_podgroup_fields_and_defaults() -> None:
    pg = podgroup_to_info(
        {
            "kind": "PodGroup",
            "metadata": {"name": "g", "namespace": "ns"},
            "spec": {"minMember": 3, "minTaskMember": {"ps": 1}, "minResources": {"cpu": "3"}},
        }
    )
    assert pg.uid == "ns/g" and pg.queue == "default" and pg.min_member == 3
    assert pg.min_task_member == {"ps": 1} and pg.phase == PodGroupPhase.PENDING
    assert pg.min_resources is not None and pg.min_resources.milli_cpu == 3000


def test_node_allocatable_and_constraints() -> None:
    n = node_to_info(
        {
            "kind": "Node",
            "metadata": {"name": "n", "labels": {"zone": "a"}},
            "spec": {
                "unschedulable": True,
                "taints": [{"key": "gpu", "value": "true", "effect": "NoSchedule"}],
            },
            "status": {"allocatable": {"cpu": "8", "memory": "16Gi", "pods": "110"}},
        }
    )
    assert n.allocatable.milli_cpu == 8000 and n.allocatable.max_task_num == 110
    assert n.idle.milli_cpu == 8000 and n.unschedulable and n.taints[0].key == "gpu"


def test_pdb_null_selector_selects_nothing_and_empty_selects_all() -> None:
    none = pdb_to_info({"metadata": {"name": "a", "namespace": "ns"}, "spec": {}})
    all_ = pdb_to_info({"metadata": {"name": "b", "namespace": "ns"}, "spec": {"selector": {}}})
    assert not none.matches("ns", {"app": "x"})
    assert all_.matches("ns", {"app": "x"}) and not all_.matches("other", {})


def test_snapshot_groups_pods_into_jobs_and_nodes() -> None:
    objs: list[dict[str, Any]] = [
        {
            "kind": "Node",
            "metadata": {"name": "n1"},
            "status": {"allocatable": {"cpu": "4", "pods": "10"}},
        },
        {"kind": "Queue", "metadata": {"name": "q"}},
        {
            "kind": "PodGroup",
            "metadata": {"name": "g", "namespace": "ns"},
            "spec": {"minMember": 2, "queue": "q", "priorityClassName": "high"},
        },
        {
            "kind": "PodGroup",
            "metadata": {"name": "lost", "namespace": "ns"},
            "spec": {"queue": "no-such-queue"},
        },
        {"kind": "PriorityClass", "metadata": {"name": "high"}, "value": 1000},
    ]
    a = pod("a", node_name="n1")
    a["metadata"]["annotations"] = {"scheduling.k8s.io/group-name": "g"}
    a["status"] = {"phase": "Running"}
    b = pod("b")
    b["metadata"]["annotations"] = {"scheduling.volcano.sh/queue-name": "q"}
    c = pod("c", node_name="n1")
    c["metadata"]["annotations"] = {"scheduling.k8s.io/group-name": "lost"}
    c["status"] = {"phase": "Running"}
    snap = build_snapshot(collect([*objs, a, b, c]))
    assert set(snap.jobs) == {"ns/g", "ns/podgroup-ns-b"}  # "lost" has no queue
    assert snap.jobs["ns/g"].priority == 1000 and snap.jobs["ns/g"].min_available == 2
    lone = snap.jobs["ns/podgroup-ns-b"]
    assert lone.queue == "q" and lone.min_available == 1 and lone.synthesized
    assert lone.min_resources is not None and lone.min_resources.milli_cpu == 1000
    assert snap.nodes["n1"].used.milli_cpu == 2000  # a and c both use the node
    assert {"default", "root", "q"} <= set(snap.queues)


def test_preferred_node_affinity_terms_are_kept_for_scoring() -> None:
    p = pod(
        "p",
        affinity={
            "nodeAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "weight": 20,
                        "preference": {
                            "matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]
                        },
                    }
                ]
            }
        },
    )
    terms = pod_to_task(p).preferred_affinity
    assert len(terms) == 1 and terms[0][0] == 20
    assert terms[0][1][0].key == "zone" and terms[0][1][0].values == ("a",)


@pytest.mark.parametrize(
    ("resources", "field"),
    [
        ({"requests": {"nvidia.com/gpu": "-100"}}, "requests.nvidia.com/gpu"),
        ({"requests": {"cpu": "-1"}}, "requests.cpu"),
        ({"requests": {"memory": "-1Ki"}}, "requests.memory"),
    ],
)
def test_a_negative_request_is_refused_naming_the_field(
    resources: dict[str, Any], field: str
) -> None:
    p = pod("p", spec={"containers": [{"resources": resources}]})
    with pytest.raises(ConversionError, match="must not be negative") as err:
        pod_to_task(p)
    assert field in str(err.value) and "Pod ns/p" in str(err.value)


class _ReadOnly(Mapping[str, Any]):
    """A mapping that is not a dict: what a caller other than the JSON decoder may pass."""

    def __init__(self, data: dict[str, Any]) -> None:
        self._data = data

    def __getitem__(self, key: str) -> Any:
        return self._data[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)


def test_a_pod_given_as_any_mapping_converts_as_its_dict_does() -> None:
    """Dicts take a shortcut past the mapping test; any other mapping is still read."""
    obj = pod("p", cpu="2", node_name="n1", labels={"app": "a"})
    as_dict = pod_to_task(obj)
    assert as_dict.resreq.milli_cpu == 2000 and as_dict.labels == {"app": "a"}
    as_mapping = pod_to_task(_ReadOnly(obj))
    assert as_mapping.resreq.to_quantities() == as_dict.resreq.to_quantities()
    assert replace(as_mapping, resreq=as_dict.resreq, init_resreq=as_dict.init_resreq) == as_dict


# --- a bound pod's task from its last conversion --------------------------------------------

POD_SHAPE = st.fixed_dictionaries(
    {
        "priority": st.sampled_from([None, 0, 7]),
        "priority_class": st.sampled_from(["", "high"]),
        "group": st.sampled_from([None, "g1"]),
        "labels": st.sampled_from([{}, {"app": "a"}]),
        "tolerations": st.sampled_from([(), ({"key": "k", "operator": "Exists"},)]),
        "deleting": st.booleans(),
    }
)
PLACEMENT = st.fixed_dictionaries(
    {
        "node_name": st.sampled_from(["", "n1", "n2"]),
        "phase": st.sampled_from([None, "Pending", "Running", "Succeeded", "Failed"]),
        "nominated": st.sampled_from(["", "n2"]),
        "started": st.sampled_from(["", "2026-01-01T00:00:00Z"]),
        "unschedulable": st.booleans(),
        "disruption_target": st.booleans(),
    }
)


@settings(max_examples=200, deadline=None, derandomize=True)
@given(POD_SHAPE, PLACEMENT, PLACEMENT)
def test_a_task_made_from_the_last_conversion_equals_converting_the_moved_pod(
    shape: dict[str, Any], before: dict[str, Any], after: dict[str, Any]
) -> None:
    """Two ways to one task: a pod that moved only in its node name and status (a bind, a
    status update) converted again, or its last conversion with those fields read anew."""
    classes = {"high": 1000}
    old = pod_to_task(pod("p", **shape, **before), classes)
    moved = pod("p", **shape, **after)
    fresh = pod_to_task(moved, classes)
    if not placement_convertible(old, moved):
        assert shape["priority"] is None  # looked up by class: converted afresh
        return
    made = replaced_placement(old, moved)
    assert made.resreq is old.resreq  # requests and constraints shared, as clones share them
    assert made.resreq.to_quantities() == fresh.resreq.to_quantities()
    assert replace(made, resreq=fresh.resreq, init_resreq=fresh.init_resreq) == fresh


def test_a_pod_with_device_claims_is_converted_afresh() -> None:
    claims = {"resourceClaims": [{"name": "gpu", "resourceClaimName": "c1"}]}
    old = pod_to_task(pod("p", priority=0, spec=claims))
    assert old.resource_claims
    assert not placement_convertible(old, pod("p", priority=0, node_name="n1", spec=claims))
