"""The reclaim loop and volumes on the real control plane: it never evicts for a pod it
cannot judge (a claim waiting for its first consumer) and says so with a ``NotEvaluable``
event; for a pod whose bound local volume lives on one node, it evicts only there, and
kube-scheduler binds the pod there.

No volume controller runs here: the bound claim and its volume are written as the controller
would leave them (the volume's ``claimRef``, the claim's ``volumeName`` and bind-completed
mark, both phases Bound).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client

from tests.e2e import test_reclaim_loop as loops
from tests.e2e.kube import QUEUE_SCHEDULER, Kube
from tests.e2e.test_reclaim_loop import (
    QUIET,
    events,
    first_queue_fills_two_nodes,
    metric,
    told_cannot_help,
)

#: The loop tests' fixture (a reclaiming extender of the test's own), here by name.
reclaimer = loops.reclaimer


@pytest.fixture
def storage(api: Any) -> Iterator[Any]:
    """The cluster-scoped storage objects a test makes, deleted after it (what a finalizer
    holds back stays terminating, harmless: every name is the test's own)."""
    made: list[tuple[str, str]] = []
    storage_api, core = client.StorageV1Api(api), client.CoreV1Api(api)

    class Maker:
        def storage_class(self, name: str) -> str:
            storage_api.create_storage_class(
                {
                    "metadata": {"name": name},
                    "provisioner": "example.com/none",
                    "volumeBindingMode": "WaitForFirstConsumer",
                }
            )
            made.append(("sc", name))
            return name

        def local_volume(
            self, name: str, node: str, ns: str, claim: str, key: str = "kubernetes.io/hostname"
        ) -> str:
            """A local volume bound to ``ns/claim``, reachable where label ``key`` is
            ``node`` (the node's hostname by default; a zone for a zonal disk)."""
            core.create_persistent_volume(
                {
                    "metadata": {"name": name},
                    "spec": {
                        "capacity": {"storage": "1Gi"},
                        "accessModes": ["ReadWriteOnce"],
                        "storageClassName": "",
                        "local": {"path": f"/mnt/{name}"},
                        "claimRef": {"namespace": ns, "name": claim},
                        "nodeAffinity": {
                            "required": {
                                "nodeSelectorTerms": [
                                    {
                                        "matchExpressions": [
                                            {
                                                "key": key,
                                                "operator": "In",
                                                "values": [node],
                                            }
                                        ]
                                    }
                                ]
                            }
                        },
                    },
                }
            )
            core.patch_persistent_volume_status(name, {"status": {"phase": "Bound"}})
            made.append(("pv", name))
            return name

    yield Maker()
    for kind, name in made:
        with contextlib.suppress(client.ApiException):
            if kind == "sc":
                storage_api.delete_storage_class(name)
            else:
                core.delete_persistent_volume(name)


def claim(api: Any, ns: str, name: str, *, storage_class: str, volume: str = "") -> str:
    core = client.CoreV1Api(api)
    body: dict[str, Any] = {
        "metadata": {"name": name},
        "spec": {
            "accessModes": ["ReadWriteOnce"],
            "storageClassName": storage_class,
            "resources": {"requests": {"storage": "1Gi"}},
        },
    }
    if volume:
        body["spec"]["volumeName"] = volume
        body["metadata"]["annotations"] = {"pv.kubernetes.io/bind-completed": "yes"}
    core.create_namespaced_persistent_volume_claim(ns, body)
    if volume:
        core.patch_namespaced_persistent_volume_claim_status(
            name, ns, {"status": {"phase": "Bound", "accessModes": ["ReadWriteOnce"]}}
        )
    return name


def pod_with_claim(api: Any, ns: str, name: str, queue: str, claim_name: str) -> str:
    """A 1-cpu pod of ``queue`` for the queue scheduler (as ``Kube.pod`` makes them),
    mounting claim ``claim_name``."""
    client.CoreV1Api(api).create_namespaced_pod(
        ns,
        {
            "metadata": {
                "name": name,
                "annotations": {"scheduling.volcano.sh/queue-name": queue},
            },
            "spec": {
                "schedulerName": QUEUE_SCHEDULER,
                "terminationGracePeriodSeconds": 0,
                "containers": [
                    {
                        "name": "main",
                        "image": "registry.k8s.io/pause:3.10",
                        "resources": {"requests": {"cpu": "1", "memory": "128Mi"}},
                        "volumeMounts": [{"name": "data", "mountPath": "/data"}],
                    }
                ],
                "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": claim_name}}],
            },
        },
    )
    return name


def test_no_eviction_for_a_claim_waiting_for_its_first_consumer(
    kube: Kube, reclaimer: Any, storage: Any, api: Any
) -> None:
    ns, tag, _q1, q2, _ = first_queue_fills_two_nodes(kube)
    sc = storage.storage_class(f"{tag}-wffc")
    claim(api, ns, "data", storage_class=sc)
    loop = reclaimer()
    pod_with_claim(api, ns, "b0", q2, "data")
    note = kube.wait_message(ns, "b0", "NotEvaluable: ", timeout=60)
    assert f"PersistentVolumeClaim {ns}/data is not bound" in note
    assert "WaitForFirstConsumer" in note
    time.sleep(QUIET / 2)
    assert metric(loop, "queue_extender_reclaim_evictions_total", result="ok") == 0
    assert len(kube.bound(ns)) == 4 and "b0" not in kube.bound(ns)


def test_a_local_volume_on_one_node_confines_the_evictions_to_it(
    kube: Kube, reclaimer: Any, storage: Any, api: Any
) -> None:
    ns, tag, _q1, q2, names = first_queue_fills_two_nodes(kube)
    target = f"{tag}-n1"
    on_target = {n for n, where in kube.bound(ns).items() if where == target}
    storage.local_volume(f"{tag}-pv", target, ns, "data")
    claim(api, ns, "data", storage_class="", volume=f"{tag}-pv")
    loop = reclaimer()
    pod_with_claim(api, ns, "b0", q2, "data")
    assert kube.wait_bound(ns, "b0", timeout=90) == target
    assert metric(loop, "queue_extender_reclaim_evictions_total", result="ok") >= 1
    gone = set(names) - set(kube.bound(ns))
    assert gone and gone <= on_target
    assert not any(m.startswith("NotEvaluable: ") for m in events(kube, ns, "b0"))


def pod_with_device_claim(api: Any, ns: str, name: str, queue: str, device_class: str) -> str:
    """A 1-cpu pod of ``queue`` for the queue scheduler with its own ResourceClaim ``gpu``
    of one device of ``device_class``."""
    client.ResourceV1Api(api).create_namespaced_resource_claim(
        ns,
        {
            "metadata": {"name": "gpu"},
            "spec": {
                "devices": {
                    "requests": [{"name": "req", "exactly": {"deviceClassName": device_class}}]
                }
            },
        },
    )
    client.CoreV1Api(api).create_namespaced_pod(
        ns,
        {
            "metadata": {"name": name, "annotations": {"scheduling.volcano.sh/queue-name": queue}},
            "spec": {
                "schedulerName": QUEUE_SCHEDULER,
                "terminationGracePeriodSeconds": 0,
                "resourceClaims": [{"name": "gpu", "resourceClaimName": "gpu"}],
                "containers": [
                    {
                        "name": "main",
                        "image": "registry.k8s.io/pause:3.10",
                        "resources": {
                            "requests": {"cpu": "1", "memory": "128Mi"},
                            "claims": [{"name": "gpu"}],
                        },
                    }
                ],
            },
        },
    )
    return name


def test_no_eviction_for_a_pod_whose_device_claim_names_a_device_class_that_does_not_exist(
    kube: Kube, reclaimer: Any, api: Any
) -> None:
    """An unallocated claim is judged by simulating its allocation against the DeviceClass it
    names. Here no DeviceClass ``gpu.example.com`` exists: kube-scheduler cannot allocate the
    claim, the loop cannot judge where the pod would fit, so it says NotEvaluable, naming the
    missing class, and evicts nothing."""
    ns, _tag, _q1, q2, _ = first_queue_fills_two_nodes(kube)
    loop = reclaimer()
    pod_with_device_claim(api, ns, "b0", q2, "gpu.example.com")
    note = kube.wait_message(ns, "b0", "NotEvaluable: ", timeout=60)
    assert f"ResourceClaim {ns}/gpu" in note
    assert "DeviceClass gpu.example.com not in the cache" in note
    time.sleep(QUIET / 2)
    assert metric(loop, "queue_extender_reclaim_evictions_total", result="ok") == 0
    assert "b0" not in kube.bound(ns)


def test_no_eviction_for_a_device_class_no_node_publishes_and_the_pod_is_told(
    kube: Kube, reclaimer: Any, api: Any
) -> None:
    """The class exists, but no ResourceSlice offers a device of it: the engine judges the
    claim (it can), finds that no eviction could give the pod a device, evicts nothing and
    tells the pod which claim asks for what no node publishes."""
    ns, tag, _q1, q2, names = first_queue_fills_two_nodes(kube)
    resource = client.ResourceV1Api(api)
    device_class = f"{tag}-gpu-x"
    resource.create_device_class(
        {
            "metadata": {"name": device_class},
            "spec": {
                "selectors": [{"cel": {"expression": f'device.driver == "{tag}.gpu.example.com"'}}]
            },
        }
    )
    try:
        loop = reclaimer()
        pod_with_device_claim(api, ns, "b0", q2, device_class)
        note = told_cannot_help(kube, ns, "b0")
        assert (
            f"ResourceClaim {ns}/gpu (request req) asks 1 device of class {device_class}; "
            "no node publishes one"
        ) in note
        time.sleep(QUIET / 2)
        assert metric(loop, "queue_extender_reclaim_evictions_total", result="ok") == 0
        assert sorted(kube.bound(ns)) == sorted(names)
    finally:
        with contextlib.suppress(client.ApiException):
            resource.delete_device_class(device_class)
