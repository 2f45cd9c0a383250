"""The accounting session follows cluster events in place (or ignores those that change
nothing it derives) and always answers exactly as a session rebuilt on the same cluster,
with the same assumptions, would."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler_core.accounting import following, keeper
from scheduler_core.accounting.keeper import QueueAccounting
from scheduler_core.api.resource import Resource
from scheduler_core.cache.convert import pod_to_task
from scheduler_core.engine import open_session
from scheduler_core.extender.context import PodContext, pod_groups
from scheduler_core.extender.filter_verb import check_pod, filter_pod
from scheduler_core.extender.prioritize import prioritize_pod
from scheduler_core.framework.session import Session
from scheduler_core.plugins.drf import DrfPlugin
from scheduler_core.plugins.proportion import ProportionPlugin
from tests.builders import (
    Clock,
    accounting,
    node,
    pod,
    pod_affinity,
    pod_term,
    podgroup,
    queue,
    selector,
    spread_constraint,
    with_min_resources,
)

NODES = ["n1", "n2", "n3"]
Obj = dict[str, Any]
HOST = "kubernetes.io/hostname"

#: Pods whose fit depends on other pods' labels and places (inter-pod anti-affinity and
#: topology spread over the churned label): the predicates' per-pod counts must follow.
FIT_PROBES = [
    pod(
        "probe-anti",
        cpu="1",
        labels={"churn": "1"},
        affinity=pod_affinity(anti=[pod_term(selector({"churn": "1"}), HOST)]),
    ),
    pod(
        "probe-spread",
        cpu="1",
        labels={"churn": "2"},
        spread=[spread_constraint(1, HOST, selector({"churn": "2"}))],
    ),
]


def host(name: str, cpu: str) -> Obj:
    return node(name, cpu=cpu, labels={HOST: name})


def _amounts(r: Resource) -> tuple[float, float, tuple[tuple[str, float], ...]]:
    """A scalar at zero is the amount of one that is missing. (A session that cannot be
    recounted from the cache, one counting a pod the cache has not shown yet, uncharges an
    ended assumption in place, which leaves its ``pods`` at zero rather than absent.)"""
    scalars = tuple(sorted((k, q) for k, q in (r.scalars or {}).items() if q != 0))
    return r.milli_cpu, r.memory, scalars


def _derived(ssn: Session) -> dict[str, Any]:
    """What the plugins derived for the session: queue records, jobs' dominant shares; the
    jobs and the queue records in their order (proportion's deserved loop runs in it)."""
    proportion = ssn.plugins["proportion"]
    drf = ssn.plugins["drf"]
    assert isinstance(proportion, ProportionPlugin) and isinstance(drf, DrfPlugin)
    return {
        "jobs": list(ssn.jobs),
        "queue order": list(proportion.queue_opts),
        "nodes": sorted(ssn.nodes),
        "queues": {
            name: (
                _amounts(a.allocated),
                _amounts(a.request),
                _amounts(a.inqueue),
                _amounts(a.elastic),
                _amounts(a.deserved),
                a.share,
            )
            for name, a in proportion.queue_opts.items()
        },
        "drf": {uid: drf.job_share(uid) for uid in sorted(ssn.jobs)},
    }


def _answers(acct: QueueAccounting, pods: list[Obj]) -> dict[str, Any]:
    """The verbs' answers for every pod: filter's queue and gang checks, prioritize's
    scores (a pod's own assumption released first, as filter does)."""
    out: dict[str, Any] = {}
    for obj in pods:
        key = f"{obj['metadata']['namespace']}/{obj['metadata']['name']}"
        try:
            ctx = PodContext(acct, obj)
        except ValueError:
            continue
        rejection = check_pod(ctx, NODES)
        scores = list(prioritize_pod(acct, obj, NODES))
        out[key] = (
            None if rejection is None else (rejection.reason_code, rejection.message),
            scores,
        )
    ssn = acct.session()
    for obj in FIT_PROBES:
        task = pod_to_task(obj)
        for name in sorted(ssn.nodes):
            err = ssn.predicate(task, ssn.nodes[name])
            out[f"{task.key}@{name}"] = None if err is None else (err.code, err.reasons)
    return out


def _rebuilt(acct: QueueAccounting) -> QueueAccounting:
    """Another accounting over the same cluster with copies of the same assumptions: its
    first session is a new one."""
    ref = QueueAccounting(acct.state, acct.conf, assume_ttl=acct.assume_ttl, clock=acct.clock)
    ref.assumed = {k: dataclasses.replace(a) for k, a in acct.assumed.items()}
    ref.grants = acct.grants
    ref.session()
    return ref


def _start() -> tuple[QueueAccounting, Clock]:
    return accounting(
        [
            host("n1", "4"),
            host("n2", "8"),
            queue("q1", 1),
            queue("q2", 3, capability={"cpu": "6"}),
            podgroup("g1", 2, queue="q1"),
            podgroup("g2", 1, queue="q2"),
            pod("r1", group="g1", cpu="1", node_name="n1"),
            pod("p1", group="g2", cpu="2"),
        ]
    )


# --- the classification, one event each ---------------------------------------------------


def test_a_running_pods_label_change_neither_rebuilds_nor_follows() -> None:
    acct, _ = _start()
    ssn = acct.session()
    version = acct.state.decision_version
    acct.state.upsert("Pod", pod("r1", group="g1", cpu="1", node_name="n1", labels={"a": "b"}))
    assert acct.session() is ssn
    assert acct.state.decision_version == version
    assert (acct.refreshes, acct.follows) == (1, 0)


def test_a_relabel_that_keeps_the_session_still_moves_the_predicates_counts() -> None:
    # The relabel is inert for every sum, yet it makes the running pod one the probe's
    # anti-affinity shuns: the kept session must answer as a new one does.
    acct, _ = _start()
    acct.state.upsert("Pod", pod("a", cpu="1", node_name="n1", queue="q1"))
    ssn = acct.session()
    assert _answers(acct, [])["ns/probe-anti@n1"] is None
    acct.state.upsert("Pod", pod("a", cpu="1", node_name="n1", queue="q1", labels={"churn": "1"}))
    assert acct.session() is ssn
    assert _answers(acct, [])["ns/probe-anti@n1"] is not None
    assert _answers(acct, []) == _answers(_rebuilt(acct), [])


def test_a_pending_pod_bound_is_followed_in_place_and_counts_in_its_queue() -> None:
    acct, _ = _start()
    ssn = acct.session()
    before = _derived(ssn)["queues"]["q2"][0]
    acct.state.upsert("Pod", pod("p1", group="g2", cpu="2", node_name="n2"))
    assert acct.session() is ssn
    assert (acct.refreshes, acct.follows) == (1, 1)
    after = _derived(ssn)
    assert after["queues"]["q2"][0][0] == before[0] + 2000  # allocated cpu, in milli
    assert after == _derived(_rebuilt(acct).session())


def test_a_plain_pods_bind_is_followed_its_group_of_one_kept() -> None:
    acct, _ = _start()
    acct.state.upsert("Pod", pod("solo", cpu="1", queue="q1"))
    ssn = acct.session()
    job = next(j for j in ssn.jobs.values() if j.synthesized)
    acct.state.upsert("Pod", pod("solo", cpu="1", queue="q1", node_name="n2"))
    assert acct.session() is ssn and acct.follows == 1
    assert acct.state.snapshot().jobs[job.uid].phase == job.phase  # re-derived: Running
    assert _derived(ssn) == _derived(_rebuilt(acct).session())


def test_a_plain_pods_creation_is_followed_its_group_taken_in_as_a_new_session_would() -> None:
    acct, _ = _start()
    acct.state.upsert("Pod", pod("solo", cpu="1", queue="q1"))
    ssn = acct.session()
    acct.state.upsert("Pod", pod("next", cpu="2", queue="q1"))
    acct.state.upsert("Pod", pod("placed", cpu="1", queue="q1", node_name="n1"))
    assert acct.session() is ssn and (acct.refreshes, acct.follows) == (1, 1)
    rebuilt = _rebuilt(acct).session()
    assert list(ssn.jobs) == list(rebuilt.jobs)  # the new groups last, in the order they came
    assert _derived(ssn) == _derived(rebuilt)
    probes = [pod("next", cpu="2", queue="q1"), pod("big", cpu="3", queue="q1")]
    assert _answers(acct, probes) == _answers(_rebuilt(acct), probes)


def test_a_plain_pod_of_a_queue_the_session_does_not_know_is_left_out_as_a_new_session_would() -> (
    None
):
    acct, _ = _start()
    ssn = acct.session()
    acct.state.upsert("Pod", pod("stray", cpu="1", queue="missing"))
    assert acct.session() is ssn and acct.follows == 1
    assert sorted(ssn.jobs) == sorted(_rebuilt(acct).session().jobs)


def test_a_plain_pod_that_brings_its_queue_its_first_job_opens_a_new_session() -> None:
    # proportion keeps records only of queues with jobs: a queue's first job is new to it.
    acct, _ = _start()
    ssn = acct.session()
    acct.state.upsert("Pod", pod("first-of-default", cpu="1"))
    assert acct.session() is not ssn and acct.follows == 0
    assert _derived(acct.session()) == _derived(_rebuilt(acct).session())


def test_a_plain_pods_deletion_is_followed_its_group_let_go_as_a_new_session_would() -> None:
    acct, _ = _start()
    for name, node_name in (("done", "n1"), ("waiting", ""), ("stays", "n2")):
        acct.state.upsert("Pod", pod(name, cpu="1", queue="q1", node_name=node_name))
    ssn = acct.session()
    acct.state.delete("Pod", "ns/done")
    acct.state.delete("Pod", "ns/waiting")
    assert acct.session() is ssn and acct.follows == 1
    rebuilt = _rebuilt(acct).session()
    assert _derived(ssn) == _derived(rebuilt)
    probes = [pod("next", cpu="2", queue="q1"), pod("big", cpu="5", queue="q1")]
    assert _answers(acct, probes) == _answers(_rebuilt(acct), probes)


def _start_plain() -> tuple[QueueAccounting, Clock]:
    """Two queues whose every job is a plain pod's group of one: the first comes first."""
    return accounting(
        [
            host("n1", "4"),
            host("n2", "8"),
            queue("q1", 1),
            queue("q2", 3, capability={"cpu": "6"}),
            pod("a", cpu="1", queue="q1", node_name="n1"),
            pod("b", cpu="2", queue="q2"),
            pod("c", cpu="1", queue="q1"),
        ]
    )


def test_a_queues_first_job_let_go_puts_the_queues_in_the_order_a_new_session_takes() -> None:
    acct, _ = _start_plain()
    ssn = acct.session()
    assert _derived(ssn)["queue order"] == ["q1", "q2"]
    acct.state.delete("Pod", "ns/a")  # q1's first job: q2's now comes first
    assert acct.session() is ssn and acct.follows == 1
    assert _derived(ssn)["queue order"] == ["q2", "q1"]
    assert _derived(ssn) == _derived(_rebuilt(acct).session())


def test_a_queues_last_job_let_go_opens_a_new_session() -> None:
    # proportion keeps records only of queues with jobs, as for a queue's first job.
    acct, _ = _start_plain()
    ssn = acct.session()
    acct.state.delete("Pod", "ns/b")
    assert acct.session() is not ssn and acct.follows == 0
    assert _derived(acct.session()) == _derived(_rebuilt(acct).session())


def test_a_group_of_one_that_went_and_came_back_between_two_calls_is_last_as_in_the_cache() -> None:
    # The log keeps each group's first appearance: "u" came before "x", but is last now.
    acct, _ = _start_plain()
    acct.session()
    acct.state.upsert("Pod", pod("u", cpu="1", queue="q1"))
    acct.state.upsert("Pod", pod("x", cpu="1", queue="q2"))
    acct.state.delete("Pod", "ns/u")
    acct.state.upsert("Pod", pod("u", cpu="1", queue="q1"))  # the same pod (and uid), again
    kept = acct.session()
    assert list(kept.jobs)[-2:] == list(_rebuilt(acct).session().jobs)[-2:]
    assert _derived(kept) == _derived(_rebuilt(acct).session())


def test_structural_changes_rebuild() -> None:
    acct, _ = _start()
    for obj in (node("n3", cpu="2"), queue("q1", 5), podgroup("g1", 2, queue="q2")):
        ssn = acct.session()
        acct.state.upsert(str(obj["kind"]), obj)
        assert acct.session() is not ssn, obj["kind"]
    assert acct.follows == 0


def test_a_podgroups_creation_is_followed_its_job_taken_in_with_the_members_that_waited() -> None:
    acct, _ = _start()
    acct.state.upsert("Pod", pod("m1", group="g3", cpu="1", node_name="n2"))
    acct.state.upsert("Pod", pod("m2", group="g3", cpu="1"))
    ssn = acct.session()
    assert "ns/g3" not in ssn.jobs  # its members wait for it
    acct.state.upsert("PodGroup", podgroup("g3", 2, queue="q1"))
    assert acct.session() is ssn and acct.follows == 1
    assert list(ssn.jobs)[-1] == "ns/g3"
    assert _derived(ssn) == _derived(_rebuilt(acct).session())
    probes = [pod("m2", group="g3", cpu="1"), pod("big", group="g1", cpu="4")]
    assert _answers(acct, probes) == _answers(_rebuilt(acct), probes)


def test_a_podgroups_deletion_is_followed_its_job_let_go_its_members_waiting_again() -> None:
    acct, _ = _start()
    acct.state.upsert("PodGroup", podgroup("g3", 1, queue="q1"))
    acct.state.upsert("Pod", pod("m1", group="g3", cpu="2", node_name="n2"))
    ssn = acct.session()
    acct.state.delete("PodGroup", "ns/g3")
    assert acct.session() is ssn and acct.follows == 1
    assert "ns/g3" not in ssn.jobs
    assert _derived(ssn) == _derived(_rebuilt(acct).session())
    probes = [pod("next", group="g1", cpu="2"), pod("big", group="g1", cpu="5")]
    assert _answers(acct, probes) == _answers(_rebuilt(acct), probes)


def test_a_bound_assumed_pod_is_counted_once_after_following() -> None:
    acct, _ = _start()
    pending = pod("p1", group="g2", cpu="2")
    assert filter_pod(acct, pending, NODES).passed  # assumed: q2 holds it
    charged = _derived(acct.session())["queues"]["q2"][0]
    acct.state.upsert("Pod", pod("p1", group="g2", cpu="2", node_name="n2"))
    ssn = acct.session()
    assert acct.follows == 1 and not acct.assumed
    assert _derived(ssn)["queues"]["q2"][0] == charged  # the cache's count replaced ours
    assert _derived(ssn) == _derived(_rebuilt(acct).session())


def test_a_bind_in_another_job_of_the_queue_leaves_an_assumed_jobs_share_counted_once() -> None:
    acct, _ = _start()
    for name in ("a", "b"):
        acct.state.upsert("Pod", pod(name, cpu="1", queue="q1"))
    ssn = acct.session()
    for name in ("a", "b"):
        assert filter_pod(acct, pod(name, cpu="1", queue="q1"), NODES).passed
    acct.state.upsert("Pod", pod("b", cpu="1", queue="q1", node_name="n2"))  # b's job moved
    assert acct.session() is ssn and acct.follows == 1 and list(acct.assumed) == ["ns/a"]
    assert _derived(ssn) == _derived(_rebuilt(acct).session())


def test_an_assumption_that_expires_as_the_session_follows_leaves_its_jobs_share() -> None:
    acct, clock = _start()
    acct.state.upsert("Pod", pod("a", cpu="1", queue="q1"))
    acct.state.upsert("Pod", pod("c", group="g1", cpu="1"))
    ssn = acct.session()
    assert filter_pod(acct, pod("a", cpu="1", queue="q1"), NODES).passed
    clock.now += 31
    acct.state.upsert("Pod", pod("c", group="g1", cpu="1", node_name="n2"))  # g1 moved
    assert acct.session() is ssn and acct.expired == 1 and not acct.assumed
    assert _derived(ssn) == _derived(_rebuilt(acct).session())


# --- property: any sequence of events -----------------------------------------------------

NAMES = ["a", "b", "c", "d", "e"]
GROUPS = ["g1", "g2", "g3"]
#: kube-scheduler filtering a pod (plain, or of a group; in a queue or the default) before
#: the watch shows it.
FILTER_UNSEEN = st.tuples(
    st.just("filter-unseen"),
    st.sampled_from(NAMES),
    st.sampled_from([None, *GROUPS]),
    st.sampled_from(["", "q1", "q2"]),
)
EVENT = st.one_of(
    st.tuples(
        st.just("pod"),
        st.sampled_from(NAMES),
        st.sampled_from([None, *GROUPS]),
        st.sampled_from(["", "", "n1", "n2", "n3"]),
        st.sampled_from(["1", "2", "500m"]),
        st.sampled_from(["", "q1", "q2"]),
    ),
    st.tuples(st.just("relabel"), st.sampled_from(NAMES), st.integers(0, 3)),
    st.tuples(st.just("guard"), st.sampled_from(NAMES), st.sampled_from(NODES)),
    st.tuples(st.just("finish"), st.sampled_from(NAMES)),
    st.tuples(st.just("del-pod"), st.sampled_from(NAMES)),
    st.tuples(
        st.just("pg"),
        st.sampled_from(GROUPS),
        st.sampled_from(["q1", "q2"]),
        st.integers(1, 3),
        st.sampled_from(["Pending", "Inqueue", "Running"]),
        st.sampled_from([None, "1", "3"]),
    ),
    st.tuples(st.just("del-pg"), st.sampled_from(GROUPS)),
    st.tuples(st.just("node"), st.sampled_from(NODES), st.sampled_from(["4", "8"])),
    st.tuples(st.just("del-node"), st.sampled_from(NODES)),
    st.tuples(st.just("queue"), st.sampled_from(["q1", "q2"]), st.sampled_from([1, 3])),
    st.tuples(st.just("filter"), st.sampled_from(NAMES)),
    FILTER_UNSEEN,
    st.tuples(st.just("deliver")),
    st.tuples(st.just("release"), st.sampled_from(NAMES)),
    st.tuples(st.just("tick"), st.sampled_from([5.0, 40.0])),
)


def _apply(
    acct: QueueAccounting,
    clock: Clock,
    pods: dict[str, Obj],
    event: tuple[Any, ...],
    unseen: dict[str, Obj],
) -> None:
    """``pods``: those the cache was shown; ``unseen``: those filtered before it was."""
    state, op = acct.state, event[0]
    if op == "pod":
        _, name, group, node_name, cpu, queue_name = event
        pods[name] = pod(name, group=group, node_name=node_name, cpu=cpu, queue=queue_name)
        state.upsert("Pod", pods[name])
    elif op == "guard":  # a placed pod keeping churn=1 pods off its host
        _, name, node_name = event
        anti = pod_affinity(anti=[pod_term(selector({"churn": "1"}), HOST)])
        pods[name] = pod(name, node_name=node_name, cpu="500m", queue="q1", affinity=anti)
        state.upsert("Pod", pods[name])
    elif op in ("relabel", "finish") and event[1] in pods:
        obj = pods[event[1]]
        if op == "relabel":
            obj["metadata"]["labels"] = {"churn": str(event[2])}
        else:
            obj["status"]["phase"] = "Succeeded"
        state.upsert("Pod", obj)
    elif op == "del-pod":
        pods.pop(event[1], None)
        state.delete("Pod", f"ns/{event[1]}")
    elif op == "pg":
        _, name, queue_name, members, phase, minimum = event
        obj = podgroup(name, members, queue=queue_name, phase=phase)
        state.upsert("PodGroup", with_min_resources(obj, {"cpu": minimum}) if minimum else obj)
    elif op == "del-pg":
        state.delete("PodGroup", f"ns/{event[1]}")
    elif op == "node":
        state.upsert("Node", host(event[1], event[2]))
    elif op == "del-node":
        state.delete("Node", event[1])
    elif op == "queue":
        state.upsert("Queue", queue(event[1], event[2]))
    elif op == "filter" and event[1] in pods:
        filter_pod(acct, pods[event[1]], NODES)
    elif op == "filter-unseen" and event[1] not in pods:  # kube-scheduler ahead of the watch
        unseen[event[1]] = pod(event[1], group=event[2], cpu="1", queue=event[3])
        filter_pod(acct, unseen[event[1]], NODES)
    elif op == "deliver":  # the watch catching up with the pods filtered before it showed them
        for name, obj in unseen.items():
            pods[name] = obj
            state.upsert("Pod", obj)
        unseen.clear()
    elif op == "release":
        acct.release(f"ns/{event[1]}")
    elif op == "tick":
        clock.now += event[1]


def _check_events(start: Any, events: list[tuple[tuple[Any, ...], bool]]) -> None:
    """Applies ``events``; after each one marked to ask, the session a verb call would read
    must answer as a new one (the others pile up in the change log, to be followed
    together)."""
    acct, clock = start()
    pods: dict[str, Obj] = {}
    unseen: dict[str, Obj] = {}
    acct.session()
    for event, ask in events:
        _apply(acct, clock, pods, event, unseen)
        if not ask:
            continue
        kept = acct.session()
        ref = _rebuilt(acct)
        assert _derived(kept) == _derived(ref.session()), event
        prefers = pod_affinity(preferred=[(10, pod_term(selector({"churn": "1"}), HOST))])
        probes = [
            *pods.values(),
            pod("probe", group="g1", cpu="1"),
            pod("probe-prefers", cpu="1", affinity=prefers),
        ]
        assert _answers(acct, probes) == _answers(ref, probes), event


@settings(max_examples=150, deadline=None, derandomize=True)
@given(
    st.sampled_from([_start, _start_plain]),
    st.lists(st.tuples(EVENT, st.booleans()), max_size=30),
)
def test_a_followed_session_answers_as_a_rebuilt_one_after_any_events(
    start: Any, events: list[tuple[tuple[Any, ...], bool]]
) -> None:
    """After any events, the session a verb call would read answers as a new one."""
    _check_events(start, events)


#: Events that call no verb (so the session is not brought up to date): pods created,
#: bound, finished or deleted, assumptions released, time passing.
QUIET_EVENT = st.one_of(
    st.tuples(
        st.just("pod"),
        st.sampled_from(NAMES),
        st.sampled_from([None, *GROUPS]),
        st.sampled_from(["", "n1", "n2"]),
        st.just("1"),
        st.sampled_from(["", "q1", "q2"]),
    ),
    st.tuples(st.just("finish"), st.sampled_from(NAMES)),
    st.tuples(st.just("del-pod"), st.sampled_from(NAMES)),
    st.tuples(st.just("release"), st.sampled_from(NAMES)),
    st.tuples(st.just("tick"), st.just(5.0)),
)

#: One pod kube-scheduler asks about before the watch shows it: filtered unseen, other
#: events, then (mostly) the watch delivers it, other events, and the next verb call.
WATCH_LAG_ROUND = st.tuples(
    FILTER_UNSEEN,
    st.lists(QUIET_EVENT, max_size=3),
    st.sampled_from([True, True, False]),
    st.lists(QUIET_EVENT, max_size=3),
)


@settings(max_examples=150, deadline=None, derandomize=True)
@given(st.sampled_from([_start, _start_plain]), st.lists(WATCH_LAG_ROUND, max_size=6))
def test_a_session_holding_jobs_of_unseen_pods_answers_as_a_rebuilt_one_as_the_watch_lags(
    start: Any, rounds: list[tuple[Any, list[Any], bool, list[Any]]]
) -> None:
    """A session followed while pods the cache has not shown are assumed (their jobs in it
    as a new session adds them, ``QueueAccounting._put_unseen_jobs``), and as the watch
    delivers them, answers as a new one."""
    events: list[tuple[tuple[Any, ...], bool]] = []
    for unseen, before, delivered, after in rounds:
        events.append((unseen, False))
        events.extend((event, False) for event in before)
        if delivered:
            events.append((("deliver",), False))
        events.extend((event, False) for event in after)
        events.append((("tick", 0.0), True))  # the next verb call
    _check_events(start, events)


def test_an_assumption_ending_in_a_one_off_sessions_replay_leaves_the_kept_session_too() -> None:
    acct, clock = _start()
    assert filter_pod(acct, pod("p1", group="g2", cpu="2"), NODES).passed
    kept = acct.session()
    clock.now += 40  # past the TTL, noticed first by a one-off session's replay
    with acct.state.locked():
        one_off = open_session(acct.state.shared_snapshot(), acct.conf, read_only=True)
        acct.replay_assumptions(one_off)
    assert not acct.assumed
    assert acct.session() is kept
    assert _derived(kept) == _derived(_rebuilt(acct).session())


def test_a_released_assumption_leaves_its_queue_as_a_new_session_would_count_it() -> None:
    acct, _ = _start()
    pending = pod("p1", group="g2", cpu="2")
    assert filter_pod(acct, pending, NODES).passed
    kept = acct.session()
    acct.release("ns/p1")
    assert acct.session() is kept
    assert _derived(kept) == _derived(_rebuilt(acct).session())
    proportion = kept.plugins["proportion"]
    assert isinstance(proportion, ProportionPlugin)
    # counted again from the cache, not uncharged: no pod count left at zero
    assert "pods" not in (proportion.queue_opts["q2"].allocated.scalars or {})


def test_the_plugins_are_asked_once_a_session_whether_it_can_follow(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    asked: list[int] = []
    real = following.can_follow

    def counted(ssn: Session) -> bool:
        asked.append(ssn.uid)
        return real(ssn)

    monkeypatch.setattr(keeper, "can_follow", counted)  # as the keeper imported it
    acct, _ = _start()
    first = acct.session()
    for name in ("p1", "p2", "p3"):
        acct.state.upsert("Pod", pod(name, group="g2", cpu="1", node_name="n2"))
        assert acct.session() is first
    assert asked == [first.uid] and acct.follows == 3
    acct.state.upsert("Queue", queue("q3", 1))  # a structural change: a new session
    second = acct.session()
    acct.state.upsert("Pod", pod("p4", group="g2", cpu="1", node_name="n2"))
    assert acct.session() is second
    assert asked == [first.uid, second.uid]


def _unseen_filtered(acct: QueueAccounting, name: str, queue_name: str) -> Obj:
    """A plain pod of ``queue_name`` filtered before the cache shows it (it passes)."""
    obj = pod(name, cpu="1", queue=queue_name)
    assert filter_pod(acct, obj, NODES).passed
    return obj


def test_an_unseen_pods_job_gives_way_to_the_caches_once_the_watch_delivers_it() -> None:
    acct, _ = _start()
    acct.session()
    obj = _unseen_filtered(acct, "u", "q1")
    refreshes = acct.refreshes
    acct.state.upsert("Pod", obj)  # the watch catches up
    kept = acct.session()
    assert acct.refreshes == refreshes  # followed, not opened anew
    assert _derived(kept) == _derived(_rebuilt(acct).session())


def test_an_unseen_pods_job_stays_in_the_session_while_the_watch_has_not_delivered_it() -> None:
    acct, _ = _start()
    acct.session()
    obj = _unseen_filtered(acct, "u", "q1")
    refreshes = acct.refreshes
    kept = acct.session()
    assert acct.refreshes == refreshes  # followed, its job among the session's
    assert pod_groups(obj)[1] in kept.jobs
    assert _derived(kept) == _derived(_rebuilt(acct).session())
    # Another pod bound in another queue: followed, the unseen pod's job kept.
    acct.state.upsert("Pod", pod("w", group="g2", node_name="n1", cpu="1", queue="q2"))
    assert _derived(acct.session()) == _derived(_rebuilt(acct).session())
    assert acct.refreshes == refreshes


def test_an_assumption_released_before_the_session_is_brought_up_to_date_leaves_its_queue() -> None:
    acct, _ = _start()
    acct.session()
    other = _unseen_filtered(acct, "x", "q2")
    acct.state.upsert("Pod", other)
    acct.session()  # x is charged to q2 in the session
    obj = _unseen_filtered(acct, "u", "q1")  # its job taken in, for the filter only
    acct.release("ns/x")  # kube-scheduler filters x again, say
    acct.state.upsert("Pod", obj)
    refreshes = acct.refreshes
    kept = acct.session()
    assert acct.refreshes == refreshes
    assert _derived(kept) == _derived(_rebuilt(acct).session())


def test_an_assumption_the_session_counts_already_is_not_uncharged_when_released() -> None:
    """A pod assumed while the cache shows it bound is not charged (its job counts it);
    released before the session catches up, nothing is taken back from its queue."""
    acct, clock = _start_plain()
    pods: dict[str, Obj] = {}
    unseen: dict[str, Obj] = {}
    acct.session()
    for event in [
        ("filter-unseen", "a", None, ""),
        ("pod", "c", "g1", "", "1", ""),
        ("release", "a"),
    ]:
        _apply(acct, clock, pods, event, unseen)
    assert _derived(acct.session()) == _derived(_rebuilt(acct).session())


def test_a_pod_assumed_unseen_that_leaves_the_job_it_was_judged_in_counts_there_too() -> None:
    """A new session adds the job an unseen pod was judged in for as long as its assumption
    lives and the cache shows the pod elsewhere (``add_unseen_jobs``), counting it twice:
    the session followed in place does too."""
    acct, clock = _start()
    pods: dict[str, Obj] = {}
    unseen: dict[str, Obj] = {}
    acct.session()
    for event in [("filter-unseen", "a", "g1", ""), ("deliver",)]:
        _apply(acct, clock, pods, event, unseen)
    acct.session()
    refreshes = acct.refreshes
    _apply(acct, clock, pods, ("pod", "a", None, "", "1", "q1"), unseen)
    assert _derived(acct.session()) == _derived(_rebuilt(acct).session())
    assert acct.refreshes == refreshes


@settings(max_examples=120, deadline=None, derandomize=True)
@given(
    st.sampled_from([_start, _start_plain]),
    st.lists(EVENT, max_size=20),
    st.sampled_from([None, *GROUPS]),
    st.sampled_from(["", "q1", "q2"]),
    st.sampled_from(["1", "3"]),
)
def test_a_pod_judged_in_place_is_judged_as_in_a_one_off_session(
    start: Any, events: list[tuple[Any, ...]], group: str | None, queue_name: str, cpu: str
) -> None:
    """A pod the cache has not shown, judged in the accounting session with its job taken
    in (``take_in_unseen``), sees what a one-off session opened for it shows: the same
    records, the same jobs in the same order, the same answer."""
    acct, clock = start()
    pods: dict[str, Obj] = {}
    unseen: dict[str, Obj] = {}
    acct.session()
    for event in events:
        _apply(acct, clock, pods, event, unseen)
    obj = pod("newcomer", group=group, cpu=cpu, queue=queue_name)
    ref = _rebuilt(acct)
    with acct.state.locked():
        in_place = PodContext(acct, obj, as_stored=True, in_place=True)
        one_off = PodContext(ref, obj, as_stored=True)
        assert _derived(in_place.ssn) == _derived(one_off.ssn)
        assert _verdict(check_pod(in_place, NODES)) == _verdict(check_pod(one_off, NODES))
    kept = acct.session()  # the job taken in is put back
    assert _derived(kept) == _derived(_rebuilt(acct).session())


def test_a_pod_judged_in_place_leaves_the_session_as_the_cache_has_it() -> None:
    acct, _ = _start()
    before = _derived(acct.session())
    refreshes = acct.refreshes
    ctx = PodContext(acct, pod("newcomer", group="g1", cpu="1"), as_stored=True, in_place=True)
    assert acct.taken_in == 1 and acct.one_off_sessions == 0
    assert ctx.ssn.jobs["ns/g1"] is not acct.state.job("ns/g1")  # its job as judged
    assert _derived(acct.session()) == before  # not assumed: the cache's job back
    assert acct.refreshes == refreshes


def _verdict(status: Any) -> Any:
    return None if status is None else (status.reason_code, status.message)
