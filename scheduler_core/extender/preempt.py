"""preempt: replace kube-scheduler's priority-only victims by the engine's own.

kube-scheduler proposes, per candidate node, the lower-priority pods whose removal would let
the preemptor fit. The engine answers with a valid, minimal set under the queue rules
(same-queue preemption first, else cross-queue reclaim from over-deserved queues; gang,
DRF, priority, preemptable flags, PDBs) or leaves the node out. Nothing here evicts: the
answer is advice kube-scheduler acts on.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any, Literal

from scheduler_core.actions.util.victims import (
    NodeSimulation,
    TaskFilter,
    VictimsHook,
    inter_job_filter,
    reclaimee_filter,
    select_victims_on_node,
    sort_by_importance,
)
from scheduler_core.api.node import NodeError, NodeInfo
from scheduler_core.api.pdb import PodDisruptionBudget
from scheduler_core.api.queue import QueueInfo
from scheduler_core.api.resource import ZERO
from scheduler_core.api.task import TaskInfo
from scheduler_core.api.types import PREEMPTION_POLICY_NEVER, TaskStatus
from scheduler_core.extender.accounting import QueueAccounting
from scheduler_core.extender.context import PodContext
from scheduler_core.extender.decisions import NodeVictims
from scheduler_core.framework.session import Session
from scheduler_core.logutil import v

log = logging.getLogger("scheduler_core.extender.preempt")

Mode = Literal["preempt", "reclaim"]


def preempt_pod(
    acct: QueueAccounting, pod: dict[str, Any], candidates: dict[str, list[str]]
) -> dict[str, NodeVictims]:
    """Per candidate node, the engine's victims for ``pod``; nodes without a valid set are
    left out (kube-scheduler then never evicts there).

    Like Volcano, the verb preempts only for a starving job (fewer members placed than its
    minMember) and only when the whole job can then be placed: a gang that would still be
    short after the evictions gets none, so nothing is evicted in vain. What it hands out is
    remembered (``acct.grants``) until the cluster shows the outcome, so back-to-back calls
    never promise the same room twice.
    """
    ctx = PodContext(acct, pod)
    if ctx.job is None or ctx.queue is None or not ctx.queue.is_open():
        log.log(v(3), "Pod <%s> has no usable job or queue: no victims", ctx.task.key)
        return {}
    job = ctx.job
    if ctx.ssn.job_valid(job) is not None:
        reason = "job is not valid"
        log.log(v(3), "Job <%s> Queue <%s> skip preemption, reason: %s", job.uid, job.queue, reason)
        return {}
    acct.grants.prune(acct.state)
    placed = acct.placed_members(job, exclude=ctx.task.key)
    if placed >= job.min_available:
        log.log(
            v(3),
            "Job <%s> is not starving (%d of minMember %d placed): no victims for <%s>",
            job.uid,
            placed,
            job.min_available,
            ctx.task.key,
        )
        return {}
    preemptor = job.tasks.get(ctx.task.uid, ctx.task)
    held = acct.grants.held_by_others(ctx.task.key)
    result: dict[str, NodeVictims] = {}
    for node_name, proposed in candidates.items():
        choice = _victims_on_candidate(ctx, preemptor, node_name, proposed, held)
        if choice is None:
            continue
        missing = job.min_available - placed - 1
        if missing > 0 and not rest_of_gang_fits(ctx, preemptor, node_name, choice, missing):
            log.log(
                v(3),
                "Node <%s>: job <%s> would still miss members after evicting %s: left out",
                node_name,
                job.uid,
                choice.uids,
            )
            continue
        for uid in choice.uids:
            victim = ctx.ssn.nodes[node_name].tasks[uid]
            log.log(v(3), "Try to preempt Task <%s> for Task <%s>", victim.key, ctx.task.key)
        result[node_name] = choice
        acct.grants.record(ctx.task.key, job.uid, node_name, choice.uids)
    return result


def _victims_on_candidate(
    ctx: PodContext, preemptor: TaskInfo, node_name: str, proposed: list[str], held: set[str]
) -> NodeVictims | None:
    node = ctx.ssn.nodes.get(node_name)
    if node is None:
        log.log(v(3), "Node <%s> is not in the extender's cache yet: left out", node_name)
        return None
    if node_name in held:
        log.log(v(3), "Node <%s>: its freed room is promised to another preemptor", node_name)
        return None
    unknown = [uid for uid in proposed if uid not in node.tasks]
    if unknown:
        log.log(
            v(3),
            "Node <%s>: proposed victims %s are not in the extender's cache yet: left out",
            node_name,
            unknown,
        )
        return None
    log.log(v(3), "Considering Task <%s> on Node <%s>.", ctx.task.key, node_name)
    choice = select_victims_for_node(ctx.ssn, preemptor, node, proposed or None)
    if choice is None or not choice.uids:
        log.log(v(3), "Node <%s>: no valid victims for Task <%s>", node_name, ctx.task.key)
        return None
    broken = gangs_broken(ctx.ssn, [node.tasks[uid] for uid in choice.uids])
    if broken:
        log.log(
            v(3),
            "Node <%s>: evicting %s would leave gang(s) %s below minMember: left out",
            node_name,
            choice.uids,
            broken,
        )
        return None
    return choice


def rest_of_gang_fits(
    ctx: PodContext, preemptor: TaskInfo, node_name: str, choice: NodeVictims, missing: int
) -> bool:
    """Whether ``missing`` more pending members of the preemptor's job find a place once
    this preemptor takes ``node_name`` with ``choice``'s victims: in free room, or by
    victims of their own that break no gang, on copies of the nodes (the session is not
    changed). Members placed before the evictions would otherwise hold their resources
    while the gang still cannot start."""
    ssn, job = ctx.ssn, ctx.job
    assert job is not None
    promised = ctx.acct.promised_members(job, exclude=ctx.task.key)
    others = [
        t
        for t in job.tasks_with(TaskStatus.PENDING)
        if t.uid != preemptor.uid and t.key not in promised
    ][:missing]
    if len(others) < missing:
        return False
    copies: dict[str, NodeInfo] = {}

    def copy_of(name: str) -> NodeInfo:
        if name not in copies:
            copies[name] = ssn.nodes[name].clone()
        return copies[name]

    taken: list[TaskInfo] = []

    def place(member: TaskInfo, node: NodeInfo, victims: Sequence[str]) -> None:
        for uid in victims:
            victim = node.tasks[uid]
            taken.append(victim)
            node.remove_task(victim)
        ghost = member.clone()
        ghost.status = TaskStatus.PIPELINED
        ghost.node_name = node.name
        node.add_task(ghost)

    try:
        place(preemptor, copy_of(node_name), choice.uids)
        for member in others:
            if not _place_member(ssn, member, copy_of, place, taken):
                return False
    except NodeError:
        return False
    return True


def _place_member(
    ssn: Session,
    member: TaskInfo,
    copy_of: Callable[[str], NodeInfo],
    place: Callable[[TaskInfo, NodeInfo, Sequence[str]], None],
    taken: list[TaskInfo],
) -> bool:
    """Free room first (no eviction at all), then the node whose victims break no gang."""
    schedulable = [n for n in ssn.nodes.values() if not n.unschedulable]
    for node in schedulable:
        copy = copy_of(node.name)
        if member.resreq.less_equal(copy.future_idle(), ZERO) and (
            ssn.predicate_for_preempt(member, copy) is None
        ):
            place(member, copy, ())
            return True
    for node in schedulable:
        copy = copy_of(node.name)
        choice = select_victims_for_node(ssn, member, copy, None)
        if choice is None or not choice.uids:
            continue
        if gangs_broken(ssn, [*taken, *(copy.tasks[uid] for uid in choice.uids)]):
            continue
        place(member, copy, choice.uids)
        return True
    return False


def gangs_broken(ssn: Session, victims: list[TaskInfo]) -> list[str]:
    """Jobs the victims would leave running below their minMember.

    Volcano's default tiers let a tier-1 gang veto fall through to tier-2 plugins, so a
    victim set can break a gang there; the extender's answer never does: kube-scheduler
    evicts what we name at once, and a gang left below minMember holds its resources
    without being able to run. Taking every running task of a job (a lone pod, a whole
    gang) preempts the job as a unit and leaves nothing broken behind, so it is allowed.
    """
    taken: dict[str, int] = {}
    for victim in victims:
        taken[victim.job] = taken.get(victim.job, 0) + 1
    broken = []
    for job_id, count in taken.items():
        job = ssn.jobs.get(job_id)
        left = job.ready_task_num() - count if job is not None else 0
        if job is not None and 0 < left < job.min_available:
            broken.append(job_id)
    return broken


# --- one node -----------------------------------------------------------------------------


def select_victims_for_node(
    ssn: Session, preemptor: TaskInfo, node: NodeInfo, proposed_uids: list[str] | None
) -> NodeVictims | None:
    """The smallest valid victim set on ``node`` for a pending ``preemptor``, or None.

    Same-queue preempt rules are tried first, then (only when the preemptor's queue is not
    overused and may grow by this task) cross-queue reclaim rules. If kube-scheduler
    proposed victims (``proposed_uids``) and they already form a valid set that cannot
    shrink, they are kept, so both schedulers agree whenever the queue rules allow it;
    otherwise the engine's own set (remove lowest-value victims until the preemptor fits,
    then reprieve the most important ones) is returned. A node where the preemptor fits
    without any eviction gets None: there is nothing to preempt there.

    The session is not changed: all simulation runs on a clone of the node and of the
    plugins' cycle state.
    """
    job = ssn.jobs.get(preemptor.job)
    queue = ssn.queues.get(job.queue) if job is not None else None
    if job is None or queue is None:
        log.log(v(4), "Task <%s> has no job or queue in the session: no victims", preemptor.key)
        return None
    if preemptor.preemption_policy == PREEMPTION_POLICY_NEVER:
        return None
    if ssn.pre_predicate(preemptor) is not None:
        return None
    if ssn.predicate_for_preempt(preemptor, node) is not None:
        return None

    rules: tuple[tuple[TaskFilter, VictimsHook, Mode], ...] = (
        (inter_job_filter(ssn, preemptor, job), ssn.preemptable, "preempt"),
        (reclaimee_filter(ssn, job), ssn.reclaimable, "reclaim"),
    )
    for accept, hook, mode in rules:
        if mode == "reclaim" and (ssn.overused(queue) or not ssn.preemptive(queue, [preemptor])):
            return None
        victims = _choose_on_node(ssn, preemptor, queue, node, proposed_uids, accept, hook, mode)
        if victims is not None:
            return NodeVictims(
                [t.uid for t in victims], count_pdb_violations(ssn.snapshot.pdbs, victims), mode
            )
    return None


def _choose_on_node(
    ssn: Session,
    preemptor: TaskInfo,
    queue: QueueInfo,
    node: NodeInfo,
    proposed_uids: list[str] | None,
    accept: TaskFilter,
    hook: VictimsHook,
    mode: Mode,
) -> list[TaskInfo] | None:
    """kube-scheduler's proposal if it is a minimal valid set, else the engine's own; most
    important victim first."""
    # Reclaim does not consult the preemptor's queue allocatable: taking from other queues
    # cannot change it, and Preemptive already vouched for the queue.
    check_allocatable = mode == "preempt"
    chosen: list[TaskInfo] | None = None
    if proposed_uids:
        # The node's own accounting copied, its task objects shared: the check only takes
        # tasks off and puts them back (neither changes a task), and re-adding 20-odd
        # cloned tasks per candidate was a quarter of the verb.
        sim = NodeSimulation(
            ssn,
            ssn.new_cycle_state(preemptor),
            preemptor,
            queue,
            node.copy_sharing_tasks(),
            check_allocatable,
        )
        if is_minimal_valid_set(sim, proposed_uids, accept, hook):
            chosen = [node.tasks[uid] for uid in dict.fromkeys(proposed_uids)]
    if chosen is None:
        try:
            copy = node.clone()
        except NodeError:
            return None
        victims, err = select_victims_on_node(
            ssn,
            ssn.new_cycle_state(preemptor),
            preemptor,
            queue,
            copy,
            accept,
            victims_fn=hook,
            check_allocatable=check_allocatable,
            require_fit=True,
        )
        if err is not None or not victims:
            return None
        chosen = [node.tasks[t.uid] for t in victims if t.uid in node.tasks]
    return sort_by_importance(chosen)


def is_minimal_valid_set(
    sim: NodeSimulation, uids: Sequence[str], accept: TaskFilter, hook: VictimsHook
) -> bool:
    """True if evicting exactly these tasks is allowed (filter and plugin hook accept
    every one), makes the preemptor fit, and no single one of them could be spared."""
    tasks: list[TaskInfo] = []
    for uid in dict.fromkeys(uids):
        task = sim.node.tasks.get(uid)
        if task is None or not accept(task):
            return False
        tasks.append(task)
    if not tasks:
        return False
    accepted = {t.uid for t in hook(sim.preemptor, tasks)}
    if accepted != {t.uid for t in tasks}:
        return False
    for task in tasks:
        sim.remove(task)
    if not sim.fits():
        return False
    for task in sort_by_importance(tasks):
        if not _could_fit_with(sim, task):
            continue  # ``fits`` would fail on the node's resources: no need to simulate
        sim.add(task)
        spared = sim.fits()
        sim.remove(task)
        if spared:
            return False
    return True


def _could_fit_with(sim: NodeSimulation, task: TaskInfo) -> bool:
    """False when the preemptor surely would not fit the node with ``task`` back on it:
    the future idle ``sim.add(task)`` would leave, computed with the same operations in the
    same order, is short of the request (the first thing ``fits`` checks after the queue).
    Tasks whose status ``add_task`` treats apart (releasing, pipelined, binding), and
    amounts that would go negative, always take the full simulation. Skipping
    add-then-remove leaves the simulation as it was (amounts are whole numbers: adding and
    taking back a request is exact)."""
    node = sim.node
    if task.status in _ADDED_APART or not task.resreq.less_equal(node.idle, ZERO):
        return True  # (a shortfall is logged by the simulation itself, as before)
    available = node.idle.clone().sub_without_assert(task.resreq).add(node.releasing)
    if not node.pipelined.less_equal(available, ZERO):
        return True
    return sim.preemptor.init_resreq.less_equal(available.sub_without_assert(node.pipelined), ZERO)


_ADDED_APART = frozenset({TaskStatus.RELEASING, TaskStatus.PIPELINED, TaskStatus.BINDING})


def count_pdb_violations(pdbs: Sequence[PodDisruptionBudget], victims: Sequence[TaskInfo]) -> int:
    """How many victims would break a PodDisruptionBudget, counted as kube-scheduler does
    (``filterPodsWithPDBViolation``): each matching budget's allowance is spent victim by
    victim in the order given; a pod without labels, or a budget with an empty selector,
    matches nothing there."""
    allowed = [pdb.disruptions_allowed for pdb in pdbs]
    violations = 0
    for victim in victims:
        if not victim.labels:
            continue
        violated = False
        for i, pdb in enumerate(pdbs):
            if not pdb.match_labels and not pdb.match_expressions:
                continue
            if not pdb.matches(victim.namespace, victim.labels):
                continue
            allowed[i] -= 1
            if allowed[i] < 0:
                violated = True
        if violated:
            violations += 1
    return violations
