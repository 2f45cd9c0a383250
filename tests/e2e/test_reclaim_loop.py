"""The active reclaim loop on the real control plane: a second extender runs ``--reclaim``
(its own lease), the session's kube-scheduler binds what the loop freed.

Two queues of equal weight and equal pod priority throughout: kube-scheduler would never
preempt here, so every eviction is the loop's. "Nothing more is evicted" is watched for 10 s
(not 60: the suite must stay fast; the loop runs every second, so that is ten cycles).
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from scheduler_core.conf import DEFAULT_CONF
from tests.e2e.controlplane import ControlPlane, Extender, wait_for
from tests.e2e.kube import Kube

_leases = itertools.count()
QUIET = 10.0


def reclaim_args(lease: str, *extra: str) -> list[str]:
    return [
        "--reclaim",
        "--leader-elect-lease-name",
        lease,
        "--leader-elect-lease-namespace",
        "default",
        "--leader-elect-lease-duration",
        "4",
        "--leader-elect-renew-deadline",
        "3",
        "--leader-elect-retry-period",
        "1",
        *extra,
    ]


@pytest.fixture
def reclaimer(control_plane: ControlPlane) -> Iterator[Any]:
    started: list[Extender] = []

    def start(*extra: str, lease: str | None = None, name: str = "reclaimer") -> Extender:
        lease = lease or f"e2e-reclaim-{next(_leases)}-{int(time.time())}"
        extender = control_plane.start_extender(
            f"{name}-{len(started)}", args=reclaim_args(lease, *extra)
        ).wait_ready()
        started.append(extender)
        return extender

    yield start
    for extender in started:
        extender.process.stop()


def metric(extender: Extender, name: str, **labels: str) -> float:
    wanted = name + (
        "{" + ",".join(f'{k}="{v}"' for k, v in labels.items()) + "}" if labels else ""
    )
    for line in extender.metrics().splitlines():
        if line.startswith(wanted + " "):
            return float(line.split()[1])
    return 0.0


def looks(extender: Extender) -> float:
    """Cycles that decided, plus those that saw the cluster as it was when one last decided
    nothing (a second decision on it would be the same)."""
    return metric(extender, "queue_extender_reclaim_cycle_seconds_count") + metric(
        extender, "queue_extender_reclaim_cycles_skipped_total", reason="unchanged"
    )


def queue_of(pod: Any) -> str:
    return str((pod.metadata.annotations or {}).get("scheduling.volcano.sh/queue-name", ""))


def running_by_queue(kube: Kube, ns: str) -> dict[str, int]:
    counts: dict[str, int] = {}
    for pod in kube.pods(ns).values():
        if pod.spec.node_name and pod.metadata.deletion_timestamp is None:
            counts[queue_of(pod)] = counts.get(queue_of(pod), 0) + 1
    return counts


def events(kube: Kube, ns: str, name: str) -> list[str]:
    return kube.scheduling_messages(ns, name)


#: The loop's period as these tests start it (the extender's default).
LOOP_PERIOD = 1.0


def told_cannot_help(kube: Kube, ns: str, name: str) -> str:
    """The extender's ``ReclaimCannotHelp`` event on pod ``name``, which must come within the
    loop's period plus 5 s of kube-scheduler finding no node for it (the loop acts only
    then)."""
    kube.wait_message(ns, name, "FailedScheduling: ", timeout=60)
    return kube.wait_message(ns, name, "ReclaimCannotHelp: ", timeout=LOOP_PERIOD + 5)


def fill(kube: Kube, ns: str, queue: str, count: int, prefix: str, **extra: Any) -> list[str]:
    """``count`` 1-cpu pods of ``queue``, two to a node, placed directly (the test is about
    what the loop takes back, not about how they got there)."""
    tag = "r" + ns.replace("reclaim-", "")
    names = [
        kube.pod(ns, f"{prefix}{i}", queue=queue, node=f"{tag}-n{i // 2}", **extra)
        for i in range(count)
    ]
    kube.wait_running(ns, names, timeout=60)
    return names


def two_nodes(kube: Kube, tag: str) -> None:
    for i in range(2):
        kube.node(f"{tag}-n{i}", cpu="2", memory="8Gi")


def first_queue_fills_two_nodes(kube: Kube) -> tuple[str, str, str, str, list[str]]:
    """A fresh namespace, two 2-cpu nodes and two queues of equal weight, the first holding all
    four cpus with four running pods: (namespace, tag, q1, q2, q1's pod names)."""
    ns = kube.namespace("reclaim")
    tag = "r" + ns.replace("reclaim-", "")
    two_nodes(kube, tag)
    q1, q2 = kube.queue(f"{tag}-q1"), kube.queue(f"{tag}-q2")
    return ns, tag, q1, q2, fill(kube, ns, q1, 4, "a")


def two_replicas_one_leading(reclaimer: Any, lease: str, name: str) -> list[Extender]:
    """Two reclaimers on one lease, returned once exactly one of them leads."""
    replicas = [reclaimer(lease=lease, name=name), reclaimer(lease=lease, name=name)]
    wait_for(
        lambda: sorted(metric(r, "queue_extender_leader") for r in replicas) == [0.0, 1.0],
        30,
        "one leader",
    )
    return replicas


def test_the_starving_queue_gets_its_share_back_and_the_loop_then_stays_quiet(
    kube: Kube, reclaimer: Any
) -> None:
    ns, _tag, q1, q2, _ = first_queue_fills_two_nodes(kube)
    # q1 waits for more too: the freed capacity must go to q2's pods, not to these.
    extra = [kube.pod(ns, f"a-wait{i}", queue=q1) for i in range(2)]
    loop = reclaimer()
    b = [kube.pod(ns, f"b{i}", queue=q2) for i in range(4)]

    wait_for(lambda: running_by_queue(kube, ns).get(q2, 0) >= 2, 60, "q2 to reach its share")
    counts = running_by_queue(kube, ns)
    assert counts.get(q2, 0) in (1, 2, 3) and counts.get(q1, 0) >= 1
    evicted = metric(loop, "queue_extender_reclaim_evictions_total", result="ok")
    time.sleep(QUIET)
    assert metric(loop, "queue_extender_reclaim_evictions_total", result="ok") == evicted
    counts = running_by_queue(kube, ns)
    assert abs(counts.get(q1, 0) - 2) <= 1 and abs(counts.get(q2, 0) - 2) <= 1
    assert all(not kube.get_pod(ns, n).spec.node_name for n in extra)
    # Each eviction is explained on the victim, naming the rule and the preemptor.
    notes = [m for n in ("a0", "a1", "a2", "a3") for m in events(kube, ns, n)]
    reclaimed = [m for m in notes if m.startswith("Reclaimed: ")]
    assert reclaimed and all(f"queue {q1} is overused (allocated cpu" in m for m in reclaimed)
    assert any(f"of queue {q2}" in m for m in reclaimed)
    assert any(m.startswith("Reclaiming: ") for n in b for m in events(kube, ns, n))
    assert metric(loop, "volcano_eviction_transactions_total", action="reclaim") >= 1


def test_a_queue_that_does_not_lend_is_never_touched(kube: Kube, reclaimer: Any) -> None:
    ns = kube.namespace("reclaim")
    tag = "r" + ns.replace("reclaim-", "")
    two_nodes(kube, tag)
    q1 = kube.queue(f"{tag}-q1", reclaimable=False)
    q2 = kube.queue(f"{tag}-q2")
    names = fill(kube, ns, q1, 4, "a")
    loop = reclaimer()
    kube.pod(ns, "b0", queue=q2)
    wait_for(lambda: looks(loop) >= 5, 30, "cycles")
    assert sorted(kube.bound(ns)) == sorted(names)


def test_a_pod_under_its_minimum_runtime_waits_until_it_has_run_long_enough(
    kube: Kube, reclaimer: Any
) -> None:
    ns = kube.namespace("reclaim")
    tag = "r" + ns.replace("reclaim-", "")
    two_nodes(kube, tag)
    q1, q2 = kube.queue(f"{tag}-q1"), kube.queue(f"{tag}-q2")
    annotations = {"kube-queue-extender.io/min-runtime": "12s"}
    fill(kube, ns, q1, 4, "a", annotations=annotations)
    started = time.monotonic()
    loop = reclaimer()
    kube.pod(ns, "b0", queue=q2)
    wait_for(lambda: kube.get_pod(ns, "b0").spec.node_name, 60, "b0 to be placed")
    assert time.monotonic() - started >= 12 - 3  # the pods had run ~2-3 s when we started
    assert metric(loop, "queue_extender_reclaim_evictions_total", result="ok") == 1


def test_a_disruption_budget_blocks_the_eviction(kube: Kube, reclaimer: Any, api: Any) -> None:
    ns = kube.namespace("reclaim")
    tag = "r" + ns.replace("reclaim-", "")
    two_nodes(kube, tag)
    q1, q2 = kube.queue(f"{tag}-q1"), kube.queue(f"{tag}-q2")
    fill(kube, ns, q1, 4, "a", labels={"app": "guarded"})
    policy = client.PolicyV1Api(api)
    policy.create_namespaced_pod_disruption_budget(
        ns,
        {
            "metadata": {"name": "guard"},
            "spec": {"maxUnavailable": 0, "selector": {"matchLabels": {"app": "guarded"}}},
        },
    )
    # No disruption controller runs here: say what it would, no disruption allowed.
    policy.patch_namespaced_pod_disruption_budget_status(
        "guard",
        ns,
        {
            "status": {
                "observedGeneration": 1,
                "disruptionsAllowed": 0,
                "currentHealthy": 4,
                "desiredHealthy": 4,
                "expectedPods": 4,
            }
        },
    )
    loop = reclaimer()
    kube.pod(ns, "b0", queue=q2)
    wait_for(
        lambda: metric(loop, "queue_extender_reclaim_evictions_total", result="pdb") >= 2,
        30,
        "the loop to be refused and to try again",
    )
    assert metric(loop, "queue_extender_reclaim_evictions_total", result="ok") == 0
    assert len(kube.bound(ns)) == 4 and "b0" not in kube.bound(ns)


def test_a_gang_is_never_left_below_min_member(kube: Kube, reclaimer: Any) -> None:
    ns = kube.namespace("reclaim")
    tag = "r" + ns.replace("reclaim-", "")
    two_nodes(kube, tag)
    q1, q2 = kube.queue(f"{tag}-q1"), kube.queue(f"{tag}-q2")
    kube.podgroup(ns, "gang", 3, q1)
    fill(kube, ns, q1, 4, "g", group="gang")
    loop = reclaimer()
    for i in range(4):
        kube.pod(ns, f"b{i}", queue=q2)
    wait_for(lambda: running_by_queue(kube, ns).get(q2, 0) >= 1, 60, "q2 to get a pod")
    time.sleep(QUIET / 2)
    gang_left = sum(1 for n in kube.bound(ns) if n.startswith("g"))
    assert gang_left >= 3
    assert metric(loop, "queue_extender_reclaim_evictions_total", result="ok") == 1


def test_with_two_replicas_only_the_leader_evicts(kube: Kube, reclaimer: Any) -> None:
    ns, tag, _q1, q2, _ = first_queue_fills_two_nodes(kube)
    lease = f"e2e-reclaim-ha-{tag}"
    replicas = two_replicas_one_leading(reclaimer, lease, "ha")
    for i in range(2):
        kube.pod(ns, f"b{i}", queue=q2)
    wait_for(lambda: running_by_queue(kube, ns).get(q2, 0) >= 2, 60, "q2 to reach its share")
    ok = [metric(r, "queue_extender_reclaim_evictions_total", result="ok") for r in replicas]
    # Two evictions in all: a follower deciding too would have evicted twice as many. (On a
    # starved machine the lease may change hands mid-test; each eviction is still one
    # leader's, so the sum holds either way.)
    assert sum(ok) == 2, ok
    # The follower's loop wakes once a second; on a fast machine the share can be back before
    # its first wake, so its sitting out is awaited rather than read at once.
    wait_for(
        lambda: any(
            metric(r, "queue_extender_reclaim_cycles_skipped_total", reason="not-leader") > 0
            for r in replicas
        ),
        15,
        "one replica to sit a cycle out as a follower",
    )
    ok = [metric(r, "queue_extender_reclaim_evictions_total", result="ok") for r in replicas]
    assert sum(ok) == 2, f"no eviction beyond the two once the share was back: {ok}"


def test_dry_run_evicts_nothing_but_records_events(kube: Kube, reclaimer: Any) -> None:
    ns, _tag, _q1, q2, names = first_queue_fills_two_nodes(kube)
    loop = reclaimer("--reclaim-dry-run")
    kube.pod(ns, "b0", queue=q2)
    wait_for(
        lambda: any(
            m.startswith("WouldReclaim: dry run") for n in names for m in events(kube, ns, n)
        ),
        30,
        "a WouldReclaim event",
    )
    time.sleep(3)
    assert sorted(kube.bound(ns)) == sorted(names)
    assert metric(loop, "queue_extender_reclaim_evictions_total", result="dry-run") >= 1
    assert metric(loop, "queue_extender_reclaim_evictions_total", result="ok") == 0


def test_when_the_leader_is_killed_the_other_replica_takes_over_and_reclaims(
    kube: Kube, reclaimer: Any, api: Any
) -> None:
    ns, tag, q1, q2, _ = first_queue_fills_two_nodes(kube)
    lease = f"e2e-reclaim-failover-{tag}"
    replicas = two_replicas_one_leading(reclaimer, lease, "fo")
    leader, follower = sorted(replicas, key=lambda r: -metric(r, "queue_extender_leader"))
    leases = client.CoordinationV1Api(api)
    leader.process.kill()  # SIGKILL: the lease is not released, the follower waits it out
    last = leases.read_namespaced_lease(lease, "default")
    # Starving only after the kill: whatever is reclaimed, the survivor reclaimed it.
    for i in range(2):
        kube.pod(ns, f"b{i}", queue=q2)
    wait_for(lambda: metric(follower, "queue_extender_leader") == 1.0, 30, "the takeover")
    taken = leases.read_namespaced_lease(lease, "default")
    assert taken.spec.holder_identity != last.spec.holder_identity
    # The Lease's own times: the lease duration (4 s) after the last renew the follower saw,
    # give or take a retry period (1 s) and the machine's load.
    gap = (taken.spec.acquire_time - last.spec.renew_time).total_seconds()
    assert 4 - 1 <= gap <= 4 + 5, f"takeover {gap:.1f}s after the last renew"
    wait_for(lambda: running_by_queue(kube, ns).get(q2, 0) >= 2, 60, "q2 to reach its share")
    assert metric(follower, "queue_extender_reclaim_evictions_total", result="ok") == 2
    counts = running_by_queue(kube, ns)
    assert counts.get(q1, 0) == 2 and counts.get(q2, 0) == 2


def test_the_freed_room_goes_to_the_starving_queue_not_to_the_overused_queues_waiting_pods(
    kube: Kube, reclaimer: Any
) -> None:
    ns, _tag, q1, q2, _ = first_queue_fills_two_nodes(kube)
    loop = reclaimer()
    # Both queues ask at once, same priority, q1's waiting pods first in line: when the loop
    # frees room, kube-scheduler has q1's pods to place as well as q2's.
    waiting, starving = [], []
    for i in range(2):
        waiting.append(kube.pod(ns, f"w{i}", queue=q1))
        starving.append(kube.pod(ns, f"b{i}", queue=q2))
    waiting.append(kube.pod(ns, "w2", queue=q1))
    wait_for(lambda: all(n in kube.bound(ns) for n in starving), 60, "q2's pods to be placed")
    time.sleep(QUIET / 2)
    bound = kube.bound(ns)
    assert not [n for n in waiting if n in bound], bound
    assert metric(loop, "queue_extender_reclaim_evictions_total", result="ok") == 2
    assert running_by_queue(kube, ns) == {q1: 2, q2: 2}
    # q1's waiting pods were turned away by their queue's share once there was room (while
    # every node was full kube-scheduler said only that, without asking the extender).
    notes = {n: events(kube, ns, n) for n in waiting}
    assert any("would exceed its deserved share" in m for ms in notes.values() for m in ms), notes


def test_the_loop_preempts_inside_a_queue_where_kube_scheduler_never_would(
    kube: Kube, reclaimer: Any
) -> None:
    ns = kube.namespace("reclaim")
    tag = "r" + ns.replace("reclaim-", "")
    two_nodes(kube, tag)
    q1 = kube.queue(f"{tag}-q1")
    urgent = kube.priority_class(f"{tag}-urgent", 1000)
    kube.podgroup(ns, "batch", 1, q1)
    fill(kube, ns, q1, 4, "a", group="batch")
    # The urgent job outranks the batch job by its PodGroup's class; its pods carry no class
    # of their own, so every pod has priority 0 and kube-scheduler preempts nothing.
    kube.podgroup(ns, "urgent", 2, q1, priority_class=urgent)
    loop = reclaimer()
    urgent_pods = [kube.pod(ns, f"u{i}", queue=q1, group="urgent") for i in range(2)]
    wait_for(lambda: all(n in kube.bound(ns) for n in urgent_pods), 60, "the urgent job to run")
    time.sleep(QUIET / 2)
    assert metric(loop, "queue_extender_reclaim_evictions_total", result="ok") == 2
    assert metric(loop, "volcano_eviction_transactions_total", action="preempt") == 1
    assert metric(loop, "volcano_eviction_transactions_total", action="reclaim") == 0
    assert sum(1 for n in kube.bound(ns) if n.startswith("a")) == 2
    notes = [m for n in ("a0", "a1", "a2", "a3") for m in events(kube, ns, n)]
    preempted = [m for m in notes if m.startswith("Preempted: ")]
    assert len(preempted) == 2 and all(f"preempted within queue {q1}" in m for m in preempted)
    assert any(m.startswith("Preempting: ") for n in urgent_pods for m in events(kube, ns, n))


CAPACITY_SCHEDULER = "capacity-scheduler"


def test_capacity_queues_get_their_deserved_and_the_lenders_keep_exactly_theirs(
    kube: Kube, reclaimer: Any, control_plane: ControlPlane, tmp_path: Path
) -> None:
    """Volcano's capacity plugin with queues as its guide writes them (``spec.deserved`` of
    cpu and memory): an extender serving that configuration, with the loop on, behind a
    kube-scheduler of its own."""
    conf = tmp_path / "capacity.conf"
    conf.write_text(DEFAULT_CONF.replace("name: proportion", "name: capacity"))
    loop = reclaimer("--conf", str(conf), "--scheduler-names", CAPACITY_SCHEDULER)
    scheduler = control_plane.start_scheduler(
        "capacity-kube-scheduler", [CAPACITY_SCHEDULER], loop.url + "/"
    )
    try:
        ns = kube.namespace("reclaim")
        tag = "r" + ns.replace("reclaim-", "")
        for i in range(4):
            kube.node(f"{tag}-n{i}", cpu="2", memory="8Gi")
        queues = {}
        for name, cpu in (("q1", "1"), ("q2", "1"), ("q3", "2"), ("q4", "4")):
            queues[name] = kube.queue(f"{tag}-{name}", deserved={"cpu": cpu, "memory": "4Gi"})
        held = [
            kube.pod(
                ns,
                f"{q}-{i}",
                queue=queues[q],
                node=f"{tag}-n{2 * k + i // 2}",
                scheduler=CAPACITY_SCHEDULER,
            )
            for k, q in enumerate(("q1", "q2"))
            for i in range(4)
        ]
        kube.wait_running(ns, held, timeout=60)
        for q, count in (("q3", 2), ("q4", 4)):
            for i in range(count):
                kube.pod(ns, f"{q}-{i}", queue=queues[q], scheduler=CAPACITY_SCHEDULER)
        wanted = {queues["q1"]: 1, queues["q2"]: 1, queues["q3"]: 2, queues["q4"]: 4}
        wait_for(lambda: running_by_queue(kube, ns) == wanted, 90, f"running {wanted}")
        evicted = metric(loop, "queue_extender_reclaim_evictions_total", result="ok")
        assert evicted == 6
        time.sleep(QUIET)
        assert metric(loop, "queue_extender_reclaim_evictions_total", result="ok") == evicted
        assert running_by_queue(kube, ns) == wanted
    finally:
        scheduler.stop()
