"""drf: dominant shares, the cumulative victim check, job order kept current by events, and the
tiered Preemptable intersection with drf as the second tier's only voter."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from scheduler_core.api.resource import Resource, share
from scheduler_core.api.task import TaskInfo
from scheduler_core.conf import load_configuration
from scheduler_core.engine import open_session
from scheduler_core.framework.hooks import QUEUE_ORDER, RECLAIMABLE
from scheduler_core.framework.statement import Statement
from scheduler_core.plugins.drf import DrfPlugin, calculate_share
from tests.builders import (
    keys,
    node,
    pod,
    podgroup,
    priority_class,
    session,
    snapshot,
    task_of,
    tiers,
)

DRF = tiers("drf")


def job(
    name: str,
    cpus: list[str],
    *,
    pending: Sequence[str] = (),
    min_member: int = 1,
    pc: str = "",
) -> list[dict[str, Any]]:
    """Running pods requesting ``cpus`` (CPU only) and pending pods requesting ``pending``."""
    objs: list[dict[str, Any]] = [podgroup(name, min_member, priority_class=pc)]
    for i, cpu in enumerate(cpus):
        objs.append(pod(f"{name}-{i}", group=name, node_name="n1", cpu=cpu, memory=None))
    for i, cpu in enumerate(pending):
        objs.append(pod(f"{name}-p{i}", group=name, cpu=cpu, memory=None))
    return objs


def cluster(*jobs: list[dict[str, Any]], extra: Sequence[dict[str, Any]] = ()) -> list[Any]:
    """One node of 10 CPU (share of 1 CPU = 0.1; 100 pods, so pods never dominate)."""
    objs: list[Any] = [node("n1", "10", "10Gi", pods=100)]
    for j in jobs:
        objs.extend(j)
    objs.extend(extra)
    return objs


def drf_of(ssn: Any) -> DrfPlugin:
    plugin = ssn.plugins["drf"]
    assert isinstance(plugin, DrfPlugin)
    return plugin


def test_calculate_share_is_the_largest_fraction_over_cluster_dimensions() -> None:
    total = Resource(10_000, 100.0, {"pods": 100.0})
    assert calculate_share(Resource(2_000, 50.0, {"pods": 1.0}), total) == ("memory", 0.5)
    assert calculate_share(Resource(3_000, 0.0), total) == ("cpu", 0.3)
    # A dimension the cluster lacks is not a dimension of the share.
    assert calculate_share(Resource(0, 0, {"nvidia.com/gpu": 1000.0}), total) == ("", 0.0)


def test_initial_job_shares() -> None:
    ssn = session(cluster(job("a", ["1", "2"]), job("b", [], pending=["4"])), DRF)
    assert drf_of(ssn).job_share("ns/a") == pytest.approx(0.3)
    assert drf_of(ssn).job_share("ns/b") == 0.0  # pending tasks hold nothing


@pytest.mark.parametrize(
    ("victim_cpus", "order", "expected"),
    [
        # preemptor share after placing its task: (1 + 1) / 10 = 0.2
        # 4 x 1 CPU: remaining .3 victim, .2 victim (equal), .1 no, 0 no
        (["1", "1", "1", "1"], [0, 1, 2, 3], [0, 1]),
        # non-victims are subtracted too: after the 3-CPU task (.1, not a victim) the 1-CPU
        # task leaves 0, not .3
        (["3", "1"], [0, 1], []),
        # the other way round: the 1-CPU task leaves .3 (victim), then the 3-CPU task
        # leaves 0 (not a victim)
        (["3", "1"], [1, 0], [1]),
    ],
)
def test_preemptable_decrements_each_examined_preemptee_cumulatively(
    victim_cpus: list[str], order: list[int], expected: list[int]
) -> None:
    ssn = session(cluster(job("p", ["1"], pending=["1"]), job("v", victim_cpus)), DRF)
    preemptees = [task_of(ssn, f"ns/v-{i}") for i in order]
    victims = ssn.preemptable(task_of(ssn, "ns/p-p0"), preemptees)
    assert keys(victims) == [f"ns/v-{i}" for i in expected]


def test_preemptable_keeps_one_allocation_per_job_within_a_call() -> None:
    objs = cluster(job("p", [], pending=["2"]), job("v", ["2", "2"]), job("w", ["3"]))
    ssn = session(objs, DRF)
    # ls = 0.2; v: 2 CPU left (.2, victim) then 0 (no); w: 0 after its only task (no)
    order = ["ns/v-0", "ns/w-0", "ns/v-1"]
    victims = ssn.preemptable(task_of(ssn, "ns/p-p0"), [task_of(ssn, k) for k in order])
    assert keys(victims) == ["ns/v-0"]


def test_preemptor_without_a_job_in_the_session_gets_no_victims() -> None:
    ssn = session(cluster(job("v", ["5"])), DRF)
    req = Resource(1000, 0)
    ghost = TaskInfo(uid="g", name="g", namespace="ns", job="ns/ghost", resreq=req, init_resreq=req)
    assert ssn.preemptable(ghost, [task_of(ssn, "ns/v-0")]) == []


def test_job_order_follows_share_through_evictions_and_discard() -> None:
    ssn = session(cluster(job("a", ["1", "1", "1"]), job("b", ["2"])), DRF)
    a, b = ssn.jobs["ns/a"], ssn.jobs["ns/b"]
    assert ssn.job_order_fn(b, a) is True  # .2 before .3
    stmt = Statement(ssn)
    stmt.evict(task_of(ssn, "ns/a-0"), "test")
    stmt.evict(task_of(ssn, "ns/a-1"), "test")
    assert drf_of(ssn).job_share("ns/a") == pytest.approx(0.1)
    assert ssn.job_order_fn(a, b) is True
    stmt.discard()
    assert drf_of(ssn).job_share("ns/a") == pytest.approx(0.3)
    assert ssn.job_order_fn(b, a) is True


def test_pipelining_raises_the_share() -> None:
    ssn = session(cluster(job("a", [], pending=["4"])), DRF)
    Statement(ssn).pipeline(task_of(ssn, "ns/a-p0"), "n1")
    assert drf_of(ssn).job_share("ns/a") == pytest.approx(0.4)


def test_enable_hierarchy_warns_and_behaves_flat(caplog: pytest.LogCaptureFixture) -> None:
    conf = 'actions: ""\ntiers:\n- plugins:\n  - name: drf\n    enableHierarchy: true\n'
    with caplog.at_level(logging.WARNING, logger="scheduler_core.plugins.drf"):
        ssn = session(cluster(job("p", [], pending=["1"]), job("v", ["1", "1"])), conf)
    assert any("not supported" in r.getMessage() for r in caplog.records)
    assert "drf" not in ssn.hook_fns(QUEUE_ORDER) and "drf" not in ssn.hook_fns(RECLAIMABLE)
    victims = ssn.preemptable(task_of(ssn, "ns/p-p0"), [task_of(ssn, "ns/v-0")])
    assert keys(victims) == ["ns/v-0"]


# --- tier semantics: priority + gang + conformance in tier 1, drf in tier 2 -----------------

TWO_TIERS = tiers("priority, gang, conformance", "drf")


def tiered(
    victim_pc: str, victim_min: int, preemptor_running: list[str]
) -> tuple[Any, TaskInfo, list[TaskInfo]]:
    objs = cluster(
        job("p", preemptor_running, pending=["1"], pc="high"),
        job("v", ["1", "1", "1"], min_member=victim_min, pc=victim_pc),
        extra=[priority_class("high", 1000), priority_class("low", 10)],
    )
    ssn = session(objs, TWO_TIERS)
    preemptees = [task_of(ssn, f"ns/v-{i}") for i in range(3)]
    return ssn, task_of(ssn, "ns/p-p0"), preemptees


def test_tier_one_decides_when_it_agrees_on_victims_even_against_drf() -> None:
    # drf alone would refuse everything: preemptor share (5 + 1) / 10 = .6 > any victim's
    ssn, preemptor, preemptees = tiered("low", 1, ["5"])
    assert drf_is_veto(ssn, preemptor, preemptees)
    assert keys(ssn.preemptable(preemptor, preemptees)) == ["ns/v-0", "ns/v-1"]


def test_a_tier_one_veto_falls_through_to_drf_in_tier_two() -> None:
    # equal job priority: priority vetoes tier 1 (and gang too: the gang is exactly 3);
    # drf then decides alone: ls = .1, victims leave .2 and .1
    ssn, preemptor, preemptees = tiered("high", 3, [])
    assert keys(ssn.preemptable(preemptor, preemptees)) == ["ns/v-0", "ns/v-1"]


def test_everything_vetoed_means_no_victims() -> None:
    ssn, preemptor, preemptees = tiered("high", 3, ["5"])
    assert ssn.preemptable(preemptor, preemptees) == []


def test_conformance_in_tier_one_narrows_the_intersection() -> None:
    objs = cluster(
        job("p", [], pending=["1"], pc="high"),
        job("v", ["1", "1"], pc="low"),
        extra=[
            priority_class("high", 1000),
            priority_class("low", 10),
            priority_class("system-node-critical", 10),
            podgroup("crit", 1, priority_class="low"),
            *[
                pod(
                    f"crit-{i}",
                    group="crit",
                    node_name="n1",
                    cpu="1",
                    memory=None,
                    priority_class="system-node-critical",
                )
                for i in range(2)
            ],
        ],
    )
    ssn = session(objs, TWO_TIERS)
    preemptees = [task_of(ssn, k) for k in ("ns/crit-0", "ns/v-0", "ns/v-1")]
    # priority: all three; gang: crit-0 and v-0 (each job keeps one); conformance: v-0, v-1
    assert keys(ssn.preemptable(task_of(ssn, "ns/p-p0"), preemptees)) == ["ns/v-0"]


def drf_is_veto(ssn: Any, preemptor: TaskInfo, preemptees: list[TaskInfo]) -> bool:
    victims, _ = drf_of(ssn).preemptable(preemptor, preemptees)
    return victims == []


@pytest.mark.parametrize(
    ("victim_cpus", "order"),
    [(["1", "1", "1", "1"], [0, 1, 2, 3]), (["3", "1"], [0, 1]), (["3", "1"], [1, 0])],
)
def test_a_read_only_session_derives_the_same_shares_and_victims_on_first_use(
    victim_cpus: list[str], order: list[int]
) -> None:
    """Read-only sessions (the extender's accounting) derive a job's share when first asked;
    with assumption-style events fired for a task outside the job's own sums, shares and
    victims equal those of a session that derived every job at open."""
    objs = cluster(job("p", ["1"], pending=["1"]), job("v", victim_cpus), job("w", ["2"]))
    eager = session(objs, DRF)
    lazy = open_session(snapshot(objs), load_configuration(DRF), read_only=True)
    assert drf_of(lazy).job_attrs == {}, "nothing derived at open"
    for ssn in (eager, lazy):
        outside = task_of(ssn, "ns/w-0").clone()
        outside.uid, outside.name = "ns-w-extra", "w-extra"
        ssn.fire_allocate(outside)
    for uid in ("ns/p", "ns/v", "ns/w"):
        assert drf_of(lazy).job_share(uid) == pytest.approx(drf_of(eager).job_share(uid))
    victims = [
        keys(ssn.preemptable(task_of(ssn, "ns/p-p0"), [task_of(ssn, f"ns/v-{i}") for i in order]))
        for ssn in (eager, lazy)
    ]
    assert victims[0] == victims[1]


_amount = st.one_of(st.just(0.0), st.floats(min_value=0, max_value=1e12, allow_nan=False))
_scalars = st.dictionaries(st.sampled_from(["pods", "nvidia.com/gpu", "x/y"]), _amount, max_size=3)


def _resource(cpu: float, memory: float, scalars: dict[str, float]) -> Resource:
    r = Resource(cpu, memory)
    for name, amount in scalars.items():
        r.set_scalar(name, amount)
    return r


@given(
    allocated=st.builds(_resource, _amount, _amount, _scalars),
    total=st.builds(_resource, _amount, _amount, _scalars),
    names=st.one_of(
        st.none(),
        st.lists(st.sampled_from(["cpu", "memory", "pods", "nvidia.com/gpu", "absent"])),
    ),
)
def test_calculate_share_equals_the_share_of_each_dimension_by_name(
    allocated: Resource, total: Resource, names: list[str] | None
) -> None:
    dominant, result = "", 0.0
    for name in names if names is not None else total.resource_names():
        value = share(allocated.get(name), total.get(name))
        if value > result:
            dominant, result = name, value
    assert calculate_share(allocated, total, names) == (dominant, result)
