"""proportion: queue attributes and every hook, through a real session."""

from __future__ import annotations

import sys

import pytest

from scheduler_core.api.queue import QueueInfo
from scheduler_core.api.resource import Resource
from scheduler_core.framework.fit import PERMIT, REJECT
from scheduler_core.framework.hooks import (
    JOB_ENQUEUEABLE,
    QUEUE_ORDER,
    RECLAIMABLE,
    SIMULATE_ALLOCATABLE,
)
from scheduler_core.framework.memo import SessionMemos
from scheduler_core.framework.session import Session
from scheduler_core.framework.statement import Statement
from scheduler_core.logutil import v
from scheduler_core.plugins.fairshare.attrs import QueueAttr, QueueAttrs
from scheduler_core.plugins.proportion import ProportionPlugin
from tests.builders import (
    Obj,
    node,
    plugin_in,
    pod,
    podgroup,
    queue,
    session,
    task_of,
    tiers,
    with_min_resources,
)

CONF = tiers("proportion")
GI = 1024**3


def plugin(ssn: Session) -> ProportionPlugin:
    return plugin_in(ssn, ProportionPlugin)


def attr(ssn: Session, queue: str) -> QueueAttr:
    return plugin(ssn).queue_opts[queue]


def running(name: str, queue: str, cpu: str, memory: str | None = None) -> list[Obj]:
    """A running one-pod PodGroup of ``queue`` on node n1."""
    return [
        podgroup(name, queue=queue),
        pod(f"{name}-0", cpu=cpu, memory=memory, group=name, node_name="n1"),
    ]


def pending(name: str, queue: str, *cpus: str, memory: str | None = None) -> list[Obj]:
    """A pending PodGroup of ``queue`` with one pending pod per cpu value."""
    objs: list[Obj] = [podgroup(name, queue=queue, phase="Pending", min_member=len(cpus))]
    for i, cpu in enumerate(cpus):
        objs.append(pod(f"{name}-{i}", cpu=cpu, memory=memory, group=name))
    return objs


def set_attr(a: QueueAttr, *, deserved: Resource, allocated: Resource) -> None:
    a.deserved = deserved
    a.allocated = allocated


# --- attributes ------------------------------------------------------------------------------


def test_only_queues_with_jobs_get_attributes_but_every_guarantee_counts() -> None:
    ssn = session(
        [
            node("n1", cpu="100", memory="400Gi"),
            queue("A"),
            queue("idle", guarantee={"cpu": "30"}),
            *pending("pa", "A", "10"),
        ],
        CONF,
    )

    assert set(plugin(ssn).queue_opts) == {"A"}
    # The idle queue's guarantee is kept away from A.
    assert attr(ssn, "A").real_capability.milli_cpu == 70000


def test_capability_without_cpu_leaves_cpu_unlimited() -> None:
    ssn = session(
        [
            node("n1", cpu="100", memory="400Gi"),
            queue("A", capability={"memory": "10Gi"}),
            *pending("pa", "A", "10"),
        ],
        CONF,
    )

    a = attr(ssn, "A")
    assert a.capability.milli_cpu == sys.float_info.max
    assert a.capability.memory == 10 * GI
    assert a.real_capability.milli_cpu == 100000
    assert a.real_capability.memory == 10 * GI


def test_queue_without_capability_has_empty_capability() -> None:
    ssn = session([node("n1", cpu="100"), queue("A"), *pending("pa", "A", "1")], CONF)

    assert attr(ssn, "A").capability.is_empty()


def test_allocated_counts_tasks_on_nodes_and_request_adds_pending_ones() -> None:
    ssn = session(
        [
            node("n1", cpu="100", memory="400Gi"),
            queue("A"),
            *running("r", "A", "30"),
            *pending("p", "A", "20"),
            podgroup("done", queue="A"),
            pod("done-0", cpu="7", memory=None, group="done", node_name="n1", phase="Succeeded"),
        ],
        CONF,
    )

    a = attr(ssn, "A")
    assert a.allocated.milli_cpu == 30000
    assert a.request.milli_cpu == 50000


@pytest.mark.parametrize(
    ("phase", "min_member", "on_node", "gated", "expected_inqueue"),
    [
        pytest.param("Inqueue", 1, [], [], 20, id="inqueue-job-reserves-its-min"),
        pytest.param("Inqueue", 2, ["5"], [], 15, id="inqueue-job-reserves-min-less-allocated"),
        pytest.param("Inqueue", 1, [], ["8"], 12, id="gated-pods-reserve-nothing"),
        pytest.param("Running", 1, ["5"], [], 15, id="running-at-gang-size-reserves-the-rest"),
        pytest.param("Running", 2, ["5"], [], 0, id="running-below-gang-size-reserves-nothing"),
        pytest.param("Pending", 1, [], [], 0, id="pending-job-reserves-nothing"),
    ],
)
def test_inqueue_accumulation(
    phase: str, min_member: int, on_node: list[str], gated: list[str], expected_inqueue: float
) -> None:
    objs: list[Obj] = [
        node("n1", cpu="100", memory="400Gi"),
        queue("A"),
        with_min_resources(
            podgroup("j", queue="A", phase=phase, min_member=min_member), {"cpu": "20"}
        ),
    ]
    for i, cpu in enumerate(on_node):
        objs.append(pod(f"j-run-{i}", cpu=cpu, memory=None, group="j", node_name="n1"))
    for i, cpu in enumerate(gated):
        gated_pod = pod(f"j-gated-{i}", cpu=cpu, memory=None, group="j")
        gated_pod["spec"]["schedulingGates"] = [{"name": "example.com/wait"}]
        objs.append(gated_pod)

    ssn = session(objs, CONF)

    assert attr(ssn, "A").inqueue.milli_cpu == expected_inqueue * 1000


def test_elastic_is_what_jobs_hold_beyond_their_min_resources() -> None:
    objs = [
        node("n1", cpu="100"),
        queue("A"),
        with_min_resources(podgroup("j", queue="A"), {"cpu": "10"}),
        pod("j-0", cpu="15", memory=None, group="j", node_name="n1"),
        pod("j-1", cpu="10", memory=None, group="j", node_name="n1"),
    ]

    assert attr(session(objs, CONF), "A").elastic.milli_cpu == 15000


# --- queue order ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("priority_a", "priority_b", "a_first"),
    [
        pytest.param(None, None, True, id="lower-share-first"),
        pytest.param(None, 5, False, id="higher-priority-beats-lower-share"),
    ],
)
def test_queue_order(priority_a: int | None, priority_b: int | None, a_first: bool) -> None:
    # Both deserve 50 cores; A holds 10 (share .2), B holds 40 (share .8). The node reports
    # no pod count, so share is on cores alone.
    ssn = session(
        [
            node("n1", cpu="100", pods=None),
            queue("A", priority=priority_a),
            queue("B", priority=priority_b),
            *running("ra", "A", "10"),
            *pending("pa", "A", "90"),
            *running("rb", "B", "40"),
            *pending("pb", "B", "60"),
        ],
        CONF,
    )
    qa, qb = ssn.queues["A"], ssn.queues["B"]

    assert attr(ssn, "A").share == pytest.approx(0.2)
    assert attr(ssn, "B").share == pytest.approx(0.8)
    assert ssn.queue_order_fn(qa, qb) is a_first
    assert ssn.queue_order_fn(qb, qa) is not a_first


def test_equal_shares_fall_back_to_the_session_default_order() -> None:
    ssn = session(
        [
            node("n1", cpu="100"),
            queue("B"),
            queue("A"),
            *pending("pa", "A", "1"),
            *pending("pb", "B", "1"),
        ],
        CONF,
    )

    # share 0 both: the plugin abstains, the session orders by creation time then name.
    assert ssn.hook_fns(QUEUE_ORDER)["proportion"](ssn.queues["A"], ssn.queues["B"]) == 0
    assert ssn.queue_order_fn(ssn.queues["A"], ssn.queues["B"]) is True


# --- overused --------------------------------------------------------------------------------


def one_queue_session(extra: list[Obj] | None = None, *, state: str = "Open") -> Session:
    """A holds 4 cores (one running pod) and waits for 1 + 2 + 3 more."""
    return session(
        [
            node("n1", cpu="100", memory="400Gi"),
            queue("A", state=state),
            *running("ra", "A", "4"),
            *pending("pa", "A", "1", "2", "3"),
            *(extra or []),
        ],
        CONF,
    )


@pytest.mark.parametrize(
    ("deserved", "allocated", "overused"),
    [
        pytest.param(Resource(8000, GI), Resource(8000, GI), True, id="at-deserved"),
        pytest.param(Resource(8000.05, GI), Resource(8000, GI), True, id="within-epsilon"),
        pytest.param(Resource(8000.2, GI), Resource(8000, GI), False, id="beyond-epsilon"),
        pytest.param(Resource(8000, 2 * GI), Resource(9000, GI), False, id="one-dim-below"),
        pytest.param(Resource(0, 0), Resource(0, 0), True, id="nothing-deserved"),
    ],
)
def test_overused_when_deserved_within_allocated_on_every_dimension(
    deserved: Resource, allocated: Resource, overused: bool, caplog: pytest.LogCaptureFixture
) -> None:
    ssn = one_queue_session()
    set_attr(attr(ssn, "A"), deserved=deserved, allocated=allocated)

    with caplog.at_level(v(3), logger="scheduler_core.plugins.proportion"):
        assert ssn.overused(ssn.queues["A"]) is overused
    assert any(m.startswith("Queue <A> is overused") for m in caplog.messages) is overused


def test_a_queue_without_attributes_is_never_overused() -> None:
    ssn = one_queue_session()
    assert "idle" not in plugin(ssn).queue_opts
    assert ssn.overused(QueueInfo(name="idle")) is False


# --- allocatable / preemptive ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("pending_pod", "allocatable"),
    [
        pytest.param("pa-1", True, id="fills-deserved-exactly"),
        pytest.param("pa-2", False, id="one-core-over"),
        pytest.param("pm-0", False, id="requests-the-dimension-already-over"),
    ],
)
def test_allocatable_checks_only_requested_dimensions_without_epsilon(
    pending_pod: str, allocatable: bool, caplog: pytest.LogCaptureFixture
) -> None:
    # A holds 4 cores and 2Gi against a deserved of 6 cores and 1Gi: over on memory.
    ssn = one_queue_session(pending("pm", "A", "1", memory="1Gi"))
    set_attr(attr(ssn, "A"), deserved=Resource(6000, GI), allocated=Resource(4000, 2 * GI))
    task = task_of(ssn, f"ns/{pending_pod}")

    with caplog.at_level(v(3), logger="scheduler_core.plugins.proportion"):
        assert ssn.allocatable(ssn.queues["A"], task) is allocatable
    failures = [m for m in caplog.messages if m.startswith("Queue <A>: deserved")]
    assert bool(failures) is not allocatable
    if failures:
        assert failures[0].endswith(
            f"Candidate <{pending_pod}>: resource request <{task.resreq!r}>"
        )


@pytest.mark.parametrize(
    ("candidates", "preemptive"),
    [
        pytest.param(["pa-0"], True, id="one-candidate-fits"),
        pytest.param(["pa-0", "pa-1"], True, id="two-fit-together"),
        pytest.param(["pa-0", "pa-1", "pa-2"], False, id="three-exceed-deserved-together"),
    ],
)
def test_preemptive_sums_the_candidates(candidates: list[str], preemptive: bool) -> None:
    ssn = one_queue_session()
    set_attr(attr(ssn, "A"), deserved=Resource(7000, GI), allocated=Resource(4000, 0))
    tasks = [task_of(ssn, f"ns/{name}") for name in candidates]

    assert ssn.preemptive(ssn.queues["A"], tasks) is preemptive


@pytest.mark.parametrize("state", ["Closed", "Closing"])
def test_queue_not_open_refuses_allocate_preempt_and_enqueue(state: str) -> None:
    ssn = one_queue_session(state=state)
    queue = ssn.queues["A"]
    task = task_of(ssn, "ns/pa-0")

    assert ssn.allocatable(queue, task) is False
    assert ssn.preemptive(queue, [task]) is False
    assert ssn.hook_fns(JOB_ENQUEUEABLE)["proportion"](ssn.jobs["ns/pa"]).code == REJECT
    # Simulation has no open-state check (as in Volcano): the deserved check alone decides.
    state_copy = ssn.new_cycle_state(task)
    assert ssn.simulate_allocatable(state_copy, queue, task) is True


# --- reclaim ---------------------------------------------------------------------------------


def reclaim_session() -> Session:
    """A (weight 1) runs 4 x 15 cores and deserves 40; B (weight 3) waits for 60."""
    objs = [node("n1", cpu="100"), queue("A", 1), queue("B", 3)]
    objs.append(podgroup("ra", queue="A", min_member=1))
    for i in range(4):
        objs.append(pod(f"ra-{i}", cpu="15", memory=None, group="ra", node_name="n1"))
    objs += pending("pb", "B", "60")
    return session(objs, CONF)


def test_reclaimable_takes_victims_until_the_queue_is_back_within_deserved() -> None:
    ssn = reclaim_session()
    assert attr(ssn, "A").deserved.milli_cpu == 40000
    reclaimer = task_of(ssn, "ns/pb-0")
    reclaimees = [task_of(ssn, f"ns/ra-{i}") for i in range(4)]

    victims, vote = ssn.hook_fns(RECLAIMABLE)["proportion"](reclaimer, reclaimees)

    # 60 > 40 -> victim (45 left); 45 > 40 -> victim (30 left); 30 <= 40 -> stop taking.
    assert [t.name for t in victims] == ["ra-0", "ra-1"]
    assert vote == PERMIT


def test_reclaimable_works_on_a_per_call_copy_of_allocated() -> None:
    ssn = reclaim_session()
    reclaimer = task_of(ssn, "ns/pb-0")
    reclaimees = [task_of(ssn, f"ns/ra-{i}") for i in range(4)]

    first = ssn.reclaimable(reclaimer, reclaimees)
    second = ssn.reclaimable(reclaimer, list(reversed(reclaimees)))

    assert len(first) == len(second) == 2
    assert [t.name for t in second] == ["ra-3", "ra-2"]
    assert attr(ssn, "A").allocated.milli_cpu == 60000


def test_reclaimable_spares_queues_within_deserved() -> None:
    ssn = reclaim_session()
    victims, _ = ssn.hook_fns(RECLAIMABLE)["proportion"](
        task_of(ssn, "ns/ra-0"), [task_of(ssn, "ns/pb-0")]
    )

    assert victims == []


# --- enqueue ---------------------------------------------------------------------------------


def enqueue_session(elastic_job_min: str | None) -> Session:
    """Queue A (capability 50 of 200 cores) holds 20 running cores and 15 admitted ones;
    the running job's minResources decide how much of its 20 is elastic."""
    run_pg = podgroup("run", queue="A")
    if elastic_job_min is not None:
        with_min_resources(run_pg, {"cpu": elastic_job_min})
    return session(
        [
            node("n1", cpu="200", memory="400Gi"),
            queue("A", capability={"cpu": "50"}),
            run_pg,
            pod("run-0", cpu="20", memory=None, group="run", node_name="n1"),
            with_min_resources(podgroup("admitted", queue="A", phase="Inqueue"), {"cpu": "15"}),
            pod("admitted-0", cpu="15", memory=None, group="admitted"),
            with_min_resources(
                podgroup("new", queue="A", phase="Pending"), {"cpu": "20", "memory": "100Gi"}
            ),
            pod("new-0", cpu="20", memory=None, group="new"),
            podgroup("nomin", queue="A", phase="Pending"),
            pod("nomin-0", cpu="100", memory=None, group="nomin"),
        ],
        CONF,
    )


@pytest.mark.parametrize(
    ("elastic_job_min", "job", "vote"),
    [
        pytest.param("10", "ns/new", PERMIT, id="elastic-given-back-makes-room"),
        pytest.param("20", "ns/new", REJECT, id="inqueue-and-allocated-fill-the-queue"),
        pytest.param(None, "ns/new", PERMIT, id="job-without-min-is-all-elastic"),
        pytest.param("20", "ns/nomin", PERMIT, id="no-min-resources-always-admitted"),
    ],
)
def test_job_enqueueable_counts_allocated_inqueue_and_elastic(
    elastic_job_min: str | None, job: str, vote: int
) -> None:
    ssn = enqueue_session(elastic_job_min)

    assert ssn.hook_fns(JOB_ENQUEUEABLE)["proportion"](ssn.jobs[job]).code == vote
    assert ssn.job_enqueueable(ssn.jobs[job]) is (vote == PERMIT)


def test_job_enqueueable_rejection_names_the_short_dimension() -> None:
    ssn = enqueue_session("20")

    ssn.job_enqueueable(ssn.jobs["ns/new"])

    # 20 + 20 allocated + 15 inqueue > 50 cores; 100Gi of memory fits the 400Gi.
    assert plugin(ssn).unschedulable_reasons["ns/new"] == (
        "queue resource quota insufficient: insufficient cpu"
    )


def test_job_enqueued_reserves_min_resources_for_the_next_decision() -> None:
    ssn = enqueue_session("10")
    job = ssn.jobs["ns/new"]
    before = attr(ssn, "A").inqueue.milli_cpu

    assert ssn.job_enqueueable(job) is True
    ssn.job_enqueued(job)

    assert attr(ssn, "A").inqueue.milli_cpu == before + 20000
    # 20 + 20 allocated + 35 inqueue - 10 elastic = 65 > 50: the same job no longer fits.
    assert ssn.job_enqueueable(job) is False


# --- events ---------------------------------------------------------------------------------


def test_allocate_and_discard_move_allocated_and_share() -> None:
    ssn = one_queue_session()
    a = attr(ssn, "A")
    share_before = a.share
    task = task_of(ssn, "ns/pa-2")

    stmt = Statement(ssn)
    stmt.allocate(task, ssn.nodes["n1"])
    assert a.allocated.milli_cpu == 7000
    assert a.share > share_before

    stmt.discard()
    assert a.allocated.milli_cpu == 4000
    assert a.share == share_before


def test_evict_gives_back_allocated() -> None:
    ssn = one_queue_session()

    Statement(ssn).evict(task_of(ssn, "ns/ra-0"), "reclaim")

    assert attr(ssn, "A").allocated.milli_cpu == 0
    assert attr(ssn, "A").share == 0


# --- simulation ------------------------------------------------------------------------------


def test_cycle_state_is_a_deep_copy_the_simulate_hooks_work_on() -> None:
    ssn = reclaim_session()
    preemptor = task_of(ssn, "ns/pb-0")
    n1 = ssn.nodes["n1"]
    queue_a = ssn.queues["A"]
    candidate = task_of(ssn, "ns/ra-1")  # 15 cores of A

    state = ssn.new_cycle_state(preemptor)
    copy = state["proportion"]
    assert isinstance(copy, QueueAttrs)
    assert ssn.simulate_allocatable(state, queue_a, candidate) is False  # 60 + 15 > 40

    for name in ("ra-0", "ra-2", "ra-3"):
        ssn.simulate_remove_task(state, preemptor, task_of(ssn, f"ns/{name}"), n1)
    assert copy["A"].allocated.milli_cpu == 15000
    assert copy["A"].share == pytest.approx(15 / 40)
    assert ssn.simulate_allocatable(state, queue_a, candidate) is True  # 15 + 15 <= 40
    assert attr(ssn, "A").allocated.milli_cpu == 60000

    forked = state.clone()
    ssn.simulate_add_task(forked, preemptor, task_of(ssn, "ns/ra-0"), n1)
    assert forked["proportion"]["A"].allocated.milli_cpu == 30000
    assert copy["A"].allocated.milli_cpu == 15000


def test_simulate_allocatable_without_state_refuses() -> None:
    ssn = reclaim_session()
    task = task_of(ssn, "ns/pb-0")
    state = ssn.new_cycle_state(task)
    del state["proportion"]

    assert ssn.hook_fns(SIMULATE_ALLOCATABLE)["proportion"](state, ssn.queues["B"], task) is False


def test_cycle_state_copies_only_the_queues_a_simulation_reads() -> None:
    """The what-if copy is private: changing it leaves the session's attributes alone, and
    queues it never reads are not copied at all."""

    source = {"a": QueueAttr(name="a"), "b": QueueAttr(name="b")}
    source["a"].allocated.add(Resource(1000, 0))
    state = QueueAttrs(source=source)
    assert "a" in state and "zzz" not in state and state.get("zzz") is None
    state["a"].allocated.add(Resource(500, 0))
    assert source["a"].allocated.milli_cpu == 1000
    assert dict.keys(state) == {"a"}  # b was never read
    copy = state.clone()
    copy["a"].allocated.add(Resource(500, 0))
    copy["b"].allocated.add(Resource(1, 0))
    assert state["a"].allocated.milli_cpu == 1500 and copy["a"].allocated.milli_cpu == 2000
    assert source["b"].allocated.milli_cpu == 0


# --- the deserved loop, run again only when its inputs change --------------------------------


def test_a_session_with_the_same_queue_inputs_reuses_the_last_deserved_loop() -> None:
    """A pod bound or started changes no queue's request: the loop's last result is reused
    (the same record of rounds); a new pending pod changes a request and the loop runs."""
    base = [node("n1", "8", "8Gi"), queue("a", 1), queue("b", 1)]
    base += running("ra", "a", "2") + pending("pb", "b", "4", "4")
    memos = SessionMemos()  # one owner opening sessions one after another
    first = session(base, CONF, memos=memos)
    started = [*base[:-2], *pending("pb", "b", "4", "4")[:1]]
    started.append(pod("pb-0", cpu="4", memory=None, group="pb", node_name="n1"))
    started.append(pod("pb-1", cpu="4", memory=None, group="pb"))
    second = session(started, CONF, memos=memos)
    assert plugin(second).derivation is plugin(first).derivation
    for name in ("a", "b"):
        assert attr(second, name).deserved.to_quantities() == (
            attr(first, name).deserved.to_quantities()
        )
    grown = session([*base, *pending("more", "a", "3")], CONF, memos=memos)
    assert plugin(grown).derivation is not plugin(first).derivation
    assert attr(grown, "a").deserved.milli_cpu > attr(first, "a").deserved.milli_cpu
