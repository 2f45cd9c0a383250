"""Status write-back on the real control plane: what `kubectl get podgroup`, `kubectl describe
podgroup`, `kubectl get queue -o yaml` and pod events show a Volcano user."""

from __future__ import annotations

import time
from typing import Any

from kubernetes import client

from tests.e2e.conftest import Stack
from tests.e2e.controlplane import wait_for
from tests.e2e.kube import GROUP, VERSION, Kube


def podgroup(kube: Kube, ns: str, name: str) -> dict[str, Any]:
    return dict(kube.custom.get_namespaced_custom_object(GROUP, VERSION, ns, "podgroups", name))


def queue_status(kube: Kube, name: str) -> dict[str, Any]:
    obj = kube.custom.get_cluster_custom_object(GROUP, VERSION, "queues", name)
    return dict(obj.get("status") or {})


def phase_is(kube: Kube, ns: str, name: str, phase: str) -> bool:
    return (podgroup(kube, ns, name).get("status") or {}).get("phase") == phase


def condition(pg: dict[str, Any], ctype: str) -> dict[str, Any] | None:
    for c in (pg.get("status") or {}).get("conditions") or []:
        if c.get("type") == ctype:
            return dict(c)
    return None


def events_on(kube: Kube, ns: str, name: str) -> list[Any]:
    events = client.EventsV1Api(kube.api).list_namespaced_event(
        ns, field_selector=f"regarding.name={name}"
    )
    return [e for e in events.items if e.reporting_controller == "kube-queue-extender"]


def settle() -> None:
    """Let the extender's queue shares count a node just added (they are recomputed at most
    once per --refresh-interval) before a pod asks for it."""
    time.sleep(1.5)


def metric(stack: Stack, prefix: str) -> float:
    total = 0.0
    for line in stack.extender.metrics().splitlines():
        if line.startswith(prefix):
            total += float(line.rsplit(" ", 1)[1])
    return total


def test_a_gang_goes_pending_inqueue_running_as_its_pods_start(kube: Kube) -> None:
    ns = kube.namespace()
    kube.node("st-gang-n1", cpu="4")
    kube.queue("st-gang")
    kube.podgroup(ns, "gang", 3, "st-gang")
    wait_for(lambda: phase_is(kube, ns, "gang", "Pending"), 20, "phase Pending")
    held = condition(podgroup(kube, ns, "gang"), "Unschedulable")
    assert held is not None and held["status"] == "True"
    assert held["reason"] == "NotEnoughTasks"

    for i in range(3):  # no node carries the label yet: admitted by the queue, not placed
        kube.pod(ns, f"gang-{i}", cpu="1", group="gang", node_selector={"st-gang": "yes"})
    wait_for(lambda: phase_is(kube, ns, "gang", "Inqueue"), 20, "phase Inqueue")

    kube.core.patch_node("st-gang-n1", {"metadata": {"labels": {"st-gang": "yes"}}})
    kube.wait_running(ns, ["gang-0", "gang-1", "gang-2"])
    wait_for(lambda: phase_is(kube, ns, "gang", "Running"), 20, "phase Running")
    wait_for(lambda: podgroup(kube, ns, "gang")["status"].get("running") == 3, 20, "running 3")
    pg = podgroup(kube, ns, "gang")
    # the printer columns of `kubectl get podgroup`: STATUS, minMember, RUNNINGS, QUEUE
    assert (pg["status"]["phase"], pg["spec"]["minMember"], pg["status"]["running"]) == (
        "Running",
        3,
        3,
    )
    assert pg["spec"]["queue"] == "st-gang"
    scheduled = condition(pg, "Scheduled")
    assert scheduled is not None and scheduled["status"] == "True"
    assert condition(pg, "Unschedulable")["status"] == "False"  # type: ignore[index]
    # The phase's event is queued once its status write has landed and is written by the
    # recorder's own thread: it can reach the API server just after the status does.
    wait_for(
        lambda: {"Inqueue", "Running"} <= {e.reason for e in events_on(kube, ns, "gang")},
        20,
        "the Inqueue and Running events",
    )


def test_a_gang_that_cannot_fit_its_queue_is_unschedulable_with_the_queues_reason(
    kube: Kube,
) -> None:
    ns = kube.namespace()
    kube.node("st-small-n1", cpu="8")
    kube.queue("st-small", capability={"cpu": "2"})
    kube.podgroup(ns, "big", 3, "st-small", min_resources={"cpu": "3"})
    for i in range(3):
        kube.pod(ns, f"big-{i}", cpu="1", group="big")

    def unschedulable() -> dict[str, Any] | None:
        c = condition(podgroup(kube, ns, "big"), "Unschedulable")
        return c if c and c.get("reason") == "NotEnoughResources" else None

    held = wait_for(unschedulable, 20, "an Unschedulable condition")
    assert "queue st-small" in held["message"]
    assert phase_is(kube, ns, "big", "Pending")
    first = held["lastTransitionTime"]
    time.sleep(2.5)  # more cycles, nothing changed: the transition time stays
    assert condition(podgroup(kube, ns, "big"), "Unschedulable")["lastTransitionTime"] == first  # type: ignore[index]
    wait_for(
        lambda: any("queue st-small" in (e.note or "") for e in events_on(kube, ns, "big-0")),
        20,
        "an event on a held pod naming its queue",
    )


def test_queue_status_follows_pods_starting_and_ending(kube: Kube) -> None:
    ns = kube.namespace()
    kube.node("st-q-n1", cpu="4")
    kube.queue("st-q")
    kube.podgroup(ns, "one", 1, "st-q")
    # The pod waits for a node label, so the extender sees it pending before it is offered a
    # node (its queue's deserved share counts it).
    kube.pod(ns, "one-0", cpu="1500m", group="one", node_selector={"st-q": "yes"})
    settle()
    kube.core.patch_node("st-q-n1", {"metadata": {"labels": {"st-q": "yes"}}})
    kube.wait_running(ns, ["one-0"])
    wait_for(
        lambda: queue_status(kube, "st-q").get("allocated", {}).get("cpu") == "1500m",
        20,
        "allocated cpu 1500m",
    )
    wait_for(lambda: queue_status(kube, "st-q").get("running") == 1, 20, "running 1")
    assert queue_status(kube, "st-q").get("state") == "Open"
    kube.delete_pod(ns, "one-0")
    wait_for(
        lambda: queue_status(kube, "st-q").get("allocated", {}).get("cpu") == "0",
        20,
        "allocated back to 0",
    )
    wait_for(lambda: queue_status(kube, "st-q").get("pending") == 1, 20, "the group pending")
    assert queue_status(kube, "st-q").get("running", 0) == 0


def test_a_closed_queue_stays_closed(kube: Kube) -> None:
    ns = kube.namespace()
    kube.queue("st-closed", state="Closed")
    kube.podgroup(ns, "shut", 1, "st-closed")
    kube.pod(ns, "shut-0", cpu="1", group="shut")
    wait_for(lambda: queue_status(kube, "st-closed").get("pending") == 1, 20, "counters written")
    time.sleep(2)
    assert queue_status(kube, "st-closed")["state"] == "Closed"


def test_a_refused_preemption_leaves_an_event_naming_the_protected_queue(kube: Kube) -> None:
    ns = kube.namespace()
    low = kube.priority_class("st-keep-low", 10)
    high = kube.priority_class("st-keep-high", 1000)
    kube.node("st-keep-n1", cpu="2")
    kube.queue("st-keep-full", reclaimable=False)
    kube.queue("st-keep-starved")
    settle()
    kube.pod(ns, "hog", cpu="2", queue="st-keep-full", priority_class=low)
    kube.wait_running(ns, ["hog"])
    kube.pod(ns, "claim", cpu="2", queue="st-keep-starved", priority_class=high)

    def refused() -> Any:
        for e in events_on(kube, ns, "claim"):
            if e.reason == "NotReclaimable":
                return e
        return None

    event = wait_for(refused, 30, "a NotReclaimable event on the preemptor")
    assert "st-keep-full" in event.note
    assert event.type == "Warning"
    assert kube.get_pod(ns, "hog") is not None


def test_a_burst_of_pod_events_costs_a_bounded_number_of_writes(kube: Kube, stack: Stack) -> None:
    ns = kube.namespace()
    kube.queue("st-burst")
    kube.podgroup(ns, "burst", 1, "st-burst")
    wait_for(lambda: phase_is(kube, ns, "burst", "Pending"), 20, "the group written once")
    writes = 'queue_extender_api_writes_total{code="200",resource="podgroups"'
    queue_writes = 'queue_extender_api_writes_total{code="200",resource="queues/status"'
    cycles = "queue_extender_status_cycles_total"
    before = metric(stack, writes) + metric(stack, queue_writes), metric(stack, cycles)
    pods = 200
    for i in range(pods):  # nowhere to run: every pod stays pending, each one an event
        kube.pod(ns, f"burst-{i}", cpu="1", group="burst", node_selector={"st-burst": "none"})
    for i in range(pods):
        kube.delete_pod(ns, f"burst-{i}")
    wait_for(lambda: not kube.core.list_namespaced_pod(ns).items, 30, "the pods gone")
    time.sleep(2.5)  # the last changes written
    after = metric(stack, writes) + metric(stack, queue_writes), metric(stack, cycles)
    written, looked = after[0] - before[0], after[1] - before[1]
    # at most one write of the group and one of its queue per cycle, and far fewer than
    # the 400 pod events
    assert written <= 2 * looked + 2
    assert written < pods / 2


def test_a_job_its_queue_cannot_hold_beside_a_running_one_stays_pending_until_there_is_room(
    kube: Kube,
) -> None:
    ns = kube.namespace()
    kube.node("st-cap-n1", cpu="4")
    kube.queue("st-cap", capability={"cpu": "1"})
    settle()
    kube.podgroup(ns, "j2", 1, "st-cap")
    kube.pod(ns, "j2-0", cpu="1", group="j2")
    kube.wait_running(ns, ["j2-0"])
    # Created once j2 runs, while its PodGroup may still read Pending.
    kube.podgroup(ns, "j2x", 1, "st-cap", min_resources={"cpu": "1"})
    kube.pod(ns, "j2x-0", cpu="1", group="j2x")
    counts = ("inqueue", "running", "pending")

    def counters() -> tuple[int, ...]:
        status = queue_status(kube, "st-cap")
        return tuple(int(status.get(c, 0)) for c in counts)

    wait_for(lambda: phase_is(kube, ns, "j2", "Running"), 20, "j2 Running")
    wait_for(lambda: counters() == (0, 1, 1), 20, "inqueue 0, running 1, pending 1")
    for _ in range(4):  # several cycles: j2x is never admitted, and the counters agree
        assert phase_is(kube, ns, "j2x", "Pending")
        assert counters() == (0, 1, 1)
        time.sleep(1)
    assert kube.get_pod(ns, "j2x-0").spec.node_name is None
    # j2 ends: now there is room, j2x is admitted and starts.
    kube.delete_pod(ns, "j2-0")
    kube.wait_running(ns, ["j2x-0"], timeout=30)
    wait_for(lambda: phase_is(kube, ns, "j2x", "Running"), 20, "j2x Running")
    # j2, its pod gone, is below its gang again: Pending, as Volcano would have it.
    wait_for(lambda: counters() == (0, 1, 1), 20, "the counters to follow the phases")
    assert phase_is(kube, ns, "j2", "Pending")
