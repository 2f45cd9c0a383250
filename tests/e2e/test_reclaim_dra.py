"""DRA GPUs moved between queues by the reclaim loop, behind the real kube-scheduler.

The test publishes ResourceSlices itself (no driver) and kube-scheduler allocates the claims
against them. With no controller manager, the test plays the resource claim controller's
one part that matters here: once a pod is gone, its claims' reservations and allocations
are released, so the devices a victim held can be allocated again.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from scheduler_core.conf import DEFAULT_CONF
from tests.e2e.controlplane import ControlPlane, Extender, wait_for
from tests.e2e.kube import QUEUE_SCHEDULER, Kube
from tests.e2e.test_reclaim_loop import QUIET, metric, reclaim_args

RESOURCE = ("resource.k8s.io", "v1")
_leases = itertools.count()


@pytest.fixture
def dra_reclaimer(control_plane: ControlPlane) -> Iterator[Any]:
    started: list[Extender] = []

    def start(*extra: str) -> Extender:
        lease = f"e2e-dra-reclaim-{next(_leases)}-{int(time.time())}"
        extender = control_plane.start_extender(
            f"dra-reclaimer-{len(started)}", args=reclaim_args(lease, *extra)
        ).wait_ready()
        started.append(extender)
        return extender

    yield start
    for extender in started:
        extender.process.stop()


class ClaimReleaser:
    """The resource claim controller's release step: a claim reserved for pods that are
    gone loses those reservations, and its allocation once none is left."""

    def __init__(self, api: Any, namespace: str) -> None:
        self.core = client.CoreV1Api(api)
        self.custom = client.CustomObjectsApi(api)
        self.namespace = namespace
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="claim-releaser", daemon=True)

    def __enter__(self) -> ClaimReleaser:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=10)

    def _run(self) -> None:
        while not self._stop.wait(0.3):
            with contextlib.suppress(client.ApiException):
                self._release()

    def _release(self) -> None:
        alive = {
            p.metadata.uid
            for p in self.core.list_namespaced_pod(self.namespace).items
            if p.metadata.deletion_timestamp is None
        }
        claims = self.custom.list_namespaced_custom_object(
            *RESOURCE, self.namespace, "resourceclaims"
        )["items"]
        for claim in claims:
            status = claim.get("status") or {}
            reserved = status.get("reservedFor") or []
            kept = [r for r in reserved if r.get("uid") in alive]
            if len(kept) == len(reserved):
                continue
            body: dict[str, Any] = {
                "metadata": {"resourceVersion": claim["metadata"]["resourceVersion"]},
                "status": {"reservedFor": kept or None},
            }
            if not kept:
                body["status"]["allocation"] = None
            self.custom.patch_namespaced_custom_object_status(
                *RESOURCE, self.namespace, "resourceclaims", claim["metadata"]["name"], body
            )


def gpu_pod(kube: Kube, ns: str, name: str, queue: str, device_class: str) -> str:
    """A pod of ``queue`` asking one device of ``device_class`` through its own claim."""
    kube.custom.create_namespaced_custom_object(
        *RESOURCE,
        ns,
        "resourceclaims",
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaim",
            "metadata": {"name": name},
            "spec": {
                "devices": {
                    "requests": [{"name": "gpu", "exactly": {"deviceClassName": device_class}}]
                }
            },
        },
    )
    kube.core.create_namespaced_pod(
        ns,
        {
            "metadata": {
                "name": name,
                "annotations": {"scheduling.volcano.sh/queue-name": queue},
            },
            "spec": {
                "schedulerName": QUEUE_SCHEDULER,
                "terminationGracePeriodSeconds": 0,
                "resourceClaims": [{"name": "gpu", "resourceClaimName": name}],
                "containers": [
                    {
                        "name": "main",
                        "image": "registry.k8s.io/pause:3.10",
                        "resources": {
                            "requests": {"cpu": "100m", "memory": "64Mi"},
                            "claims": [{"name": "gpu"}],
                        },
                    }
                ],
            },
        },
    )
    return name


def publish_gpus(kube: Kube, node: str, driver: str, count: int) -> None:
    kube.custom.create_cluster_custom_object(
        *RESOURCE,
        "resourceslices",
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceSlice",
            "metadata": {"name": f"{node}-gpus"},
            "spec": {
                "driver": driver,
                "nodeName": node,
                "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
                "devices": [
                    {"name": f"gpu-{i}", "attributes": {"model": {"string": "e2e"}}}
                    for i in range(count)
                ],
            },
        },
    )


def allocated_for(kube: Kube, ns: str, name: str) -> bool:
    claim = kube.custom.get_namespaced_custom_object(*RESOURCE, ns, "resourceclaims", name)
    status = claim.get("status") or {}
    pod = kube.get_pod(ns, name)
    return (
        bool(status.get("allocation"))
        and pod is not None
        and any(r.get("uid") == pod.metadata.uid for r in status.get("reservedFor") or [])
    )


def running(kube: Kube, ns: str, names: list[str]) -> list[str]:
    out = []
    for name in names:
        pod = kube.get_pod(ns, name)
        if pod is not None and pod.spec.node_name and pod.metadata.deletion_timestamp is None:
            out.append(name)
    return out


def test_the_loop_reclaims_the_deserved_dra_gpus_and_each_preemptor_gets_its_claim(
    kube: Kube, api: Any, dra_reclaimer: Any
) -> None:
    ns = kube.namespace("dra")
    tag = "d" + ns.replace("dra-", "")
    driver = f"{tag}.gpu.example.com"
    device_class = f"{tag}-gpu"
    nodes = [kube.node(f"{tag}-n{i}", cpu="8") for i in range(2)]
    for node in nodes:
        publish_gpus(kube, node, driver, 2)
    kube.custom.create_cluster_custom_object(
        *RESOURCE,
        "deviceclasses",
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "DeviceClass",
            "metadata": {"name": device_class},
            "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{driver}"'}}]},
        },
    )
    try:
        q1, q2 = kube.queue(f"{tag}-q1"), kube.queue(f"{tag}-q2")
        with ClaimReleaser(api, ns):
            a = [gpu_pod(kube, ns, f"a{i}", q1, device_class) for i in range(4)]
            kube.wait_running(ns, a, timeout=90)
            assert all(allocated_for(kube, ns, n) for n in a)
            loop = dra_reclaimer()
            b = [gpu_pod(kube, ns, f"b{i}", q2, device_class) for i in range(3)]

            # q2 deserves two of the four GPUs (equal weights, both ask for more).
            wait_for(lambda: len(running(kube, ns, b)) >= 2, 120, "q2 to get two GPUs")
            evicted = metric(loop, "queue_extender_reclaim_evictions_total", result="ok")
            time.sleep(QUIET)
            assert metric(loop, "queue_extender_reclaim_evictions_total", result="ok") == evicted
            assert evicted == 2
            assert len(running(kube, ns, b)) == 2
            assert len(running(kube, ns, a)) == 2
            wait_for(
                lambda: all(allocated_for(kube, ns, n) for n in running(kube, ns, b)),
                30,
                "the preemptors' claims allocated",
            )
    finally:
        for node in nodes:
            with contextlib.suppress(client.ApiException):
                kube.custom.delete_cluster_custom_object(
                    *RESOURCE, "resourceslices", f"{node}-gpus"
                )
        with contextlib.suppress(client.ApiException):
            kube.custom.delete_cluster_custom_object(*RESOURCE, "deviceclasses", device_class)


# --- one quota name for device-plugin and DRA GPUs, and what is not evaluable -------------


def make_class(kube: Kube, name: str, *expressions: str, **spec: Any) -> str:
    kube.custom.create_cluster_custom_object(
        *RESOURCE,
        "deviceclasses",
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "DeviceClass",
            "metadata": {"name": name},
            "spec": {"selectors": [{"cel": {"expression": e}} for e in expressions], **spec},
        },
    )
    return name


def remove(kube: Kube, plural: str, *names: str) -> None:
    for name in names:
        with contextlib.suppress(client.ApiException):
            kube.custom.delete_cluster_custom_object(*RESOURCE, plural, name)


def get_json(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=10) as response:
        return json.loads(response.read())


def get_text(url: str) -> str:
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return str(response.read().decode())
    except urllib.error.HTTPError as exc:
        return str(exc.read().decode())


def test_device_plugin_and_dra_gpus_of_one_queue_count_under_one_name(
    kube: Kube, control_plane: ControlPlane, tmp_path: Path
) -> None:
    ns = kube.namespace("dra")
    tag = "d" + ns.replace("dra-", "")
    driver = f"{tag}.gpu.example.com"
    node = kube.node(f"{tag}-n0", cpu="8")
    capacity = {"cpu": "8", "memory": "16Gi", "pods": "110", "nvidia.com/gpu": "1"}
    kube.core.patch_node_status(node, {"status": {"capacity": capacity, "allocatable": capacity}})
    publish_gpus(kube, node, driver, 1)
    device_class = make_class(kube, f"{tag}-gpu", f'device.driver == "{driver}"')
    conf = tmp_path / "scheduler.conf"
    conf.write_text(DEFAULT_CONF + f"\ndeviceClassMappings:\n  {device_class}: nvidia.com/gpu\n")
    extender = control_plane.start_extender(
        f"dra-mapped-{tag}", args=["--conf", str(conf)]
    ).wait_ready()
    try:
        queue = kube.queue(f"{tag}-q")
        dra = gpu_pod(kube, ns, "dra", queue, device_class)
        plugin = f"{tag}-plugin"
        kube.core.create_namespaced_pod(
            ns,
            {
                "metadata": {
                    "name": plugin,
                    "annotations": {"scheduling.volcano.sh/queue-name": queue},
                },
                "spec": {
                    "schedulerName": QUEUE_SCHEDULER,
                    "terminationGracePeriodSeconds": 0,
                    "containers": [
                        {
                            "name": "main",
                            "image": "registry.k8s.io/pause:3.10",
                            "resources": {
                                "requests": {"cpu": "100m", "nvidia.com/gpu": "1"},
                                "limits": {"nvidia.com/gpu": "1"},
                            },
                        }
                    ],
                },
            },
        )
        kube.wait_running(ns, [dra, plugin], timeout=90)

        def gpus_allocated() -> float:
            view = get_json(f"{extender.url}/api/v1/queues/{queue}")
            return float((view.get("allocated") or {}).get("nvidia.com/gpu", 0))

        wait_for(lambda: gpus_allocated() == 2, 30, "two GPUs under nvidia.com/gpu")
    finally:
        extender.process.stop()
        remove(kube, "resourceslices", f"{node}-gpus")
        remove(kube, "deviceclasses", device_class)


def test_a_claim_shape_the_engine_does_not_model_is_not_evaluable_and_evicts_nothing(
    kube: Kube, api: Any, dra_reclaimer: Any
) -> None:
    ns = kube.namespace("dra")
    tag = "d" + ns.replace("dra-", "")
    driver = f"{tag}.gpu.example.com"
    node = kube.node(f"{tag}-n0", cpu="8")
    publish_gpus(kube, node, driver, 2)
    device_class = make_class(kube, f"{tag}-gpu", f'device.driver == "{driver}"')
    try:
        q1, q2 = kube.queue(f"{tag}-q1"), kube.queue(f"{tag}-q2")
        with ClaimReleaser(api, ns):
            a = [gpu_pod(kube, ns, f"a{i}", q1, device_class) for i in range(2)]
            kube.wait_running(ns, a, timeout=90)
            loop = dra_reclaimer()
            kube.custom.create_namespaced_custom_object(
                *RESOURCE,
                ns,
                "resourceclaims",
                {
                    "apiVersion": "resource.k8s.io/v1",
                    "kind": "ResourceClaim",
                    "metadata": {"name": "paired"},
                    "spec": {
                        "devices": {
                            "requests": [
                                {"name": r, "exactly": {"deviceClassName": device_class}}
                                for r in ("one", "two")
                            ],
                            "constraints": [{"matchAttribute": f"{driver}/model"}],
                        }
                    },
                },
            )
            kube.core.create_namespaced_pod(
                ns,
                {
                    "metadata": {
                        "name": "b0",
                        "annotations": {"scheduling.volcano.sh/queue-name": q2},
                    },
                    "spec": {
                        "schedulerName": QUEUE_SCHEDULER,
                        "terminationGracePeriodSeconds": 0,
                        "resourceClaims": [{"name": "gpu", "resourceClaimName": "paired"}],
                        "containers": [
                            {
                                "name": "main",
                                "image": "registry.k8s.io/pause:3.10",
                                "resources": {
                                    "requests": {"cpu": "100m"},
                                    "claims": [{"name": "gpu"}],
                                },
                            }
                        ],
                    },
                },
            )
            kube.wait_message(ns, "b0", "constraints across its requests", timeout=60)
            time.sleep(QUIET)
            assert metric(loop, "queue_extender_reclaim_evictions_total", result="ok") == 0
            assert running(kube, ns, a) == a
    finally:
        remove(kube, "resourceslices", f"{node}-gpus")
        remove(kube, "deviceclasses", device_class)


def test_a_selector_that_does_not_compile_here_is_reported_by_readiness_and_logs(
    kube: Kube, stack: Any
) -> None:
    ns = kube.namespace("dra")
    tag = "d" + ns.replace("dra-", "")
    # Valid for the API server (Kubernetes' quantity library has add), not offered here.
    expression = (
        f'device.capacity["{tag}.example.com"].memory.add(quantity("1Gi"))'
        '.isGreaterThan(quantity("2Gi"))'
    )
    device_class = make_class(kube, f"{tag}-odd", expression)
    try:
        extender = stack.extender
        wait_for(
            lambda: (
                f"DeviceClass {device_class}: selector #0 does not compile"
                in get_text(f"{extender.url}/readyz")
            ),
            30,
            "readiness to name the class",
        )
        assert extender.ready()  # the rest of the cluster is still judged
        assert f"DeviceClass {device_class}: selector #0 does not compile" in (
            extender.process.tail(400)
        )
    finally:
        remove(kube, "deviceclasses", device_class)


def test_an_extended_resource_class_is_counted_under_its_name_once(kube: Kube, stack: Any) -> None:
    ns = kube.namespace("dra")
    tag = "d" + ns.replace("dra-", "")
    driver = f"{tag}.gpu.example.com"
    resource = f"example.com/{tag}-gpu"
    node = kube.node(f"{tag}-n0", cpu="8")  # no device plugin: allocatable has no GPU
    publish_gpus(kube, node, driver, 2)
    device_class = make_class(
        kube, f"{tag}-gpu", f'device.driver == "{driver}"', extendedResourceName=resource
    )
    try:
        queue = kube.queue(f"{tag}-q")
        kube.core.create_namespaced_pod(
            ns,
            {
                "metadata": {
                    "name": "ext",
                    "annotations": {"scheduling.volcano.sh/queue-name": queue},
                },
                "spec": {
                    "schedulerName": QUEUE_SCHEDULER,
                    "terminationGracePeriodSeconds": 0,
                    "containers": [
                        {
                            "name": "main",
                            "image": "registry.k8s.io/pause:3.10",
                            "resources": {
                                "requests": {"cpu": "100m", resource: "1"},
                                "limits": {resource: "1"},
                            },
                        }
                    ],
                },
            },
        )
        # The extender lets it through (the node's capacity comes from its slices) and
        # kube-scheduler makes and allocates the claim.
        kube.wait_running(ns, ["ext"], timeout=90)
        claims = kube.custom.list_namespaced_custom_object(*RESOURCE, ns, "resourceclaims")
        assert any((c.get("status") or {}).get("allocation") for c in claims["items"])
        url = f"{stack.extender.url}/api/v1/queues/{queue}"

        def charged() -> float:
            return float((get_json(url).get("allocated") or {}).get(resource, 0))

        wait_for(lambda: charged() == 1, 30, "the pod's request charged")
        time.sleep(2)
        assert charged() == 1  # the claim kube-scheduler made is not charged again
    finally:
        remove(kube, "resourceslices", f"{node}-gpus")
        remove(kube, "deviceclasses", device_class)
