"""Reclaim with DRA GPUs: a queue under its deserved devices takes them back from an
overused queue, only as many as it needs, and never for a claim that could not then be
allocated."""

from __future__ import annotations

from scheduler_core.conf import SchedulerConfiguration
from tests.builders import (
    GANG_CONF,
    Obj,
    configuration,
    device_class,
    evicted_keys,
    gpus,
    node,
    pipelined,
    pod,
    podgroup,
    queue,
    resource_slice,
    run,
    with_resource_claims,
)

GPU = "gpu.example.com"


def reclaim_conf() -> SchedulerConfiguration:
    return configuration(GANG_CONF, "reclaim")


def template(name: str, count: int = 1, namespace: str = "ns") -> Obj:
    return {
        "kind": "ResourceClaimTemplate",
        "apiVersion": "resource.k8s.io/v1",
        "metadata": {"name": name, "namespace": namespace, "uid": f"uid-{name}"},
        "spec": {
            "spec": {
                "devices": {
                    "requests": [
                        {
                            "name": "gpu",
                            "exactly": {"deviceClassName": GPU, "count": count},
                        }
                    ]
                }
            }
        },
    }


def held_claim(name: str, device: str, node_name: str, uid: str) -> Obj:
    return {
        "kind": "ResourceClaim",
        "apiVersion": "resource.k8s.io/v1",
        "metadata": {"name": name, "namespace": "ns", "uid": f"uid-{name}"},
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": GPU}}]}},
        "status": {
            "allocation": {
                "devices": {
                    "results": [
                        {"request": "gpu", "driver": GPU, "pool": node_name, "device": device}
                    ]
                }
            },
            "reservedFor": [{"resource": "pods", "name": uid, "uid": uid}],
        },
    }


def overused(q1_pods: int = 2, q1_count: int = 1, cpu: str = "16") -> list[Obj]:
    """Two nodes of 2 DRA GPUs each, all held by q2's four pods (one claim each, one GPU);
    q1 (equal weight) waits with ``q1_pods`` jobs of one pod, each asking ``q1_count`` GPUs
    from a template. The pods ask little cpu: the GPUs decide."""
    objs: list[Obj] = [
        node("n1", cpu=cpu),
        node("n2", cpu=cpu),
        device_class(GPU),
        resource_slice("s1", "n1", *gpus(2)),
        resource_slice("s2", "n2", *gpus(2)),
        queue("q1"),
        queue("q2"),
        podgroup("job-y", 1, queue="q2"),
        template("one-gpu", q1_count),
    ]
    for i in range(q1_pods):
        objs.append(podgroup(f"job-x{i}", 1, queue="q1"))
        objs.append(
            with_resource_claims(pod(f"x-{i}", group=f"job-x{i}", cpu="100m"), "template:one-gpu")
        )
    for i, (host, dev) in enumerate([("n1", 0), ("n1", 1), ("n2", 0), ("n2", 1)]):
        objs.append(
            with_resource_claims(pod(f"y-{i}", group="job-y", node_name=host, cpu="100m"), f"y-{i}")
        )
        objs.append(held_claim(f"y-{i}", f"gpu-{dev}", host, f"ns-y-{i}"))
    return objs


def test_a_queue_under_its_deserved_gpus_takes_them_back() -> None:
    ssn = run(overused(q1_pods=3), reclaim_conf())
    # q1 asks three GPUs but deserves two of the four: two of q2's pods go, one for each
    # of two preemptors, each placed where its victim freed a GPU.
    evicted = [(e.task.key, e.node) for e in ssn.evictions]
    assert len(evicted) == 2
    placed = pipelined(ssn)
    assert len(placed) == 2
    assert sorted(placed.values()) == sorted(node_name for _, node_name in evicted)


def test_no_eviction_for_a_claim_that_could_not_be_allocated_after_it() -> None:
    # One pod asks three GPUs; no node has more than two: evicting would be in vain.
    ssn = run(overused(q1_pods=1, q1_count=3), reclaim_conf())
    assert evicted_keys(ssn) == []
    assert pipelined(ssn) == {}


def test_a_claim_shape_the_engine_does_not_model_evicts_nothing() -> None:
    objs = overused(q1_pods=1)
    shaped = template("one-gpu")
    shaped["spec"]["spec"]["devices"]["constraints"] = [{"matchAttribute": f"{GPU}/model"}]
    objs = [o for o in objs if o.get("kind") != "ResourceClaimTemplate"] + [shaped]
    ssn = run(objs, reclaim_conf())
    assert evicted_keys(ssn) == []
    assert "ns/x-0" in ssn.not_evaluable
