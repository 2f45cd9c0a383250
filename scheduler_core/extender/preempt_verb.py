"""The preempt verb: replace kube-scheduler's priority-only victims by the engine's own.

kube-scheduler proposes, per candidate node, the lower-priority pods whose removal would let
the preemptor fit. The engine answers with a valid, minimal set under the queue rules
(same-queue preemption first, else cross-queue reclaim from over-deserved queues; gang,
DRF, priority, preemptable flags, PDBs) or leaves the node out. Nothing here evicts: the
answer is advice kube-scheduler acts on.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

from scheduler_core.accounting.grants import Grant
from scheduler_core.accounting.keeper import QueueAccounting
from scheduler_core.api.errors import NodeError
from scheduler_core.api.node import NodeInfo
from scheduler_core.api.resource import ZERO
from scheduler_core.api.task import TaskInfo
from scheduler_core.api.types import TaskStatus
from scheduler_core.extender.context import PodContext
from scheduler_core.extender.decisions import NodeVictims
from scheduler_core.extender.victim_search import VictimSearch
from scheduler_core.framework.session import Session
from scheduler_core.framework.topology_fit import candidate_domains
from scheduler_core.logutil import v

log = logging.getLogger("scheduler_core.extender.preempt")


def preempt_pod(
    acct: QueueAccounting, pod: dict[str, Any], candidates: dict[str, list[str]]
) -> dict[str, NodeVictims]:
    """Per candidate node, the engine's victims for ``pod``; nodes without a valid set are
    left out (kube-scheduler then never evicts there).

    Like Volcano, the verb preempts only for a starving job (fewer members placed than its
    minMember) and only when the whole job can then be placed: a gang that would still be
    short after the evictions gets none, so nothing is evicted in vain. What it hands out is
    remembered (``acct.grants``) until the cluster shows the outcome, so back-to-back calls
    never promise the same room twice, and a preemptor that asks again before its victims
    are gone is answered from its own grant only (``_answer_from_own_grant``).
    """
    ctx = PodContext(acct, pod, as_stored=True)  # kube-scheduler's pod, as stored
    if ctx.job is None or ctx.queue is None or not ctx.queue.is_open():
        log.log(v(3), "Pod <%s> has no usable job or queue: no victims", ctx.task.key)
        return {}
    job = ctx.job
    if ctx.ssn.job_valid(job) is not None:
        reason = "job is not valid"
        log.log(v(3), "Job <%s> Queue <%s> skip preemption, reason: %s", job.uid, job.queue, reason)
        return {}
    acct.grants.prune(acct.state)
    own = acct.grants.held_by(ctx.task.key)
    if own:
        return _answer_from_own_grant(ctx.task.key, own, candidates)
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
    search = VictimSearch(ctx.ssn, preemptor)
    if job.network_topology is not None:
        chosen = _one_domain_victims(acct, ctx, search, preemptor, candidates, held)
        if chosen is not None:
            for node_name, granted in chosen.items():
                _record_grant(acct, ctx.task.key, job.uid, node_name, granted)
            return chosen
    tracing = log.isEnabledFor(v(3))  # asked once: a line per victim per node otherwise
    result: dict[str, NodeVictims] = {}
    for node_name, proposed in candidates.items():
        choice = _victims_on_candidate(ctx, search, node_name, proposed, held)
        if choice is None:
            continue
        missing = job.min_available - placed - 1
        # For a preemptor the engine cannot judge, it cannot judge its gang mates either:
        # the node is not dropped on that account (kube-scheduler judged the preemptor's
        # fit; the victims still break no gang, a rule the engine can check).
        judged = search.not_evaluable is None
        if (
            missing > 0
            and judged
            and not rest_of_gang_fits(ctx, preemptor, node_name, choice, missing)
        ):
            log.log(
                v(3),
                "Node <%s>: job <%s> would still miss members after evicting %s: left out",
                node_name,
                job.uid,
                choice.uids,
            )
            continue
        if tracing:
            for uid in choice.uids:
                victim = ctx.ssn.nodes[node_name].tasks[uid]
                log.log(v(3), "Try to preempt Task <%s> for Task <%s>", victim.key, ctx.task.key)
        result[node_name] = choice
        _record_grant(acct, ctx.task.key, job.uid, node_name, choice)
    return result


def _answer_from_own_grant(
    key: str, own: dict[str, Grant], candidates: dict[str, list[str]]
) -> dict[str, NodeVictims]:
    """The answer to a preemptor that holds a grant: kube-scheduler preempts asynchronously
    and may try the same pod again before the evictions it started show. Its victims are
    already on their way out, so the only answer that evicts nothing in vain is the same
    node with the same victims (evicting a pod twice is a no-op), and only when
    kube-scheduler proposes that node again (with those victims among its own, or none, to
    let the extender choose): a preemptor holding grants on several nodes, kube-scheduler's
    choice among them not shown yet, gets none until it shows (the grants end when the
    preemptor binds or after their timeout)."""
    if len(own) > 1:
        log.log(
            v(3),
            "Pod <%s> asks again while kube-scheduler's choice among its granted nodes %s "
            "has not shown: no new victims",
            key,
            sorted(own),
        )
        return {}
    ((node_name, grant),) = own.items()
    proposed = candidates.get(node_name)
    # (An empty list asks the extender to choose, as the first answer did.)
    if proposed is None or (proposed and not set(grant.victims) <= set(proposed)):
        log.log(
            v(3),
            "Pod <%s> asks again while its victims %s on Node <%s> are being evicted: no "
            "victims elsewhere",
            key,
            list(grant.victims),
            node_name,
        )
        return {}
    log.log(v(3), "Pod <%s> asks again: the same victims on Node <%s>", key, node_name)
    return {node_name: NodeVictims(list(grant.victims), grant.num_pdb_violations, grant.mode)}


def _record_grant(
    acct: QueueAccounting, key: str, job: str, node_name: str, choice: NodeVictims
) -> None:
    acct.grants.record(
        key,
        job,
        node_name,
        choice.uids,
        num_pdb_violations=choice.num_pdb_violations,
        mode=choice.mode,
    )


def _one_domain_victims(
    acct: QueueAccounting,
    ctx: PodContext,
    search: VictimSearch,
    preemptor: TaskInfo,
    candidates: dict[str, list[str]],
    held: set[str],
) -> dict[str, NodeVictims] | None:
    """For a gang with a network topology request: victims only on the candidate nodes of
    ONE domain, the one where every member not placed yet then finds a place (the
    preemptor on that node, the others in free room or by victims of their own, all inside
    the domain) with the fewest victims in all, lowest tier first; nodes elsewhere get
    none. The domain must hold the nodes already promised to the gang's other members (a
    grant, a nomination) as well as those it runs on. No domain: no victims at all for a
    hard request. None when the job is to be answered as any other (no tree; a soft
    request no domain satisfies)."""
    ssn, job = ctx.ssn, ctx.job
    assert job is not None
    domains = candidate_domains(ssn, job)
    if domains is None:
        return None
    promised = acct.promised_members(job, exclude=ctx.task.key)
    pinned = {g.node for g in acct.grants.grants() if g.job == job.uid and g.preemptor in promised}
    pinned |= {
        t.nominated_node_name
        for t in job.tasks_with(TaskStatus.PENDING)
        if t.key in promised and t.nominated_node_name
    }
    others = sum(
        1
        for t in job.tasks_with(TaskStatus.PENDING)
        if t.uid != preemptor.uid and t.key not in promised
    )
    choices: dict[str, NodeVictims] = {}
    for node_name, proposed in candidates.items():
        choice = _victims_on_candidate(ctx, search, node_name, proposed, held)
        if choice is not None:
            choices[node_name] = choice
    judged = search.not_evaluable is None
    for _, tier_domains in domains.tiers:
        best: tuple[tuple[int, str], dict[str, NodeVictims]] | None = None
        for domain in tier_domains:
            if not pinned <= domain.nodes:
                continue
            fitting: dict[str, NodeVictims] = {}
            cost: int | None = None
            for node_name, choice in choices.items():
                if node_name not in domain.nodes:
                    continue
                rest: int | None = 0
                if judged and others:
                    rest = rest_of_gang_victims(
                        ctx, preemptor, node_name, choice, others, domain.nodes
                    )
                if rest is None:
                    continue
                fitting[node_name] = choice
                total = len(choice.uids) + rest
                cost = total if cost is None else min(cost, total)
            if cost is not None and (best is None or (cost, domain.name) < best[0]):
                best = ((cost, domain.name), fitting)
        if best is not None:
            log.log(
                v(3),
                "Job <%s>: victims for <%s> only inside domain <%s> (%d in all)",
                job.uid,
                ctx.task.key,
                best[0][1],
                best[0][0],
            )
            return best[1]
    if not domains.hard:
        return None
    log.log(
        v(3),
        "Job <%s> (%s): no domain can hold the whole gang even with victims: none for <%s>",
        job.uid,
        domains.request.describe(),
        ctx.task.key,
    )
    return {}


def _victims_on_candidate(
    ctx: PodContext, search: VictimSearch, node_name: str, proposed: list[str], held: set[str]
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
    choice = search.on_node(node, proposed or None)
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
    return rest_of_gang_victims(ctx, preemptor, node_name, choice, missing) is not None


def rest_of_gang_victims(
    ctx: PodContext,
    preemptor: TaskInfo,
    node_name: str,
    choice: NodeVictims,
    missing: int,
    within: frozenset[str] | None = None,
) -> int | None:
    """``rest_of_gang_fits``, the members placed on ``within``'s nodes only (all nodes when
    None): how many victims the other members would need in all, or None when they would
    not all find a place."""
    ssn, job = ctx.ssn, ctx.job
    assert job is not None
    promised = ctx.acct.promised_members(job, exclude=ctx.task.key)
    others = [
        t
        for t in job.tasks_with(TaskStatus.PENDING)
        if t.uid != preemptor.uid and t.key not in promised
    ][:missing]
    if len(others) < missing:
        return None
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
            if not _place_member(ssn, member, copy_of, place, taken, within):
                return None
    except NodeError:
        return None
    return len(taken) - len(choice.uids)


def _place_member(
    ssn: Session,
    member: TaskInfo,
    copy_of: Callable[[str], NodeInfo],
    place: Callable[[TaskInfo, NodeInfo, Sequence[str]], None],
    taken: list[TaskInfo],
    within: frozenset[str] | None = None,
) -> bool:
    """Free room first (no eviction at all), then the node whose victims break no gang."""
    schedulable = [n for n in ssn.nodes.values() if not n.unschedulable]
    if within is not None:
        schedulable = [n for n in schedulable if n.name in within]
    for node in schedulable:
        copy = copy_of(node.name)
        # Placed without evicting: every predicate must pass (a held host port or an
        # anti-affinity conflict is no room, though evictions might make some).
        if member.resreq.less_equal(copy.future_idle(), ZERO) and (
            ssn.predicate(member, copy) is None
        ):
            place(member, copy, ())
            return True
    search = VictimSearch(ssn, member)
    for node in schedulable:
        copy = copy_of(node.name)
        choice = search.on_node(copy, None)
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
