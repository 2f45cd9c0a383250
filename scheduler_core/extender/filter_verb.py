"""The filter verb: may this pod start now, as far as its queue and its gang are concerned?

Node fit is kube-scheduler's business (it calls us only with nodes that passed its own
filters); ours is the queue, and for a gang that asks for a network topology, the domain its
members land in. Every node gets the same answer except for such a gang's members, and every
rejected node is listed with a reason a person can act on, never dropped: a node dropped
silently can never become a preemption candidate.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from scheduler_core.accounting.keeper import QueueAccounting
from scheduler_core.api.display import dims
from scheduler_core.api.job import JobInfo
from scheduler_core.api.node import NodeInfo
from scheduler_core.api.queue import QueueInfo
from scheduler_core.api.resource import ZERO, Resource
from scheduler_core.api.types import TaskStatus
from scheduler_core.extender.context import PodContext, PodView
from scheduler_core.extender.decisions import FilterResult
from scheduler_core.framework.status import Status, unschedulable
from scheduler_core.framework.topology_fit import DomainChoice
from scheduler_core.logutil import v

log = logging.getLogger("scheduler_core.extender.filter")
_V4 = v(4)


def unknown_node() -> Status:
    """For a node kube-scheduler offered that the cache does not hold yet."""
    return unschedulable("node-unknown", "node is not in the extender's cache yet", resolvable=True)


def not_admitted(job: JobInfo) -> str:
    """For a refusal whose plugin gave no reason."""
    return f"queue {job.queue} cannot admit job {job.uid} now"


def over_share(queue: QueueInfo) -> str:
    """For a queue refusal whose plugin gave no reason."""
    return f"queue {queue.name} cannot take more work now"


def check_pod(
    ctx: PodView, node_names: Sequence[str] | None = None, *, keep_choice: bool = True
) -> Status | None:
    """The queue and gang checks, in the order a person would debug them. ``keep_choice``:
    a topology gang's domain chosen here is kept for its other members (the verbs); off
    for the read-only views, which must not steer the verbs."""
    job, queue, ssn, task = ctx.job, ctx.queue, ctx.ssn, ctx.task
    if ctx.two_groups:
        return unschedulable("two-pod-groups", ctx.two_groups, resolvable=False)
    if job is None:
        return unschedulable(
            "podgroup-missing", f"PodGroup {ctx.job_id} does not exist (yet)", resolvable=True
        )
    if queue is None:
        return unschedulable(
            "queue-missing", f"queue {ctx.queue_name} does not exist", resolvable=False
        )
    if not queue.is_open():
        return unschedulable(
            "queue-closed", f"queue {queue.name} is {queue.state}", resolvable=False
        )
    invalid = ssn.job_valid(job)
    if invalid is not None:
        return unschedulable(
            "gang-invalid",
            f"gang {job.uid}: {invalid.message or invalid.reason_code}",
            resolvable=True,
        )
    if job.ready_task_num() == 0 and job.min_resources is not None:
        admission = ssn.job_enqueue_vote(job)
        if admission.rejected:
            return unschedulable(
                "queue-capability", admission.reason or not_admitted(job), resolvable=True
            )
    share = ssn.allocatable_vote(queue, task)
    if share.rejected:
        return unschedulable("queue-overused", share.reason or over_share(queue), resolvable=True)
    gang = gang_shortfall(ctx, node_names)
    if gang is not None:
        return unschedulable("gang-unsatisfiable", gang, resolvable=True)
    if job.network_topology is not None:
        choice = topology_choice(ctx, keep=keep_choice)
        if choice is not None and choice.domain is None and choice.hard:
            return no_domain(job, choice)
    return None


def topology_choice(ctx: PodView, *, keep: bool = True) -> DomainChoice | None:
    """The network domain the pod's gang goes to: kept per gang by the session keeper
    (``keep``), or only looked at (the kept one if it holds, else chosen and forgotten)."""
    job = ctx.job
    if job is None or job.network_topology is None:
        return None
    if keep:
        return ctx.acct.domain_choice(ctx.ssn, job)
    return ctx.acct.domains.peek(ctx.ssn, job, ctx.acct.state.decision_version)


def no_domain(job: JobInfo, choice: DomainChoice) -> Status:
    """A hard request no domain holds: every node fails, so no member starts (no partial
    gang). Resolvable when domains were tried (evictions inside one domain may make room
    for the whole gang: the preempt verb offers victims only there); unresolvable when the
    request cannot be met by any eviction (a tier the tree lacks, members already split)."""
    return unschedulable(
        "topology-no-domain",
        f"gang {job.uid} asks for one network domain ({choice.request.describe()}): "
        f"{choice.reason}",
        resolvable=bool(choice.trials),
    )


def within_domain(
    acct: QueueAccounting, job: JobInfo, choice: DomainChoice, node_names: Sequence[str]
) -> tuple[list[str], dict[str, Status]] | None:
    """Only the chosen domain's nodes pass; every other node fails with the domain named.
    None when the member is placed as any other (no domain: soft's fallback).

    Hard: the others are unresolvable, since no eviction outside the domain lets the gang
    land together. Soft: they are resolvable, and when kube-scheduler's own filters left no
    node of the domain, the member falls back to the nodes it offered (soft asks for the
    lowest tier it can get, not for staying pending). One pass over the offered names: the
    domain's handful are looked up in the cache, the thousands outside it are not; and the
    next member offered the same names copies the answer the keeper kept for the gang."""
    domain = choice.domain
    if domain is None:
        return None
    kept = acct.domains.answer(job.uid, choice, node_names)
    if kept is not None:
        inside, refused = kept[0], dict(kept[1])
    else:
        inside = list(filter(domain.nodes.__contains__, node_names))
        refused = dict.fromkeys(
            node_names,
            unschedulable(
                "topology-outside-domain",
                f"outside network domain {domain.name} of gang {job.uid}",
                resolvable=not choice.hard,
            ),
        )
        acct.domains.keep_answer(job.uid, choice, node_names, inside, refused)
    if not inside and not choice.hard:
        return None
    known = acct.state.has_node()
    passed: list[str] = []
    for name in inside:
        if known(name):
            refused.pop(name, None)
            passed.append(name)
        else:
            refused[name] = unknown_node()
    return passed, refused


def gang_shortfall(ctx: PodView, node_names: Sequence[str] | None) -> str | None:
    """A gang is held back rather than placed in part: unless there is room, right now, for
    every member still missing, none of them starts.

    "Room" is the future-idle sum over the nodes kube-scheduler offered for this pod (they
    passed its own filters: taints, affinity, fit), or over every schedulable node when no
    list is given (explain). A sum ignores how members pack onto nodes: it can pass a gang
    that later fits only in part, never reject one that fits.

    Members that already have a place count as present: besides running and bound ones,
    those filter passed a moment ago and those preemption freed a node for. kube-scheduler
    offers a nominated member only its freed node, which holds that member and no other:
    asking that node to hold the whole gang would keep every member out forever.
    """
    job = ctx.job
    assert job is not None
    if job.min_available <= 1:
        return None  # no gang (most pods): nothing below can hold it back
    placed = job.ready_task_num() + job.waiting_task_num()
    if job.min_available - placed <= 1:
        return None  # at most this pod is missing, whatever else is promised: no gang to hold
    promised = ctx.acct.promised_members(job, exclude=ctx.task.key)
    need = job.min_available - placed - len(promised)
    if need <= 1:
        return None
    pending = sorted(
        (t for t in job.tasks_with(TaskStatus.PENDING) if t.key not in promised),
        key=lambda t: t.uid != ctx.task.uid,
    )[:need]
    wanted = Resource.empty()
    for t in pending:
        wanted.add(t.resreq)
    offered: Iterable[NodeInfo]
    if node_names is None:
        offered = (n for n in ctx.ssn.nodes.values() if not n.unschedulable)
    else:
        offered = _known_nodes(ctx.ssn.nodes, node_names)
    free = room_for(wanted, offered)
    fits, names = wanted.less_equal_with_resources_name(free, ZERO)
    if fits:
        return None
    return (
        f"gang {job.uid} needs {need} more pods ({dims(wanted)}) to reach minMember "
        f"{job.min_available}, but the nodes offered have only {dims(free)} free; "
        f"insufficient {', '.join(names)}"
    )


def _known_nodes(nodes: Mapping[str, NodeInfo], names: Iterable[str]) -> Iterator[NodeInfo]:
    """The named nodes the session knows, each once, in order; lazily, as ``room_for``
    usually stops after a handful of the 5,000."""
    seen: set[str] = set()
    for name in names:
        if name not in seen and name in nodes:
            seen.add(name)
            yield nodes[name]


def room_for(wanted: Resource, nodes: Iterable[NodeInfo]) -> Resource:
    """Future idle summed over ``nodes`` on the dimensions ``wanted`` names, stopping as soon
    as it covers ``wanted``: in a cluster with room that is a handful of nodes, not 5,000."""
    names = [n for n in wanted.resource_names() if n != "pods"]
    free = dict.fromkeys(names, 0.0)
    for node in nodes:
        idle, releasing, pipelined = node.idle, node.releasing, node.pipelined
        for name in names:
            free[name] += idle.get(name) + releasing.get(name) - pipelined.get(name)
        if all(free[n] >= wanted.get(n) for n in names):
            break
    room = Resource(free.pop("cpu", 0.0), free.pop("memory", 0.0))
    for name, amount in free.items():
        room.set_scalar(name, amount)
    if wanted.scalars and "pods" in wanted.scalars:
        room.set_scalar("pods", float("inf"))  # pod slots are the predicates' business
    return room


def filter_pod(
    acct: QueueAccounting, pod: dict[str, Any], node_names: Sequence[str]
) -> FilterResult:
    # kube-scheduler's pod, as stored; one the cache has not shown judged in place
    ctx = PodContext(acct, pod, as_stored=True, in_place=True)
    key = ctx.task.key
    # A pod filtered again (its bind failed, or the scheduler retried) must not be counted
    # against itself: release its own assumption before judging it.
    acct.release(key)
    rejection = check_pod(ctx, node_names)
    if rejection is not None:
        log.log(v(3), "Filter rejected pod <%s>: %s", key, rejection.message)
        acct.parked.park(key, pod, rejection.reason_code, acct.clock())
        return FilterResult(passed=[], failed=dict.fromkeys(node_names, rejection))
    acct.parked.unpark(key)
    job = ctx.job
    assert job is not None
    placed = None
    choice = None
    passed: Sequence[str]
    if job.network_topology is not None:
        choice = acct.domain_choice(ctx.ssn, job)  # chosen by check_pod, kept: a lookup
        if choice is not None:
            placed = within_domain(acct, job, choice, node_names)
    if placed is not None:
        passed, failed = placed
        log.log(
            v(4),
            "Filter keeps pod <%s> of gang <%s> in network domain %s: %d of %d nodes",
            ctx.task.key,
            job.uid,
            choice.domain.name if choice is not None and choice.domain is not None else "-",
            len(passed),
            len(node_names),
        )
    elif acct.state.offered_all_known(node_names):
        passed, failed = node_names, {}  # (mostly remembered: a list offered again)
    else:
        known = acct.state.has_node()  # no per-request copy of 5,000 names
        passed = list(filter(known, node_names))
        unknown = unknown_node()
        failed = {n: unknown for n in node_names if not known(n)}
    if passed:
        acct.assume(ctx.task, job)
    if log.isEnabledFor(_V4):  # every pod passes here: no call made below verbosity 4
        log.log(
            _V4,
            "Filter passed pod <%s> in queue <%s> on %d nodes",
            key,
            ctx.queue_name,
            len(passed),
        )
    return FilterResult(passed=passed, failed=failed)


def parked_pods_to_retry(acct: QueueAccounting, min_interval: float) -> list[str]:
    """Keys of parked pods that filter would pass now (on any schedulable node), at most one
    nudge per pod every ``min_interval`` seconds. Pods the cache shows bound or gone are
    forgotten. Call with the cluster state's lock held."""
    now = acct.clock()
    due: list[str] = []
    for parked in acct.parked:
        task = acct.state.task(parked.key)
        if task is None or task.status != TaskStatus.PENDING:
            acct.parked.unpark(parked.key)
            continue
        if now - parked.nudged_at < min_interval:
            continue
        try:
            rejection = check_pod(PodContext(acct, parked.pod))
        except ValueError:
            acct.parked.unpark(parked.key)
            continue
        if rejection is None:
            log.log(
                v(3),
                "Pod <%s> rejected for %s may pass now: asking kube-scheduler to retry it",
                parked.key,
                parked.code,
            )
            parked.nudged_at = now
            due.append(parked.key)
    return due
