"""Fair share over time on the real control plane, on a compressed clock (a half-life of
seconds): an extender serving the usage history plugin, with the reclaim loop on, behind a
kube-scheduler of its own.

Two queues of equal weight. One ran alone for a while; then both ask for more than the
cluster holds: the one with history ends with the smaller share. Its history survives a
restart of the extender (the leader wrote it to the Queue), and a hand-broken record gets
a Warning event and starts that queue from zero.
"""

from __future__ import annotations

import json
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from scheduler_core.api.usage_history import USAGE_HISTORY_ANNOTATION
from scheduler_core.conf import DEFAULT_CONF
from tests.e2e.controlplane import ControlPlane, Extender, Process, wait_for
from tests.e2e.kube import GROUP, VERSION, Kube
from tests.e2e.test_reclaim_loop import metric, reclaim_args, running_by_queue

SCHEDULER = "usage-scheduler"
USAGE_CONF = DEFAULT_CONF.replace(
    "  - name: proportion\n",
    "  - name: usagehistory\n"
    "    arguments:\n"
    "      usage.halfLife: 30s\n"
    "      usage.persistInterval: 1s\n"
    "  - name: proportion\n",
)


class UsageStack:
    """The extender with the loop and the plugin on one port, and its kube-scheduler."""

    def __init__(self, cp: ControlPlane, conf: Path, tag: str) -> None:
        self.cp = cp
        self.args = [
            *reclaim_args(f"e2e-usage-{tag}"),
            "--conf",
            str(conf),
            "--scheduler-names",
            SCHEDULER,
        ]
        self.extender = cp.start_extender(f"usage-{tag}", args=self.args).wait_ready()
        self.port = int(self.extender.url.rsplit(":", 1)[1])
        self.scheduler: Process = cp.start_scheduler(
            f"usage-kube-scheduler-{tag}", [SCHEDULER], self.extender.url + "/"
        )

    def restart(self) -> Extender:
        self.extender.process.stop()
        self.extender = self.cp.start_extender(
            f"usage-again-{int(time.time())}", args=self.args, port=self.port
        ).wait_ready()
        return self.extender

    def queue(self, name: str) -> dict[str, Any]:
        with urllib.request.urlopen(f"{self.extender.url}/api/v1/queues/{name}", timeout=10) as r:
            answer: dict[str, Any] = json.loads(r.read())
            return answer

    def stop(self) -> None:
        self.scheduler.stop()
        self.extender.process.stop()


@pytest.fixture
def usage_stack(control_plane: ControlPlane, tmp_path: Path) -> Iterator[Any]:
    conf = tmp_path / "usage.conf"
    conf.write_text(USAGE_CONF)
    started: list[UsageStack] = []

    def start(tag: str) -> UsageStack:
        stack = UsageStack(control_plane, conf, tag)
        started.append(stack)
        return stack

    yield start
    for stack in started:
        stack.stop()


def four_nodes(kube: Kube) -> tuple[str, str]:
    ns = kube.namespace("usage")
    tag = "u" + ns.replace("usage-", "")
    for i in range(4):
        kube.node(f"{tag}-n{i}", cpu="2", memory="8Gi")
    return ns, tag


def run_alone(kube: Kube, ns: str, tag: str, queue: str, count: int) -> list[str]:
    """``count`` 1-cpu pods of ``queue`` placed directly, two to a node, running."""
    names = [
        kube.pod(ns, f"a{i}", queue=queue, node=f"{tag}-n{i // 2}", scheduler=SCHEDULER)
        for i in range(count)
    ]
    kube.wait_running(ns, names, timeout=60)
    return names


def annotation(kube: Kube, queue: str) -> str | None:
    obj = kube.custom.get_cluster_custom_object(GROUP, VERSION, "queues", queue)
    return ((obj.get("metadata") or {}).get("annotations") or {}).get(USAGE_HISTORY_ANNOTATION)


def test_the_queue_that_ran_alone_ends_with_the_smaller_share(kube: Kube, usage_stack: Any) -> None:
    ns, tag = four_nodes(kube)
    q1, q2 = kube.queue(f"{tag}-q1"), kube.queue(f"{tag}-q2")
    stack = usage_stack(tag)
    run_alone(kube, ns, tag, q1, 8)
    time.sleep(10)  # a third of a half-life of q1 holding the whole cluster
    for i in range(4):
        kube.pod(ns, f"a-more{i}", queue=q1, scheduler=SCHEDULER)
    for i in range(8):
        kube.pod(ns, f"b{i}", queue=q2, scheduler=SCHEDULER)

    # Without history both would settle at 4 cpu each; q1's past takes it below that.
    wait_for(
        lambda: running_by_queue(kube, ns).get(q2, 0) >= 5,
        120,
        "q2 to get more than the weighted half",
    )
    counts = running_by_queue(kube, ns)
    assert counts.get(q1, 0) < counts.get(q2, 0), counts
    view = stack.queue(q1)["history"]
    assert view["adjusted"] and view["factor"] < 1
    assert view["weightedDeserved"]["cpu"] == 4
    reclaimed = [
        m
        for n in (f"a{i}" for i in range(8))
        for m in kube.scheduling_messages(ns, n)
        if m.startswith("Reclaimed: ")
    ]
    assert any("reduced by its usage over the last 30s (half-life)" in m for m in reclaimed)
    assert metric(stack.extender, "queue_extender_reclaim_evictions_total", result="ok") >= 5


def test_history_survives_a_restart_and_a_broken_record_gets_an_event(
    kube: Kube, usage_stack: Any
) -> None:
    ns, tag = four_nodes(kube)
    q1, q2 = kube.queue(f"{tag}-q1"), kube.queue(f"{tag}-q2")
    stack = usage_stack(tag)
    run_alone(kube, ns, tag, q1, 4)
    wait_for(lambda: annotation(kube, q1), 30, "the leader to write q1's usage")
    before = stack.queue(q1)["history"]["usage"]["cpu"]
    assert before > 0
    kube.custom.patch_cluster_custom_object(
        GROUP,
        VERSION,
        "queues",
        q2,
        {"metadata": {"annotations": {USAGE_HISTORY_ANNOTATION: '{"usage": "lots"}'}}},
    )
    # Gone long enough to tell a restored history from one measured since the restart.
    stack.extender.process.stop()
    for name in [f"a{i}" for i in range(4)]:
        kube.delete_pod(ns, name)
    restarted = stack.restart()
    after = stack.queue(q1)["history"]["usage"]["cpu"]
    assert after > 0.5 * before  # restored, decayed over the few seconds it was down
    assert not any(stack.queue(q2)["history"]["usage"].values())  # from zero

    def refused() -> list[Any]:
        events = kube.core.list_namespaced_event(
            "default", field_selector=f"involvedObject.name={q2}"
        ).items
        return [e for e in events if e.reason == "UsageHistoryRefused"]

    [event] = wait_for(refused, 30, "a Warning event on the broken record")
    assert event.type == "Warning"
    assert "its usage history starts from zero" in event.message
    assert restarted.process.alive()


def test_a_killed_leaders_successor_carries_the_history_on(
    kube: Kube, control_plane: ControlPlane, tmp_path: Path
) -> None:
    """Two replicas on one lease, each measuring from its own cache: the leader is killed
    (no goodbye), the standby takes the lease and keeps writing a history that only grew."""
    conf = tmp_path / "usage.conf"
    conf.write_text(USAGE_CONF)
    ns, tag = four_nodes(kube)
    q1 = kube.queue(f"{tag}-q1")
    args = [*reclaim_args(f"e2e-usage-ha-{tag}"), "--conf", str(conf)]
    replicas = [
        control_plane.start_extender(f"usage-ha-{tag}-{i}", args=args).wait_ready()
        for i in range(2)
    ]
    try:
        run_alone(kube, ns, tag, q1, 4)

        def leader() -> Extender | None:
            leading = [r for r in replicas if metric(r, "queue_extender_leader") == 1.0]
            return leading[0] if len(leading) == 1 else None

        first = wait_for(leader, 30, "one leader")
        wait_for(lambda: annotation(kube, q1), 30, "the leader to write q1's usage")
        time.sleep(3)
        written = json.loads(str(annotation(kube, q1)))
        first.process.kill()
        standby = next(r for r in replicas if r is not first)
        wait_for(lambda: metric(standby, "queue_extender_leader") == 1.0, 30, "a new leader")

        def rewritten() -> dict[str, Any] | None:
            record = json.loads(str(annotation(kube, q1)))
            return record if record["at"] > written["at"] else None

        later = wait_for(rewritten, 30, "the new leader to write q1's usage")
        # Held all along at 4 cpu: what the successor writes has only grown.
        assert later["usage"]["cpu"] > written["usage"]["cpu"]
    finally:
        for replica in replicas:
            replica.process.stop()
