"""filter answers per queue and gang, lists every node it rejects, and assumes what it passes."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler_core.extender.filter_verb import filter_pod
from tests.builders import accounting, native_podgroup, node, pod, podgroup, queue

NODES = ["n1", "n2"]


def base() -> list[dict[str, Any]]:
    """Two 4-CPU nodes; queues a (weight 1) and b (weight 1); b runs 4 CPU on n2."""
    objs: list[dict[str, Any]] = [
        node("n1"),
        node("n2"),
        queue("a"),
        queue("b"),
        podgroup("busy", 1, queue="b"),
    ]
    objs += [pod(f"b{i}", group="busy", node_name="n2") for i in range(4)]
    return objs


def lone(name: str, queue_name: str, cpu: str = "1") -> dict[str, Any]:
    p = pod(name, cpu=cpu, memory="1Gi")
    p["metadata"]["annotations"]["scheduling.volcano.sh/queue-name"] = queue_name
    return p


def closed(name: str) -> dict[str, Any]:
    q = queue(name)
    q["status"]["state"] = "Closed"
    return q


@pytest.mark.parametrize(
    ("extra", "the_pod", "code", "resolvable"),
    [
        ([], lone("p", "no-such-queue"), "queue-missing", False),
        ([closed("c")], lone("p", "c"), "queue-closed", False),
        ([], pod("p", group="ghost"), "podgroup-missing", True),
        ([podgroup("g3", 3, queue="a")], pod("p", group="g3"), "gang-invalid", True),
        # queue a's fair share is 4 CPU (b holds its 4 and wants no more): 5 CPU is over it
        ([], lone("p", "a", cpu="5"), "queue-overused", True),
    ],
)
def test_rejections_list_every_node_with_a_reason(
    extra: list[dict[str, Any]], the_pod: dict[str, Any], code: str, resolvable: bool
) -> None:
    acct, _ = accounting(base() + extra + ([the_pod] if "group" in str(the_pod) else []))
    result = filter_pod(acct, the_pod, NODES)
    assert result.passed == []
    assert set(result.failed) == set(NODES)
    rejection = result.failed["n1"]
    assert (rejection.reason_code, rejection.resolvable) == (code, resolvable)
    assert rejection.message  # a sentence a person can act on
    assert acct.assumed == {}


def test_queue_capability_rejects_a_job_whose_min_resources_cannot_be_admitted() -> None:
    q = queue("capped")
    q["spec"]["capability"] = {"cpu": "2"}
    pg = podgroup("big", 1, queue="capped", phase="Pending")
    pg["spec"]["minResources"] = {"cpu": "3"}
    p = pod("p", group="big")
    acct, _ = accounting([*base(), q, pg, p])
    rejection = filter_pod(acct, p, NODES).failed["n1"]
    assert rejection.reason_code == "queue-capability"
    # the refusing plugin's own reason: its numbers and the dimension that does not fit
    assert rejection.message.startswith("queue capped cannot admit job ns/big now")
    assert "minResources (cpu 3, memory 0Gi)" in rejection.message
    assert "real capability (cpu 2, memory 16Gi); insufficient cpu;" in rejection.message


def test_a_gang_is_held_back_until_the_cluster_can_hold_all_its_missing_members() -> None:
    pg = podgroup("trio", 3, queue="a")
    members = [pod(f"t{i}", group="trio", cpu="2") for i in range(3)]  # needs 6 CPU, 4 free
    acct, _ = accounting([*base(), pg, *members])
    rejection = filter_pod(acct, members[0], NODES).failed["n1"]
    assert rejection.reason_code == "gang-unsatisfiable"
    assert "minMember 3" in rejection.message


def test_a_gang_that_fits_passes_member_by_member() -> None:
    pg = podgroup("duo", 2, queue="a")
    members = [pod(f"d{i}", group="duo", cpu="2") for i in range(2)]
    acct, _ = accounting([*base(), pg, *members])
    assert filter_pod(acct, members[0], NODES).passed == NODES
    # the first member is assumed: the second needs room for itself only
    assert filter_pod(acct, members[1], NODES).passed == NODES


def test_passing_pod_is_assumed_so_back_to_back_filters_cannot_overspend_a_queue() -> None:
    first, second = lone("p1", "a", cpu="3"), lone("p2", "a", cpu="3")
    acct, _ = accounting([*base(), first, second])
    assert filter_pod(acct, first, NODES).passed == NODES
    assert "ns/p1" in acct.assumed
    result = filter_pod(acct, second, NODES)
    assert result.passed == [] and result.failed["n1"].reason_code == "queue-overused"


def test_filtering_the_same_pod_again_does_not_count_it_twice() -> None:
    p = lone("p", "a", cpu="4")
    acct, _ = accounting([*base(), p])
    assert filter_pod(acct, p, NODES).passed == NODES
    assert filter_pod(acct, p, NODES).passed == NODES
    assert list(acct.assumed) == ["ns/p"]


def test_assumption_ends_when_the_pod_is_bound_and_counts_for_real() -> None:
    first, second = lone("p1", "a", cpu="3"), lone("p2", "a", cpu="1")
    acct, _ = accounting([*base(), first, second])
    filter_pod(acct, first, NODES)
    bound = lone("p1", "a", cpu="3")
    bound["spec"]["nodeName"] = "n1"
    bound["status"]["phase"] = "Running"
    acct.state.upsert("Pod", bound)
    assert filter_pod(acct, second, NODES).passed == NODES  # 3 + 1 <= 4
    assert "ns/p1" not in acct.assumed
    third = lone("p3", "a", cpu="1")
    acct.state.upsert("Pod", third)
    assert filter_pod(acct, third, NODES).failed["n1"].reason_code == "queue-overused"


def test_assumption_ends_when_the_pod_is_deleted() -> None:
    first, second = lone("p1", "a", cpu="3"), lone("p2", "a", cpu="3")
    acct, _ = accounting([*base(), first, second])
    filter_pod(acct, first, NODES)
    acct.state.delete("Pod", "ns/p1")
    assert filter_pod(acct, second, NODES).passed == NODES


def test_assumption_expires_after_its_ttl() -> None:
    first, second = lone("p1", "a", cpu="3"), lone("p2", "a", cpu="3")
    acct, clock = accounting([*base(), first, second], ttl=30)
    filter_pod(acct, first, NODES)
    clock.now += 31
    assert filter_pod(acct, second, NODES).passed == NODES
    assert "ns/p1" not in acct.assumed


def test_only_assumptions_that_ran_out_their_ttl_count_as_expired() -> None:
    first, second, third = (lone(f"p{i}", "a", cpu="1") for i in (1, 2, 3))
    acct, clock = accounting([*base(), first, second, third], ttl=30)
    filter_pod(acct, first, NODES)
    filter_pod(acct, second, NODES)
    bound = lone("p2", "a", cpu="1")
    bound["spec"]["nodeName"] = "n1"
    bound["status"]["phase"] = "Running"
    acct.state.upsert("Pod", bound)  # confirmed by the cluster, not expired
    filter_pod(acct, third, NODES)
    assert acct.expired == 0
    clock.now += 31
    acct.session()
    assert acct.expired == 2 and not acct.assumed  # p1 and p3 were never bound


@settings(max_examples=80, deadline=None, derandomize=True)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["filter", "release", "tick"]),
            st.integers(1, 4),
            st.sampled_from([1.0, 9.0, 20.0, 31.0]),
        ),
        max_size=25,
    )
)
def test_every_assumption_ends_when_its_ttl_runs_out_and_not_before(
    steps: list[tuple[str, int, float]],
) -> None:
    pods = {i: lone(f"p{i}", "a", cpu="100m") for i in range(1, 5)}
    acct, clock = accounting([*base(), *pods.values()], ttl=30)
    expires: dict[str, float] = {}  # the model: pod key -> when its assumption ends
    for op, index, seconds in steps:
        key = f"ns/p{index}"
        if op == "filter":
            filter_pod(acct, pods[index], NODES)
            expires[key] = clock.now + 30
        elif op == "release":
            acct.release(key)
            expires.pop(key, None)
        else:
            clock.now += seconds
        acct.session()  # (what every verb call asks first)
        expires = {k: at for k, at in expires.items() if at > clock.now}
        assert sorted(acct.assumed) == sorted(expires)


def test_a_pod_the_cache_has_not_seen_yet_is_judged_in_its_queue() -> None:
    acct, _ = accounting(base())
    assert filter_pod(acct, lone("new", "a", cpu="2"), NODES).passed == NODES
    assert filter_pod(acct, lone("big", "a", cpu="5"), NODES).failed["n1"].reason_code == (
        "queue-overused"
    )
    # more than the whole cluster can ever hold: no job of that size can be admitted
    assert filter_pod(acct, lone("huge", "a", cpu="9"), NODES).failed["n1"].reason_code == (
        "queue-capability"
    )


def test_unknown_nodes_fail_with_a_reason_while_known_ones_pass() -> None:
    p = lone("p", "a")
    acct, _ = accounting([*base(), p])
    result = filter_pod(acct, p, ["n1", "n9"])
    assert result.passed == ["n1"]
    assert result.failed["n9"].reason_code == "node-unknown" and result.failed["n9"].resolvable


def test_a_list_offered_again_is_passed_whole_until_one_of_its_nodes_is_removed() -> None:
    p, q = lone("p", "a"), lone("q", "a")
    acct, _ = accounting([*base(), p, q])
    offered = ("n1", "n2")
    assert filter_pod(acct, p, offered).passed is offered  # every node passed: no copy
    acct.state.delete("Node", "n2")
    result = filter_pod(acct, q, offered)
    assert list(result.passed) == ["n1"]
    assert result.failed["n2"].reason_code == "node-unknown"


def test_gang_room_is_counted_on_the_nodes_offered_for_the_pod() -> None:
    pg = podgroup("duo", 2, queue="a")
    members = [pod(f"d{i}", group="duo", cpu="3") for i in range(2)]  # 6 CPU: n1 has 4
    acct, _ = accounting([*base(), node("n3"), pg, *members])
    assert filter_pod(acct, members[0], ["n1", "n3"]).passed == ["n1", "n3"]
    acct.release("ns/d0")
    # n3 is not offered (say, tainted for this pod): n1 alone cannot hold both members
    assert filter_pod(acct, members[0], ["n1"]).failed["n1"].reason_code == "gang-unsatisfiable"


def test_refreshing_the_accounting_leaves_the_caches_podgroup_phases_alone() -> None:
    """The accounting session reads the live jobs; closing it must not rewrite their phase
    (a Running PodGroup below minMember would read Pending and drop out of reclaim)."""
    pg = podgroup("gang", 3, queue="a", phase="Running")
    acct, _ = accounting([*base(), pg, pod("m0", group="gang", node_name="n1")])
    acct.session()
    acct.state.upsert("Pod", pod("m1", group="gang"))  # any change: the next call rebuilds
    acct.session()
    acct.session()
    assert acct.state.snapshot().jobs["ns/gang"].phase == "Running"


def test_a_pod_the_cache_has_not_seen_does_not_count_bound_assumed_pods_twice() -> None:
    """Capability 2 CPU, three 1-CPU pods: two pass and bind; the cache shows them bound
    before kube-scheduler's informer has shown the third to us. The third is judged against
    2 CPU held, not 4 (each bound pod once for real and once more as an assumption)."""
    capped = queue("cap", capability={"cpu": "2"})
    p0, p1, p2 = (lone(f"p{i}", "cap") for i in range(3))
    acct, _ = accounting([node("n1"), capped, p0, p1])
    acct.min_refresh_interval = 1.0  # the shared session is not rebuilt in between
    assert filter_pod(acct, p0, ["n1"]).passed == ["n1"]
    assert filter_pod(acct, p1, ["n1"]).passed == ["n1"]
    for bound in (p0, p1):
        bound["spec"]["nodeName"] = "n1"
        acct.state.upsert("Pod", bound)
    rejection = filter_pod(acct, p2, ["n1"]).failed["n1"]
    assert rejection.reason_code == "queue-capability"
    assert "holds (cpu 2," in rejection.message, rejection.message


def test_pods_assumed_before_the_cache_shows_them_count_against_their_queues_cap() -> None:
    """kube-scheduler can be ahead of the extender's watch (after an API-server restart by
    seconds): the pods it asks about one after the other are each new to the cache, and
    every one passed must still count in its queue, or a capped queue is overrun."""
    acct, _ = accounting([node("n1"), node("n2"), queue("capped", capability={"cpu": "2"})])
    unseen = [lone(f"u{i}", "capped", cpu="1") for i in range(3)]
    assert filter_pod(acct, unseen[0], NODES).passed == NODES
    assert filter_pod(acct, unseen[1], NODES).passed == NODES
    third = filter_pod(acct, unseen[2], NODES)
    assert third.passed == [] and third.failed["n1"].reason_code == "queue-capability"


def test_a_cached_pod_is_judged_with_the_assumed_pods_the_cache_has_not_shown_yet() -> None:
    cached = lone("cached", "capped", cpu="1")
    acct, _ = accounting([node("n1"), node("n2"), queue("capped", capability={"cpu": "2"}), cached])
    for name in ("u0", "u1"):
        assert filter_pod(acct, lone(name, "capped", cpu="1"), NODES).passed == NODES
    assert filter_pod(acct, cached, NODES).failed["n1"].reason_code == "queue-capability"


def test_a_pod_naming_a_volcano_and_a_native_group_is_refused_with_a_sentence() -> None:
    both = pod("p", group="busy", scheduling_group="train")
    acct, _ = accounting([*base(), native_podgroup("train", 1, queue="a"), both])
    result = filter_pod(acct, both, NODES)
    assert result.passed == [] and acct.assumed == {}
    rejection = result.failed["n1"]
    assert (rejection.reason_code, rejection.resolvable) == ("two-pod-groups", False)
    assert "Volcano PodGroup busy" in rejection.message
    assert "Kubernetes PodGroup train" in rejection.message


def test_a_native_gang_member_is_judged_by_the_same_gang_rule() -> None:
    """Three 3-CPU members on two 4-CPU nodes (one of them full): the gang cannot be whole."""
    members = [pod(f"m{i}", cpu="3", scheduling_group="trio") for i in range(3)]
    acct, _ = accounting([*base(), native_podgroup("trio", 3, queue="a"), *members])
    rejection = filter_pod(acct, members[0], NODES).failed["n1"]
    assert rejection.reason_code == "gang-unsatisfiable"
    assert "gang ns/native:trio needs 3 more pods" in rejection.message
