"""preempt evicts only for a starving job, only when the whole job can then be placed, and
never promises the same room twice while kube-scheduler acts on an earlier answer."""

from __future__ import annotations

from typing import Any

from scheduler_core.accounting.keeper import QueueAccounting
from scheduler_core.extender.filter_verb import filter_pod
from scheduler_core.extender.preempt_verb import preempt_pod
from tests.builders import accounting, node, pod, podgroup, priority_class, queue

PCS = [priority_class("low", 10), priority_class("high", 1000)]


def low(name: str, node_name: str, **extra: Any) -> dict[str, Any]:
    return pod(
        name,
        group="victims",
        cpu="1",
        memory="1Gi",
        node_name=node_name,
        priority=10,
        priority_class="low",
        **extra,
    )


def high(name: str, group: str) -> dict[str, Any]:
    return pod(name, group=group, cpu="1", memory="1Gi", priority=1000, priority_class="high")


def cluster(
    nodes: int,
    victims: dict[str, str],
    gang: int,
    members: int,
    keepers: dict[str, str] | None = None,
) -> list[dict[str, Any]]:
    """1-CPU nodes in one queue: low-priority lone pods on some, a high-priority gang of
    ``members`` pods with minMember ``gang`` waiting."""
    objs: list[dict[str, Any]] = [
        *(node(f"n{i}", cpu="1") for i in range(nodes)),
        queue("q"),
        *PCS,
        podgroup("victims", 1, queue="q", priority_class="low"),
    ]
    objs += [low(name, n) for name, n in victims.items()]
    objs += [low(name, n, preemptable=False) for name, n in (keepers or {}).items()]
    objs.append(podgroup("job", gang, queue="q", priority_class="high", phase="Inqueue"))
    objs += [high(f"m{i}", "job") for i in range(members)]
    return objs


def test_no_victims_for_a_gang_that_cannot_complete_even_with_every_eviction() -> None:
    objs = cluster(4, {"va": "n1", "vb": "n2"}, gang=4, members=4, keepers={"k": "n3"})
    acct, _ = accounting(objs)
    assert preempt_pod(acct, high("m0", "job"), {"n1": ["ns-va"]}) == {}


def test_victims_for_a_gang_that_completes_with_free_room_and_other_victims() -> None:
    objs = cluster(4, {"va": "n1", "vb": "n2", "vc": "n3"}, gang=4, members=4)
    acct, _ = accounting(objs)
    result = preempt_pod(acct, high("m0", "job"), {"n1": ["ns-va"]})
    assert result["n1"].uids == ["ns-va"]


def test_a_job_stops_preempting_once_min_member_members_have_a_place() -> None:
    objs = cluster(4, {f"v{i}": f"n{i}" for i in range(4)}, gang=2, members=4)
    acct, _ = accounting(objs)
    assert preempt_pod(acct, high("m0", "job"), {"n0": ["ns-v0"]})["n0"].uids == ["ns-v0"]
    assert preempt_pod(acct, high("m1", "job"), {"n1": ["ns-v1"]})["n1"].uids == ["ns-v1"]
    # two members hold a promised node each: the job is no longer starving
    assert preempt_pod(acct, high("m2", "job"), {"n2": ["ns-v2"]}) == {}


def one_victim_and_lone_preemptors(*groups: str) -> list[dict[str, Any]]:
    """One 1-CPU node running a low-priority pod ``v``; a high-priority lone pod per group."""
    objs = [
        node("n1", cpu="1"),
        queue("q"),
        *PCS,
        podgroup("victims", 1, queue="q", priority_class="low"),
        low("v", "n1"),
    ]
    for group in groups:
        objs += [
            podgroup(group, 1, queue="q", priority_class="high", phase="Inqueue"),
            high(f"{group}1", group),
        ]
    return objs


def test_a_node_promised_to_one_preemptor_is_not_promised_to_another() -> None:
    acct, _ = accounting(one_victim_and_lone_preemptors("a", "b"))
    assert preempt_pod(acct, high("a1", "a"), {"n1": ["ns-v"]})["n1"].uids == ["ns-v"]
    assert preempt_pod(acct, high("b1", "b"), {"n1": ["ns-v"]}) == {}
    # the same preemptor asking again gets the same answer
    assert preempt_pod(acct, high("a1", "a"), {"n1": ["ns-v"]})["n1"].uids == ["ns-v"]


def victim_gone_and_preemptor_bound(acct: QueueAccounting) -> None:
    """After ``one_victim_and_lone_preemptors("a")``'s ``a1`` was granted ``v``: the cluster
    shows the eviction and the bind, and the grants are pruned."""
    acct.state.delete("Pod", "ns/v")
    bound = high("a1", "a")
    bound["spec"]["nodeName"] = "n1"
    acct.state.upsert("Pod", bound)
    acct.grants.prune(acct.state)


def test_a_grant_ends_when_its_preemptor_binds() -> None:
    acct, _ = accounting(one_victim_and_lone_preemptors("a"))
    preempt_pod(acct, high("a1", "a"), {"n1": ["ns-v"]})
    assert len(acct.grants) == 1
    victim_gone_and_preemptor_bound(acct)
    assert len(acct.grants) == 0


def test_filter_passes_a_nominated_gang_member_offered_only_its_freed_node() -> None:
    """Both members of a minMember-2 gang were nominated to the node freed for each; each is
    offered only its own node, which holds one member: counting the other member's place,
    filter lets each through instead of asking one node to hold the whole gang."""
    objs = [
        node("n0", cpu="1"),
        node("n1", cpu="1"),
        queue("q"),
        *PCS,
        podgroup("job", 2, queue="q", priority_class="high", phase="Inqueue"),
    ]
    members = []
    for i in range(2):
        m = high(f"m{i}", "job")
        m["status"]["nominatedNodeName"] = f"n{i}"
        members.append(m)
    acct, _ = accounting(objs + members)
    assert filter_pod(acct, members[0], ["n0"]).passed == ["n0"]
    assert filter_pod(acct, members[1], ["n1"]).passed == ["n1"]


def test_a_preemptor_asking_again_before_its_victims_go_gets_no_victims_elsewhere() -> None:
    """kube-scheduler preempts asynchronously and may try the same pod again before the
    evictions it started show: the first answer's victim is on its way out, and a victim
    on another node would be evicted in vain."""
    objs = cluster(4, {f"v{i}": f"n{i}" for i in range(4)}, gang=2, members=4)
    acct, _ = accounting(objs)
    assert preempt_pod(acct, high("m0", "job"), {"n0": ["ns-v0"]})["n0"].uids == ["ns-v0"]
    assert preempt_pod(acct, high("m0", "job"), {"n1": ["ns-v1"]}) == {}
    both = preempt_pod(acct, high("m0", "job"), {"n0": ["ns-v0"], "n1": ["ns-v1"]})
    assert {n: c.uids for n, c in both.items()} == {"n0": ["ns-v0"]}
    # a candidate with no proposed victims asks the extender to choose: the same answer
    assert preempt_pod(acct, high("m0", "job"), {"n0": []})["n0"].uids == ["ns-v0"]
    # another member still gets its own victim: the gang needs two
    assert preempt_pod(acct, high("m1", "job"), {"n1": ["ns-v1"]})["n1"].uids == ["ns-v1"]


def test_a_preemptor_granted_several_nodes_waits_for_kube_schedulers_choice_to_show() -> None:
    objs = cluster(4, {f"v{i}": f"n{i}" for i in range(4)}, gang=1, members=1)
    acct, _ = accounting(objs)
    first = preempt_pod(acct, high("m0", "job"), {"n0": ["ns-v0"], "n1": ["ns-v1"]})
    assert sorted(first) == ["n0", "n1"]
    again = {"n0": ["ns-v0"], "n1": ["ns-v1"], "n2": ["ns-v2"]}
    assert preempt_pod(acct, high("m0", "job"), again) == {}
    nominated = high("m0", "job")
    nominated["status"]["nominatedNodeName"] = "n1"
    acct.state.upsert("Pod", nominated)
    assert {n: c.uids for n, c in preempt_pod(acct, nominated, again).items()} == {"n1": ["ns-v1"]}


def test_the_victims_of_a_grant_that_ended_still_count_as_handed_out_for_a_while() -> None:
    """A preemptor that binds at once ends its grant before the watch of kube-scheduler's
    preemption looks: its victims were still approved by the verb."""
    acct, clock = accounting(one_victim_and_lone_preemptors("a"))
    preempt_pod(acct, high("a1", "a"), {"n1": ["ns-v"]})
    victim_gone_and_preemptor_bound(acct)
    assert len(acct.grants) == 0
    assert acct.grants.victims_handed_out() == {"ns-v"}
    clock.now += acct.grants.ttl + 1
    assert acct.grants.victims_handed_out() == set()


def test_the_victims_of_ended_grants_are_forgotten_by_prune_alone() -> None:
    """Where no watch asks for them (no native PodGroups), pruning still lets them go."""
    acct, clock = accounting(one_victim_and_lone_preemptors("a"))
    preempt_pod(acct, high("a1", "a"), {"n1": ["ns-v"]})
    victim_gone_and_preemptor_bound(acct)
    assert acct.grants._ended
    clock.now += acct.grants.ttl + 1
    acct.grants.prune(acct.state)
    assert not acct.grants._ended


def test_a_preemptor_the_cache_has_not_shown_keeps_its_grant_until_it_shows_or_expires() -> None:
    """kube-scheduler may ask before our watch delivers the pod: not shown is not gone, so
    its grant holds (no victims elsewhere, the node not promised to another)."""
    acct, clock = accounting(one_victim_and_lone_preemptors("b"))
    unseen = high("a1", "b")
    unseen["metadata"]["name"] = "late"
    unseen["metadata"]["uid"] = "ns-late"
    assert preempt_pod(acct, unseen, {"n1": ["ns-v"]})["n1"].uids == ["ns-v"]
    assert preempt_pod(acct, high("b1", "b"), {"n1": ["ns-v"]}) == {}  # promised to late
    assert len(acct.grants) == 1
    acct.state.upsert("Pod", unseen)  # delivered, then deleted: gone
    acct.grants.prune(acct.state)
    acct.state.delete("Pod", "ns/late")
    acct.grants.prune(acct.state)
    assert len(acct.grants) == 0
    assert preempt_pod(acct, unseen, {"n1": ["ns-v"]})["n1"].uids == ["ns-v"]
    clock.now += acct.grants.ttl + 1
    acct.grants.prune(acct.state)
    assert len(acct.grants) == 0
