"""predicates: each check with its Code and message, the arguments that switch checks off,
the per-(job, role, node) cache, and what preemption keeps (``predicate_for_preempt``)."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler_core.api.resource import Resource
from scheduler_core.framework.status import Code
from scheduler_core.plugins.predicates import (
    ERR_REASON_NODE_AFFINITY,
    ERR_REASON_UNSCHEDULABLE,
    NODE_POD_NUMBER_EXCEEDED,
    resource_fit_error,
)
from tests.builders import node, pod, podgroup, session, task_of, tiers

PREDICATES = tiers("predicates")
U = Code.UNSCHEDULABLE
UU = Code.UNSCHEDULABLE_AND_UNRESOLVABLE


def affinity(*terms: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": list(t)} for t in terms]
            }
        }
    }


def expr(key: str, op: str, *values: str) -> dict[str, Any]:
    return {"key": key, "operator": op, "values": list(values)}


def check(n: dict[str, Any], p: dict[str, Any], conf: str = PREDICATES) -> Any:
    ssn = session([n, p], conf)
    return ssn.predicate(task_of(ssn, f"ns/{p['metadata']['name']}"), ssn.nodes["n1"])


LABELS = {"zone": "a", "disk": "ssd", "cores": "16"}
TAINT_NS = {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}

CASES: list[tuple[str, dict[str, Any], dict[str, Any], Code | None, list[str]]] = [
    ("fits", node("n1", labels=LABELS), pod("p"), None, []),
    # --- node unschedulable
    ("cordoned", node("n1", unschedulable=True), pod("p"), UU, [ERR_REASON_UNSCHEDULABLE]),
    (
        "cordoned, tolerated",
        node("n1", unschedulable=True),
        pod(
            "p",
            tolerations=[
                {
                    "key": "node.kubernetes.io/unschedulable",
                    "operator": "Exists",
                    "effect": "NoSchedule",
                }
            ],
        ),
        None,
        [],
    ),
    (
        "cordoned, tolerate-everything",
        node("n1", unschedulable=True),
        pod("p", tolerations=[{"operator": "Exists"}]),
        None,
        [],
    ),
    (
        "cordoned, NoExecute toleration does not help",
        node("n1", unschedulable=True),
        pod(
            "p",
            tolerations=[
                {
                    "key": "node.kubernetes.io/unschedulable",
                    "operator": "Exists",
                    "effect": "NoExecute",
                }
            ],
        ),
        UU,
        [ERR_REASON_UNSCHEDULABLE],
    ),
    # --- nodeSelector
    ("selector match", node("n1", labels=LABELS), pod("p", node_selector={"zone": "a"}), None, []),
    (
        "selector value differs",
        node("n1", labels=LABELS),
        pod("p", node_selector={"zone": "b"}),
        UU,
        [ERR_REASON_NODE_AFFINITY],
    ),
    (
        "selector label missing",
        node("n1", labels=LABELS),
        pod("p", node_selector={"zone": "a", "gpu": "yes"}),
        UU,
        [ERR_REASON_NODE_AFFINITY],
    ),
    # --- required node affinity: operators
    (
        "In",
        node("n1", labels=LABELS),
        pod("p", affinity=affinity([expr("zone", "In", "b", "a")])),
        None,
        [],
    ),
    (
        "In miss",
        node("n1", labels=LABELS),
        pod("p", affinity=affinity([expr("zone", "In", "b")])),
        UU,
        [ERR_REASON_NODE_AFFINITY],
    ),
    (
        "NotIn",
        node("n1", labels=LABELS),
        pod("p", affinity=affinity([expr("zone", "NotIn", "b")])),
        None,
        [],
    ),
    (
        "NotIn miss",
        node("n1", labels=LABELS),
        pod("p", affinity=affinity([expr("zone", "NotIn", "a")])),
        UU,
        [ERR_REASON_NODE_AFFINITY],
    ),
    (
        "NotIn absent label",
        node("n1", labels=LABELS),
        pod("p", affinity=affinity([expr("rack", "NotIn", "r1")])),
        None,
        [],
    ),
    (
        "Exists",
        node("n1", labels=LABELS),
        pod("p", affinity=affinity([expr("disk", "Exists")])),
        None,
        [],
    ),
    (
        "Exists miss",
        node("n1", labels=LABELS),
        pod("p", affinity=affinity([expr("gpu", "Exists")])),
        UU,
        [ERR_REASON_NODE_AFFINITY],
    ),
    (
        "DoesNotExist",
        node("n1", labels=LABELS),
        pod("p", affinity=affinity([expr("gpu", "DoesNotExist")])),
        None,
        [],
    ),
    (
        "DoesNotExist miss",
        node("n1", labels=LABELS),
        pod("p", affinity=affinity([expr("disk", "DoesNotExist")])),
        UU,
        [ERR_REASON_NODE_AFFINITY],
    ),
    (
        "Gt",
        node("n1", labels=LABELS),
        pod("p", affinity=affinity([expr("cores", "Gt", "8")])),
        None,
        [],
    ),
    (
        "Gt miss",
        node("n1", labels=LABELS),
        pod("p", affinity=affinity([expr("cores", "Gt", "16")])),
        UU,
        [ERR_REASON_NODE_AFFINITY],
    ),
    (
        "Lt",
        node("n1", labels=LABELS),
        pod("p", affinity=affinity([expr("cores", "Lt", "32")])),
        None,
        [],
    ),
    (
        "Lt miss",
        node("n1", labels=LABELS),
        pod("p", affinity=affinity([expr("cores", "Lt", "16")])),
        UU,
        [ERR_REASON_NODE_AFFINITY],
    ),
    (
        "Gt on a non-integer label",
        node("n1", labels=LABELS),
        pod("p", affinity=affinity([expr("zone", "Gt", "1")])),
        UU,
        [ERR_REASON_NODE_AFFINITY],
    ),
    # --- terms ORed, expressions ANDed
    (
        "second term matches",
        node("n1", labels=LABELS),
        pod("p", affinity=affinity([expr("zone", "In", "b")], [expr("disk", "In", "ssd")])),
        None,
        [],
    ),
    (
        "one expression of the only term fails",
        node("n1", labels=LABELS),
        pod("p", affinity=affinity([expr("zone", "In", "a"), expr("disk", "In", "hdd")])),
        UU,
        [ERR_REASON_NODE_AFFINITY],
    ),
    (
        "selector and affinity both required",
        node("n1", labels=LABELS),
        pod("p", node_selector={"zone": "b"}, affinity=affinity([expr("zone", "In", "a")])),
        UU,
        [ERR_REASON_NODE_AFFINITY],
    ),
    (
        "matchFields-only term (not in the model) is left to kube-scheduler",
        node("n1", labels=LABELS),
        pod(
            "p",
            affinity={
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [
                            {
                                "matchFields": [
                                    {"key": "metadata.name", "operator": "In", "values": ["other"]}
                                ]
                            }
                        ]
                    }
                }
            },
        ),
        None,
        [],
    ),
    # --- taints
    (
        "NoSchedule taint",
        node("n1", taints=[TAINT_NS]),
        pod("p"),
        UU,
        ["node(s) had untolerated taint {dedicated: gpu}"],
    ),
    (
        "NoExecute taint",
        node("n1", taints=[{"key": "k", "value": "", "effect": "NoExecute"}]),
        pod("p"),
        UU,
        ["node(s) had untolerated taint {k: }"],
    ),
    (
        "PreferNoSchedule is only a preference",
        node("n1", taints=[{"key": "k", "value": "v", "effect": "PreferNoSchedule"}]),
        pod("p"),
        None,
        [],
    ),
    (
        "tolerated with Equal",
        node("n1", taints=[TAINT_NS]),
        pod(
            "p",
            tolerations=[
                {"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}
            ],
        ),
        None,
        [],
    ),
    (
        "Equal with another value",
        node("n1", taints=[TAINT_NS]),
        pod("p", tolerations=[{"key": "dedicated", "value": "cpu", "effect": "NoSchedule"}]),
        UU,
        ["node(s) had untolerated taint {dedicated: gpu}"],
    ),
    (
        "Exists on the key, any effect",
        node("n1", taints=[TAINT_NS]),
        pod("p", tolerations=[{"key": "dedicated", "operator": "Exists"}]),
        None,
        [],
    ),
    (
        "toleration for another effect",
        node("n1", taints=[TAINT_NS]),
        pod("p", tolerations=[{"key": "dedicated", "operator": "Exists", "effect": "NoExecute"}]),
        UU,
        ["node(s) had untolerated taint {dedicated: gpu}"],
    ),
]


@pytest.mark.parametrize(("label", "n", "p", "code", "reasons"), CASES, ids=[c[0] for c in CASES])
def test_predicate(
    label: str, n: dict[str, Any], p: dict[str, Any], code: Code | None, reasons: list[str]
) -> None:
    err = check(n, p)
    if code is None:
        assert err is None, label
    else:
        assert err is not None, label
        assert (err.code, err.reasons) == (code, reasons)
        assert (err.task, err.node) == ("ns/p", "n1")


def full_node(pods: int | None = 1, **kw: Any) -> list[dict[str, Any]]:
    """n1 holding one running pod, plus the pending pod ``p``."""
    return [node("n1", pods=pods, **kw), pod("busy", node_name="n1"), pod("p")]


def test_pod_count_is_plain_unschedulable_and_kept_for_preemption() -> None:
    ssn = session(full_node(), PREDICATES)
    task, n1 = task_of(ssn, "ns/p"), ssn.nodes["n1"]
    err = ssn.predicate(task, n1)
    assert err is not None and (err.code, err.reasons) == (U, [NODE_POD_NUMBER_EXCEEDED])
    assert ssn.predicate_for_preempt(task, n1) is None


def test_pod_count_with_room_passes() -> None:
    ssn = session(full_node(pods=2), PREDICATES)
    assert ssn.predicate(task_of(ssn, "ns/p"), ssn.nodes["n1"]) is None


def test_node_reporting_no_pod_capacity_fits_nothing() -> None:
    # Volcano's rule is literal: allocatable pods 0 <= 0 tasks.
    ssn = session([node("n1", pods=None), pod("p")], PREDICATES)
    err = ssn.predicate(task_of(ssn, "ns/p"), ssn.nodes["n1"])
    assert err is not None and err.reasons == [NODE_POD_NUMBER_EXCEEDED]


def test_unresolvable_failure_wins_and_keeps_every_reason() -> None:
    ssn = session(full_node(taints=[TAINT_NS]), PREDICATES)
    task, n1 = task_of(ssn, "ns/p"), ssn.nodes["n1"]
    err = ssn.predicate(task, n1)
    assert err is not None and err.code is UU
    assert err.reasons == [
        NODE_POD_NUMBER_EXCEEDED,
        "node(s) had untolerated taint {dedicated: gpu}",
    ]
    # evicting pods cannot remove the taint: preemption drops this node
    kept = ssn.predicate_for_preempt(task, n1)
    assert kept is not None and kept.code is UU


@pytest.mark.parametrize(
    ("argument", "n", "p"),
    [
        ("predicate.NodeAffinityEnable", node("n1"), pod("p", node_selector={"zone": "x"})),
        ("predicate.TaintTolerationEnable", node("n1", taints=[TAINT_NS]), pod("p")),
    ],
)
def test_arguments_switch_checks_off(argument: str, n: dict[str, Any], p: dict[str, Any]) -> None:
    assert check(n, p) is not None
    for off in ("false", "False"):
        conf = (
            'actions: ""\ntiers:\n- plugins:\n  - name: predicates\n'
            f"    arguments: {{{argument}: {off}}}\n"
        )
        assert check(n, p, conf) is None


def test_unschedulable_has_no_switch() -> None:
    conf = (
        'actions: ""\ntiers:\n- plugins:\n  - name: predicates\n'
        "    arguments: {predicate.NodeAffinityEnable: false, "
        "predicate.TaintTolerationEnable: false}\n"
    )
    err = check(node("n1", unschedulable=True), pod("p"), conf)
    assert err is not None and err.reasons == [ERR_REASON_UNSCHEDULABLE]


def role_pod(name: str, role: str) -> dict[str, Any]:
    """A pod of group ``g`` in ``role``; its own label gives it a fit signature of its own,
    so what these tests see is the role cache, not the verdicts remembered for equal pods."""
    return pod(
        name,
        group="g",
        labels={"pod": name},
        node_selector={"zone": "a"},
        annotations={"volcano.sh/task-spec": role} if role else {},
    )


CACHE_ON = (
    'actions: ""\ntiers:\n- plugins:\n  - name: predicates\n'
    "    arguments: {predicate.CacheEnable: true}\n"
)


@pytest.mark.parametrize(
    ("conf", "second", "cached"),
    [
        (CACHE_ON, "w1", True),  # same job and role: the stale verdict is reused
        (CACHE_ON, "ps0", False),  # another role: evaluated afresh
        (PREDICATES, "w1", False),  # cache off (the default)
    ],
)
def test_cache_is_per_job_role_node_and_never_invalidated(
    conf: str, second: str, cached: bool
) -> None:
    objs = [
        node("n1", labels={"zone": "b"}),
        podgroup("g", 1),
        role_pod("w0", "worker"),
        role_pod("w1", "worker"),
        role_pod("ps0", "ps"),
    ]
    ssn = session(objs, conf)
    n1 = ssn.nodes["n1"]
    first = ssn.predicate(task_of(ssn, "ns/w0"), n1)
    assert first is not None and first.reasons == [ERR_REASON_NODE_AFFINITY]
    n1.labels = {"zone": "a"}  # the node changes inside the session
    err = ssn.predicate(task_of(ssn, f"ns/{second}"), n1)
    if cached:
        assert err is not None and err.reasons == [ERR_REASON_NODE_AFFINITY]
        assert err.task == f"ns/{second}"
    else:
        assert err is None


def test_cache_skips_pods_without_a_role() -> None:
    objs = [
        node("n1", labels={"zone": "b"}),
        podgroup("g", 1),
        role_pod("a", ""),
        role_pod("b", ""),
    ]
    ssn = session(objs, CACHE_ON)
    n1 = ssn.nodes["n1"]
    assert ssn.predicate(task_of(ssn, "ns/a"), n1) is not None
    n1.labels = {"zone": "a"}
    assert ssn.predicate(task_of(ssn, "ns/b"), n1) is None


def test_pod_count_is_never_cached() -> None:
    objs = [
        node("n1", pods=1),
        podgroup("g", 1),
        role_pod("w0", "worker"),
        role_pod("w1", "worker"),
        pod("busy", node_name="n1"),
    ]
    ssn = session(objs, CACHE_ON)
    n1 = ssn.nodes["n1"]
    n1.labels = {"zone": "a"}
    assert ssn.predicate(task_of(ssn, "ns/w0"), n1) is not None  # full
    n1.remove_task(task_of(ssn, "ns/busy"))
    assert ssn.predicate(task_of(ssn, "ns/w1"), n1) is None


# --- resource fit helper --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("cpu", "memory", "reasons"),
    [
        ("1", "1Gi", None),
        ("3", "1Gi", ["Insufficient cpu"]),
        ("3", "5Gi", ["Insufficient cpu", "Insufficient memory"]),
    ],
)
def test_resource_fit_error(cpu: str, memory: str, reasons: list[str] | None) -> None:
    ssn = session(
        [
            node("n1", "4", "8Gi"),
            pod("busy", node_name="n1", cpu="2", memory="4Gi"),
            pod("p", cpu=cpu, memory=memory),
        ],
        PREDICATES,
    )
    n1 = ssn.nodes["n1"]
    err = resource_fit_error(task_of(ssn, "ns/p"), n1, n1.future_idle())
    if reasons is None:
        assert err is None
    else:
        assert err is not None
        assert (err.code, err.reasons, err.task, err.node) == (U, reasons, "ns/p", "n1")
        assert err.resolvable


def test_resource_fit_against_another_amount() -> None:
    ssn = session([node("n1", "4", "8Gi"), pod("p", cpu="3")], PREDICATES)
    task, n1 = task_of(ssn, "ns/p"), ssn.nodes["n1"]
    assert resource_fit_error(task, n1, n1.future_idle()) is None
    assert resource_fit_error(task, n1, Resource(2000, 8 * 2**30, {"pods": 10})) is not None
