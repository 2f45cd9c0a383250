"""The reclaim loop's decision on the engine: Volcano's reclaim with the live rules on."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler_core.actions.preempt import PreemptAction
from scheduler_core.actions.util.reclaim_rules import (
    ReclaimGuard,
    ReclaimRules,
    compared_dimensions,
)
from scheduler_core.conf import SchedulerConfiguration
from scheduler_core.controller.decision import decide, live_configuration
from scheduler_core.framework.arguments import Arguments
from tests.builders import (
    CAPACITY_CONF,
    HELM_CONF,
    Obj,
    configuration,
    node,
    pod,
    podgroup,
    priority_class,
    queue,
    session,
    snapshot,
)
from tests.controller.reclaim_world import World, reclaim_conf

LIVE = live_configuration(reclaim_conf())
VOLCANO = reclaim_conf()


def evicted(objs: list[Obj], conf: SchedulerConfiguration) -> list[str]:
    return sorted(e.victim.name for e in decide(snapshot(objs), conf).evictions)


def filled_by_q1(q1_pods: int = 8, q2_pods: int = 8, cpu: str = "1") -> list[Obj]:
    """Four 2-cpu nodes full of q1's pods; q2 (equal weight) submits its own."""
    objs: list[Obj] = [node(f"n{i}", cpu="2", memory="8Gi") for i in range(4)]
    objs += [queue("q1"), queue("q2")]
    per = 2 // int(cpu)
    objs += [
        pod(f"a{i}", queue="q1", cpu=cpu, node_name=f"n{i // per}", started="2024-01-01T00:00:00Z")
        for i in range(q1_pods)
    ]
    objs += [pod(f"b{i}", queue="q2", cpu=cpu) for i in range(q2_pods)]
    return objs


def test_equal_queues_end_at_their_deserved_share_and_no_further() -> None:
    world = World(nodes=4, node_cpu=2, weights={"q1": 1, "q2": 1})
    for _ in range(8):
        world.submit("q1")
    world.place()
    for _ in range(8):
        world.submit("q2")
    first = world.reclaim(LIVE)
    assert len(first.evictions) == 4
    assert {e.victim_queue for e in first.evictions} == {"q1"}
    assert {e.preemptor_queue for e in first.evictions} == {"q2"}
    world.place()
    for _ in range(5):
        assert world.reclaim(LIVE).evictions == []
        world.place()
    running = [world.queue_of(n) for n in world.running()]
    assert running.count("q1") == 4 and running.count("q2") == 4


def capacity_queues_as_their_users_write_them() -> list[Obj]:
    """An 8-cpu cluster; capacity queues deserving 1/1/2/4 cpu (and 4Gi each), q1 and q2
    holding 4 cpu each, q3 waiting with two 1-cpu pods and q4 with four, all of one priority."""
    objs: list[Obj] = [node(f"n{i}", cpu="2", memory="8Gi") for i in range(4)]
    for name, cpu in (("q1", "1"), ("q2", "1"), ("q3", "2"), ("q4", "4")):
        objs.append(queue(name, deserved={"cpu": cpu, "memory": "4Gi"}))
    started = "2024-01-01T00:00:00Z"
    for i in range(4):
        objs.append(
            pod(f"a{i}", queue="q1", memory="128Mi", node_name=f"n{i // 2}", started=started)
        )
        objs.append(
            pod(f"b{i}", queue="q2", memory="128Mi", node_name=f"n{2 + i // 2}", started=started)
        )
    objs += [pod(f"c{i}", queue="q3", memory="128Mi") for i in range(2)]
    objs += [pod(f"d{i}", queue="q4", memory="128Mi") for i in range(4)]
    return objs


def test_capacity_queues_get_their_deserved_back_and_the_lenders_keep_exactly_theirs() -> None:
    live = live_configuration(configuration(CAPACITY_CONF, "enqueue, allocate, preempt, reclaim"))
    objs = capacity_queues_as_their_users_write_them()
    first = decide(snapshot(objs), live)
    given = {q: sum(1 for e in first.evictions if e.preemptor_queue == q) for q in ("q3", "q4")}
    taken = {q: sum(1 for e in first.evictions if e.victim_queue == q) for q in ("q1", "q2")}
    assert given == {"q3": 2, "q4": 4} and taken == {"q1": 3, "q2": 3}
    # The cluster after it: victims gone (their controllers make them again, pending), every
    # preemptor bound where it was pipelined. The next cycle takes nothing back.
    by_name = {o["metadata"]["name"]: o for o in objs if o["kind"] == "Pod"}
    for planned in first.evictions:
        victim = by_name[planned.victim.name]
        victim["spec"].pop("nodeName")
        victim["status"] = {"phase": "Pending"}
        assert planned.preemptor is not None
        preemptor = by_name[planned.preemptor.name]
        preemptor["spec"]["nodeName"] = planned.preemptor.node_name
        preemptor["status"] = {"phase": "Running", "startTime": "2024-01-01T00:00:00Z"}
    assert decide(snapshot(objs), live).evictions == []


def test_the_rule_names_the_overused_queue_with_numbers_and_the_preemptor() -> None:
    decision = decide(snapshot(filled_by_q1(q2_pods=1)), LIVE)
    [planned] = decision.evictions
    # Memory is plentiful: q1 holds only its share of it, so only cpu is being reclaimed.
    assert planned.rule == (
        "queue q1 is overused (allocated cpu 8 > deserved cpu 7); reclaimed for ns/b0 of queue q2"
    )


def test_a_boundary_pod_is_left_where_volcano_would_evict_it() -> None:
    # q1 holds 6 cpu in 3-cpu pods against a deserved 4: taking one leaves it at 3 < 4.
    objs: list[Obj] = [node("n0", cpu="3"), node("n1", cpu="3"), node("n2", cpu="2")]
    objs += [queue("q1"), queue("q2")]
    objs += [pod(f"a{i}", queue="q1", cpu="3", memory="1Gi", node_name=f"n{i}") for i in range(2)]
    objs += [pod("b0", queue="q2", cpu="3", memory="1Gi"), pod("b1", queue="q2", cpu="1")]
    assert evicted(objs, VOLCANO) != []
    assert evicted(objs, LIVE) == []


def test_a_queue_that_does_not_lend_is_never_a_victim() -> None:
    objs = filled_by_q1()
    objs[4] = queue("q1", reclaimable=False)
    assert evicted(objs, LIVE) == []


def with_annotation(obj: Obj, value: str) -> Obj:
    obj.setdefault("metadata", {}).setdefault("annotations", {})[
        "kube-queue-extender.io/min-runtime"
    ] = value
    return obj


@pytest.mark.parametrize("where", ["pod", "queue", "global"])
def test_a_pod_younger_than_its_minimum_runtime_is_not_a_victim(where: str) -> None:
    objs = filled_by_q1(q2_pods=1)
    arguments: dict[str, Any] = {}
    if where == "pod":
        for obj in objs:
            if obj["kind"] == "Pod" and obj["metadata"]["name"].startswith("a"):
                with_annotation(obj, "1000000h")
    elif where == "queue":
        with_annotation(objs[4], "1000000h")
    else:
        arguments["reclaim.minRuntime"] = "1000000h"
    conf = live_configuration(reclaim_conf(**arguments))
    assert evicted(objs, conf) == []
    # An hour is long past for pods that started in 2024.
    for obj in objs:
        annotations = obj.get("metadata", {}).get("annotations", {})
        if "kube-queue-extender.io/min-runtime" in annotations:
            annotations["kube-queue-extender.io/min-runtime"] = "1h"
    if where == "global":
        conf = live_configuration(reclaim_conf(**{"reclaim.minRuntime": "1h"}))
    assert len(evicted(objs, conf)) == 1


def test_a_podgroup_annotation_protects_every_pod_of_the_group() -> None:
    objs = filled_by_q1(q2_pods=1)
    objs.append(with_annotation(podgroup("g", 1, queue="q1"), "1000000h"))
    for obj in objs:
        if obj["kind"] == "Pod" and obj["metadata"]["name"].startswith("a"):
            obj["metadata"]["annotations"]["scheduling.k8s.io/group-name"] = "g"
    assert evicted(objs, LIVE) == []


def test_eviction_limits_hold_per_cycle_and_per_queue() -> None:
    objs = filled_by_q1()
    assert len(evicted(objs, live_configuration(VOLCANO, max_evictions=2))) == 2
    assert len(evicted(objs, live_configuration(VOLCANO, max_evictions_per_queue=3))) == 3


def test_a_gang_keeps_its_min_member_or_goes_whole() -> None:
    # q1 runs one gang of 8 (minMember 6) on 4 nodes: at most 2 of its pods may go.
    objs = filled_by_q1()
    objs.append(podgroup("gang", 6, queue="q1"))
    for obj in objs:
        if obj["kind"] == "Pod" and obj["metadata"]["name"].startswith("a"):
            obj["metadata"]["annotations"]["scheduling.k8s.io/group-name"] = "gang"
    names = evicted(objs, LIVE)
    assert 0 < len(names) <= 2


def test_a_gang_on_one_node_may_go_whole() -> None:
    objs: list[Obj] = [node("n0", cpu="2"), node("n1", cpu="2"), queue("q1"), queue("q2")]
    objs.append(podgroup("pair", 2, queue="q1"))
    objs += [
        pod(f"g{i}", queue="q1", group="pair", node_name="n0", started="2024-01-01T00:00:00Z")
        for i in range(2)
    ]
    objs += [
        pod(f"s{i}", queue="q1", node_name="n1", started="2024-01-01T00:00:00Z") for i in range(2)
    ]
    objs += [pod("b0", queue="q2", cpu="2")]
    names = evicted(objs, live_configuration(reclaim_conf(**{"reclaim.minimalVictims": True})))
    assert names in (["g0", "g1"], ["s0", "s1"])


def test_no_eviction_when_the_preemptor_would_still_not_fit() -> None:
    # b0 needs 3 cpu; no node has more than 2: evicting anything would be for nothing.
    objs = filled_by_q1(q2_pods=0)
    objs.append(pod("b0", queue="q2", cpu="3"))
    assert evicted(objs, LIVE) == []


def test_a_bad_argument_is_a_one_line_error() -> None:
    with pytest.raises(ValueError, match=r"reclaim\.minRuntime"):
        live_configuration(reclaim_conf(**{"reclaim.minRuntime": "soon"}))
    with pytest.raises(ValueError, match=r"reclaim\.maxEvictions"):
        live_configuration(reclaim_conf(**{"reclaim.maxEvictions": -1}))


# --- preempt, when the configuration lists it -------------------------------------------------

WITH_PREEMPT = live_configuration(configuration(HELM_CONF, "enqueue, allocate, preempt, reclaim"))


def one_queue_low_then_high(low_min: int = 1, high_pods: int = 2, **low: Any) -> list[Obj]:
    """One queue; a low PodGroup fills two 2-cpu nodes, then a PodGroup of a higher priority
    class asks for ``high_pods`` (gang of all of them). Every pod has the same (zero) pod
    priority: kube-scheduler would never preempt here."""
    objs: list[Obj] = [node(f"n{i}", cpu="2", memory="8Gi") for i in range(2)]
    objs += [queue("q1"), priority_class("high", 1000)]
    objs += [
        podgroup("low", low_min, queue="q1"),
        podgroup("high", high_pods, queue="q1", priority_class="high", phase="Inqueue"),
    ]
    objs += [
        pod(
            f"a{i}",
            queue="q1",
            group="low",
            node_name=f"n{i // 2}",
            started=low.get("started", "2024-01-01T00:00:00Z"),
        )
        for i in range(4)
    ]
    objs += [pod(f"h{i}", queue="q1", group="high") for i in range(high_pods)]
    return objs


def test_preempt_runs_between_jobs_of_one_queue_at_equal_pod_priority() -> None:
    decision = decide(snapshot(one_queue_low_then_high()), WITH_PREEMPT)
    assert len(decision.evictions) == 2
    assert {e.action for e in decision.evictions} == {"preempt"}
    assert {e.victim.name[0] for e in decision.evictions} == {"a"}
    assert all(e.rule.startswith("preempted within queue q1 for ns/h") for e in decision.evictions)
    assert set(decision.latency_ms) == {"enqueue", "preempt", "reclaim"}
    # Not listed, not run: the same cluster under a configuration without preempt.
    assert decide(snapshot(one_queue_low_then_high()), LIVE).evictions == []


@pytest.mark.parametrize("key", ["reclaim.minRuntime", "preempt.minRuntime"])
def test_preempt_spares_a_pod_under_its_minimum_runtime(key: str) -> None:
    action = key.split(".")[0]
    conf = live_configuration(
        configuration(HELM_CONF, "enqueue, allocate, preempt, reclaim", {action: {key: "1h"}})
    )
    young = one_queue_low_then_high(started="2999-01-01T00:00:00Z")
    assert decide(snapshot(young), conf).evictions == []
    assert len(decide(snapshot(one_queue_low_then_high()), conf).evictions) == 2


def test_preempt_never_leaves_a_victim_gang_below_min_member() -> None:
    # The low gang (minMember 4) spans both nodes: no node can give it up whole.
    assert decide(snapshot(one_queue_low_then_high(low_min=4)), WITH_PREEMPT).evictions == []
    volcano = configuration(HELM_CONF, "enqueue, allocate, preempt, reclaim")
    assert decide(snapshot(one_queue_low_then_high(low_min=4)), volcano).evictions != []


def test_preempt_and_reclaim_share_the_cycles_eviction_limit() -> None:
    # What preempt committed in the session counts against reclaim's budget.
    conf = live_configuration(
        configuration(HELM_CONF, "enqueue, allocate, preempt, reclaim"), max_evictions=1
    )
    ssn = session(one_queue_low_then_high(high_pods=1), conf)
    preempt = PreemptAction()
    preempt.initialize(Arguments(conf.action_arguments("preempt")))
    preempt.execute(ssn)
    assert len(ssn.evictions) == 1
    guard = ReclaimGuard(
        ssn, ReclaimRules.from_arguments(Arguments(conf.action_arguments("reclaim")))
    )
    assert guard.exhausted() and guard.committed_per_queue == {"q1": 1}
    # Over a few clusters and limits: never more evictions in a cycle than the limit.
    for high_pods in (1, 2):
        for cpu in ("1", "2"):
            objs = one_queue_low_then_high(high_pods=high_pods)
            objs += [queue("q2"), pod("b0", queue="q2", cpu=cpu)]
            for limit in (1, 2):
                capped = live_configuration(
                    configuration(HELM_CONF, "enqueue, allocate, preempt, reclaim"),
                    max_evictions=limit,
                )
                assert len(decide(snapshot(objs), capped).evictions) <= limit


def test_a_preempting_gang_that_would_pass_the_limit_waits() -> None:
    capped = live_configuration(
        configuration(HELM_CONF, "enqueue, allocate, preempt, reclaim"), max_evictions=1
    )
    assert decide(snapshot(one_queue_low_then_high()), capped).evictions == []


def test_preempt_leaves_lower_pod_priority_victims_to_kube_scheduler() -> None:
    # The urgent pods carry the class themselves: kube-scheduler preempts for them (through
    # the preempt verb), so the loop must not race it.
    objs = one_queue_low_then_high()
    for obj in objs:
        if obj["kind"] == "Pod" and obj["metadata"]["name"].startswith("h"):
            obj["spec"]["priorityClassName"] = "high"
    volcano = configuration(HELM_CONF, "enqueue, allocate, preempt, reclaim")
    assert decide(snapshot(objs), volcano).evictions != []
    assert decide(snapshot(objs), WITH_PREEMPT).evictions == []


def test_a_preemptor_that_fits_idle_room_evicts_nothing() -> None:
    objs = one_queue_low_then_high(high_pods=1)
    objs.append(node("spare", cpu="2", memory="8Gi"))
    assert decide(snapshot(objs), WITH_PREEMPT).evictions == []


GPU = "nvidia.com/gpu"
deserved_specs = st.fixed_dictionaries(
    {},
    optional={
        "cpu": st.sampled_from(["1", "2", "4"]),
        "memory": st.just("8Gi"),
        GPU: st.sampled_from(["0", "1", "2"]),
    },
)


@settings(max_examples=40, deadline=None)
@given(
    deserved=st.lists(deserved_specs, min_size=3, max_size=3),
    running=st.lists(st.tuples(st.integers(0, 2), st.booleans()), max_size=8),
    waiting=st.lists(st.tuples(st.integers(0, 2), st.booleans()), min_size=1, max_size=6),
)
def test_capacity_queues_whose_deserved_omits_dimensions_never_reclaim_back_and_forth(
    deserved: list[dict[str, str]],
    running: list[tuple[int, bool]],
    waiting: list[tuple[int, bool]],
) -> None:
    """Random capacity queues, their ``spec.deserved`` leaving out cpu, memory or the GPU (or
    naming a GPU at zero), 1-cpu pods some of which also want a GPU: after one cycle of the
    loop, the preemptors' queues are within their share in every dimension both it names and
    their preemptors request (a GPU a queue already held is not the CPU preemptor's doing), and the
    next cycle evicts none of the pods just placed."""
    live = live_configuration(configuration(CAPACITY_CONF, "enqueue, allocate, preempt, reclaim"))
    objs: list[Obj] = [node(f"n{i}", cpu="2", memory="8Gi", extra={GPU: "1"}) for i in range(4)]
    objs += [queue(f"q{i}", deserved=spec) for i, spec in enumerate(deserved)]
    room = {f"n{i}": [2, 1] for i in range(4)}
    for k, (q, gpu) in enumerate(running):
        where = next((n for n, (c, g) in room.items() if c >= 1 and g >= int(gpu)), None)
        if where is None:
            continue
        room[where][0] -= 1
        room[where][1] -= int(gpu)
        objs.append(
            pod(
                f"r{k}",
                queue=f"q{q}",
                memory="1Gi",
                extra={GPU: "1"} if gpu else None,
                node_name=where,
                started="2024-01-01T00:00:00Z",
            )
        )
    objs += [
        pod(f"w{k}", queue=f"q{q}", memory="1Gi", extra={GPU: "1"} if gpu else None)
        for k, (q, gpu) in enumerate(waiting)
    ]
    first = decide(snapshot(objs), live)
    placed = {e.preemptor.name for e in first.evictions if e.preemptor is not None}
    by_name = {o["metadata"]["name"]: o for o in objs if o["kind"] == "Pod"}
    for planned in first.evictions:
        victim = by_name[planned.victim.name]
        victim["spec"].pop("nodeName")
        victim["status"] = {"phase": "Pending"}
        assert planned.preemptor is not None
        preemptor = by_name[planned.preemptor.name]
        preemptor["spec"]["nodeName"] = planned.preemptor.node_name
        preemptor["status"] = {"phase": "Running", "startTime": "2024-01-01T00:00:00Z"}
    second = decide(snapshot(objs), live)
    asked: dict[str, set[str]] = {}  # queue -> what its placed preemptors request
    for e in first.evictions:
        assert e.preemptor is not None
        wanted = asked.setdefault(e.preemptor_queue, {"cpu", "memory"})
        if e.preemptor.resreq.get(GPU) > 0:
            wanted.add(GPU)
    for name, share in second.shares.items():
        if share is None or name not in asked:
            continue
        for dim in compared_dimensions(share, sorted(asked[name])):
            assert share.allocated.get(dim) <= share.deserved.get(dim) + 1e-6, (name, dim)
    assert not [e.victim.name for e in second.evictions if e.victim.name in placed]
