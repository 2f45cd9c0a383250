"""The test bed itself: a pod of each profile binds and runs through the real scheduler."""

from __future__ import annotations

from tests.e2e.kube import Kube


def test_pods_of_both_profiles_bind_and_run(kube: Kube) -> None:
    ns = kube.namespace()
    kube.node("smoke-n1", cpu="4")
    kube.pod(ns, "plain", cpu="1", scheduler="default-scheduler")
    kube.pod(ns, "queued", cpu="1")
    assert kube.wait_bound(ns, "plain") == "smoke-n1"
    assert kube.wait_bound(ns, "queued") == "smoke-n1"
    kube.wait_running(ns, ["plain", "queued"])
