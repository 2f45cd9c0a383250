"""The extender before its caches have synced and across a restart: kube-scheduler is made
to retry, and nothing is decided on an empty or partial view of the cluster."""

from __future__ import annotations

import time
from typing import Any

from tests.e2e.conftest import Stack
from tests.e2e.controlplane import ControlPlane, wait_for
from tests.e2e.forwarder import Forwarder
from tests.e2e.kube import Kube


def managed_pod(namespace: str, name: str, queue: str) -> dict[str, Any]:
    return {
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": f"uid-{name}",
            "annotations": {"scheduling.volcano.sh/queue-name": queue},
        },
        "spec": {
            "schedulerName": "queue-scheduler",
            "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}],
        },
    }


def test_before_its_caches_sync_the_extender_makes_kube_scheduler_retry(
    kube: Kube, control_plane: ControlPlane
) -> None:
    """The API server is unreachable at first: /readyz is 503, filter answers an error (no
    node passes, none is marked as a preemption candidate), preempt names no victims. Once
    the API server can be reached, the same request gets the queue's real answer."""
    ns = kube.namespace()
    kube.node("sync-n1", cpu="4")
    kube.queue("sync-full", capability={"cpu": "1"})
    kube.pod(ns, "holder", cpu="1", queue="sync-full", node="sync-n1")
    kube.wait_running(ns, ["holder"])
    late = Forwarder(control_plane.api_port)
    config = control_plane.dir / "late.kubeconfig"
    config.write_text(
        control_plane.kubeconfig.read_text().replace(
            f"127.0.0.1:{control_plane.api_port}", f"127.0.0.1:{late.port}"
        )
    )
    extender = control_plane.start_extender("extender-late", kubeconfig=config)
    try:
        wait_for(lambda: extender.status("/healthz") == 200, 30, "the late extender to serve")
        assert extender.status("/readyz") == 503
        body = {"Pod": managed_pod(ns, "asker", "sync-full"), "NodeNames": ["sync-n1"]}
        answer = extender.post("filter", body)
        assert "not synced" in answer["Error"]
        assert not answer.get("NodeNames") and not answer.get("FailedNodes")
        victims = extender.post(
            "preempt",
            {"Pod": body["Pod"], "NodeNameToMetaVictims": {"sync-n1": {"Pods": [{"UID": "x"}]}}},
        )
        assert not victims.get("NodeNameToMetaVictims")
        late.open()
        extender.wait_ready(60)
        answer = extender.post("filter", body)
        assert not answer["Error"]
        assert "sync-full" in answer["FailedNodes"]["sync-n1"], answer
    finally:
        extender.process.stop()
        late.close()


def test_pods_created_while_the_extender_is_down_bind_once_it_is_back(
    kube: Kube, stack: Stack
) -> None:
    ns = kube.namespace()
    kube.node("restart-n1", cpu="4")
    kube.queue("restart-q")
    kube.queue("restart-closed", state="Closed")
    stack.extender.process.stop()
    try:
        for i in range(3):
            kube.pod(ns, f"p{i}", cpu="1", queue="restart-q")
        kube.pod(ns, "shut-out", cpu="1", queue="restart-closed")
        time.sleep(3)
        assert kube.bound(ns) == {}, "nothing binds while the extender is down"
    finally:
        stack.restart_extender()
    wait_for(lambda: len(kube.bound(ns)) == 3, 40, "the three pods to bind after the restart")
    assert "shut-out" not in kube.bound(ns)
