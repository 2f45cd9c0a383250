"""capacity: flat and hierarchical queue attributes and every hook, through a real session."""

from __future__ import annotations

import logging
import sys

import pytest

from scheduler_core.api.snapshot import ClusterSnapshot
from scheduler_core.conf import load_configuration
from scheduler_core.framework.fit import PERMIT, REJECT
from scheduler_core.framework.framework import open_session
from scheduler_core.framework.hooks import JOB_ENQUEUEABLE, RECLAIMABLE, VICTIM_QUEUE_ORDER
from scheduler_core.framework.session import Session
from scheduler_core.framework.statement import Statement
from scheduler_core.logutil import v
from scheduler_core.plugins.capacity import CapacityPlugin
from scheduler_core.plugins.fairshare.attrs import QueueAttr, QueueAttrs
from tests.builders import (
    Obj,
    node,
    plugin_in,
    pod,
    podgroup,
    queue,
    session,
    snapshot,
    task_of,
    tiers,
    with_min_resources,
)

FLAT = tiers("capacity")
MAX_FLOAT = sys.float_info.max


def hierarchical(level: int = 0) -> str:
    return f"""\
actions: ""
tiers:
- plugins:
  - name: capacity
    enableHierarchy: true
    arguments:
      ancestorReclaimLevel: {level}
"""


def plugin(ssn: Session) -> CapacityPlugin:
    return plugin_in(ssn, CapacityPlugin)


def attr(ssn: Session, queue: str) -> QueueAttr:
    return plugin(ssn).queue_opts[queue]


def cores(queue_attr: QueueAttr, field: str) -> float:
    value: float = getattr(queue_attr, field).milli_cpu / 1000
    return value


def running(name: str, queue: str, *cpus: str, min_cpu: str | None = None) -> list[Obj]:
    """A running PodGroup of ``queue`` with one pod per cpu value on node n1."""
    pg = podgroup(name, queue=queue)
    if min_cpu is not None:
        with_min_resources(pg, {"cpu": min_cpu})
    objs: list[Obj] = [pg]
    for i, cpu in enumerate(cpus):
        objs.append(pod(f"{name}-{i}", cpu=cpu, memory=None, group=name, node_name="n1"))
    return objs


def pending(
    name: str, queue: str, *cpus: str, min_cpu: str | None = None, memory: str | None = None
) -> list[Obj]:
    pg = podgroup(name, queue=queue, phase="Pending", min_member=len(cpus))
    if min_cpu is not None:
        with_min_resources(pg, {"cpu": min_cpu})
    objs: list[Obj] = [pg]
    for i, cpu in enumerate(cpus):
        objs.append(pod(f"{name}-{i}", cpu=cpu, memory=memory, group=name))
    return objs


# --- flat mode -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("spec_queue", "deserved", "share"),
    [
        pytest.param(
            queue("Q", deserved={"cpu": "80"}, capability={"cpu": "50"}),
            50,
            0.0,
            id="deserved-capped-by-real-capability",
        ),
        pytest.param(
            queue("Q", deserved={"cpu": "10"}, guarantee={"cpu": "30"}),
            30,
            0.0,
            id="deserved-raised-to-guarantee",
        ),
        pytest.param(queue("Q"), 0, 1.0, id="no-deserved-is-best-effort-at-share-1"),
    ],
)
def test_flat_deserved_comes_from_the_spec(spec_queue: Obj, deserved: float, share: float) -> None:
    ssn = session(
        [node("n1", cpu="100"), spec_queue, queue("idle"), *pending("p", "Q", "1")],
        FLAT,
    )

    assert set(plugin(ssn).queue_opts) == {"Q"}
    assert cores(attr(ssn, "Q"), "deserved") == deserved
    assert attr(ssn, "Q").share == share


def test_flat_real_capability_is_cluster_less_other_guarantees_capped_by_capability() -> None:
    ssn = session(
        [
            node("n1", cpu="100"),
            queue("Q", capability={"memory": "1Gi"}, guarantee={"cpu": "5"}),
            queue("other", guarantee={"cpu": "20"}),
            *pending("p", "Q", "1"),
        ],
        FLAT,
    )

    q = attr(ssn, "Q")
    assert q.capability.milli_cpu == MAX_FLOAT
    assert cores(q, "real_capability") == 100 - 25 + 5
    assert q.real_capability.memory == 1024**3


def flat_order_session(priority_best_effort: int | None = None) -> Session:
    return session(
        [
            node("n1", cpu="100"),
            queue("low", deserved={"cpu": "40"}),
            queue("full", deserved={"cpu": "20"}),
            queue("besteffort", priority=priority_best_effort),
            *running("rl", "low", "10"),
            *running("rf", "full", "20"),
            *running("rb", "besteffort", "5"),
        ],
        FLAT,
    )


@pytest.mark.parametrize(
    ("first", "second", "priority_best_effort"),
    [
        pytest.param("low", "full", None, id="lower-share-first"),
        pytest.param("full", "besteffort", None, id="equal-share-deserving-queue-first"),
        pytest.param("besteffort", "low", 1, id="priority-before-share"),
    ],
)
def test_flat_queue_order(first: str, second: str, priority_best_effort: int | None) -> None:
    ssn = flat_order_session(priority_best_effort)

    assert attr(ssn, "low").share == pytest.approx(0.25)
    assert attr(ssn, "full").share == attr(ssn, "besteffort").share == 1.0
    assert ssn.queue_order_fn(ssn.queues[first], ssn.queues[second]) is True
    assert ssn.queue_order_fn(ssn.queues[second], ssn.queues[first]) is False


@pytest.mark.parametrize(("task", "allocatable"), [("t-0", True), ("t-1", False)])
def test_flat_allocatable_is_bounded_by_real_capability_not_deserved(
    task: str, allocatable: bool
) -> None:
    ssn = session(
        [
            node("n1", cpu="100"),
            queue("Q", deserved={"cpu": "10"}, capability={"cpu": "50"}),
            *running("r", "Q", "20"),
            podgroup("t", queue="Q", phase="Pending"),
            pod("t-0", cpu="30", memory=None, group="t"),
            pod("t-1", cpu="31", memory=None, group="t"),
        ],
        FLAT,
    )

    assert ssn.allocatable(ssn.queues["Q"], task_of(ssn, f"ns/{task}")) is allocatable


def reclaim_objects(victim_queue: Obj) -> list[Obj]:
    """R (deserved 60) waits with 10 cores; V runs 3 x 10 cores plus a memory-only pod."""
    return [
        node("n1", cpu="100", memory="100Gi"),
        queue("R", deserved={"cpu": "60"}),
        victim_queue,
        *pending("r", "R", "10"),
        podgroup("v", queue="V"),
        *(pod(f"v-{i}", cpu="10", memory=None, group="v", node_name="n1") for i in range(3)),
        pod("m-0", cpu=None, memory="1Gi", group="v", node_name="n1"),
    ]


@pytest.mark.parametrize(
    ("victim_queue", "victims"),
    [
        pytest.param(
            queue("V", deserved={"cpu": "20"}),
            ["v-2"],
            id="over-deserved-until-back-within-it",
        ),
        pytest.param(
            queue("V", deserved={"memory": "10Gi"}),
            ["v-2", "v-1", "v-0"],
            id="immediate-victims-use-nothing-the-queue-deserves",
        ),
        pytest.param(
            queue("V", deserved={"cpu": "20"}, guarantee={"cpu": "25"}),
            [],
            id="guarantee-protects",
        ),
        pytest.param(
            queue("V", deserved={"cpu": "10"}, guarantee={"cpu": "15"}),
            ["v-2"],
            id="guarantee-stops-after-first",
        ),
    ],
)
def test_flat_reclaimable(victim_queue: Obj, victims: list[str]) -> None:
    ssn = session(reclaim_objects(victim_queue), FLAT)
    reclaimer = task_of(ssn, "ns/r-0")
    reclaimees = [task_of(ssn, f"ns/{n}") for n in ("m-0", "v-0", "v-1", "v-2")]

    chosen, vote = ssn.hook_fns(RECLAIMABLE)["capacity"](reclaimer, reclaimees)

    # m-0 shares no dimension but pods with the cpu-only reclaimer: never a victim. The rest
    # come in eviction order (one job: reverse task order).
    assert [t.name for t in chosen] == victims
    assert vote == PERMIT
    assert cores(attr(ssn, "V"), "allocated") == 30


@pytest.mark.parametrize(
    ("candidates", "preemptive"),
    [
        pytest.param(["c-0"], True, id="still-below-deserved"),
        pytest.param(["c-1"], False, id="above-deserved-on-every-requested-dimension"),
        pytest.param(["c-2"], False, id="beyond-real-capability"),
        pytest.param(["cm-0"], True, id="one-requested-dimension-below-deserved-suffices"),
        pytest.param(["c-0", "c-1"], False, id="candidates-add-up"),
    ],
)
def test_flat_preemptive(candidates: list[str], preemptive: bool) -> None:
    ssn = session(
        [
            node("n1", cpu="100", memory="100Gi"),
            queue("P", deserved={"cpu": "20"}, capability={"cpu": "30"}),
            *running("r", "P", "15"),
            podgroup("c", queue="P", phase="Pending"),
            pod("c-0", cpu="3", memory=None, group="c"),
            pod("c-1", cpu="10", memory=None, group="c"),
            pod("c-2", cpu="20", memory=None, group="c"),
            *pending("cm", "P", "1", memory="1Gi"),
        ],
        FLAT,
    )
    tasks = [task_of(ssn, f"ns/{name}") for name in candidates]

    assert ssn.preemptive(ssn.queues["P"], tasks) is preemptive


@pytest.mark.parametrize(
    ("running_min", "vote"),
    [pytest.param("10", PERMIT, id="elastic-makes-room"), pytest.param("20", REJECT, id="full")],
)
def test_flat_job_enqueueable(running_min: str, vote: int) -> None:
    ssn = session(
        [
            node("n1", cpu="200"),
            queue("Q", capability={"cpu": "50"}),
            *running("run", "Q", "20", min_cpu=running_min),
            with_min_resources(podgroup("adm", queue="Q", phase="Inqueue"), {"cpu": "15"}),
            pod("adm-0", cpu="15", memory=None, group="adm"),
            *pending("new", "Q", "20", min_cpu="20"),
        ],
        FLAT,
    )

    assert ssn.hook_fns(JOB_ENQUEUEABLE)["capacity"](ssn.jobs["ns/new"]).code == vote


def test_closed_queue_refuses_allocate_preempt_and_enqueue() -> None:
    ssn = session(
        [node("n1", cpu="100"), queue("Q", state="Closed"), *pending("p", "Q", "1")],
        FLAT,
    )
    task = task_of(ssn, "ns/p-0")

    assert ssn.allocatable(ssn.queues["Q"], task) is False
    assert ssn.preemptive(ssn.queues["Q"], [task]) is False
    assert ssn.job_enqueueable(ssn.jobs["ns/p"]) is False


# --- hierarchical mode -----------------------------------------------------------------------


def tree(dev_min: str | None = None, prod_min: str | None = None) -> list[Obj]:
    """root -> eng (capability 10, deserved 8) -> {dev (deserved 4), prod (deserved 4,
    guarantee 2, running 8)}; root -> ops (deserved 20). dev waits with 5 and 2 cores."""
    return [
        node("n1", cpu="100"),
        queue("eng", capability={"cpu": "10"}, deserved={"cpu": "8"}),
        queue("dev", parent="eng", deserved={"cpu": "4"}),
        queue("prod", parent="eng", deserved={"cpu": "4"}, guarantee={"cpu": "2"}),
        queue("ops", deserved={"cpu": "20"}),
        *running("rp", "prod", "8", min_cpu=prod_min),
        *pending("d5", "dev", "5", min_cpu=dev_min),
        *pending("d2", "dev", "2"),
        *pending("o", "ops", "1"),
    ]


def test_hierarchy_links_every_queue_under_root() -> None:
    opts = plugin(session(tree(), hierarchical())).queue_opts

    assert opts["dev"].ancestors == ["root", "eng"]
    assert opts["eng"].ancestors == ["root"]
    assert opts["root"].ancestors == []
    assert sorted(opts["eng"].children) == ["dev", "prod"]
    assert sorted(opts["root"].children) == ["default", "eng", "ops"]
    assert opts["dev"].is_leaf() and not opts["eng"].is_leaf()


def test_hierarchy_real_capability_flows_down_less_sibling_guarantees() -> None:
    opts = plugin(session(tree(), hierarchical())).queue_opts

    assert cores(opts["eng"], "real_capability") == 10
    assert cores(opts["dev"], "real_capability") == 10 - 2  # prod's guarantee is set aside
    assert cores(opts["prod"], "real_capability") == 10 - 2 + 2
    # dev sets no capability: it inherits eng's cpu and the root's unlimited memory.
    assert cores(opts["dev"], "capability") == 10
    assert opts["dev"].capability.memory == MAX_FLOAT
    assert opts["root"].capability.memory == MAX_FLOAT


def test_hierarchy_root_deserves_and_guarantees_what_its_children_do() -> None:
    opts = plugin(session(tree(), hierarchical())).queue_opts

    assert cores(opts["root"], "deserved") == 8 + 20
    assert cores(opts["root"], "guarantee") == 0  # prod's guarantee counts under eng only
    assert cores(opts["eng"], "deserved") == 8  # inner queues keep their own spec
    assert cores(opts["prod"], "deserved") == 4


def test_hierarchy_usage_is_added_to_every_ancestor() -> None:
    opts = plugin(session(tree(), hierarchical())).queue_opts

    assert [cores(opts[q], "allocated") for q in ("prod", "eng", "root")] == [8, 8, 8]
    assert [cores(opts[q], "request") for q in ("dev", "eng", "root", "ops")] == [7, 15, 16, 1]
    assert opts["prod"].share == 2.0


@pytest.mark.parametrize(
    ("task", "allocatable", "failing_level"),
    [
        pytest.param("d5-0", False, "eng", id="leaf-fits-parent-does-not"),
        pytest.param("d2-0", True, None, id="fits-every-level"),
    ],
)
def test_hierarchy_allocatable_checks_from_leaf_to_root(
    task: str, allocatable: bool, failing_level: str | None, caplog: pytest.LogCaptureFixture
) -> None:
    ssn = session(tree(), hierarchical())

    with caplog.at_level(v(3), logger="scheduler_core.plugins.capacity"):
        assert ssn.allocatable(ssn.queues["dev"], task_of(ssn, f"ns/{task}")) is allocatable

    failed = [m.split(">")[0] for m in caplog.messages if ": realCapability <" in m]
    assert failed == ([f"Queue <{failing_level}"] if failing_level else [])


def test_hierarchy_refusal_names_the_ancestor_that_would_overflow() -> None:
    ssn = session(tree(), hierarchical())

    vote = ssn.allocatable_vote(ssn.queues["dev"], task_of(ssn, "ns/d5-0"))

    assert vote.rejected
    assert vote.reason.startswith("queue dev would exceed its ancestor queue eng's capability:")
    assert "allocated (cpu 8" in vote.reason and "this pod (cpu 5" in vote.reason


def test_hierarchy_admission_refusal_names_the_ancestor_that_is_full() -> None:
    ssn = session(tree(dev_min="5", prod_min="8"), hierarchical())

    vote = ssn.job_enqueue_vote(ssn.jobs["ns/d5"])

    assert vote.rejected
    assert "on top of what its ancestor queue eng holds (cpu 8" in vote.reason
    assert vote.reason.endswith(
        "; insufficient cpu; waiting for capacity to free up or for preemption"
    )


def test_hierarchy_inner_queue_cannot_allocate() -> None:
    ssn = session(tree(), hierarchical())

    assert ssn.allocatable(ssn.queues["eng"], task_of(ssn, "ns/d2-0")) is False
    assert ssn.allocatable(ssn.queues["dev"], task_of(ssn, "ns/d2-0")) is True


@pytest.mark.parametrize(
    ("dev_min", "vote"),
    [
        pytest.param("5", REJECT, id="parent-real-capability-exceeded"),
        pytest.param("2", PERMIT, id="fits-every-level"),
    ],
)
def test_hierarchy_job_enqueueable_checks_every_level(dev_min: str, vote: int) -> None:
    # prod's job has minResources 8 = what it holds: nothing elastic to give back in eng.
    ssn = session(tree(dev_min=dev_min, prod_min="8"), hierarchical())

    assert ssn.hook_fns(JOB_ENQUEUEABLE)["capacity"](ssn.jobs["ns/d5"]).code == vote
    reasons = plugin(ssn).unschedulable_reasons
    assert reasons.get("ns/d5") == (
        "queue resource quota insufficient: insufficient cpu" if vote == REJECT else None
    )


def test_hierarchy_job_enqueued_reserves_in_leaf_and_ancestors() -> None:
    ssn = session(tree(dev_min="2", prod_min="8"), hierarchical())

    ssn.job_enqueued(ssn.jobs["ns/d5"])

    assert [cores(attr(ssn, q), "inqueue") for q in ("dev", "eng", "root", "ops")] == [2, 2, 2, 0]


def test_hierarchy_events_move_leaf_and_ancestors_but_only_the_leaf_share() -> None:
    ssn = session(tree(), hierarchical())
    task = task_of(ssn, "ns/d2-0")
    eng_share = attr(ssn, "eng").share

    stmt = Statement(ssn)
    stmt.allocate(task, ssn.nodes["n1"])
    assert [cores(attr(ssn, q), "allocated") for q in ("dev", "eng", "root")] == [2, 10, 10]
    assert attr(ssn, "dev").share == pytest.approx(0.5)
    assert attr(ssn, "eng").share == eng_share  # as in Volcano: ancestors' share not updated

    stmt.discard()
    assert [cores(attr(ssn, q), "allocated") for q in ("dev", "eng", "root")] == [0, 8, 8]
    assert attr(ssn, "dev").share == 0


@pytest.mark.parametrize(
    ("first", "second"),
    [
        pytest.param("dev", "eng", id="leaf-before-inner-queue"),
        pytest.param("ops", "dev", id="leaves-compared-by-their-subtrees-eng-share-1"),
        pytest.param("dev", "prod", id="siblings-compared-by-their-own-share"),
    ],
)
def test_hierarchy_queue_order(first: str, second: str) -> None:
    ssn = session(tree(), hierarchical())

    assert ssn.queue_order_fn(ssn.queues[first], ssn.queues[second]) is True
    assert ssn.queue_order_fn(ssn.queues[second], ssn.queues[first]) is False


def test_hierarchy_victim_queue_order_evicts_closest_relatives_first() -> None:
    ssn = session(tree(), hierarchical())
    dev, prod, ops = ssn.queues["dev"], ssn.queues["prod"], ssn.queues["ops"]

    # prod shares eng with dev (level 1), ops only the root (level 0).
    assert ssn.hook_fns(VICTIM_QUEUE_ORDER)["capacity"](prod, ops, dev) == -1
    assert ssn.victim_queue_order_fn(prod, ops, dev) is True
    assert ssn.victim_queue_order_fn(ops, prod, dev) is False


def test_hierarchy_simulation_works_on_a_copy_of_every_level() -> None:
    ssn = session(tree(), hierarchical())
    preemptor = task_of(ssn, "ns/d5-0")
    victim = task_of(ssn, "ns/rp-0")
    n1 = ssn.nodes["n1"]

    state = ssn.new_cycle_state(preemptor)
    assert isinstance(state["capacity"], QueueAttrs)
    assert ssn.simulate_allocatable(state, ssn.queues["dev"], preemptor) is False

    ssn.simulate_remove_task(state, preemptor, victim, n1)
    copy = state["capacity"]
    assert [cores(copy[q], "allocated") for q in ("prod", "eng", "root")] == [0, 0, 0]
    assert ssn.simulate_allocatable(state, ssn.queues["dev"], preemptor) is True
    assert ssn.simulate_allocatable(state, ssn.queues["eng"], preemptor) is False  # inner
    assert ssn.allocatable(ssn.queues["dev"], preemptor) is False
    assert cores(attr(ssn, "eng"), "allocated") == 8

    ssn.simulate_add_task(state, preemptor, victim, n1)
    assert cores(copy["eng"], "allocated") == 8


# --- an unusable hierarchy -------------------------------------------------------------------


def without_root(objects: list[Obj]) -> ClusterSnapshot:
    snap = snapshot(objects)
    del snap.queues["root"]
    return snap


@pytest.mark.parametrize(
    ("snap", "reason"),
    [
        pytest.param(
            snapshot([*tree(), queue("orphan", parent="nowhere")]),
            "the queue orphan has invalid parent queue nowhere",
            id="missing-parent",
        ),
        pytest.param(
            snapshot([*tree(), queue("a", parent="b"), queue("b", parent="a")]),
            "cycle detected in queue hierarchy for queue a",
            id="cycle",
        ),
        pytest.param(
            snapshot([*tree(), *pending("inner", "eng", "1")]),
            "The Queue <eng> of Job <ns/inner> is not leaf queue",
            id="job-in-inner-queue",
        ),
        pytest.param(
            without_root(tree()),
            "the queue eng has invalid parent queue root",
            id="missing-root",
        ),
    ],
)
def test_unusable_hierarchy_refuses_everything(
    snap: ClusterSnapshot, reason: str, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="scheduler_core.plugins.capacity"):
        ssn = open_session(snap, load_configuration(hierarchical()))
    task = task_of(ssn, "ns/d2-0")
    dev = ssn.queues["dev"]

    assert plugin(ssn).ready_to_schedule is False
    assert plugin(ssn).not_ready_reason == reason
    assert [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING] == [
        f"Capacity plugin refuses every queue decision this session: {reason}"
    ]
    assert ssn.allocatable(dev, task) is False
    assert ssn.preemptive(dev, [task]) is False
    assert ssn.hook_fns(JOB_ENQUEUEABLE)["capacity"](ssn.jobs["ns/d2"]).code == REJECT
    assert ssn.hook_fns(RECLAIMABLE)["capacity"](task, [task_of(ssn, "ns/rp-0")]) == ([], REJECT)
    assert ssn.simulate_allocatable(ssn.new_cycle_state(task), dev, task) is False


def test_flat_mode_ignores_parents() -> None:
    ssn = session([*tree(), queue("orphan", parent="nowhere")], FLAT)

    assert plugin(ssn).ready_to_schedule is True
    assert attr(ssn, "dev").ancestors == []
    assert ssn.allocatable(ssn.queues["dev"], task_of(ssn, "ns/d5-0")) is True


# --- ancestorReclaimLevel --------------------------------------------------------------------


def ancestor_tree(t2_deserved: str) -> list[Obj]:
    """root -> t1 -> {a (reclaimer, waits 10)}, root -> t2 -> {c (deserved 10, runs 3 x 10)}."""
    return [
        node("n1", cpu="100"),
        queue("t1", deserved={"cpu": "30"}),
        queue("a", parent="t1", deserved={"cpu": "30"}),
        queue("t2", deserved={"cpu": t2_deserved}),
        queue("c", parent="t2", deserved={"cpu": "10"}),
        *pending("ra", "a", "10"),
        *running("rc", "c", "10", "10", "10"),
    ]


@pytest.mark.parametrize(
    ("level", "t2_deserved", "victims"),
    [
        pytest.param(0, "50", 2, id="no-ancestor-gate-leaf-over-deserved"),
        pytest.param(1, "50", 0, id="victim-parent-within-deserved-blocks"),
        pytest.param(1, "20", 1, id="victim-parent-over-deserved-until-back-within"),
    ],
)
def test_ancestor_reclaim_level_gates_victims_by_their_ancestors(
    level: int, t2_deserved: str, victims: int
) -> None:
    ssn = session(ancestor_tree(t2_deserved), hierarchical(level))
    reclaimees = [task_of(ssn, f"ns/rc-{i}") for i in range(3)]

    chosen, vote = ssn.hook_fns(RECLAIMABLE)["capacity"](task_of(ssn, "ns/ra-0"), reclaimees)

    assert len(chosen) == victims
    assert vote == PERMIT


@pytest.mark.parametrize(
    ("level", "preemptive"),
    [pytest.param(0, False, id="leaf-over-deserved"), pytest.param(1, True, id="parent-below")],
)
def test_preemptive_may_be_granted_by_an_ancestor(level: int, preemptive: bool) -> None:
    # c holds 30 of its deserved 10, but its parent t2 holds 30 of 50.
    ssn = session(
        [*ancestor_tree("50"), *pending("more", "c", "5")],
        hierarchical(level),
    )

    assert ssn.preemptive(ssn.queues["c"], [task_of(ssn, "ns/more-0")]) is preemptive


@pytest.mark.parametrize(
    ("level", "reclaimer_deserved", "victims"),
    [
        pytest.param(1, {"memory": "1Gi"}, 0, id="siblings-without-real-contention-are-spared"),
        pytest.param(1, {"cpu": "10"}, 2, id="reclaimer-deserving-what-it-asks-takes-them"),
        pytest.param(0, {"memory": "1Gi"}, 2, id="no-ancestor-scope-without-a-level"),
    ],
)
def test_immediate_victims_under_a_shared_ancestor_need_a_relevant_reclaimer_deserved(
    level: int, reclaimer_deserved: dict[str, str], victims: int
) -> None:
    # b deserves only memory, so its cpu pods are "immediate" victims for anyone.
    ssn = session(
        [
            node("n1", cpu="100"),
            queue("t"),
            queue("a", parent="t", deserved=reclaimer_deserved),
            queue("b", parent="t", deserved={"memory": "1Gi"}),
            *pending("ra", "a", "10"),
            *running("rb", "b", "10", "10"),
        ],
        hierarchical(level),
    )
    reclaimees = [task_of(ssn, "ns/rb-0"), task_of(ssn, "ns/rb-1")]

    chosen, _ = ssn.hook_fns(RECLAIMABLE)["capacity"](task_of(ssn, "ns/ra-0"), reclaimees)

    assert len(chosen) == victims
