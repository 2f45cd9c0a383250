"""The reclaim loop evicts only where its preemptor can then land: pod anti-affinity, hard
topology spread and host ports judged as kube-scheduler judges them, on the real control plane.

Two 2-cpu nodes full of q2's 1-cpu pods, q1 (equal weight) starving for one more cpu. On each
node q2 runs a pod the preemptor's constraint is about (priority 100) and one it is not
(priority 10). The preemptor has priority 10, so kube-scheduler preempts nothing itself and
every eviction is the loop's. A victim search blind to the constraint takes the first pod it
meets that brings q2 down to its deserved share; the unconstrained pods' names sort first (the
loop's cache lists pods in name order), so that is the one it meets, and it frees a cpu the
preemptor still cannot use (q2 is then at its share, so nothing more is reclaimed and the
preemptor waits for ever).
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests import builders
from tests.e2e.controlplane import ControlPlane, Extender, wait_for
from tests.e2e.kube import Kube
from tests.e2e.test_reclaim_loop import looks, metric, reclaim_args

_leases = itertools.count()
HOSTNAME = "kubernetes.io/hostname"
NOT_PREEMPTABLE = {"volcano.sh/preemptable": "false"}


@pytest.fixture
def reclaimer(control_plane: ControlPlane) -> Iterator[Any]:
    started: list[Extender] = []

    def start() -> Extender:
        lease = f"e2e-reclaim-fit-{next(_leases)}-{int(time.time())}"
        extender = control_plane.start_extender(
            f"fit-reclaimer-{len(started)}", args=reclaim_args(lease)
        ).wait_ready()
        started.append(extender)
        return extender

    yield start
    for extender in started:
        extender.process.stop()


class Bed:
    """A namespace, two 2-cpu nodes, queues q1/q2 of equal weight, priorities 100 and 10."""

    def __init__(self, kube: Kube) -> None:
        self.kube = kube
        self.ns = kube.namespace("fit")
        self.tag = "f" + self.ns.replace("fit-", "")
        self.nodes = [kube.node(f"{self.tag}-n{i}", cpu="2", memory="8Gi") for i in range(2)]
        self.q1 = kube.queue(f"{self.tag}-q1")
        self.q2 = kube.queue(f"{self.tag}-q2")
        self.high = kube.priority_class(f"{self.tag}-high", 100)
        self.low = kube.priority_class(f"{self.tag}-low", 10)
        #: pod -> the node it was put on
        self.where: dict[str, str] = {}

    def run(self, name: str, node: int, *, high: bool, **extra: Any) -> str:
        """A running 1-cpu pod of q2 on node ``node``."""
        self.where[name] = self.nodes[node]
        return self.kube.pod(
            self.ns,
            name,
            queue=self.q2,
            node=self.nodes[node],
            priority_class=self.high if high else self.low,
            **extra,
        )

    def wait_running(self, names: list[str]) -> None:
        self.kube.wait_running(self.ns, names, timeout=60)

    def preemptor(self, **extra: Any) -> str:
        """q1's 1-cpu, priority-10 pod, through the session's kube-scheduler."""
        return self.kube.pod(self.ns, "p", queue=self.q1, priority_class=self.low, **extra)

    def gone(self, names: list[str]) -> list[str]:
        bound = self.kube.bound(self.ns)
        return [n for n in names if n not in bound]


def evictions(loop: Extender) -> float:
    return metric(loop, "queue_extender_reclaim_evictions_total", result="ok")


def placed_where_room_was_made(
    bed: Bed, loop: Extender, victims: list[str], keep: list[str]
) -> None:
    """The preemptor binds; exactly one pod was evicted, one of ``victims``, on the node the
    preemptor got; none of ``keep`` was touched (checked all along: once one is gone the
    preemptor waits for ever, and the test says so at once)."""

    def bound() -> str | None:
        wrong = bed.gone(keep)
        assert not wrong, f"the loop evicted {wrong}, which frees no room the preemptor may use"
        pod = bed.kube.get_pod(bed.ns, "p")
        return pod.spec.node_name if pod is not None else None

    node = wait_for(bound, 90, "the preemptor to be bound", interval=0.3)
    gone = bed.gone(victims + keep)
    assert len(gone) == 1 and gone[0] in victims, f"evicted {gone}, expected one of {victims}"
    assert evictions(loop) == 1
    assert node == bed.where[gone[0]], f"{gone[0]} was evicted but p went to {node}"


def test_anti_affinity_the_loop_evicts_the_pod_the_preemptor_avoids_and_it_binds_there(
    kube: Kube, reclaimer: Any
) -> None:
    bed = Bed(kube)
    plain = [bed.run(f"a{i}", i, high=False) for i in range(2)]
    x = [bed.run(f"x{i}", i, high=True, labels={"app": "x"}) for i in range(2)]
    bed.wait_running(x + plain)
    loop = reclaimer()
    avoid_x = builders.pod_affinity(anti=[builders.pod_term(builders.selector({"app": "x"}))])
    bed.preemptor(affinity=avoid_x)
    placed_where_room_was_made(bed, loop, victims=x, keep=plain)


def test_topology_spread_the_loop_evicts_only_where_the_preemptor_may_then_land(
    kube: Kube, reclaimer: Any
) -> None:
    bed = Bed(kube)
    # x pods: one on n0, none on n1. q2's pods on n1 may not be taken, so the loop must free
    # room on n0, where the preemptor (an x pod, max skew 1 over nodes) may only land if
    # the x pod there goes: taking a0 would make n0 hold two x pods against n1's none.
    a0 = bed.run("a0", 0, high=False)
    x0 = bed.run("x0", 0, high=True, labels={"app": "x"})
    fixed = [bed.run(f"z{i}", 1, high=False, annotations=NOT_PREEMPTABLE) for i in range(2)]
    bed.wait_running([x0, a0, *fixed])
    loop = reclaimer()
    bed.preemptor(
        labels={"app": "x"},
        spread=[builders.spread_constraint(1, HOSTNAME, builders.selector({"app": "x"}))],
    )
    placed_where_room_was_made(bed, loop, victims=[x0], keep=[a0, *fixed])


def test_host_port_the_loop_evicts_the_pod_holding_the_port_and_the_preemptor_binds(
    kube: Kube, reclaimer: Any
) -> None:
    bed = Bed(kube)
    plain = [bed.run(f"a{i}", i, high=False) for i in range(2)]
    holders = [bed.run(f"h{i}", i, high=True, host_ports=[8080]) for i in range(2)]
    bed.wait_running(holders + plain)
    loop = reclaimer()
    bed.preemptor(host_ports=[8080])
    placed_where_room_was_made(bed, loop, victims=holders, keep=plain)


def test_when_no_eviction_can_make_room_the_loop_evicts_nothing(kube: Kube, reclaimer: Any) -> None:
    bed = Bed(kube)
    # The pods the preemptor must avoid may not be taken: freeing a cpu beside them helps
    # nothing, so nothing may go.
    x = [
        bed.run(f"x{i}", i, high=True, labels={"app": "x"}, annotations=NOT_PREEMPTABLE)
        for i in range(2)
    ]
    plain = [bed.run(f"a{i}", i, high=False) for i in range(2)]
    bed.wait_running(x + plain)
    loop = reclaimer()
    avoid_x = builders.pod_affinity(anti=[builders.pod_term(builders.selector({"app": "x"}))])
    bed.preemptor(affinity=avoid_x)
    wait_for(lambda: looks(loop) >= 6, 40, "six reclaim cycles")
    assert evictions(loop) == 0
    assert bed.gone(x + plain) == []
    assert "p" not in kube.bound(bed.ns)
