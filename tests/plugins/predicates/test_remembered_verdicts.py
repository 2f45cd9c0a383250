"""Verdicts the predicates plugin remembers for pods that are alike: a gang's waiting pods
are judged once a node, and whatever could change a verdict (a statement placing or evicting
a pod, the cache changing a node's pods, a storage object) makes the next pod judged again."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from scheduler_core.cache.objects import put_storage
from scheduler_core.framework.session import Session
from scheduler_core.framework.statement import Statement
from scheduler_core.plugins.predicates import PredicatesPlugin
from scheduler_core.plugins.predicates.node_ports import ERR_REASON_NODE_PORTS
from scheduler_core.plugins.predicates.volumes import ERR_REASON_NODE_CONFLICT
from tests.builders import (
    claim_volume,
    host_port,
    pod,
    pv,
    pvc,
    session,
    task_of,
    with_volumes,
)
from tests.plugins.predicates.conftest import HOST, predicates_conf, zoned

Obj = dict[str, Any]


def counting(monkeypatch: pytest.MonkeyPatch, ssn: Session) -> list[str]:
    """The keys of the pods the plugin really judges from now on."""
    plugin = ssn.plugins["predicates"]
    assert isinstance(plugin, PredicatesPlugin)
    judged: list[str] = []
    judge: Callable[..., Any] = plugin._judge

    def spy(task: Any, node: Any) -> Any:
        judged.append(task.key)
        return judge(task, node)

    monkeypatch.setattr(plugin, "_judge", spy)
    return judged


def token(name: str) -> Obj:
    """A pod's own service-account token volume: its name differs from pod to pod."""
    return {"name": f"kube-api-access-{name}", "projected": {"sources": []}}


def port_pod(name: str, **kw: Any) -> Obj:
    return with_volumes(pod(name, host_ports=[host_port(80)], **kw), token(name))


def held_port_cluster() -> Session:
    """n1 with port 80 held by a placed pod, and two alike waiting pods that want it."""
    return session(
        [
            zoned("n1"),
            pod("holder", node_name="n1", host_ports=[host_port(80)]),
            port_pod("a"),
            port_pod("b"),
        ],
        predicates_conf(),
    )


def test_alike_waiting_pods_are_judged_once_a_node_each_verdict_naming_its_own_pod(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    ssn = held_port_cluster()
    judged = counting(monkeypatch, ssn)
    n1 = ssn.nodes["n1"]
    first = ssn.predicate(task_of(ssn, "ns/a"), n1)
    second = ssn.predicate(task_of(ssn, "ns/b"), n1)
    assert judged == ["ns/a"]
    assert first is not None and second is not None
    assert second.reasons == first.reasons == [ERR_REASON_NODE_PORTS]
    assert (first.task, second.task) == ("ns/a", "ns/b")
    assert second.code is first.code and second.node == "n1"


def test_pods_that_differ_in_what_a_check_reads_are_judged_each(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    ssn = session(
        [zoned("n1"), port_pod("a"), pod("b", host_ports=[host_port(81)])],
        predicates_conf(),
    )
    judged = counting(monkeypatch, ssn)
    for key in ("ns/a", "ns/b"):
        assert ssn.predicate(task_of(ssn, key), ssn.nodes["n1"]) is None
    assert judged == ["ns/a", "ns/b"]


def test_a_statement_placing_or_undoing_a_pod_makes_alike_pods_judged_again() -> None:
    ssn = session(
        [zoned("n1"), port_pod("a"), port_pod("b"), port_pod("c"), port_pod("d")],
        predicates_conf(),
    )
    n1 = ssn.nodes["n1"]
    assert ssn.predicate(task_of(ssn, "ns/a"), n1) is None
    stmt = Statement(ssn)
    stmt.pipeline(task_of(ssn, "ns/b"), "n1")  # now holds port 80 on n1
    err = ssn.predicate(task_of(ssn, "ns/c"), n1)
    assert err is not None and err.reasons == [ERR_REASON_NODE_PORTS]
    stmt.discard()
    assert ssn.predicate(task_of(ssn, "ns/d"), n1) is None


def test_a_storage_change_makes_alike_pods_judged_again() -> None:
    volume_here = pv("pv-1", hostname="n1")
    ssn = session(
        [
            zoned("n1"),
            pvc("data", volume="pv-1"),
            volume_here,
            with_volumes(pod("a"), claim_volume("v", "data")),
            with_volumes(pod("b"), claim_volume("v", "data")),
        ],
        predicates_conf(),
    )
    n1 = ssn.nodes["n1"]
    assert ssn.predicate(task_of(ssn, "ns/a"), n1) is None
    # The volume is recreated elsewhere: the catalog changes under the kept session.
    put_storage(ssn.snapshot.storage, "PersistentVolume", pv("pv-1", hostname="n2"))
    err = ssn.predicate(task_of(ssn, "ns/b"), n1)
    assert err is not None and err.reasons == [ERR_REASON_NODE_CONFLICT]


def test_a_node_copy_is_judged_as_it_is_not_as_the_sessions_node_was() -> None:
    ssn = held_port_cluster()
    assert ssn.predicate(task_of(ssn, "ns/a"), ssn.nodes["n1"]) is not None
    copy = ssn.nodes["n1"].clone()
    copy.remove_task(task_of(ssn, "ns/holder"))
    assert ssn.predicate(task_of(ssn, "ns/b"), copy) is None


def test_a_placed_pod_is_judged_as_itself(monkeypatch: pytest.MonkeyPatch) -> None:
    # A placed pod is left out of its own counts, so it never shares a verdict.
    anti = {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {"app": "x"}}, "topologyKey": HOST}
            ]
        }
    }
    ssn = session(
        [
            zoned("n1"),
            pod("placed", node_name="n1", labels={"app": "x"}, affinity=anti),
        ],
        predicates_conf(),
    )
    judged = counting(monkeypatch, ssn)
    placed = task_of(ssn, "ns/placed")
    assert ssn.predicate(placed, ssn.nodes["n1"]) is None
    assert ssn.predicate(placed, ssn.nodes["n1"]) is None
    assert judged == ["ns/placed", "ns/placed"]
