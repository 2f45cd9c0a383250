"""The eviction path under network faults, on the real control plane: a reclaimer talks to
kube-apiserver through a proxy on loopback the test steers (``tests/e2e/apiproxy.py``).

Every scenario starts as ``test_reclaim_loop`` does: two 2-cpu nodes, two queues of equal
weight, the first running four 1-cpu pods, then two pods of the second arrive. The plan is
two evictions from the first queue; whatever the fault, no third pod of it may be evicted,
and no eviction may reach the API server from a replica that no longer leads.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from tests.e2e.apiproxy import ApiProxy, eviction, lease, pod_watch
from tests.e2e.controlplane import ControlPlane, Extender, wait_for
from tests.e2e.kube import Kube
from tests.e2e.test_reclaim_loop import (
    first_queue_fills_two_nodes,
    metric,
    reclaim_args,
    running_by_queue,
)

_names = itertools.count()
QUIET = 10.0


@pytest.fixture
def proxy(control_plane: ControlPlane) -> Iterator[ApiProxy]:
    p = ApiProxy(control_plane).start()
    yield p
    p.clear()
    p.stop()


@pytest.fixture
def start(control_plane: ControlPlane, proxy: ApiProxy, tmp_path: Path) -> Iterator[Any]:
    """Starts a reclaimer, through the proxy unless ``direct``."""
    started: list[Extender] = []
    kubeconfig = proxy.kubeconfig(tmp_path / "proxy.kubeconfig")

    def run(lease_name: str, *extra: str, direct: bool = False, wait: bool = True) -> Extender:
        extender = control_plane.start_extender(
            f"faulty-{next(_names)}",
            args=reclaim_args(lease_name, *extra),
            kubeconfig=None if direct else kubeconfig,
        )
        started.append(extender)
        return extender.wait_ready() if wait else extender

    yield run
    for extender in started:
        extender.process.stop()


def survivors(kube: Kube, ns: str, names: list[str]) -> list[str]:
    """The first queue's pods still there and not being deleted."""
    pods = kube.pods(ns)
    return [n for n in names if n in pods and pods[n].metadata.deletion_timestamp is None]


def evicted_pods(proxy: ApiProxy) -> list[str]:
    return [f.path.split("?")[0].split("/")[-2] for f in proxy.forwarded(eviction)]


def test_an_eviction_whose_answer_is_lost_is_awaited_never_resent_and_no_victim_is_added(
    kube: Kube, proxy: ApiProxy, start: Any
) -> None:
    ns, tag, _q1, q2, names = first_queue_fills_two_nodes(kube)
    loop = start(f"e2e-lost-{tag}")
    # The API server applies each eviction, the answer never comes back, and the pod watch
    # runs five seconds late: for five cycles the cache still shows every victim running.
    proxy.faults.drop.append(eviction)
    proxy.faults.lag.append((pod_watch, 5.0))
    for i in range(2):
        kube.pod(ns, f"b{i}", queue=q2)
    wait_for(lambda: running_by_queue(kube, ns).get(q2, 0) >= 2, 60, "q2 to reach its share")
    time.sleep(QUIET)
    assert len(survivors(kube, ns, names)) == 2
    sent = evicted_pods(proxy)
    assert len(sent) == 2 and len(set(sent)) == 2, f"each victim asked for once: {sent}"
    assert all(f.dropped for f in proxy.forwarded(eviction))
    assert metric(loop, "queue_extender_reclaim_evictions_total", result="unknown") == 2
    assert metric(loop, "queue_extender_reclaim_evictions_total", result="error") == 0


def test_a_lease_lost_while_the_api_server_is_slow_lets_no_eviction_land_from_the_old_leader(
    kube: Kube, proxy: ApiProxy, start: Any, api: Any
) -> None:
    ns, tag, _q1, q2, names = first_queue_fills_two_nodes(kube)
    lease_name = f"e2e-slow-{tag}"
    old = start(lease_name)  # through the proxy
    wait_for(lambda: metric(old, "queue_extender_leader") == 1.0, 30, "the first to lead")
    new = start(lease_name, direct=True)
    leases = client.CoordinationV1Api(api)
    holder = leases.read_namespaced_lease(lease_name, "default").spec.holder_identity
    # From now on the old leader's requests reach the API server eight seconds late (a
    # request it gave up on meanwhile never does): its renews stall, its lease runs out
    # (4 s) and the other replica takes over, while the evictions it decides are in flight.
    proxy.faults.slow += [(lease, 8.0), (eviction, 8.0)]
    for i in range(2):
        kube.pod(ns, f"b{i}", queue=q2)
    wait_for(lambda: metric(new, "queue_extender_leader") == 1.0, 30, "the takeover")
    taken = leases.read_namespaced_lease(lease_name, "default")
    assert taken.spec.holder_identity != holder
    wait_for(lambda: running_by_queue(kube, ns).get(q2, 0) >= 2, 60, "q2 to reach its share")
    time.sleep(QUIET)
    takeover = taken.spec.acquire_time.timestamp()
    late = [f for f in proxy.forwarded(eviction) if f.at >= takeover]
    assert late == [], "an eviction from the replica that no longer led reached the API server"
    assert len(survivors(kube, ns, names)) == 2
    assert (
        metric(new, "queue_extender_reclaim_evictions_total", result="ok")
        + len(proxy.forwarded(eviction))
        == 2
    )


def test_a_stalled_pod_watch_is_relisted_and_nothing_is_decided_on_it_meanwhile(
    kube: Kube, proxy: ApiProxy, start: Any
) -> None:
    ns, tag, _q1, q2, names = first_queue_fills_two_nodes(kube)
    loop = start(f"e2e-stall-{tag}", "--watch-stall-timeout", "6")
    # The connection stays open and the API server up, but no pod event gets through.
    proxy.faults.stall.append(pod_watch)
    for i in range(2):
        kube.pod(ns, f"b{i}", queue=q2)
    wait_for(lambda: loop.status("/readyz") != 200, 20, "/readyz to report the stale cache")
    wait_for(
        lambda: metric(loop, "queue_extender_informer_watch_stalls_total", kind="Pod") >= 1,
        20,
        "the stall to be counted",
    )
    assert metric(loop, "queue_extender_informer_stale", kind="Pod") == 1.0 or (
        metric(loop, "queue_extender_informer_relists_total", kind="Pod") >= 1
    )
    # The relist shows the starving queue: the loop reclaims for it, and only the plan.
    wait_for(lambda: running_by_queue(kube, ns).get(q2, 0) >= 2, 60, "q2 to reach its share")
    time.sleep(QUIET)
    assert len(survivors(kube, ns, names)) == 2
    assert metric(loop, "queue_extender_reclaim_cycles_skipped_total", reason="stale-cache") >= 1
    assert metric(loop, "queue_extender_reclaim_evictions_total", result="ok") == 2
    # Read from the Date headers of its answers (0.0 exactly only while none was read): the
    # API server runs on this machine's clock, so the offset is within the header's second.
    offset = metric(loop, "queue_extender_api_server_clock_offset_seconds")
    assert offset != 0.0 and abs(offset) < 2.0
