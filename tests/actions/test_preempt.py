"""The preempt action: who may preempt, which victims go, on which node, and what is undone."""

from __future__ import annotations

import pytest

from scheduler_core.actions.preempt import PreemptAction, task_eligible_to_preempt
from scheduler_core.api.node import NodeInfo
from scheduler_core.api.task import TaskInfo
from scheduler_core.api.types import TaskStatus
from scheduler_core.conf import SchedulerConfiguration, load_configuration
from scheduler_core.framework.arguments import Arguments
from scheduler_core.framework.hooks import NODE_ORDER
from scheduler_core.framework.registry import Plugin
from scheduler_core.framework.session import Session
from scheduler_core.logutil import v
from tests.builders import (
    GANG_CONF,
    HELM_CONF,
    PRIORITY_CLASSES,
    Obj,
    configuration,
    evicted_keys,
    evictions,
    node,
    pipelined,
    pod,
    podgroup,
    queue,
    run,
    session,
    task_of,
)
from tests.conftest import RegisterPlugin


class LabelScorePlugin(Plugin):
    """Test-only node order: a node's score is its ``score`` label."""

    name = "test-label-score"

    def on_session_open(self, ssn: Session) -> None:
        def score(_task: TaskInfo, node_info: NodeInfo) -> float:
            return float(node_info.labels.get("score", "0"))

        ssn.add_hook(NODE_ORDER, self.name, score)


@pytest.fixture
def _label_score(register_plugin: RegisterPlugin) -> None:
    register_plugin(LabelScorePlugin)


SCORED_CONF = """
actions: "preempt"
tiers:
- plugins:
  - name: priority
  - name: gang
    enablePreemptable: false
  - name: conformance
- plugins:
  - name: predicates
  - name: proportion
  - name: test-label-score
"""


def preempt_conf(**arguments: object) -> SchedulerConfiguration:
    return configuration(HELM_CONF, "preempt", {"preempt": arguments} if arguments else None)


def two_jobs(
    *,
    a_min: int = 1,
    b_min: int = 1,
    b_class: str = "low",
    a_policy: str = "",
) -> list[Obj]:
    """Job-A (high) pending one 2-cpu task; Job-B runs two 1-cpu tasks on the only node."""
    return [
        node("n1", cpu="2"),
        queue("q1"),
        *PRIORITY_CLASSES,
        podgroup("job-a", a_min, queue="q1", priority_class="high"),
        podgroup("job-b", b_min, queue="q1", priority_class=b_class),
        pod("a-0", group="job-a", cpu="2", priority=100, preemption_policy=a_policy),
        pod("b-0", group="job-b", node_name="n1", priority=1),
        pod("b-1", group="job-b", node_name="n1", priority=1),
    ]


# --- the main path ------------------------------------------------------------------------


def test_high_priority_job_evicts_what_it_needs_and_is_pipelined() -> None:
    ssn = run(two_jobs(), preempt_conf())
    assert sorted(evicted_keys(ssn)) == ["ns/b-0", "ns/b-1"]
    assert all(reason == "preempt" and by == "ns/a-0" for _, _, reason, by in evictions(ssn))
    assert pipelined(ssn) == {"ns/a-0": "n1"}
    assert task_of(ssn, "ns/b-0").status == TaskStatus.RELEASING


def test_only_as_many_victims_as_needed_lowest_value_first() -> None:
    objs = [
        node("n1", cpu="3"),
        queue("q1"),
        *PRIORITY_CLASSES,
        podgroup("job-a", 1, queue="q1", priority_class="high"),
        podgroup("job-m", 1, queue="q1", priority_class="mid"),
        podgroup("job-l", 1, queue="q1", priority_class="low"),
        pod("a-0", group="job-a", cpu="1", priority=100),
        pod("m-0", group="job-m", node_name="n1", priority=10),
        pod("l-0", group="job-l", node_name="n1", priority=1),
        pod("l-1", group="job-l", node_name="n1", priority=1),
    ]
    ssn = run(objs, preempt_conf())
    # one cpu is enough: the lowest-priority job loses one task, the mid job none
    assert len(evicted_keys(ssn)) == 1
    assert evicted_keys(ssn)[0] in {"ns/l-0", "ns/l-1"}


def test_equal_priority_jobs_do_not_preempt_each_other() -> None:
    ssn = run(two_jobs(b_class="high"), preempt_conf())
    assert evicted_keys(ssn) == []
    assert pipelined(ssn) == {}


# --- node order and per-node statements ---------------------------------------------------


def _scored_cluster(scores: dict[str, str]) -> list[Obj]:
    objs: list[Obj] = [queue("q1"), *PRIORITY_CLASSES]
    objs += [podgroup("job-a", 1, queue="q1", priority_class="high")]
    objs += [pod("a-0", group="job-a", cpu="1", priority=100)]
    for i, (name, score) in enumerate(sorted(scores.items())):
        objs.append(node(name, cpu="1", labels={"score": score}))
        objs.append(podgroup(f"job-{i}", 1, queue="q1", priority_class="low"))
        objs.append(pod(f"v-{i}", group=f"job-{i}", node_name=name, priority=1))
    return objs


@pytest.mark.usefixtures("_label_score")
def test_the_best_scored_node_is_tried_first() -> None:
    ssn = run(_scored_cluster({"n-a": "1", "n-b": "5", "n-c": "3"}), load(SCORED_CONF))
    assert evictions(ssn) == [("ns/v-1", "n-b", "preempt", "ns/a-0")]
    assert pipelined(ssn) == {"ns/a-0": "n-b"}


@pytest.mark.usefixtures("_label_score")
def test_equal_scores_are_tried_in_node_name_order() -> None:
    ssn = run(_scored_cluster({"n-c": "2", "n-a": "2", "n-b": "2"}), load(SCORED_CONF))
    assert pipelined(ssn) == {"ns/a-0": "n-a"}


@pytest.mark.usefixtures("_label_score")
def test_evictions_on_a_node_that_does_not_work_out_are_rolled_back() -> None:
    # n-a scores best but is at its pod limit: evicted pods stay on the node (Releasing)
    # until they are gone, so the preemptor can never pass the pod-count predicate there.
    objs = [
        node("n-a", cpu="2", pods=2, labels={"score": "9"}),
        node("n-b", cpu="2", labels={"score": "1"}),
        queue("q1"),
        *PRIORITY_CLASSES,
        podgroup("job-a", 1, queue="q1", priority_class="high"),
        podgroup("job-b", 1, queue="q1", priority_class="low"),
        pod("a-0", group="job-a", cpu="2", priority=100),
        pod("b-0", group="job-b", node_name="n-a", priority=1),
        pod("b-1", group="job-b", node_name="n-a", priority=1),
        pod("b-2", group="job-b", node_name="n-b", cpu="2", priority=1),
    ]
    ssn = run(objs, load(SCORED_CONF))
    assert evictions(ssn) == [("ns/b-2", "n-b", "preempt", "ns/a-0")]
    assert task_of(ssn, "ns/b-0").status == TaskStatus.RUNNING
    assert task_of(ssn, "ns/b-1").status == TaskStatus.RUNNING
    assert pipelined(ssn) == {"ns/a-0": "n-b"}


# --- phase 1: the job's statement ---------------------------------------------------------


def test_a_gang_that_cannot_be_pipelined_evicts_nothing() -> None:
    objs = [
        node("n1", cpu="2"),
        queue("q1"),
        *PRIORITY_CLASSES,
        podgroup("job-a", 2, queue="q1", priority_class="high"),
        podgroup("job-b", 1, queue="q1", priority_class="low"),
        pod("a-0", group="job-a", cpu="2", priority=100),
        pod("a-1", group="job-a", cpu="2", priority=100),
        pod("b-0", group="job-b", node_name="n1", cpu="2", priority=1),
    ]
    ssn = run(objs, preempt_conf())
    assert evicted_keys(ssn) == []
    assert pipelined(ssn) == {}
    assert task_of(ssn, "ns/b-0").status == TaskStatus.RUNNING


def test_a_gang_that_can_be_pipelined_is_committed_whole() -> None:
    objs = [
        node("n1", cpu="2"),
        node("n2", cpu="2"),
        queue("q1"),
        *PRIORITY_CLASSES,
        podgroup("job-a", 2, queue="q1", priority_class="high"),
        podgroup("job-b", 1, queue="q1", priority_class="low"),
        pod("a-0", group="job-a", cpu="2", priority=100),
        pod("a-1", group="job-a", cpu="2", priority=100),
        pod("b-0", group="job-b", node_name="n1", cpu="2", priority=1),
        pod("b-1", group="job-b", node_name="n2", cpu="2", priority=1),
    ]
    ssn = run(objs, preempt_conf())
    assert sorted(evicted_keys(ssn)) == ["ns/b-0", "ns/b-1"]
    assert sorted(pipelined(ssn)) == ["ns/a-0", "ns/a-1"]
    assert sorted(pipelined(ssn).values()) == ["n1", "n2"]


def test_gang_vote_protects_a_victim_job_at_its_minimum() -> None:
    ssn = run(two_jobs(b_min=2), configuration(GANG_CONF, "preempt"))
    assert evicted_keys(ssn) == []


# --- phase 2: inside one job --------------------------------------------------------------


def test_a_job_replaces_its_low_priority_task_with_a_high_priority_one() -> None:
    objs = [
        node("n1", cpu="1"),
        queue("q1"),
        *PRIORITY_CLASSES,
        podgroup("job-a", 2, queue="q1", priority_class="mid"),
        pod("a-low", group="job-a", node_name="n1", priority=1),
        pod("a-high", group="job-a", priority=100),
    ]
    ssn = run(objs, preempt_conf())
    assert evictions(ssn) == [("ns/a-low", "n1", "preempt", "ns/a-high")]
    assert pipelined(ssn) == {"ns/a-high": "n1"}


def test_phase_two_stops_a_job_at_its_first_failure() -> None:
    # a-big cannot fit anywhere even with every victim gone; a-small, tried after it, could.
    objs = [
        node("n1", cpu="1"),
        queue("q1"),
        *PRIORITY_CLASSES,
        podgroup("job-a", 3, queue="q1", priority_class="mid"),
        pod("a-low", group="job-a", node_name="n1", priority=1),
        pod("a-big", group="job-a", cpu="8", priority=100),
        pod("a-small", group="job-a", cpu="1", priority=50),
    ]
    ssn = run(objs, preempt_conf())
    assert evicted_keys(ssn) == []
    assert pipelined(ssn) == {}


# --- victim filters -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("victim", "why"),
    [
        (pod("b-0", group="job-b", node_name="n1", cpu="2", preemptable=False), "annotated"),
        (pod("b-0", group="job-b", node_name="n1", cpu="2", deleting=True), "already leaving"),
        (pod("b-0", group="job-b", node_name="n1", cpu="2", namespace="kube-system"), "system"),
    ],
)
def test_tasks_that_may_not_be_preempted_are_left_alone(victim: Obj, why: str) -> None:
    ns = victim["metadata"]["namespace"]
    objs = [
        node("n1", cpu="2"),
        queue("q1"),
        *PRIORITY_CLASSES,
        podgroup("job-a", 1, queue="q1", priority_class="high"),
        podgroup("job-b", 1, queue="q1", priority_class="low", namespace=ns),
        pod("a-0", group="job-a", cpu="2", priority=100),
        victim,
    ]
    ssn = run(objs, preempt_conf())
    assert evicted_keys(ssn) == [], why


def test_a_best_effort_preemptor_does_not_displace_a_task_with_requests() -> None:
    objs = [
        node("n1", cpu="2", pods=1),
        queue("q1"),
        *PRIORITY_CLASSES,
        podgroup("job-a", 1, queue="q1", priority_class="high"),
        podgroup("job-b", 1, queue="q1", priority_class="low"),
        pod("a-0", group="job-a", cpu=None, memory=None, priority=100),
        pod("b-0", group="job-b", node_name="n1", priority=1),
    ]
    ssn = run(objs, preempt_conf())
    assert evicted_keys(ssn) == []


# --- preemptor eligibility ----------------------------------------------------------------


def test_preemption_policy_never_keeps_the_pod_from_preempting() -> None:
    ssn = run(two_jobs(a_policy="Never"), preempt_conf())
    assert evicted_keys(ssn) == []


def _eligibility(
    nominated: str, *, n1_pods: int = 110, victims: list[Obj] | None = None
) -> str | None:
    objs = [
        node("n1", cpu="2", pods=n1_pods),
        node("n2", cpu="2", labels={"zone": "b"}),
        queue("q1"),
        *PRIORITY_CLASSES,
        podgroup("job-a", 1, queue="q1", priority_class="high"),
        podgroup("job-b", 1, queue="q1", priority_class="low"),
        pod(
            "a-0",
            group="job-a",
            cpu="2",
            priority=100,
            nominated=nominated,
            node_selector={"zone": "a"} if nominated == "n2" else None,
        ),
        *(victims or []),
    ]
    ssn = session(objs, preempt_conf())
    return task_eligible_to_preempt(ssn, task_of(ssn, "ns/a-0"))


def test_a_nominated_node_that_vanished_makes_the_pod_wait() -> None:
    assert "not found" in (_eligibility("gone") or "")


def test_a_nominated_node_with_a_terminating_lower_priority_victim_makes_the_pod_wait() -> None:
    # n1 holds one pod at most, so the predicates fail there with a plain Unschedulable
    # (evictions could fix it) and the terminating-victim rule decides.
    terminating = pod(
        "b-0",
        group="job-b",
        node_name="n1",
        cpu="2",
        priority=1,
        deleting=True,
        disruption_target=True,
    )
    assert "terminating pod" in (_eligibility("n1", n1_pods=1, victims=[terminating]) or "")
    leaving_unrelated = pod(
        "b-0", group="job-b", node_name="n1", cpu="2", priority=1, deleting=True
    )
    assert _eligibility("n1", n1_pods=1, victims=[leaving_unrelated]) is None


def test_a_nominated_node_that_became_unusable_lets_the_pod_preempt_again() -> None:
    assert _eligibility("n2") is None


def test_a_nominated_node_that_already_fits_needs_no_preemption() -> None:
    assert "already schedulable" in (_eligibility("n1") or "")


# --- arguments and logs -------------------------------------------------------------------


def test_arguments_use_volcano_names_and_defaults() -> None:
    action = PreemptAction()
    action.initialize(Arguments({}))
    assert action.enable_predicate_error_cache is True
    assert action.enable_topology_aware_preemption is False
    assert action.topology_aware_preempt_worker_num == 16
    assert (
        action.min_candidate_nodes_percentage,
        action.min_candidate_nodes_absolute,
        action.max_candidate_nodes_absolute,
    ) == (10, 1, 100)
    action.initialize(
        Arguments(
            {
                "enableTopologyAwarePreemption": True,
                "predicateErrorCacheEnable": "false",
                "minCandidateNodesPercentage": 30,
                "minCandidateNodesAbsolute": 2,
                "maxCandidateNodesAbsolute": 5,
                "topologyAwarePreemptWorkerNum": 4,
            }
        )
    )
    assert action.enable_topology_aware_preemption is True
    assert action.enable_predicate_error_cache is False
    assert (
        action.min_candidate_nodes_percentage,
        action.min_candidate_nodes_absolute,
        action.max_candidate_nodes_absolute,
        action.topology_aware_preempt_worker_num,
    ) == (30, 2, 5, 4)


def test_key_log_lines_are_volcanos(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(v(5), logger="scheduler_core.actions")
    run(two_jobs(), preempt_conf())
    lines = [(r.levelno, r.getMessage()) for r in caplog.records]
    assert (v(5), "Enter Preempt ...") in lines
    assert (v(5), "Leaving Preempt ...") in lines
    assert (v(3), "Considering Task <ns/a-0> on Node <n1>.") in lines
    assert (v(3), "Try to preempt Task <ns/b-1> for Task <ns/a-0>") in lines
    assert (v(4), "No preemptors in Queue <q1>, break.") in lines
    preempted = [m for lvl, m in lines if m.startswith("Preempted <")]
    assert preempted == [
        "Preempted <cpu 2000.00, memory 2147483648.00, pods 2.00> for Task <ns/a-0> "
        "requested <cpu 2000.00, memory 1073741824.00, pods 1.00>."
    ]


def test_a_job_that_fails_job_valid_is_skipped_with_its_reason(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(v(4), logger="scheduler_core.actions")
    ssn = run(two_jobs(a_min=3), preempt_conf())
    assert evicted_keys(ssn) == []
    assert any(
        r.getMessage().startswith(
            "Job <ns/job-a> Queue <q1> skip preemption, reason: NotEnoughTasks, message "
        )
        and r.levelno == v(4)
        for r in caplog.records
    )


def load(text: str) -> SchedulerConfiguration:
    return load_configuration(text)
