"""preempt replaces kube-scheduler's victims with a valid, minimal set under the queue rules."""

from __future__ import annotations

from typing import Any

from scheduler_core.extender.preempt_verb import preempt_pod
from tests.builders import accounting, node, pod, podgroup, priority_class, queue

PCS = [priority_class("low", 10), priority_class("high", 1000)]


def member(name: str, group: str, cpu: str, node_name: str = "", prio: int = 10) -> dict[str, Any]:
    return pod(
        name,
        group=group,
        cpu=cpu,
        memory="1Gi",
        node_name=node_name,
        priority=prio,
        priority_class="high" if prio >= 1000 else "low",
    )


def same_queue_cluster() -> list[dict[str, Any]]:
    """n1 (4 CPU) full of queue a's low-priority job; a high-priority pod of queue a waits."""
    return [
        node("n1"),
        queue("a"),
        *PCS,
        podgroup("low", 1, queue="a", priority_class="low"),
        member("l1", "low", "2", "n1"),
        member("l2", "low", "1", "n1"),
        member("l3", "low", "1", "n1"),
        podgroup("hi", 1, queue="a", priority_class="high", phase="Inqueue"),
        member("h", "hi", "2", prio=1000),
    ]


def uids(*names: str) -> list[str]:
    return [f"ns-{n}" for n in names]


def freed_cpu(acct: Any, node_name: str, victim_uids: list[str]) -> float:
    node_info = acct.state.snapshot().nodes[node_name]
    return sum(node_info.tasks[u].resreq.milli_cpu for u in victim_uids)


def test_same_queue_victims_are_lower_priority_enough_and_minimal() -> None:
    objs = same_queue_cluster()
    acct, _ = accounting(objs)
    preemptor = objs[-1]
    result = preempt_pod(acct, preemptor, {"n1": uids("l2", "l3", "l1")})
    assert list(result) == ["n1"]
    chosen = result["n1"]
    assert chosen.mode == "preempt"
    assert set(chosen.uids) <= set(uids("l1", "l2", "l3"))
    assert freed_cpu(acct, "n1", chosen.uids) >= 2000
    # minimal: dropping any one victim no longer frees enough for the 2-CPU preemptor
    for uid in chosen.uids:
        rest = [u for u in chosen.uids if u != uid]
        assert freed_cpu(acct, "n1", rest) < 2000


def test_cross_queue_reclaim_takes_from_the_queue_over_its_deserved_share() -> None:
    objs = [
        node("n1"),
        queue("a"),
        queue("b"),
        *PCS,
        podgroup("greedy", 1, queue="b", priority_class="low"),
        *[member(f"g{i}", "greedy", "1", "n1") for i in range(4)],
        podgroup("fair", 1, queue="a", priority_class="low", phase="Inqueue"),
        member("f", "fair", "1"),
    ]
    acct, _ = accounting(objs)
    result = preempt_pod(acct, objs[-1], {"n1": uids("g0")})
    assert result["n1"].mode == "reclaim"
    assert len(result["n1"].uids) == 1
    assert result["n1"].uids[0] in uids("g0", "g1", "g2", "g3")


def test_a_queue_within_its_share_is_not_reclaimed_from() -> None:
    objs = [
        node("n1"),
        node("n2", cpu="4"),
        queue("a"),
        queue("b"),
        *PCS,
        podgroup("modest", 1, queue="b", priority_class="low"),
        *[member(f"m{i}", "modest", "1", "n1") for i in range(4)],  # b holds 4 of its fair 4
        podgroup("other", 1, queue="a", priority_class="low"),
        *[member(f"o{i}", "other", "1", "n2") for i in range(4)],
        podgroup("fair", 1, queue="a", priority_class="low", phase="Inqueue"),
        member("f", "fair", "1"),
    ]
    acct, _ = accounting(objs)
    assert preempt_pod(acct, objs[-1], {"n1": uids("m0")}) == {}


def test_gang_members_are_not_taken_below_min_member() -> None:
    objs = [
        node("n1"),
        queue("a"),
        queue("b"),
        *PCS,
        podgroup("gang", 4, queue="b", priority_class="low"),
        *[member(f"g{i}", "gang", "1", "n1") for i in range(4)],
        podgroup("fair", 1, queue="a", priority_class="low", phase="Inqueue"),
        member("f", "fair", "1"),
    ]
    acct, _ = accounting(objs)
    assert preempt_pod(acct, objs[-1], {"n1": uids("g0")}) == {}


def test_pdb_violations_are_counted_for_the_chosen_victims() -> None:
    objs = same_queue_cluster()
    for o in objs:
        if o["kind"] == "Pod" and o["metadata"]["name"].startswith("l"):
            o["metadata"]["labels"] = {"app": "low"}
    objs.append(
        {
            "kind": "PodDisruptionBudget",
            "metadata": {"name": "low", "namespace": "ns"},
            "spec": {"selector": {"matchLabels": {"app": "low"}}},
            "status": {"disruptionsAllowed": 0},
        }
    )
    acct, _ = accounting(objs)
    result = preempt_pod(acct, objs[-2], {"n1": uids("l1")})
    assert result["n1"].num_pdb_violations == len(result["n1"].uids) >= 1


def test_a_candidate_with_an_empty_victim_list_gets_the_engines_own_set() -> None:
    objs = same_queue_cluster()
    acct, _ = accounting(objs)
    result = preempt_pod(acct, objs[-1], {"n1": []})
    assert result["n1"].uids and freed_cpu(acct, "n1", result["n1"].uids) >= 2000


def test_unknown_nodes_and_victims_are_left_out_not_errors() -> None:
    objs = same_queue_cluster()
    acct, _ = accounting(objs)
    result = preempt_pod(acct, objs[-1], {"n9": uids("l1"), "n1": ["no-such-uid"]})
    assert result == {}


def test_no_victims_on_a_node_where_the_preemptor_already_fits() -> None:
    objs = [*same_queue_cluster(), node("roomy", cpu="8")]
    acct, _ = accounting(objs)
    assert "roomy" not in preempt_pod(acct, objs[-2], {"roomy": []})


def test_a_preemptor_that_may_not_preempt_gets_nothing() -> None:
    objs = same_queue_cluster()
    objs[-1]["spec"]["preemptionPolicy"] = "Never"
    acct, _ = accounting(objs)
    assert preempt_pod(acct, objs[-1], {"n1": uids("l1")}) == {}


def test_preempt_leaves_the_cache_unchanged() -> None:
    objs = same_queue_cluster()
    acct, _ = accounting(objs)
    before = acct.state.snapshot().nodes["n1"]
    preempt_pod(acct, objs[-1], {"n1": uids("l2", "l3")})
    after = acct.state.snapshot().nodes["n1"]
    assert (after.idle.milli_cpu, after.releasing.milli_cpu, sorted(after.tasks)) == (
        before.idle.milli_cpu,
        before.releasing.milli_cpu,
        sorted(before.tasks),
    )


def test_preempt_logs_the_debugging_guides_lines_at_v3(caplog: Any) -> None:
    import logging

    from scheduler_core.logutil import v

    objs = same_queue_cluster()
    acct, _ = accounting(objs)
    with caplog.at_level(v(3), logger="scheduler_core"):
        result = preempt_pod(acct, objs[-1], {"n1": uids("l2", "l3")})
    victim = next(r for r in ("l1", "l2", "l3") if f"ns-{r}" in result["n1"].uids)
    assert "Considering Task <ns/h> on Node <n1>." in caplog.text
    assert f"Try to preempt Task <ns/{victim}> for Task <ns/h>" in caplog.text
    assert logging.getLevelName(v(3)) == "V3"
