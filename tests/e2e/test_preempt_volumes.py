"""The preempt verb and a preemptor the engine cannot judge, as kube-scheduler calls it: a
high-priority pod whose claim waits for its first consumer. kube-scheduler judged the
volume itself before proposing its victims; the extender keeps them (the queue rules allow
them), so the victim is evicted for the preemptor."""

from __future__ import annotations

from typing import Any

from kubernetes import client

from tests.e2e import test_reclaim_volumes as volumes
from tests.e2e.kube import QUEUE_SCHEDULER, Kube
from tests.e2e.test_reclaim_volumes import claim

#: The cluster-scoped storage objects a test makes (the volume tests' fixture), by name.
storage = volumes.storage


def test_kube_schedulers_victim_is_kept_for_a_preemptor_it_cannot_judge(
    kube: Kube, storage: Any, api: Any
) -> None:
    ns = kube.namespace()
    low = kube.priority_class("pvol-low", 10)
    high = kube.priority_class("pvol-high", 1000)
    kube.node("pvol-n1", cpu="2")
    kube.queue("pvol-q")
    kube.pod(ns, "old", cpu="2", queue="pvol-q", priority_class=low)
    kube.wait_running(ns, ["old"])
    sc = storage.storage_class(f"pvol-wffc-{ns}")
    claim(api, ns, "data", storage_class=sc)
    client.CoreV1Api(api).create_namespaced_pod(
        ns,
        {
            "metadata": {
                "name": "urgent",
                "annotations": {"scheduling.volcano.sh/queue-name": "pvol-q"},
            },
            "spec": {
                "schedulerName": QUEUE_SCHEDULER,
                "priorityClassName": high,
                "terminationGracePeriodSeconds": 0,
                "containers": [
                    {
                        "name": "main",
                        "image": "registry.k8s.io/pause:3.10",
                        "resources": {"requests": {"cpu": "2", "memory": "128Mi"}},
                        "volumeMounts": [{"name": "data", "mountPath": "/data"}],
                    }
                ],
                "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": "data"}}],
            },
        },
    )
    kube.wait_gone(ns, "old", timeout=60)
