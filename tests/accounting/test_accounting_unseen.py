"""Pods the cache has not shown are taken on kube-scheduler's word: only plausible ones are
assumed, at most so many per queue at once, and the API server's "no such pod" ends one."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler_core.extender.filter_verb import filter_pod
from tests.builders import accounting, node, pod, queue

NODES = ["n1", "n2"]


def lone(
    name: str, queue_name: str, cpu: str = "1", meta: dict[str, str] | None = None
) -> dict[str, Any]:
    p = pod(name, cpu=cpu, memory="1Gi")
    p["metadata"]["annotations"]["scheduling.volcano.sh/queue-name"] = queue_name
    p["metadata"].update(meta or {})
    return p


def cluster() -> list[dict[str, Any]]:
    return [node("n1", cpu="64"), node("n2", cpu="64"), queue("q")]


@pytest.mark.parametrize(
    ("meta", "reason"),
    [
        ({"namespace": "Not_A_Label"}, "namespace"),
        ({"namespace": "x" * 64}, "namespace"),
        ({"name": "UPPER"}, "name"),
        ({"name": "a" * 254}, "name"),
        ({"uid": ""}, "uid"),
        ({"uid": "not a uid!"}, "uid"),
        ({"uid": "u" * 129}, "uid"),
    ],
)
def test_an_implausible_unseen_pod_passes_but_is_not_assumed(
    meta: dict[str, str], reason: str, caplog: pytest.LogCaptureFixture
) -> None:
    acct, _ = accounting(cluster())
    with caplog.at_level(1, "scheduler_core.extender"):
        result = filter_pod(acct, lone("p", "q", meta=meta), NODES)
    assert result.passed == NODES
    assert acct.assumed == {} and acct.unseen_refused == 1
    assert f"not assumed: unseen by the cache and {reason}" in caplog.text


def test_a_plausible_unseen_pod_is_assumed() -> None:
    acct, _ = accounting(cluster())
    filter_pod(acct, lone("p", "q", meta={"uid": "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0"}), NODES)
    assert list(acct.assumed) == ["ns/p"] and acct.unseen() == [
        ("ns/p", "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0")
    ]


def test_a_queue_holds_at_most_the_cap_of_unseen_assumptions_and_the_rest_pass_unassumed() -> None:
    acct, _ = accounting(cluster())
    acct.max_unseen_per_queue = 3
    results = [filter_pod(acct, lone(f"u{i}", "q"), NODES) for i in range(10)]
    assert all(r.passed == NODES for r in results)
    assert len(acct.assumed) == 3 and acct.unseen_refused == 7


def test_invented_pods_cannot_lock_a_queue_out() -> None:
    """40 invented pods asking for the whole cap: at most the cap of them is assumed, so a
    real pod still finds room once the API server has said the invented ones do not exist."""
    acct, _ = accounting(
        [node("n1", cpu="64"), node("n2", cpu="64"), queue("q", capability={"cpu": "8"})]
    )
    acct.max_unseen_per_queue = 4
    for i in range(40):
        filter_pod(acct, lone(f"fake{i}", "q", cpu="2"), NODES)
    assert len(acct.assumed) == 4
    real = lone("real", "q", cpu="2")
    assert filter_pod(acct, real, NODES).passed == []  # 4 x 2 CPU fill the 8-CPU cap
    for key, uid in acct.unseen():
        if key != "ns/real":
            assert acct.drop_unseen(key, uid)
    assert acct.unseen_dropped == 4
    assert filter_pod(acct, real, NODES).passed == NODES


def test_dropping_needs_the_same_uid_and_an_unseen_pod() -> None:
    acct, _ = accounting(cluster())
    filter_pod(acct, lone("p", "q", meta={"uid": "uid-1"}), NODES)
    assert not acct.drop_unseen("ns/p", "uid-2")
    assert not acct.drop_unseen("ns/other", "uid-1")
    assert acct.drop_unseen("ns/p", "uid-1") and acct.assumed == {}


def test_a_pod_the_cache_holds_is_never_dropped_as_unseen() -> None:
    cached = lone("c", "q")
    acct, _ = accounting([*cluster(), cached])
    filter_pod(acct, cached, NODES)
    uid = cached["metadata"]["uid"]
    assert acct.unseen() == [] and not acct.drop_unseen("ns/c", uid)
    assert "ns/c" in acct.assumed
