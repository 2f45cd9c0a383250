"""Telling the plugins of several allocations at once (``Session.fire_allocate_all``) leaves
every plugin exactly as telling them one at a time does: the queues' records and shares
(flat and hierarchical), the jobs' dominant shares and the predicates' verdicts."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler_core.api.task import TaskInfo
from scheduler_core.api.types import TaskStatus
from scheduler_core.conf import SchedulerConfiguration, default_configuration, load_configuration
from scheduler_core.framework.session import Session
from scheduler_core.plugins.drf import DrfPlugin
from scheduler_core.plugins.fairshare.charging import QueueCharging
from tests.builders import (
    CAPACITY_CONF,
    configuration,
    node,
    pod,
    pod_affinity,
    pod_term,
    podgroup,
    queue,
    selector,
    session,
)

HOST = "kubernetes.io/hostname"
HIERARCHICAL = load_configuration(
    """\
actions: ""
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: capacity
    enableHierarchy: true
- plugins:
  - name: drf
  - name: predicates
"""
)
CONFS: dict[str, SchedulerConfiguration] = {
    "default": default_configuration(),
    "capacity": configuration(CAPACITY_CONF, ""),
    "hierarchical": HIERARCHICAL,
}

#: Pending pods, each its own group: (name, queue, cpu, memory or None).
PENDING = [
    (f"p{i}", q, cpu, mem)
    for i, (q, cpu, mem) in enumerate(
        [
            ("dev", "1", None),
            ("dev", "500m", "1Gi"),
            ("prod", "2", None),
            ("ops", "300m", "512Mi"),
            ("ops", "1", None),
            ("eng", "1", None),
            ("dev", "700m", None),
            ("prod", "100m", "64Mi"),
        ]
    )
]


def cluster() -> list[dict[str, Any]]:
    objs: list[dict[str, Any]] = [
        node("n1", cpu="10", labels={HOST: "n1"}),
        node("n2", cpu="6", labels={HOST: "n2"}),
        queue("eng", capability={"cpu": "10"}, deserved={"cpu": "8"}),
        queue("dev", parent="eng", deserved={"cpu": "4"}),
        queue("prod", parent="eng", deserved={"cpu": "4"}),
        queue("ops", deserved={"cpu": "6"}),
        podgroup("run", queue="ops"),
        pod("run-0", group="run", cpu="2", node_name="n1", labels={"churn": "1"}),
    ]
    for name, queue_name, cpu, memory in PENDING:
        objs.append(podgroup(name, queue=queue_name, phase="Pending"))
        objs.append(pod(name, group=name, cpu=cpu, memory=memory, labels={"churn": "1"}))
    return objs


def _tasks(ssn: Session, chosen: list[tuple[int, str]]) -> list[TaskInfo]:
    """The session's own tasks of the chosen pending pods (each at most once), on the
    chosen node ("" for none, as an assumed pod)."""
    tasks: list[TaskInfo] = []
    seen: set[int] = set()
    for index, node_name in chosen:
        if index in seen:
            continue
        seen.add(index)
        name = PENDING[index][0]
        job = ssn.jobs[f"ns/{name}"]
        (task,) = job.tasks.values()
        task.node_name = node_name
        tasks.append(task)
    return tasks


def _allocated(ssn: Session, tasks: list[TaskInfo], *, at_once: bool) -> None:
    """Each task allocated, and put on the node it names (as a statement does; an assumed
    pod names none), then the plugins told."""
    for task in tasks:
        task.status = TaskStatus.ALLOCATED
        if task.node_name:
            ssn.nodes[task.node_name].add_task(task)
    if at_once:
        ssn.fire_allocate_all(tasks)
    else:
        for task in tasks:
            ssn.fire_allocate(task)


def _state(ssn: Session) -> dict[str, Any]:
    """What the plugins hold: every queue record's sums and share, every job's dominant
    share, and the predicates' verdict for a pod that shuns the churned pods' hosts."""
    out: dict[str, Any] = {"placements": ssn.placements}
    for plugin in ssn.plugins.values():
        if isinstance(plugin, QueueCharging):
            out[plugin.name] = {
                name: (a.allocated.milli_cpu, a.allocated.memory, a.share)
                for name, a in plugin.queue_opts.items()
            }
        if isinstance(plugin, DrfPlugin):
            out["drf"] = {uid: plugin.job_share(uid) for uid in sorted(ssn.jobs)}
    probe = session(
        [
            pod(
                "probe",
                cpu="1",
                affinity=pod_affinity(anti=[pod_term(selector({"churn": "1"}), HOST)]),
            )
        ],
        default_configuration(),
    ).jobs
    (probe_task,) = next(iter(probe.values())).tasks.values()
    out["fit"] = {
        name: None if (err := ssn.predicate(probe_task, n)) is None else err.reasons
        for name, n in sorted(ssn.nodes.items())
    }
    return out


@settings(max_examples=120, deadline=None, derandomize=True)
@given(
    conf=st.sampled_from(sorted(CONFS)),
    chosen=st.lists(
        st.tuples(st.integers(0, len(PENDING) - 1), st.sampled_from(["", "", "n1", "n2"])),
        max_size=12,
    ),
)
def test_allocating_several_at_once_leaves_every_plugin_as_one_at_a_time(
    conf: str, chosen: list[tuple[int, str]]
) -> None:
    one_by_one = session(cluster(), CONFS[conf])
    at_once = session(cluster(), CONFS[conf])
    _state(one_by_one), _state(at_once)  # (verdicts and counts remembered before the events)
    _allocated(one_by_one, _tasks(one_by_one, chosen), at_once=False)
    _allocated(at_once, _tasks(at_once, chosen), at_once=True)
    assert _state(at_once) == _state(one_by_one)


def test_nothing_to_allocate_changes_nothing() -> None:
    ssn = session(cluster(), CONFS["default"])
    before = _state(ssn)
    ssn.fire_allocate_all([])
    assert _state(ssn) == before
