"""Why is this pod (or PodGroup) pending: the debugging flow a person would follow through
the scheduler's logs, as data.

The steps are asked in the order the verbs ask them: does the job exist and is it valid (gang),
is its queue open, has the queue admitted it (enqueue), does the queue's share leave room,
is there room for the whole gang, which nodes would take it, and if none, could preemption
(same queue) or reclaim (other queues) make room, with the victims per node. Every step calls
the same session hooks as filter and preempt; the overall verdict and reason are filter's own
(``check_pod``), so the reason is the one kube-scheduler printed in the pod's events.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Literal

from scheduler_core.accounting.keeper import QueueAccounting
from scheduler_core.api.job import NATIVE_SOURCE
from scheduler_core.api.node import NodeInfo
from scheduler_core.api.resource import ZERO
from scheduler_core.api.task import TaskInfo
from scheduler_core.api.types import PREEMPTION_POLICY_NEVER, TaskStatus
from scheduler_core.extender.context import PodContext
from scheduler_core.extender.filter_verb import (
    check_pod,
    gang_shortfall,
    not_admitted,
    over_share,
    topology_choice,
)
from scheduler_core.extender.preempt_verb import gangs_broken
from scheduler_core.extender.victim_search import select_victims_for_node
from scheduler_core.framework.cannot_help import CANNOT_HELP_REASON, CannotHelp, judge
from scheduler_core.framework.status import Status
from scheduler_core.framework.topology_fit import DomainChoice
from scheduler_core.insight.amounts import amounts
from scheduler_core.insight.described import described
from scheduler_core.insight.domains import domain_view, request_numbers
from scheduler_core.insight.lookup import (
    CachedPodContext,
    find_pod,
    find_podgroup,
    first_pending,
)
from scheduler_core.insight.queues import UsageView, usage_views
from scheduler_core.report import queue_attrs

Verdict = Literal["pass", "fail", "skip", "info"]

#: How many nodes the victim search examines, and how many answers it keeps, so that an
#: explanation stays fast on a 5,000-node cluster (the preempt verb only ever sees the
#: candidates kube-scheduler offers, a bounded list too).
MAX_VICTIM_NODES_EXAMINED = 64
MAX_VICTIM_NODES_SHOWN = 8
#: How many fitting node names an explanation lists.
MAX_NODES_LISTED = 10


@dataclass(slots=True)
class Step:
    name: str
    question: str
    verdict: Verdict
    rule: str
    detail: str
    numbers: dict[str, Any] = field(default_factory=dict)


@dataclass(slots=True)
class NodeVictimsView:
    node: str
    mode: str
    victims: list[str]
    pdb_violations: int


@dataclass(slots=True)
class Explanation:
    kind: str
    name: str
    pod: str | None
    job: str | None
    queue: str | None
    phase: str
    filter: Literal["pass", "reject", "n/a"]
    code: str | None
    reason: str | None = field(metadata=described("filter's reason, as kube-scheduler prints it"))
    preemption_may_help: bool | None
    summary: str
    steps: list[Step]
    victims: list[NodeVictimsView] = field(default_factory=list)
    source: str | None = field(
        default=None,
        metadata=described(
            "where the gang is defined: volcano (a Volcano PodGroup or a lone pod's group of "
            "one) or native (a Kubernetes PodGroup, scheduling.k8s.io)"
        ),
    )


def explain_cached_pod(acct: QueueAccounting, namespace: str, name: str) -> Explanation:
    """Raises ``NotFoundError`` for a pod the cache does not hold."""
    return _explain(acct, find_pod(acct, namespace, name), "Pod", f"{namespace}/{name}")


def explain_podgroup(acct: QueueAccounting, namespace: str, name: str) -> Explanation:
    """The PodGroup's verdict is that of the pending pod the engine would try first."""
    job = find_podgroup(acct, namespace, name)
    task = first_pending(acct, job)
    key = f"{namespace}/{name}"
    if task is None:
        ready = job.ready_task_num()
        return Explanation(
            kind="PodGroup",
            name=key,
            pod=None,
            job=job.uid,
            queue=job.queue,
            source=job.source,
            phase=str(job.phase),
            filter="n/a",
            code=None,
            reason=None,
            preemption_may_help=None,
            summary=f"PodGroup {key} has no pending pods ({ready} ready, minMember "
            f"{job.min_available})",
            steps=[
                Step(
                    "pod-pending",
                    "Does the job have a pending pod?",
                    "skip",
                    "status",
                    f"no pending pods: {ready} ready of {len(job.tasks)}",
                    {"ready": ready, "pods": len(job.tasks), "minAvailable": job.min_available},
                )
            ],
        )
    return _explain(acct, task, "PodGroup", key)


def explain_requested_pod(acct: QueueAccounting, pod: dict[str, Any]) -> Explanation:
    """The explanation of a pod as kube-scheduler would send it to filter (``POST
    /debug/explain``): judged as pending, as filter would judge it, in a one-off session when
    the cache has not shown it yet. Raises ``ConversionError`` for a pod the engine cannot
    read."""
    ctx = PodContext(acct, pod)
    return _explain(acct, ctx.task, "Pod", ctx.task.key, ctx)


def _explain(
    acct: QueueAccounting,
    cached: TaskInfo,
    kind: str,
    name: str,
    ctx: PodContext | None = None,
) -> Explanation:
    if cached.status != TaskStatus.PENDING:
        where = f" on node {cached.node_name}" if cached.node_name else ""
        return Explanation(
            kind=kind,
            name=name,
            pod=cached.key,
            job=cached.job,
            queue=None,
            phase=str(cached.status),
            filter="n/a",
            code=None,
            reason=None,
            preemption_may_help=None,
            summary=f"pod {cached.key} is {cached.status}{where}: not pending",
            steps=[
                Step(
                    "pod-pending",
                    "Is the pod pending?",
                    "skip",
                    "status",
                    f"the pod is {cached.status}{where}",
                    {"node": cached.node_name or None},
                )
            ],
        )
    if ctx is None:
        ctx = CachedPodContext(acct, cached)
    steps: list[Step] = []
    assumption = acct.assumed.get(cached.key)
    if assumption is not None:
        steps.append(
            Step(
                "assumed",
                "Has filter already let the pod through?",
                "info",
                "extender.assume",
                "filter passed this pod and counts it in its queue until kube-scheduler's "
                "binding shows up; the checks below count it too",
                {"queue": assumption.queue},
            )
        )
    steps.extend(_queue_steps(ctx))
    choice, topology_step = _topology_step(ctx)
    if topology_step is not None:
        steps.append(topology_step)
    rejection = check_pod(ctx, keep_choice=False)
    unjudged = _not_evaluable(ctx)
    if unjudged is not None:
        steps.append(_evaluable_step(unjudged))
    fitting, node_step = _node_step(ctx, choice)
    steps.append(node_step)
    victims: list[NodeVictimsView] = []
    stuck = rejection is not None or not fitting
    evictable = stuck and unjudged is None and (rejection is None or rejection.resolvable)
    unaided = _cannot_help(ctx) if evictable else None
    if unaided is not None:
        steps.append(_cannot_help_step(unaided))
    if evictable and unaided is None:
        victims = _victims(ctx)
        steps.extend(_eviction_steps(ctx, victims))
    else:
        if not stuck:
            why = "the pod is not stuck"
        elif unaided is not None:
            why = unaided.note
        elif unjudged is not None:
            why = (
                "the extender never evicts for a pod it cannot judge (kube-scheduler's own "
                "preemption may still, and the extender then keeps its victims)"
            )
        else:
            why = "preemption cannot change this verdict"
        steps.append(_skipped("preempt", "Could it preempt a lower-priority pod?", why))
        steps.append(_skipped("reclaim", "Could it reclaim from another queue?", why))
    summary = _summary(rejection.message if rejection else None, fitting, victims)
    if unaided is not None:
        summary += f"; {unaided.note}"
    if unjudged is not None:
        summary += (
            f"; the extender cannot judge where it fits ({'; '.join(unjudged.reasons)}) "
            "and never evicts for it"
        )
    return Explanation(
        kind=kind,
        name=name,
        pod=cached.key,
        job=ctx.job_id,
        queue=ctx.queue_name or None,
        phase=str(cached.status),
        filter="pass" if rejection is None else "reject",
        code=None if rejection is None else rejection.reason_code,
        reason=None if rejection is None else rejection.message,
        preemption_may_help=None if rejection is None else rejection.resolvable,
        summary=summary,
        steps=steps,
        victims=victims,
        source=ctx.job.source if ctx.job is not None else None,
    )


def _summary(reason: str | None, fitting: list[str], victims: list[NodeVictimsView]) -> str:
    if reason is not None:
        head = f"held back by the extender's filter: {reason}"
    elif fitting:
        return (
            f"passes the extender's filter and fits on {len(fitting)} node(s): "
            "kube-scheduler should place it on its next attempt"
        )
    else:
        head = "passes the extender's filter but fits on no node now"
    if victims:
        first = victims[0]
        return (
            f"{head}; {first.mode} could make room on {first.node} by evicting "
            f"{', '.join(first.victims)}"
        )
    return head


def _skipped(name: str, question: str, why: str) -> Step:
    return Step(name, question, "skip", name, why)


# --- the queue and gang checks (filter's, one by one) ------------------------------------------


def _queue_steps(ctx: PodContext) -> list[Step]:
    job, ssn, task = ctx.job, ctx.ssn, ctx.task
    steps = []
    if ctx.two_groups:
        steps.append(
            Step(
                "one-group",
                "Does the pod name one pod group?",
                "fail",
                "two-pod-groups",
                ctx.two_groups,
            )
        )
        return steps
    if job is None:
        steps.append(
            Step(
                "job-exists",
                "Does the pod's PodGroup exist?",
                "fail",
                "podgroup-missing",
                f"PodGroup {ctx.job_id} does not exist (yet)",
            )
        )
        return steps
    steps.append(
        Step(
            "job-exists",
            "Does the pod's PodGroup exist?",
            "pass",
            "podgroup",
            f"job {job.uid} in queue {job.queue}"
            + (" (a group of one made for a plain pod)" if job.synthesized else "")
            + (
                " (a Kubernetes PodGroup, scheduling.k8s.io)" if job.source == NATIVE_SOURCE else ""
            ),
            {"minAvailable": job.min_available, "pods": len(job.tasks)}
            | ({"topologyKeys": list(job.topology_keys)} if job.topology_keys else {}),
        )
    )
    queue = ctx.queue
    if queue is None:
        steps.append(
            Step(
                "queue-open",
                "Is the queue open?",
                "fail",
                "queue-missing",
                f"queue {ctx.queue_name} does not exist",
            )
        )
        return steps
    invalid = ssn.job_valid(job)
    steps.append(
        Step(
            "job-valid",
            "Is the job valid (gang: enough pods to reach minMember)?",
            "pass" if invalid is None else "fail",
            "gang.JobValid",
            "valid"
            if invalid is None
            else f"gang {job.uid}: {invalid.message or invalid.reason_code}",
            {"validTaskNum": job.valid_task_num(), "minAvailable": job.min_available},
        )
    )
    steps.append(
        Step(
            "queue-open",
            "Is the queue open?",
            "pass" if queue.is_open() else "fail",
            "queue.state",
            f"queue {queue.name} is {queue.state}",
            {"state": str(queue.state)},
        )
    )
    attrs = queue_attrs(ssn)
    attr = attrs.get(queue.name)
    plugin = "proportion" if "proportion" in ssn.plugins else "capacity"
    if job.ready_task_num() == 0 and job.min_resources is not None:
        admission = ssn.job_enqueue_vote(job)
        admitted = not admission.rejected
        steps.append(
            Step(
                "enqueue",
                "Has the queue admitted the job (minResources within real capability)?",
                "pass" if admitted else "fail",
                f"{plugin}.JobEnqueueable",
                "admitted" if admitted else admission.reason or not_admitted(job),
                {
                    "minResources": amounts(job.get_min_resources()),
                    "allocated": amounts(attr.allocated) if attr else None,
                    "inqueue": amounts(attr.inqueue) if attr else None,
                    "elastic": amounts(attr.elastic) if attr else None,
                    "realCapability": amounts(attr.real_capability) if attr else None,
                },
            )
        )
    else:
        steps.append(
            _skipped(
                "enqueue",
                "Has the queue admitted the job?",
                "the job already runs pods or sets no minResources: admission is not asked",
            )
        )
    share = ssn.allocatable_vote(queue, task)
    allocatable = not share.rejected
    limit = "deserved" if plugin == "proportion" else "realCapability"
    steps.append(
        Step(
            "queue-share",
            f"Does the queue stay within its {limit} with this pod?",
            "pass" if allocatable else "fail",
            f"{plugin}.Allocatable",
            "yes" if allocatable else share.reason or over_share(queue),
            {
                "request": amounts(task.resreq),
                "allocated": amounts(attr.allocated) if attr else None,
                "deserved": amounts(attr.deserved) if attr else None,
                "realCapability": amounts(attr.real_capability) if attr else None,
                "share": round(float(attr.share), 6) if attr else None,
                "overused": ssn.overused(queue) if attr else False,
                **_usage_numbers(usage_views(ssn).get(queue.name)),
            },
        )
    )
    shortfall = gang_shortfall(ctx, None)
    have = job.ready_task_num() + job.waiting_task_num() + ctx.acct.assumed_in_job(job.uid)
    steps.append(
        Step(
            "gang-room",
            "Is there room now for every gang member still missing?",
            "pass" if shortfall is None else "fail",
            "gang.minMember",
            shortfall or f"{have} of minMember {job.min_available} placed; room for the rest",
            {"placed": have, "minAvailable": job.min_available},
        )
    )
    return steps


def _topology_step(ctx: PodContext) -> tuple[DomainChoice | None, Step | None]:
    """For a gang that asks for a network topology: the domain its members go to and why
    (the tiers tried, what each could hold), or why none, or why the request is ignored.
    The choice the verbs keep when there is one; else the one the next filter would make."""
    job = ctx.job
    if job is None or job.network_topology is None:
        return None, None
    choice = topology_choice(ctx, keep=False)
    view = domain_view(ctx.ssn, job, choice)
    assert view is not None
    kept = choice is not None and ctx.acct.domains.get(job.uid) is choice
    detail = view.sentence
    if kept:
        detail += "; kept for the gang since a member's filter chose it"
    verdict: Verdict = (
        "pass" if view.state == "placed" else "fail" if view.state == "refused" else "info"
    )
    return choice, Step(
        "topology",
        "Does one network domain hold every gang member not placed yet?",
        verdict,
        "networkTopology",
        detail,
        {
            "request": request_numbers(job.network_topology),
            "state": view.state,
            "domain": view.domain,
            "tier": view.tier,
            "needed": view.needed,
            "tried": [{"tier": t.tier, "best": t.best, "holds": t.holds} for t in view.tried],
            "pinnedBy": view.pinned_by,
            "kept": kept,
        },
    )


# --- nodes ---------------------------------------------------------------------------------


def _not_evaluable(ctx: PodContext) -> Status | None:
    """Why the engine cannot judge where the pod fits (volumes, device claims, scheduling
    gates), or None when it can."""
    task = ctx.job.tasks.get(ctx.task.uid, ctx.task) if ctx.job is not None else ctx.task
    return ctx.ssn.not_evaluable_verdict(task)


def _evaluable_step(unjudged: Status) -> Step:
    """Shown only for a pod the engine cannot judge: what it cannot judge, and that the
    extender therefore never evicts for it."""
    return Step(
        "evaluable",
        "Can the extender judge where it fits?",
        "fail",
        f"predicates.{unjudged.plugin}",
        "not evaluable: " + "; ".join(unjudged.reasons),
        {"code": unjudged.code.value, "plugin": unjudged.plugin, "reasons": unjudged.reasons},
    )


def _cannot_help(ctx: PodContext) -> CannotHelp | None:
    """What no eviction can give the pod, judged as the reclaim loop judges it (the same
    words as its ``ReclaimCannotHelp`` event), or None when an eviction might help."""
    job = ctx.job
    if job is None:
        return None
    return judge(ctx.ssn, job, job.tasks.get(ctx.task.uid, ctx.task))


def _cannot_help_step(unaided: CannotHelp) -> Step:
    return Step(
        "eviction-helps",
        "Could any eviction make it fit?",
        "fail",
        CANNOT_HELP_REASON,
        unaided.note,
        {"kind": unaided.kind.value, "missing": unaided.detail},
    )


def _fit(ctx: PodContext, task: TaskInfo, node: NodeInfo) -> str | None:
    if node.unschedulable:
        return "node is unschedulable (cordoned)"
    err = ctx.ssn.predicate(task, node)
    if err is not None and err.not_evaluable:
        return "not evaluable"
    if err is not None:
        return ", ".join(err.reasons) or err.code.value
    fits, names = task.init_resreq.less_equal_with_resources_name(node.future_idle(), ZERO)
    if not fits:
        return "Insufficient " + ", ".join(names)
    return None


def _node_step(ctx: PodContext, choice: DomainChoice | None = None) -> tuple[list[str], Step]:
    """Which nodes would take the pod now (the predicates and free resources, as allocate
    checks them, inside its gang's network domain when one was chosen), and why the others
    would not, counted by reason."""
    fitting: list[str] = []
    reasons: Counter[str] = Counter()
    task = ctx.job.tasks.get(ctx.task.uid, ctx.task) if ctx.job is not None else ctx.task
    domain = choice.domain if choice is not None else None
    for node in ctx.ssn.nodes.values():
        if domain is not None and node.name not in domain.nodes:
            why: str | None = f"outside network domain {domain.name}"
        else:
            why = _fit(ctx, task, node)
        if why is None:
            fitting.append(node.name)
        else:
            reasons[why] += 1
    total = len(ctx.ssn.nodes)
    detail = f"{len(fitting)}/{total} nodes would take it"
    if reasons:
        detail += "; " + ", ".join(f"{n} {why}" for why, n in reasons.most_common(5))
    return fitting, Step(
        "nodes",
        "Which nodes would take it, and why not the others?",
        "pass" if fitting else "fail",
        "predicates + node resources",
        detail,
        {
            "fitting": len(fitting),
            "nodes": total,
            "examples": sorted(fitting)[:MAX_NODES_LISTED],
            "rejections": dict(reasons.most_common()),
        },
    )


# --- preempt and reclaim -----------------------------------------------------------------------


def _victims(ctx: PodContext) -> list[NodeVictimsView]:
    """The preempt verb's own choice per node (same-queue preempt first, then reclaim),
    over the nodes where evicting could help: those that pass the preemption predicates
    and run something."""
    job = ctx.job
    if job is None or ctx.queue is None or ctx.ssn.job_valid(job) is not None:
        return []
    preemptor = job.tasks.get(ctx.task.uid, ctx.task)
    found: list[NodeVictimsView] = []
    examined = 0
    for node in ctx.ssn.nodes.values():
        if not node.tasks:
            continue
        if examined >= MAX_VICTIM_NODES_EXAMINED or len(found) >= MAX_VICTIM_NODES_SHOWN:
            break
        examined += 1
        choice = select_victims_for_node(ctx.ssn, preemptor, node, None)
        if choice is None or not choice.uids:
            continue
        tasks = [node.tasks[uid] for uid in choice.uids]
        if gangs_broken(ctx.ssn, tasks):
            continue
        found.append(
            NodeVictimsView(
                node=node.name,
                mode=choice.mode or "preempt",
                victims=[t.key for t in tasks],
                pdb_violations=choice.num_pdb_violations,
            )
        )
    return found


def _eviction_steps(ctx: PodContext, victims: list[NodeVictimsView]) -> list[Step]:
    task, ssn, queue = ctx.task, ctx.ssn, ctx.queue
    preempt = [v for v in victims if v.mode == "preempt"]
    reclaim = [v for v in victims if v.mode == "reclaim"]
    never = task.preemption_policy == PREEMPTION_POLICY_NEVER
    steps = [
        Step(
            "preempt",
            "Could it preempt lower-priority pods of its own queue?",
            "fail" if never or not preempt else "pass",
            "preempt (priority, gang, drf, conformance)",
            "its preemptionPolicy is Never"
            if never
            else (
                f"victims on {len(preempt)} node(s), e.g. {preempt[0].node}: "
                f"{', '.join(preempt[0].victims)}"
                if preempt
                else "no node has a valid set of same-queue victims"
            ),
            {
                "priority": task.priority,
                "preemptionPolicy": task.preemption_policy or "PreemptLowerPriority",
                "nodes": {v.node: v.victims for v in preempt},
            },
        )
    ]
    if queue is None:
        steps.append(_skipped("reclaim", "Could it reclaim from another queue?", "no queue"))
        return steps
    overused = ssn.overused(queue)
    preemptive = ssn.preemptive(queue, [task])
    attrs = queue_attrs(ssn)
    lenders = sorted(
        name
        for name, other in ssn.queues.items()
        if name != queue.name and name in attrs and other.reclaimable() and ssn.overused(other)
    )
    if overused or not preemptive:
        verdict: Verdict = "fail"
        detail = (
            f"queue {queue.name} is overused itself"
            if overused
            else f"queue {queue.name} cannot grow by this pod within its share (Preemptive)"
        )
    elif not reclaim:
        verdict = "fail"
        detail = (
            "no overused reclaimable queue has victims on a node the pod could use"
            if lenders
            else "no other queue is overused and reclaimable"
        )
    else:
        verdict = "pass"
        detail = (
            f"victims on {len(reclaim)} node(s), e.g. {reclaim[0].node}: "
            f"{', '.join(reclaim[0].victims)}"
        )
        if not task.unschedulable:
            # The live loop acts only for pods kube-scheduler has tried and found no node for.
            detail += "; the reclaim loop acts once kube-scheduler has found no node for it"
    steps.append(
        Step(
            "reclaim",
            "Could it reclaim from queues above their deserved share?",
            verdict,
            "reclaim (queue Preemptive, Overused, Reclaimable)",
            detail,
            {
                "queueOverused": overused,
                "queuePreemptive": preemptive,
                "reclaimableQueues": lenders,
                "nodes": {v.node: v.victims for v in reclaim},
                "kubeSchedulerFoundNoNode": task.unschedulable,
            },
        )
    )
    return steps


def _usage_numbers(view: UsageView | None) -> dict[str, Any]:
    """What the queue's past usage did to the deserved share above, when it moved it: its
    usage share, its weight share and the deserved share its weight alone would give."""
    if view is None or not view.adjusted:
        return {}
    return {
        "usageShare": view.usage_share,
        "weightShare": view.weight_share,
        "weightedDeserved": view.weighted_deserved,
    }
