"""filter and prioritize as kube-scheduler calls them: pass-through, queue state, capability,
gangs placed whole, queue-aware node choice, and parked pods retried when their queue changes."""

from __future__ import annotations

import time

from tests.e2e.controlplane import wait_for
from tests.e2e.kube import Kube


def test_pods_of_an_unmanaged_profile_pass_through_even_in_a_closed_queue(kube: Kube) -> None:
    ns = kube.namespace()
    kube.node("pass-n1", cpu="4")
    kube.queue("pass-closed", state="Closed")
    kube.pod(ns, "plain", queue="pass-closed", scheduler="default-scheduler")
    kube.pod(ns, "managed", queue="pass-closed")
    assert kube.wait_bound(ns, "plain") == "pass-n1"
    message = kube.wait_message(ns, "managed", "pass-closed is Closed")
    assert "FailedScheduling" in message
    time.sleep(2)
    assert kube.get_pod(ns, "managed").spec.node_name is None


def test_a_queue_capability_caps_pods_created_together(kube: Kube) -> None:
    """Three 1-CPU pods at once into a queue capped at 2 CPU, with 4 CPU free: exactly two
    bind, however close together kube-scheduler asks (each answer counts the one before)."""
    ns = kube.namespace()
    kube.node("cap-n1", cpu="4")
    kube.queue("cap-q", capability={"cpu": "2"})
    for i in range(3):
        kube.pod(ns, f"p{i}", cpu="1", queue="cap-q")
    wait_for(lambda: len(kube.bound(ns)) == 2, 30, "two pods of cap-q to bind")
    (waiting,) = [n for n in ("p0", "p1", "p2") if n not in kube.bound(ns)]
    message = kube.wait_message(ns, waiting, "cap-q")
    assert "cpu 2" in message, message
    time.sleep(3)
    assert len(kube.bound(ns)) == 2


def test_a_gang_is_placed_whole_or_not_at_all(kube: Kube) -> None:
    ns = kube.namespace()
    kube.node("gang-n1", cpu="2")
    kube.queue("gang-q")
    kube.podgroup(ns, "trio", 3, "gang-q")
    for i in range(3):
        kube.pod(ns, f"trio-{i}", cpu="1", group="trio")
    kube.wait_message(ns, "trio-0", "gang")
    time.sleep(3)
    assert kube.bound(ns) == {}, "no member may start while the gang cannot be whole"
    kube.node("gang-n2", cpu="2")
    wait_for(lambda: len(kube.bound(ns)) == 3, 30, "all three members to bind")


def test_prioritize_packs_queue_pods_where_the_default_scheduler_would_spread(kube: Kube) -> None:
    ns = kube.namespace()
    kube.node("pack-n1", cpu="4")
    kube.node("pack-n2", cpu="4")
    kube.pod(ns, "resident", cpu="2", node="pack-n1", scheduler="default-scheduler")
    kube.wait_running(ns, ["resident"])
    kube.queue("pack-q")
    kube.pod(ns, "packed", cpu="1", queue="pack-q")
    assert kube.wait_bound(ns, "packed") == "pack-n1"
    kube.pod(ns, "spread", cpu="1", scheduler="default-scheduler")
    assert kube.wait_bound(ns, "spread") == "pack-n2"


def test_a_parked_pod_binds_within_seconds_when_its_queue_grows(kube: Kube) -> None:
    """kube-scheduler parks a pod the extender rejected until some cluster event; a Queue
    change is not one it watches, so the extender itself must make it retry."""
    ns = kube.namespace()
    kube.node("park-n1", cpu="4")
    kube.queue("park-q", capability={"cpu": "1"})
    kube.pod(ns, "first", cpu="1", queue="park-q")
    kube.wait_running(ns, ["first"])
    kube.pod(ns, "second", cpu="1", queue="park-q")
    kube.wait_message(ns, "second", "park-q")
    time.sleep(4)  # past kube-scheduler's backoff: the pod now sits among the unschedulable
    assert kube.get_pod(ns, "second").spec.node_name is None
    kube.patch_queue("park-q", {"capability": {"cpu": "2"}})
    assert kube.wait_bound(ns, "second", timeout=15) == "park-n1"
