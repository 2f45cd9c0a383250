"""Faults injected into a real control plane of its own: kube-apiserver killed mid-load, etcd
restarted with its history compacted under a disconnected watcher, the extender killed under
load, and an extender that answers after kube-scheduler's httpTimeout.

This module kills the API server and etcd, so it runs its own control plane, never the
session's. kube-scheduler reaches the extender through a forwarder (which can slow its
answers down) and the extender reaches the API server through another (which can cut it off).
Each test prints its figures on one ``FIGURES`` line (``pytest -s`` shows them); the
README's reliability section quotes them.
"""

from __future__ import annotations

import signal
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.churn import (
    PodLoad,
    debug_queues,
    extender_view,
    long_run,
    relists,
    retrying,
    scrape,
    views_agree,
)
from tests.e2e.controlplane import ControlPlane, Extender, wait_for
from tests.e2e.forwarder import Forwarder
from tests.e2e.kube import FakeKubelet, Kube

HTTP_TIMEOUT = 3.0  # kube-scheduler's httpTimeout for the extender in this module
LOAD_PODS = 1000 if long_run() else 200
OUTAGE = 10.0


class FaultStack:
    """A control plane, an extender, and a kube-scheduler calling the extender through a
    forwarder that can delay its answers."""

    def __init__(self, cp: ControlPlane) -> None:
        self.cp = cp
        self.kubeconfig = cp.kubeconfig
        self.extender_args: list[str] = []
        self.extender = self._start_extender()
        self.port = int(self.extender.url.rsplit(":", 1)[1])
        self.verb_link = Forwarder(self.port).open()
        self.scheduler = cp.start_scheduler(
            "faults-scheduler",
            ("queue-scheduler",),
            f"http://127.0.0.1:{self.verb_link.port}/",
            extender={"httpTimeout": f"{HTTP_TIMEOUT:.0f}s"},
        )

    def _start_extender(self, port: int | None = None) -> Extender:
        return self.cp.start_extender(
            "faults-extender", args=self.extender_args, port=port, kubeconfig=self.kubeconfig
        ).wait_ready()

    def restart_extender(self, args: list[str]) -> Extender:
        self.extender.process.stop()
        self.extender_args = args
        self.extender = self._start_extender(self.port)
        return self.extender


@pytest.fixture(scope="module")
def faults(kube_bin: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[FaultStack]:
    cp = ControlPlane(kube_bin, tmp_path_factory.mktemp("faults-control-plane"))
    kubelet: FakeKubelet | None = None
    try:
        cp.start()
        kubelet = FakeKubelet(cp.api_client()).start()
        yield FaultStack(cp)
    finally:
        cp.stop()  # first: the fake kubelet's watch then ends at once
        if kubelet is not None:
            kubelet.stop()


@pytest.fixture
def fkube(faults: FaultStack, request: pytest.FixtureRequest) -> Iterator[Kube]:
    """A handle on the module's own cluster. Each test uses queues and nodes of its own, and
    what it created is deleted after it: a pod a test leaves pending (a capped or Closed
    queue's) would keep kube-scheduler's serial cycle busy during the next test."""
    handle = Kube(faults.cp.api_client())
    yield handle
    call = getattr(request.node, "rep_call", None)
    if call is not None and call.failed:
        print("\n" + faults.cp.log_tails(80))
    handle.cleanup()


@pytest.fixture
def loads() -> Iterator[list[PodLoad]]:
    """Pod loads a test started; stopped at its end, so a failure does not wait on them."""
    started: list[PodLoad] = []
    yield started
    for load in started:
        load.stop()


def load_specs(ns: str, queues: list[str], count: int, prefix: str = "p") -> list[Any]:
    return [(ns, f"{prefix}{i}", queues[i % len(queues)], "100m") for i in range(count)]


def managed_pod(ns: str, name: str, queue: str) -> dict[str, Any]:
    return {
        "metadata": {
            "name": name,
            "namespace": ns,
            "uid": f"uid-{name}",
            "annotations": {"scheduling.volcano.sh/queue-name": queue},
        },
        "spec": {
            "schedulerName": "queue-scheduler",
            "containers": [{"name": "c", "resources": {"requests": {"cpu": "100m"}}}],
        },
    }


def wait_all_bound(kube: Kube, ns: str, names: list[str], timeout: float) -> dict[str, str]:
    def bound() -> dict[str, str] | None:
        now = kube.bound(ns)
        return now if all(n in now for n in names) else None

    missing = lambda: sorted(set(names) - set(kube.bound(ns)))[:10]  # noqa: E731
    try:
        result: dict[str, str] = wait_for(bound, timeout, f"{len(names)} pods to bind", 1.0)
    except TimeoutError as exc:
        raise TimeoutError(f"{exc}; still unbound: {missing()}") from exc
    return result


def test_kube_apiserver_killed_mid_load_every_pod_binds_within_the_queue_rules(
    faults: FaultStack, fkube: Kube, loads: list[PodLoad]
) -> None:
    """SIGKILL kube-apiserver halfway through a pod load, restart it 10 s later on the same
    port and data: the extender answers throughout from the view it had (nothing can change
    in the cluster while its API server is down), sees objects written after the restart
    within seconds, and every pod ends bound, none in a Closed queue, none beyond a cap."""
    cp = faults.cp
    ns = fkube.namespace("outage")
    nodes_needed = max(2, LOAD_PODS // 250 + 1)
    for i in range(nodes_needed):
        fkube.node(f"outage-n{i}", cpu="64", memory="256Gi", pods=300)
    fkube.queue("outage-a", weight=1)
    fkube.queue("outage-b", weight=2)
    fkube.queue("outage-capped", capability={"cpu": "1"})
    fkube.queue("outage-closed", state="Closed")
    queues = ["outage-a", "outage-b", "outage-capped", "outage-closed"]
    load = load_specs(ns, ["outage-a", "outage-b"], LOAD_PODS)
    capped = load_specs(ns, ["outage-capped"], 15, prefix="capped")
    shut_out = load_specs(ns, ["outage-closed"], 3, prefix="closed")
    pods = PodLoad(fkube).start([*capped[:8], *shut_out, *load, *capped[8:]])
    loads.append(pods)
    wait_for(lambda: pods.created >= LOAD_PODS // 2, 120, "half of the load to be created")

    probe = managed_pod(ns, "probe", "outage-a")
    refused = managed_pod(ns, "refused", "outage-closed")
    node_names = [f"outage-n{i}" for i in range(nodes_needed)]
    assert cp.apiserver is not None
    cp.apiserver.kill(signal.SIGKILL)
    cp.apiserver.popen.wait(10)  # type: ignore[union-attr]
    killed = time.monotonic()
    created_at_kill = pods.created
    answers: list[tuple[int, int, list[str], str, str]] = []
    while time.monotonic() - killed < OUTAGE:
        open_answer = faults.extender.post("filter", {"Pod": probe, "NodeNames": node_names})
        closed_answer = faults.extender.post("filter", {"Pod": refused, "NodeNames": node_names})
        answers.append(
            (
                faults.extender.status("/healthz"),
                faults.extender.status("/readyz"),
                open_answer.get("NodeNames") or [],
                open_answer.get("Error") or "",
                str(
                    {
                        **(closed_answer.get("FailedNodes") or {}),
                        **(closed_answer.get("FailedAndUnresolvableNodes") or {}),
                    }.get("outage-n0", "")
                ),
            )
        )
        time.sleep(0.5)
    assert pods.created - created_at_kill <= 4, "nothing is created while the API is down"
    assert all(a[0] == 200 for a in answers), answers
    # Synced once, the extender stays ready and decides on its last view: the cluster cannot
    # change without the API server, and kube-scheduler cannot bind without it either.
    assert all(a[1] == 200 for a in answers), answers
    assert [a for a in answers if a[3] or not set(a[2]) <= set(node_names)] == []
    assert [a for a in answers if "outage-closed" not in a[4]] == []

    before = debug_queues(faults.extender)["objects"]  # frozen while the API server is down
    cp.start_apiserver()
    back = time.monotonic()
    markers, written = _write_markers(fkube, ns, back)
    seen_at = _wait_markers(faults.extender, markers, before, back)
    convergence = max(seen_at.values())
    lag = max(seen_at[kind] - written[kind] for kind in seen_at)

    pods.wait(300)
    names = [name for _, name, _, _ in load]
    wait_all_bound(fkube, ns, names, 240)
    bound = fkube.bound(ns)
    capped_bound = [n for n in bound if n.startswith("capped")]
    assert len(capped_bound) <= 10, f"capped queue over its capability: {capped_bound}"
    assert not [n for n in bound if n.startswith("closed")], "a Closed queue's pod bound"
    present = fkube.pods(ns)
    assert all(name in present for _, name, _, _ in [*load, *capped, *shut_out]), "pod lost"
    queues.append("outage-marker")
    wait_for(lambda: views_agree(faults.extender, fkube, queues), 30, "the caches to agree", 1)
    print(
        f"\nFIGURES apiserver-outage: pods={LOAD_PODS} outage={OUTAGE:.0f}s "
        f"answers-during-outage={len(answers)} (all 200, ready, decided) "
        f"seen-after-restart={ {k: round(v, 2) for k, v in seen_at.items()} } "
        f"written-after-restart={ {k: round(v, 2) for k, v in written.items()} } "
        f"convergence={convergence:.2f}s max-seen-minus-written={lag:.2f}s "
        f"capped-bound={len(capped_bound)}/15"
    )
    assert convergence <= 5.0, seen_at


def _write_markers(kube: Kube, ns: str, since: float) -> tuple[dict[str, str], dict[str, float]]:
    """One object of each kind the extender watches (but priority classes and PDBs), written
    as soon as the API server takes them; what the extender sees of them is its convergence.
    Also returns when each write was accepted, in seconds after ``since``."""
    deadline = time.monotonic() + 60
    written: dict[str, float] = {}
    writes: list[tuple[str, Callable[[], object]]] = [
        ("node", lambda: kube.node("outage-marker-node", cpu="1")),
        ("queue", lambda: kube.queue("outage-marker")),
        ("podgroup", lambda: kube.podgroup(ns, "marker-group", 1, "outage-marker")),
        (
            "pod",
            lambda: kube.pod(
                ns, "marker-pod", cpu="100m", queue="outage-marker", node="outage-marker-node"
            ),
        ),
    ]
    for kind, write in writes:
        retrying(write, deadline=deadline, what=f"the {kind} marker")
        written[kind] = time.monotonic() - since
    names = {"node": "outage-marker-node", "queue": "outage-marker", "podgroup": "marker-group"}
    return names, written


def _wait_markers(
    extender: Extender, markers: dict[str, str], base: dict[str, int], since: float
) -> dict[str, float]:
    """Seconds after ``since`` at which the extender first showed each marker; ``base`` holds
    its object counts from before the markers were written."""
    seen: dict[str, float] = {}
    deadline = time.monotonic() + 60
    while len(seen) < 4:
        state = debug_queues(extender)
        now = time.monotonic() - since
        queues = {q["name"]: q for q in state["queues"]}
        if "node" not in seen and state["objects"]["nodes"] > base["nodes"]:
            seen["node"] = now
        if "queue" not in seen and markers["queue"] in queues:
            seen["queue"] = now
        if "podgroup" not in seen and state["objects"]["podgroups"] > base["podgroups"]:
            seen["podgroup"] = now
        marker = queues.get(markers["queue"]) or {}
        if "pod" not in seen and float((marker.get("allocated") or {}).get("cpu", 0)) > 0:
            seen["pod"] = now
        if time.monotonic() > deadline:
            raise TimeoutError(f"the extender saw only {seen} a minute after the restart")
        time.sleep(0.1)
    return seen


def test_a_watch_expired_by_etcd_compaction_is_relisted_and_nothing_is_lost(
    faults: FaultStack, fkube: Kube
) -> None:
    """etcd is restarted and kube-apiserver restarted without its watch cache. An extender
    whose link to the API server is then cut misses pods created, bound, deleted and a queue
    reweighted, and etcd's history is compacted past its resourceVersion. When the link comes
    back its watch gets 410 Gone, it relists, and its cache equals a fresh list."""
    cp = faults.cp
    assert cp.apiserver is not None and cp.etcd is not None
    cp.apiserver.stop()
    cp.etcd.stop()
    cp.start_etcd()
    cp.start_apiserver(["--watch-cache=false"])
    link = Forwarder(cp.api_port).open()
    kubeconfig = cp.dir / "expiry.kubeconfig"
    kubeconfig.write_text(
        cp.kubeconfig.read_text().replace(f"127.0.0.1:{cp.api_port}", f"127.0.0.1:{link.port}")
    )
    watcher = cp.start_extender("expiry-extender", kubeconfig=kubeconfig).wait_ready()
    try:
        ns = fkube.namespace("expiry")
        fkube.node("expiry-n1", cpu="16", pods=200)
        fkube.queue("expiry-a")
        fkube.queue("expiry-b", weight=3)
        for i in range(10):
            fkube.pod(ns, f"early{i}", cpu="100m", queue="expiry-a", node="expiry-n1")
        queues = ["expiry-a", "expiry-b", "expiry-new"]
        wait_for(lambda: views_agree(watcher, fkube, queues), 30, "the first view", 0.5)
        relists_before = relists(watcher)

        link.cut()
        for i in range(5):
            fkube.delete_pod(ns, f"early{i}")
        for i in range(10):
            fkube.pod(ns, f"late{i}", cpu="200m", queue="expiry-b", node="expiry-n1")
        fkube.queue("expiry-new")
        fkube.patch_queue("expiry-a", {"weight": 5})
        revision = cp.compact_etcd()
        link.open()
        reopened = time.monotonic()

        wait_for(lambda: views_agree(watcher, fkube, queues), 60, "the caches to agree", 0.25)
        agreed = time.monotonic() - reopened
        relisted = relists(watcher) - relists_before
        weights = {q["name"]: q["weight"] for q in debug_queues(watcher)["queues"]}
        assert weights.get("expiry-a") == 5
        assert relisted >= 1, "the expired watch was relisted"
        view = extender_view(watcher, queues)
    finally:
        watcher.process.stop()
        link.cut()
    print(
        f"\nFIGURES watch-expiry: compacted-at={revision} relists={relisted} "
        f"agreed-after={agreed:.2f}s view={view}"
    )


def test_the_extender_killed_under_load_decides_nothing_until_synced_and_every_pod_binds(
    faults: FaultStack, fkube: Kube, loads: list[PodLoad]
) -> None:
    ns = fkube.namespace("xkill")
    fkube.node("xkill-n1", cpu="64", memory="256Gi", pods=300)
    fkube.queue("xkill-a")
    fkube.queue("xkill-capped", capability={"cpu": "500m"})
    load = load_specs(ns, ["xkill-a"], 120)
    capped = load_specs(ns, ["xkill-capped"], 8, prefix="capped")
    pods = PodLoad(fkube).start([*capped[:4], *load, *capped[4:]])
    loads.append(pods)
    wait_for(lambda: pods.created >= 40, 60, "a third of the load to be created")
    faults.extender.process.kill(signal.SIGKILL)
    faults.extender.process.popen.wait(10)  # type: ignore[union-attr]
    killed = time.monotonic()
    time.sleep(1.0)  # bindings in flight at the kill land
    baseline = len(fkube.bound(ns))
    time.sleep(2.0)
    assert len(fkube.bound(ns)) == baseline, "nothing binds while the extender is down"
    extender = faults.cp.start_extender(
        "faults-extender", args=faults.extender_args, port=faults.port, kubeconfig=faults.kubeconfig
    )
    faults.extender = extender
    early: list[str] = []
    probe = {"Pod": managed_pod(ns, "x", "xkill-a"), "NodeNames": ["xkill-n1"]}
    while True:
        bound_now = len(fkube.bound(ns))
        try:
            if extender.ready():  # ready is never withdrawn: checked after the bindings
                break
            if not early:
                early.append(extender.post("filter", probe).get("Error") or "decided")
        except OSError:  # not listening yet
            pass
        assert bound_now == baseline, "a pod bound before the restarted extender synced"
        time.sleep(0.05)
    ready_after = time.monotonic() - killed
    pods.wait(120)
    names = [name for _, name, _, _ in load]
    wait_all_bound(fkube, ns, names, 120)
    capped_bound = [n for n in fkube.bound(ns) if n.startswith("capped")]
    assert len(capped_bound) <= 5
    assert all(name in fkube.pods(ns) for _, name, _, _ in [*load, *capped])
    wait_for(lambda: views_agree(extender, fkube, ["xkill-a", "xkill-capped"]), 30, "agree", 1)
    print(
        f"\nFIGURES extender-kill: pods={len(load)} bound-before-kill={baseline} "
        f"ready-after-kill={ready_after:.2f}s first-answer-while-syncing={early} "
        f"capped-bound={len(capped_bound)}/8"
    )


def test_a_slow_extender_times_out_kube_scheduler_which_retries_and_no_assumption_leaks(
    faults: FaultStack, fkube: Kube
) -> None:
    """Every answer reaches kube-scheduler after its httpTimeout for a while: it gives up on
    each attempt and retries the pod later. The extender had assumed the pod at each filter;
    those assumptions expire (a short --assume-ttl here), and once answers are fast again
    every pod binds and the assumed-pods gauge falls back to zero."""
    # Pods earlier tests left pending (over a cap, in a Closed queue) would take turns in
    # kube-scheduler's serial cycle, each attempt now costing a whole httpTimeout.
    for left in fkube.core.list_pod_for_all_namespaces(field_selector="spec.nodeName=").items:
        fkube.delete_pod(left.metadata.namespace, left.metadata.name)
    extender = faults.restart_extender(["--assume-ttl", "2"])
    ns = fkube.namespace("slow")
    fkube.node("slow-n1", cpu="8")
    fkube.queue("slow-a")

    def timeouts() -> int:
        return sum(
            1
            for line in faults.scheduler.log_path.read_text(errors="replace").splitlines()
            if "Error scheduling pod; retrying" in line
            and "Client.Timeout exceeded" in line
            and ns in line
        )

    faults.verb_link.response_delay = HTTP_TIMEOUT + 0.5
    try:
        names = [fkube.pod(ns, f"s{i}", cpu="100m", queue="slow-a") for i in range(5)]
        wait_for(lambda: timeouts() >= 3, 60, "kube-scheduler to time out and retry", 0.5)
        assert fkube.bound(ns) == {}, "no answer arrived in time, so nothing bound"
        slow = scrape(extender)
    finally:
        faults.verb_link.response_delay = 0.0
    # kube-scheduler's cycle is serial: each attempt waits out the whole httpTimeout.
    passed_while_slow = slow.get("queue_extender_decisions_total{outcome=passed,verb=filter}", 0)
    assert passed_while_slow >= 2, slow
    recovered = time.monotonic()
    wait_all_bound(fkube, ns, names, 60)
    bound_after = time.monotonic() - recovered
    timed_out = timeouts()

    def quiet() -> dict[str, float] | None:
        metrics = scrape(extender)
        return metrics if metrics["queue_extender_assumed_pods"] == 0 else None

    after = wait_for(quiet, 30, "the assumed pods to be confirmed or expire", 0.5)
    expired = after["queue_extender_assumptions_expired_total"]
    assert expired >= 1, "assumptions of unanswered filters expired"
    print(
        f"\nFIGURES slow-extender: delay={HTTP_TIMEOUT + 0.5:.1f}s httpTimeout={HTTP_TIMEOUT:.0f}s "
        f"scheduler-timeouts={timed_out} filters-passed-while-slow={passed_while_slow:.0f} "
        f"expired-assumptions={expired:.0f} bound-after-recovery={bound_after:.1f}s"
    )
