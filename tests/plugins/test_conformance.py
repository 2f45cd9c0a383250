"""conformance: critical pods and kube-system pods are never victims."""

from __future__ import annotations

from typing import Any

import pytest

from tests.builders import keys, node, pod, priority_class, session, task_of, tiers

CONFORMANCE = tiers("conformance")


def cluster() -> list[Any]:
    return [
        node("n1", "64", "256Gi"),
        priority_class("system-cluster-critical", 2000000000),
        priority_class("system-node-critical", 2000001000),
        priority_class("batch", 100),
        pod("preemptor", cpu="1"),
        pod("plain", node_name="n1"),
        pod("batch", node_name="n1", priority_class="batch"),
        pod("cluster-critical", node_name="n1", priority_class="system-cluster-critical"),
        pod("node-critical", node_name="n1", priority_class="system-node-critical"),
        pod("dns", namespace="kube-system", node_name="n1"),
        pod("other-ns", namespace="kube-public", node_name="n1"),
    ]


EVICTEES = [
    "ns/plain",
    "ns/batch",
    "ns/cluster-critical",
    "ns/node-critical",
    "kube-system/dns",
    "kube-public/other-ns",
]


@pytest.mark.parametrize("hook", ["preemptable", "reclaimable"])
def test_critical_classes_and_kube_system_are_dropped(hook: str) -> None:
    ssn = session(cluster(), CONFORMANCE)
    evictees = [task_of(ssn, k) for k in EVICTEES]
    victims = getattr(ssn, hook)(task_of(ssn, "ns/preemptor"), evictees)
    assert keys(victims) == ["ns/plain", "ns/batch", "kube-public/other-ns"]


@pytest.mark.parametrize("hook", ["preemptable", "reclaimable"])
def test_only_critical_evictees_means_no_victims(hook: str) -> None:
    ssn = session(cluster(), CONFORMANCE)
    evictees = [task_of(ssn, k) for k in ("ns/node-critical", "kube-system/dns")]
    assert getattr(ssn, hook)(task_of(ssn, "ns/preemptor"), evictees) == []


def test_flag_off_leaves_the_hook_out() -> None:
    conf = 'actions: ""\ntiers:\n- plugins:\n  - name: conformance\n    enablePreemptable: false\n'
    ssn = session(cluster(), conf)
    evictees = [task_of(ssn, k) for k in EVICTEES]
    # no enabled preemptable hook at all: the session finds no victims
    assert ssn.preemptable(task_of(ssn, "ns/preemptor"), evictees) == []
    assert len(ssn.reclaimable(task_of(ssn, "ns/preemptor"), evictees)) == 3
