"""predicates: volumes and devices, as kube-scheduler's VolumeBinding, VolumeZone,
VolumeRestrictions, NodeVolumeLimits and DynamicResources filters judge them (the cases of
their tests, in meaning), and the ``NotEvaluable`` verdict for what the engine cannot judge."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler_core.actions.util.predicate_helper import constraints_signature
from scheduler_core.framework.status import Code
from scheduler_core.plugins.predicates.volumes import (
    ERR_REASON_MAX_VOLUME_COUNT,
    ERR_REASON_NODE_CONFLICT,
    ERR_REASON_RWOP_CONFLICT,
    ERR_REASON_ZONE_CONFLICT,
)
from tests.builders import (
    claim_volume,
    csinode,
    device_class,
    gpus,
    node,
    pod,
    pv,
    pvc,
    resource_claim,
    resource_slice,
    session,
    storage_class,
    task_of,
    tiers,
    with_resource_claims,
    with_volumes,
)

PREDICATES = tiers("predicates")
U = Code.UNSCHEDULABLE
UU = Code.UNSCHEDULABLE_AND_UNRESOLVABLE
NE = Code.NOT_EVALUABLE

Obj = dict[str, Any]

HOST = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"


def nodes(**labels: str) -> list[Obj]:
    """n1 and n2, each labelled with its hostname (and ``labels`` on n1)."""
    return [
        node("n1", labels={HOST: "n1", **labels}),
        node("n2", labels={HOST: "n2"}),
    ]


def claimant(*volumes: Obj, name: str = "p") -> Obj:
    return with_volumes(pod(name), *volumes)


def verdict(objects: list[Obj], preemptor: Obj, on: str = "n1") -> tuple[Any, list[str], str]:
    ssn = session([*objects, preemptor], PREDICATES)
    err = ssn.predicate(task_of(ssn, f"ns/{preemptor['metadata']['name']}"), ssn.nodes[on])
    if err is None:
        return None, [], ""
    return err.code, err.reasons, err.plugin


BOUND = [storage_class("fast"), pvc("data", volume="pv-1", storage_class="fast")]

# (case, cluster objects besides the pod, the pod, node judged, code, a reason part, plugin)
CASES: list[tuple[str, list[Obj], Obj, str, Code | None, str, str]] = [
    ("no volumes", nodes(), pod("p"), "n1", None, "", ""),
    # --- VolumeBinding: bound claims
    (
        "bound, volume without affinity",
        [*nodes(), *BOUND, pv("pv-1")],
        claimant(claim_volume("v", "data")),
        "n1",
        None,
        "",
        "",
    ),
    (
        "bound local volume on this node",
        [*nodes(), *BOUND, pv("pv-1", hostname="n1")],
        claimant(claim_volume("v", "data")),
        "n1",
        None,
        "",
        "",
    ),
    (
        "bound local volume on another node",
        [*nodes(), *BOUND, pv("pv-1", hostname="n2")],
        claimant(claim_volume("v", "data")),
        "n1",
        UU,
        ERR_REASON_NODE_CONFLICT,
        "VolumeBinding",
    ),
    (
        "volume affinity by node name (matchFields)",
        [
            *nodes(),
            *BOUND,
            pv(
                "pv-1",
                node_affinity=[
                    {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n2"]}]}
                ],
            ),
        ],
        claimant(claim_volume("v", "data")),
        "n1",
        UU,
        ERR_REASON_NODE_CONFLICT,
        "VolumeBinding",
    ),
    (
        "claim being deleted",
        [*nodes(), storage_class("fast"), pvc("data", volume="pv-1", deleting=True), pv("pv-1")],
        claimant(claim_volume("v", "data")),
        "n1",
        UU,
        "is being deleted",
        "VolumeBinding",
    ),
    # --- what cannot be judged
    (
        "unbound claim, WaitForFirstConsumer",
        [*nodes(), storage_class("fast"), pvc("data", storage_class="fast")],
        claimant(claim_volume("v", "data")),
        "n1",
        NE,
        "PersistentVolumeClaim ns/data is not bound (storage class fast, WaitForFirstConsumer)",
        "VolumeBinding",
    ),
    (
        "unbound claim, Immediate",
        [*nodes(), storage_class("slow", "Immediate"), pvc("data", storage_class="slow")],
        claimant(claim_volume("v", "data")),
        "n1",
        NE,
        "is not bound (storage class slow, Immediate)",
        "VolumeBinding",
    ),
    (
        "claim the cache does not hold",
        nodes(),
        claimant(claim_volume("v", "data")),
        "n1",
        NE,
        "PersistentVolumeClaim ns/data not in the cache",
        "VolumeBinding",
    ),
    (
        "volume the cache does not hold",
        [*nodes(), *BOUND],
        claimant(claim_volume("v", "data")),
        "n1",
        NE,
        "PersistentVolume pv-1 of claim ns/data not in the cache",
        "VolumeBinding",
    ),
    (
        "claim lost its volume",
        [*nodes(), pvc("data", volume="pv-1", phase="Lost")],
        claimant(claim_volume("v", "data")),
        "n1",
        UU,
        'bound to non-existent persistentvolume "pv-1"',
        "VolumeBinding",
    ),
    (
        "generic ephemeral volume before its claim exists",
        nodes(),
        claimant({"name": "scratch", "ephemeral": {"volumeClaimTemplate": {"spec": {}}}}),
        "n1",
        NE,
        "PersistentVolumeClaim ns/p-scratch not in the cache",
        "VolumeBinding",
    ),
    (
        "generic ephemeral volume, its claim bound to a volume on another node",
        [*nodes(), pvc("p-scratch", volume="pv-1"), pv("pv-1", hostname="n2")],
        claimant({"name": "scratch", "ephemeral": {"volumeClaimTemplate": {"spec": {}}}}),
        "n1",
        UU,
        ERR_REASON_NODE_CONFLICT,
        "VolumeBinding",
    ),
    (
        "inline volumes no filter examines",
        nodes(),
        claimant(
            {"name": "a", "emptyDir": {}},
            {"name": "b", "configMap": {"name": "x"}},
            {"name": "c", "secret": {"secretName": "x"}},
            {"name": "d", "projected": {"sources": []}},
            {"name": "e", "downwardAPI": {"items": []}},
            {"name": "f", "hostPath": {"path": "/x"}},
            {"name": "g"},
        ),
        "n1",
        None,
        "",
        "",
    ),
    (
        "inline disk VolumeRestrictions examines",
        nodes(),
        claimant({"name": "disk", "gcePersistentDisk": {"pdName": "d"}}),
        "n1",
        NE,
        "volume disk of type gcePersistentDisk",
        "VolumeBinding",
    ),
    (
        "inline rbd",
        nodes(),
        claimant({"name": "r", "rbd": {"image": "i", "monitors": ["m"]}}),
        "n1",
        NE,
        "volume r of type rbd",
        "VolumeBinding",
    ),
    (
        "bound in-tree volume counted through CSI migration",
        [*nodes(), pvc("data", volume="pv-1"), pv("pv-1", source={"awsElasticBlockStore": {}})],
        claimant(claim_volume("v", "data")),
        "n1",
        NE,
        "PersistentVolume pv-1 of type awsElasticBlockStore",
        "VolumeBinding",
    ),
    (
        "scheduling gates",
        nodes(),
        pod("p", spec={"schedulingGates": [{"name": "example.com/wait"}]}),
        "n1",
        NE,
        "scheduling gates example.com/wait",
        "SchedulingGates",
    ),
    # --- VolumeZone
    (
        "volume zone matches the node's",
        [*nodes(**{ZONE: "a"}), pvc("data", volume="pv-1"), pv("pv-1", labels={ZONE: "a"})],
        claimant(claim_volume("v", "data")),
        "n1",
        None,
        "",
        "",
    ),
    (
        "volume in several zones, the node in one of them",
        [*nodes(**{ZONE: "b"}), pvc("data", volume="pv-1"), pv("pv-1", labels={ZONE: "a__b"})],
        claimant(claim_volume("v", "data")),
        "n1",
        None,
        "",
        "",
    ),
    (
        "volume zone differs from the node's",
        [*nodes(**{ZONE: "b"}), pvc("data", volume="pv-1"), pv("pv-1", labels={ZONE: "a"})],
        claimant(claim_volume("v", "data")),
        "n1",
        UU,
        ERR_REASON_ZONE_CONFLICT,
        "VolumeZone",
    ),
    (
        "node without zone labels passes",
        [*nodes(), pvc("data", volume="pv-1"), pv("pv-1", labels={ZONE: "a"})],
        claimant(claim_volume("v", "data")),
        "n1",
        None,
        "",
        "",
    ),
    # --- DynamicResources
    (
        "device claim not allocated, its class unknown",
        [*nodes(), resource_claim("gpu")],
        with_resource_claims(pod("p"), "gpu"),
        "n1",
        NE,
        "ResourceClaim ns/gpu: request req: DeviceClass gpu.example.com not in the cache",
        "DynamicResources",
    ),
    (
        "device claim not allocated, the node has a free device",
        [
            *nodes(),
            device_class("gpu.example.com"),
            resource_slice("s1", "n1", *gpus(1)),
            resource_claim("gpu"),
        ],
        with_resource_claims(pod("p"), "gpu"),
        "n1",
        None,
        "",
        "",
    ),
    (
        "device claim not allocated, the node has no device",
        [
            *nodes(),
            device_class("gpu.example.com"),
            resource_slice("s1", "n1", *gpus(1)),
            resource_claim("gpu"),
        ],
        with_resource_claims(pod("p"), "gpu"),
        "n2",
        Code.UNSCHEDULABLE,
        "cannot allocate all claims",
        "DynamicResources",
    ),
    (
        "device claim the cache does not hold",
        nodes(),
        with_resource_claims(pod("p"), "gpu"),
        "n1",
        NE,
        "ResourceClaim ns/gpu not in the cache",
        "DynamicResources",
    ),
    (
        "device claim from a template, not created yet",
        nodes(),
        with_resource_claims(pod("p"), "template:gpu"),
        "n1",
        NE,
        "ResourceClaimTemplate ns/gpu not in the cache",
        "DynamicResources",
    ),
    (
        "device claim allocated on this node",
        [*nodes(), resource_claim("gpu", allocated_on="n1")],
        with_resource_claims(pod("p"), "gpu"),
        "n1",
        None,
        "",
        "",
    ),
    (
        "template's claim allocated on this node",
        [*nodes(), resource_claim("p-gpu-x", allocated_on="n1")],
        with_resource_claims(pod("p"), "template:gpu", statuses={"gpu": "p-gpu-x"}),
        "n1",
        None,
        "",
        "",
    ),
    (
        "device claim allocated on another node",
        [*nodes(), resource_claim("gpu", allocated_on="n2")],
        with_resource_claims(pod("p"), "gpu"),
        "n1",
        UU,
        "resourceclaim not available on the node",
        "DynamicResources",
    ),
]


@pytest.mark.parametrize(
    ("objects", "preemptor", "on", "code", "reason", "plugin"),
    [case[1:] for case in CASES],
    ids=[case[0] for case in CASES],
)
def test_volume_and_device_verdicts(
    objects: list[Obj],
    preemptor: Obj,
    on: str,
    code: Code | None,
    reason: str,
    plugin: str,
) -> None:
    got_code, reasons, got_plugin = verdict(objects, preemptor, on)
    assert got_code == code
    if code is not None:
        assert any(reason in r for r in reasons), reasons
        assert got_plugin == plugin


def test_not_evaluable_pod_fails_the_pre_predicate_and_the_session_records_why() -> None:
    objects = [*nodes(), storage_class("fast"), pvc("data", storage_class="fast")]
    ssn = session([*objects, claimant(claim_volume("v", "data"))], PREDICATES)
    task = task_of(ssn, "ns/p")
    why = ssn.pre_predicate(task)
    assert why is not None and "ns/data is not bound" in why
    recorded_task, err = ssn.not_evaluable["ns/p"]
    assert recorded_task.key == "ns/p" and err.code is NE and err.plugin == "VolumeBinding"
    assert not err.resolvable  # no action evicts for it
    assert ssn.predicate_for_preempt(task, ssn.nodes["n1"]) is not None


def test_a_pod_found_evaluable_again_is_forgotten() -> None:
    objects = [*nodes(), storage_class("fast"), pvc("data", storage_class="fast")]
    ssn = session([*objects, claimant(claim_volume("v", "data")), pod("q")], PREDICATES)
    ssn.pre_predicate(task_of(ssn, "ns/p"))
    assert ssn.pre_predicate(task_of(ssn, "ns/q")) is None
    assert set(ssn.not_evaluable) == {"ns/p"}


# --- VolumeRestrictions: ReadWriteOncePod -------------------------------------------------


def rwop_cluster() -> list[Obj]:
    return [
        *nodes(),
        pvc("solo", volume="pv-1", access_modes=["ReadWriteOncePod"]),
        pv("pv-1"),
        with_volumes(pod("holder", node_name="n2"), claim_volume("v", "solo")),
    ]


@pytest.mark.parametrize("on", ["n1", "n2"])
def test_read_write_once_pod_claim_in_use_is_unschedulable_everywhere(on: str) -> None:
    code, reasons, plugin = verdict(rwop_cluster(), claimant(claim_volume("v", "solo")), on)
    assert (code, reasons, plugin) == (U, [ERR_REASON_RWOP_CONFLICT], "VolumeRestrictions")


def test_read_write_once_pod_conflict_is_not_hard_so_evicting_the_holder_stays_possible() -> None:
    ssn = session([*rwop_cluster(), claimant(claim_volume("v", "solo"))], PREDICATES)
    task = task_of(ssn, "ns/p")
    assert ssn.pre_predicate(task) is None
    assert ssn.predicate_for_preempt(task, ssn.nodes["n2"]) is None


def test_read_write_once_pod_conflict_ends_when_the_holder_leaves_the_simulated_node() -> None:
    ssn = session([*rwop_cluster(), claimant(claim_volume("v", "solo"))], PREDICATES)
    task = task_of(ssn, "ns/p")
    ssn.pre_predicate(task)
    copy = ssn.nodes["n2"].clone()
    copy.remove_task(task_of(ssn, "ns/holder"))
    assert ssn.predicate(task, copy) is None
    assert ssn.predicate(task, ssn.nodes["n1"]) is not None  # still held on n2 itself


def test_read_write_many_claim_in_use_is_no_conflict() -> None:
    objects = [
        *nodes(),
        pvc("shared", volume="pv-1", access_modes=["ReadWriteMany"]),
        pv("pv-1"),
        with_volumes(pod("holder", node_name="n2"), claim_volume("v", "shared")),
    ]
    assert verdict(objects, claimant(claim_volume("v", "shared")), "n2")[0] is None


# --- NodeVolumeLimits: CSI ------------------------------------------------------------------

DRIVER = "ebs.csi.example.com"


def csi_cluster(limit: int | None, *, shared: bool = False) -> list[Obj]:
    """n1 holds a pod with CSI volume pv-a; the preemptor reads pv-a (``shared``) or pv-b."""
    objects = [
        *nodes(),
        pvc("a", volume="pv-a"),
        pvc("b", volume="pv-b"),
        pv("pv-a", csi_driver=DRIVER),
        pv("pv-b", csi_driver=DRIVER),
        with_volumes(pod("holder", node_name="n1"), claim_volume("v", "a")),
    ]
    if limit is not None or shared:
        objects.append(csinode("n1", {DRIVER: limit}))
    return objects


LIMIT_CASES = [
    ("limit reached by the node's own volumes", csi_cluster(1), "b", U),
    ("room under the limit", csi_cluster(2), "b", None),
    ("the same volume again needs no attachment", csi_cluster(1), "a", None),
    ("driver reports no limit", csi_cluster(None, shared=True), "b", None),
    ("no CSINode for the node", csi_cluster(None), "b", None),
]


@pytest.mark.parametrize(
    ("objects", "claim", "code"),
    [c[1:] for c in LIMIT_CASES],
    ids=[c[0] for c in LIMIT_CASES],
)
def test_csi_attach_limits(objects: list[Obj], claim: str, code: Code | None) -> None:
    got, reasons, plugin = verdict(objects, claimant(claim_volume("v", claim)))
    assert got == code
    if code is not None:
        assert (reasons, plugin) == ([ERR_REASON_MAX_VOLUME_COUNT], "NodeVolumeLimits")


def test_inline_csi_volumes_count_against_the_limit() -> None:
    objects = [*nodes(), csinode("n1", {DRIVER: 1})]
    inline = {"name": "i", "csi": {"driver": DRIVER}}
    holder = with_volumes(pod("holder", node_name="n1"), inline)
    assert verdict([*objects, holder], claimant(inline))[0] == U
    assert verdict(objects, claimant(inline))[0] is None


# --- the hard-verdict cache -------------------------------------------------------------------


def test_pods_share_a_cached_hard_verdict_only_when_their_volumes_constrain_alike() -> None:
    ssn = session(
        [
            *nodes(),
            pvc("one", volume="pv-1"),
            pvc("two", volume="pv-2"),
            pvc("three", volume="pv-3"),
            pv("pv-1", source={"nfs": {"server": "s", "path": "/1"}}),
            pv("pv-2", source={"nfs": {"server": "s", "path": "/2"}}),
            pv("pv-3", hostname="n2"),
            pvc("unbound"),
            with_volumes(pod("a"), claim_volume("v", "one")),
            with_volumes(pod("b"), claim_volume("v", "two")),
            with_volumes(pod("c"), claim_volume("v", "three")),
            with_volumes(pod("d"), claim_volume("v", "unbound")),
            with_volumes(pod("e"), claim_volume("v", "unbound")),
            with_volumes(pod("f", namespace="other"), claim_volume("v", "one")),
            pod("g"),
        ],
        PREDICATES,
    )
    storage = ssn.snapshot.storage

    def signature(key: str) -> str:
        return constraints_signature(task_of(ssn, key), storage)

    assert signature("ns/a") == signature("ns/b")  # like volumes, no node constraint
    assert signature("ns/c") != signature("ns/a")  # a local volume pins its node
    assert signature("ns/d") != signature("ns/e")  # not evaluable: each its own
    assert signature("other/f") != signature("ns/a")  # no such claim there
    assert signature("ns/g") != signature("ns/a")
