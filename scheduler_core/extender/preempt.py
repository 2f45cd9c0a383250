"""preempt: replace kube-scheduler's priority-only victims by the engine's own.

kube-scheduler proposes, per candidate node, the lower-priority pods whose removal would let
the preemptor fit. The engine answers with a valid, minimal set under the queue rules
(same-queue preemption first, else cross-queue reclaim from over-deserved queues; gang,
DRF, priority, preemptable flags, PDBs) or leaves the node out. Nothing here evicts: the
answer is advice kube-scheduler acts on.
"""

from __future__ import annotations

import logging
from typing import Any

from scheduler_core.actions.victims import select_victims_for_node
from scheduler_core.api.task import TaskInfo
from scheduler_core.extender.accounting import QueueAccounting
from scheduler_core.extender.decisions import VictimSet
from scheduler_core.extender.filter import PodContext
from scheduler_core.framework.session import Session
from scheduler_core.logutil import v

log = logging.getLogger("scheduler_core.extender.preempt")


def gangs_broken(ssn: Session, victims: list[TaskInfo]) -> list[str]:
    """Jobs the victims would leave running below their minMember.

    Volcano's default tiers let a tier-1 gang veto fall through to tier-2 plugins, so a
    victim set can break a gang there; the extender's answer never does (DESIGN §5). Taking
    every running task of a job (a lone pod, a whole gang) preempts the job as a unit and
    leaves nothing broken behind, so it is allowed.
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


def preempt_pod(
    acct: QueueAccounting, pod: dict[str, Any], candidates: dict[str, list[str]]
) -> dict[str, VictimSet]:
    ctx = PodContext(acct, pod)
    if ctx.job is None or ctx.queue is None or not ctx.queue.is_open():
        log.log(v(3), "Pod <%s> has no usable job or queue: no victims", ctx.task.key)
        return {}
    if ctx.ssn.job_valid(ctx.job) is not None:
        log.log(
            v(3),
            "Job <%s> Queue <%s> skip preemption, reason: job is not valid",
            ctx.job.uid,
            ctx.job.queue,
        )
        return {}
    preemptor = ctx.job.tasks.get(ctx.task.uid, ctx.task)
    result: dict[str, VictimSet] = {}
    for node_name, proposed in candidates.items():
        node = ctx.ssn.nodes.get(node_name)
        if node is None:
            log.log(v(3), "Node <%s> is not in the extender's cache yet: left out", node_name)
            continue
        unknown = [uid for uid in proposed if uid not in node.tasks]
        if unknown:
            log.log(
                v(3),
                "Node <%s>: proposed victims %s are not in the extender's cache yet: left out",
                node_name,
                unknown,
            )
            continue
        log.log(v(3), "Considering Task <%s> on Node <%s>.", ctx.task.key, node_name)
        choice = select_victims_for_node(ctx.ssn, preemptor, node, proposed or None)
        if choice is None or not choice.victims:
            log.log(v(3), "Node <%s>: no valid victims for Task <%s>", node_name, ctx.task.key)
            continue
        broken = gangs_broken(ctx.ssn, choice.victims)
        if broken:
            log.log(
                v(3),
                "Node <%s>: evicting %s would leave gang(s) %s below minMember: left out",
                node_name,
                [t.key for t in choice.victims],
                broken,
            )
            continue
        for victim in choice.victims:
            log.log(v(3), "Try to preempt Task <%s> for Task <%s>", victim.key, ctx.task.key)
        result[node_name] = VictimSet(
            uids=[t.uid for t in choice.victims],
            num_pdb_violations=choice.num_pdb_violations,
            mode=choice.mode,
        )
    return result
