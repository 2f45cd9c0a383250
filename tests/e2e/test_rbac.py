"""The essential behaviours once more with kube-apiserver in `--authorization-mode=RBAC` and the
extender running as the chart's ServiceAccount, bound to exactly the chart's roles: it syncs
every kind, filter and preempt work through kube-scheduler, a parked pod gets its retry
annotation, and --delegated-auth reviews callers with the real TokenReview and
SubjectAccessReview APIs. A permission missing from the chart fails one of these."""

from __future__ import annotations

import time

import httpx

from scheduler_core.controller.requeue import RETRY_ANNOTATION
from tests.e2e.controlplane import ControlPlane, wait_for
from tests.e2e.kube import Kube
from tests.e2e.rbac import (
    PROMETHEUS_TOKEN,
    STRANGER_TOKEN,
    STRANGER_USER,
    RbacStack,
    extender_args,
)

FILTER_REQ = {"Pod": {"metadata": {"name": "x", "namespace": "y"}}, "NodeNames": ["n"]}


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def test_the_extender_syncs_every_kind_as_the_charts_service_account(
    rbac_stack: RbacStack,
) -> None:
    """The stack's start waited for /readyz: every informer listed and is watching."""
    assert "--delegated-auth" in rbac_stack.args  # the chart's own arguments
    assert any(c.endswith(":extender") for c in rbac_stack.created)
    assert httpx.get(rbac_stack.extender.url + "/readyz").text.startswith("ok")
    assert "forbidden" not in rbac_stack.log().lower()


def test_an_identity_without_the_charts_roles_never_gets_ready(
    rbac_control_plane: ControlPlane, rbac_stack: RbacStack
) -> None:
    """The control: the API server really enforces RBAC, so the test above proves the roles."""
    kubeconfig = rbac_control_plane.user_kubeconfig(STRANGER_TOKEN, "stranger")
    args = extender_args(rbac_stack.documents, rbac_control_plane.dir)
    stranger = rbac_control_plane.start_extender("extender-stranger", args, kubeconfig=kubeconfig)
    try:
        wait_for(
            lambda: "forbidden" in stranger.process.log_path.read_text(errors="replace").lower(),
            30,
            "the unbound extender to be refused by the API server",
        )
        wait_for(lambda: stranger.status("/healthz") == 200, 30, "the extender to listen")
        assert stranger.status("/readyz") == 503
        # Refused, it keeps serving (unready) rather than exiting.
        time.sleep(1)
        assert stranger.process.alive(), stranger.process.tail()
        assert stranger.status("/readyz") == 503
        assert STRANGER_USER in stranger.process.log_path.read_text(errors="replace")
    finally:
        stranger.process.stop()


def test_filter_and_the_parked_pod_retry_work_as_the_service_account(
    rbac_kube: Kube,
) -> None:
    kube = rbac_kube
    ns = kube.namespace("rbac")
    kube.node("rbac-n1", cpu="4")
    kube.queue("rbac-q", capability={"cpu": "1"})
    kube.pod(ns, "first", cpu="1", queue="rbac-q")
    kube.wait_running(ns, ["first"])
    kube.pod(ns, "second", cpu="1", queue="rbac-q")
    kube.wait_message(ns, "second", "rbac-q")
    time.sleep(4)  # past kube-scheduler's backoff: the pod sits among the unschedulable
    kube.patch_queue("rbac-q", {"capability": {"cpu": "2"}})
    assert kube.wait_bound(ns, "second", timeout=15) == "rbac-n1"
    annotations = kube.get_pod(ns, "second").metadata.annotations or {}
    assert RETRY_ANNOTATION in annotations  # the extender's own patch got through RBAC


def test_preempt_works_as_the_service_account(rbac_kube: Kube) -> None:
    kube = rbac_kube
    ns = kube.namespace("rbac")
    low = kube.priority_class("rbac-low", 10)
    high = kube.priority_class("rbac-high", 1000)
    kube.node("rbac-p1", cpu="2")
    kube.queue("rbac-pq")
    kube.pod(ns, "victim", cpu="2", queue="rbac-pq", priority_class=low)
    kube.wait_running(ns, ["victim"])
    kube.pod(ns, "urgent", cpu="2", queue="rbac-pq", priority_class=high)
    kube.wait_gone(ns, "victim")
    assert kube.wait_bound(ns, "urgent", timeout=20) == "rbac-p1"


def test_delegated_auth_with_the_real_review_apis(rbac_stack: RbacStack) -> None:
    """The reviews' own rights come both from the chart's delegated-auth role and from the
    built-in system:kube-scheduler the pod is bound to: removing one alone passes here."""
    url = rbac_stack.extender.url
    with httpx.Client(base_url=url, timeout=10) as c:
        # Bound to the chart's metrics-reader ClusterRole by the cluster admin.
        metrics = c.get("/metrics", headers=bearer(PROMETHEUS_TOKEN))
        assert metrics.status_code == 200
        assert "queue_extender_" in metrics.text
        # The reader role covers /metrics only.
        assert c.get("/debug/queues", headers=bearer(PROMETHEUS_TOKEN)).status_code == 403
        # A real identity that nobody granted anything.
        stranger = c.get("/metrics", headers=bearer(STRANGER_TOKEN))
        assert stranger.status_code == 403
        assert "system:serviceaccount:default:stranger" in stranger.json()["Error"]
        # No token, or one the API server does not know.
        assert c.get("/metrics").status_code == 401
        assert c.get("/metrics", headers=bearer("forged")).status_code == 401
        # kube-scheduler's verbs and the kubelet's probes stay open.
        assert c.post("/filter", json=FILTER_REQ).status_code == 200
        assert c.get("/healthz").status_code == 200
    assert "cannot create a" not in rbac_stack.log()  # no review failed for want of rights


def test_the_extender_leads_beside_its_elected_scheduler_as_the_service_account(
    rbac_stack: RbacStack,
) -> None:
    """The chart's sidecar mode: the ServiceAccount may read kube-scheduler's Lease, and the
    extender leads once it has seen its own scheduler renew it."""
    assert "--leader-elect-mode=sidecar" in rbac_stack.args
    wait_for(
        lambda: "became the leader (kube-scheduler lease" in rbac_stack.log(),
        30,
        "the extender to lead with its kube-scheduler",
    )
    assert "reading kube-scheduler's lease" not in rbac_stack.log()
