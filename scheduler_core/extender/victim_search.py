"""One preemptor's victims, node by node: the queue rules' valid and minimal set per node.

kube-scheduler asks about a hundred candidate nodes in one preempt call, and everything that
depends only on the preemptor (its job and queue, its pre-predicates, the rules' filters,
whether its queue may reclaim at all, the disruption budgets by namespace, the victims'
importance order) is the same for every one of them: ``VictimSearch`` works it out once and
then judges each node.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Literal

from scheduler_core.actions.util.victims import (
    NodeSimulation,
    SearchBudget,
    TaskFilter,
    VictimsHook,
    inter_job_filter,
    parse_start_time,
    reclaimee_filter,
    select_victims_on_node,
)
from scheduler_core.api.errors import NodeError
from scheduler_core.api.node import NodeInfo
from scheduler_core.api.pdb import PodDisruptionBudget
from scheduler_core.api.queue import QueueInfo
from scheduler_core.api.resource import ZERO
from scheduler_core.api.task import TaskInfo
from scheduler_core.api.types import PREEMPTION_POLICY_NEVER, TaskStatus
from scheduler_core.extender.decisions import NodeVictims
from scheduler_core.framework.hooks import (
    CYCLE_STATE,
    SIMULATE_ADD_TASK,
    SIMULATE_ALLOCATABLE,
    SIMULATE_REMOVE_TASK,
)
from scheduler_core.framework.session import CycleState, Session
from scheduler_core.framework.status import Status
from scheduler_core.logutil import v
from scheduler_core.plugins.fairshare.charging import QueueCharging

log = logging.getLogger("scheduler_core.extender.preempt")

#: Simulations the fewest-victims search may run over all nodes of one preempt call (a
#: node at most ``FEWEST_VICTIMS_CHECKS``): past it, nodes keep their minimal sets.
PREEMPT_FEWEST_CHECKS = 1024

Mode = Literal["preempt", "reclaim"]
Rule = tuple[TaskFilter, VictimsHook, Mode]


def select_victims_for_node(
    ssn: Session, preemptor: TaskInfo, node: NodeInfo, proposed_uids: list[str] | None
) -> NodeVictims | None:
    """The smallest valid victim set on ``node`` for a pending ``preemptor``, or None (see
    ``VictimSearch.on_node``); for one node, where there is nothing to share."""
    return VictimSearch(ssn, preemptor).on_node(node, proposed_uids)


class VictimSearch:
    """A pending ``preemptor``'s victim choice on any node of ``ssn``.

    Same-queue preempt rules are tried first, then (only when the preemptor's queue is not
    overused and may grow by this task) cross-queue reclaim rules. If kube-scheduler
    proposed victims and they already form a valid set that cannot shrink, they are kept,
    so both schedulers agree whenever the queue rules allow it; otherwise the engine's own
    set (remove lowest-value victims until the preemptor fits, reprieve the most important
    ones, then look for a set with fewer victims: ``FewestVictims``) is returned. A node
    where the preemptor fits without any eviction gets None: there is nothing to preempt
    there.

    The session is not changed: all simulation runs on copies of the node and of the
    plugins' cycle state. What a search remembers holds for the session as it is, so a
    search serves one verb call and is not kept across cluster changes.
    """

    def __init__(self, ssn: Session, preemptor: TaskInfo, *, share_queue_sums: bool = True) -> None:
        self.ssn = ssn
        self.preemptor = preemptor
        #: Why the engine cannot judge where the preemptor fits, when it cannot (see
        #: ``on_node``); None: it can.
        self.not_evaluable: Status | None = None
        #: Queue verdicts by the victims' net charges, when the plugins' what-if is only
        #: queue sums (see ``QueueSumSimulation``); None: every node simulates its own.
        self._queue_verdicts: dict[frozenset[tuple[Charge, int]], bool] | None = (
            {} if share_queue_sums and queue_sums_only(ssn) else None
        )
        self.queue: QueueInfo | None = None
        #: The fewest-victims searches' simulations, shared by every node of the search.
        self.fewest_budget = SearchBudget(PREEMPT_FEWEST_CHECKS)
        self.rules: tuple[Rule, ...] = ()
        self._may_reclaim: bool | None = None
        self._budgets: PdbBudgets | None = None
        self._moment = datetime.now(UTC)
        self._started: dict[str, datetime] = {}
        job = ssn.jobs.get(preemptor.job)
        queue = ssn.queues.get(job.queue) if job is not None else None
        if job is None or queue is None:
            log.log(v(4), "Task <%s> has no job or queue in the session: no victims", preemptor.key)
            return
        if preemptor.preemption_policy == PREEMPTION_POLICY_NEVER:
            return
        if ssn.pre_predicate(preemptor) is not None:
            record = ssn.not_evaluable.get(preemptor.key)
            if record is None:
                return
            self.not_evaluable = record[1]
        self.queue = queue
        self.rules = (
            (inter_job_filter(ssn, preemptor, job), ssn.preemptable, "preempt"),
            (reclaimee_filter(ssn, job), ssn.reclaimable, "reclaim"),
        )

    def on_node(self, node: NodeInfo, proposed_uids: list[str] | None) -> NodeVictims | None:
        """The smallest valid victim set on ``node``, most important victim first, or None;
        ``proposed_uids`` are kube-scheduler's victims there (None: it proposed none)."""
        ssn, preemptor, queue = self.ssn, self.preemptor, self.queue
        if queue is None:
            return None
        err = ssn.predicate_for_preempt(preemptor, node)
        if err is not None and not (self.not_evaluable is not None and err.not_evaluable):
            return None
        if self.not_evaluable is not None:
            return self.keep_proposed(queue, node, proposed_uids)
        for accept, hook, mode in self.rules:
            if mode == "reclaim" and not self.may_reclaim():
                return None
            victims = self._choose(queue, node, proposed_uids, accept, hook, mode)
            if victims is not None:
                return NodeVictims([t.uid for t in victims], self.budgets.violations(victims), mode)
        return None

    def keep_proposed(
        self, queue: QueueInfo, node: NodeInfo, proposed_uids: list[str] | None
    ) -> NodeVictims | None:
        """For a preemptor the engine cannot judge (a volume or device it does not model):
        kube-scheduler's own victims, unchanged, when the queue rules allow evicting every
        one of them under one rule set (same-queue preempt: victim filter, the plugins'
        vote and the queue's allocatable without them; or cross-queue reclaim: victim
        filter, the plugins' vote and the preemptor's queue may reclaim); else None.

        kube-scheduler has judged the fit itself (volumes and devices included) when it
        proposes a node, so the node is never dropped, nor a victim spared, for a fit the
        engine cannot check: only for a queue rule it can."""
        if not proposed_uids:
            return None
        tasks: list[TaskInfo] = []
        for uid in dict.fromkeys(proposed_uids):
            task = node.tasks.get(uid)
            if task is None:
                return None
            tasks.append(task)
        for accept, hook, mode in self.rules:
            if mode == "reclaim" and not self.may_reclaim():
                break
            if not all(accept(t) for t in tasks):
                continue
            if {t.uid for t in hook(self.preemptor, tasks)} != {t.uid for t in tasks}:
                continue
            if mode == "preempt":
                sim = self._simulation(queue, node.copy_sharing_tasks(), True)
                for task in tasks:
                    sim.remove(task)
                if not sim.queue_allows():
                    continue
            ordered = self.by_importance(tasks)
            log.log(
                v(3),
                "Task <%s> is not evaluable (%s): kube-scheduler's victims on <%s> kept",
                self.preemptor.key,
                "; ".join(self.not_evaluable.reasons) if self.not_evaluable else "",
                node.name,
            )
            return NodeVictims([t.uid for t in ordered], self.budgets.violations(ordered), mode)
        return None

    def may_reclaim(self) -> bool:
        """Whether the preemptor's queue may take from others: not overused, and the plugins
        let it grow by this task (the same for every node, so asked once)."""
        if self._may_reclaim is None:
            assert self.queue is not None
            ssn = self.ssn
            self._may_reclaim = not ssn.overused(self.queue) and ssn.preemptive(
                self.queue, [self.preemptor]
            )
        return self._may_reclaim

    @property
    def budgets(self) -> PdbBudgets:
        if self._budgets is None:
            self._budgets = PdbBudgets(self.ssn.snapshot.pdbs)
        return self._budgets

    def by_importance(self, tasks: Sequence[TaskInfo]) -> list[TaskInfo]:
        """``sort_by_importance`` with each start time parsed once per search."""
        started = self._started
        moment = self._moment

        def key(task: TaskInfo) -> tuple[int, datetime]:
            when = started.get(task.start_time)
            if when is None:
                when = started[task.start_time] = parse_start_time(task.start_time, moment)
            return -task.pod_priority, when

        return sorted(tasks, key=key)

    def _simulation(
        self, queue: QueueInfo, node: NodeInfo, check_allocatable: bool
    ) -> NodeSimulation:
        if self._queue_verdicts is not None:
            return QueueSumSimulation(self, queue, node, check_allocatable)
        state = self.ssn.new_cycle_state(self.preemptor)
        return NodeSimulation(self.ssn, state, self.preemptor, queue, node, check_allocatable)

    def queue_allows(self, sim: QueueSumSimulation) -> bool:
        """The plugins' simulated ``Allocatable`` for the preemptor once ``net[c]`` victims
        charged ``c`` are gone (added back when negative), worked out on the first node that
        asks and remembered for the others."""
        assert self._queue_verdicts is not None
        key = frozenset((charge, n) for charge, n in sim.net.items() if n)
        verdict = self._queue_verdicts.get(key)
        if verdict is None:
            ssn, preemptor = self.ssn, self.preemptor
            state = ssn.new_cycle_state(preemptor)
            for charge, n in sim.net.items():
                task = sim.sample[charge]
                for _ in range(n):
                    ssn.simulate_remove_task(state, preemptor, task, sim.node)
                for _ in range(-n):
                    ssn.simulate_add_task(state, preemptor, task, sim.node)
            allows = ssn.simulate_allocatable(state, sim.queue, preemptor)
            verdict = self._queue_verdicts[key] = allows
        return verdict

    def _choose(
        self,
        queue: QueueInfo,
        node: NodeInfo,
        proposed_uids: list[str] | None,
        accept: TaskFilter,
        hook: VictimsHook,
        mode: Mode,
    ) -> list[TaskInfo] | None:
        """kube-scheduler's proposal if it is a minimal valid set, else the engine's own;
        most important victim first."""
        ssn, preemptor = self.ssn, self.preemptor
        # Reclaim does not consult the preemptor's queue allocatable: taking from other
        # queues cannot change it, and Preemptive already vouched for the queue.
        check_allocatable = mode == "preempt"
        if proposed_uids:
            # The node's own accounting copied, its task objects shared: the check only
            # takes tasks off and puts them back (neither changes a task), and re-adding
            # 20-odd cloned tasks per candidate was a quarter of the verb.
            sim = self._simulation(queue, node.copy_sharing_tasks(), check_allocatable)
            kept = self.minimal_valid_set(sim, proposed_uids, accept, hook)
            if kept is not None:
                return kept
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
            fewest=True,
            fewest_budget=self.fewest_budget,
        )
        if err is not None or not victims:
            return None
        return self.by_importance([node.tasks[t.uid] for t in victims if t.uid in node.tasks])

    def minimal_valid_set(
        self, sim: NodeSimulation, uids: Sequence[str], accept: TaskFilter, hook: VictimsHook
    ) -> list[TaskInfo] | None:
        """These tasks, most important first, if evicting exactly them is allowed (filter
        and plugin hook accept every one), makes the preemptor fit, and no single one of
        them could be spared; else None. ``sim`` ends as it started, with all of them
        removed."""
        tasks: list[TaskInfo] = []
        for uid in dict.fromkeys(uids):
            task = sim.node.tasks.get(uid)
            if task is None or not accept(task):
                return None
            tasks.append(task)
        if not tasks:
            return None
        accepted = {t.uid for t in hook(sim.preemptor, tasks)}
        if accepted != {t.uid for t in tasks}:
            return None
        for task in tasks:
            sim.remove(task)
        if not sim.fits():
            return None
        ordered = self.by_importance(tasks)
        # Victims alike in what ``could_fit_with`` reads get its same answer while the
        # simulated node is unchanged; a simulation (add, then remove) starts afresh.
        known: dict[tuple[object, ...], bool] = {}
        for task in ordered:
            alike = _fit_key(task)
            could = known.get(alike)
            if could is None:
                could = known[alike] = could_fit_with(sim, task)
            if not could:
                continue  # ``fits`` would fail on the node's resources: no need to simulate
            known.clear()
            sim.add(task)
            spared = sim.fits()
            sim.remove(task)
            if spared:
                return None
        return ordered


def could_fit_with(sim: NodeSimulation, task: TaskInfo) -> bool:
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

#: What a victim's removal changes in the charging plugins' what-if: its job's queue (None
#: without a job) and its request (cpu, memory, scalars in their map's order).
Charge = tuple[str | None, float, float, tuple[tuple[str, float], ...]]


def queue_sums_only(ssn: Session) -> bool:
    """Whether every plugin taking part in simulated preemption is a queue charger
    (proportion, capacity): its what-if adds and takes a victim's request to and from its
    queue's sums (and the queue's ancestors'), whatever the node, and its simulated
    ``Allocatable`` reads only those sums. Their verdict after a set of removals then
    depends on the victims' queues and requests alone, not on the node or the order (the
    amounts are whole numbers: sums are exact in any order)."""
    fns: list[object] = [
        *ssn.hook_fns(CYCLE_STATE).values(),
        *ssn.hook_fns(SIMULATE_ADD_TASK).values(),
        *ssn.hook_fns(SIMULATE_REMOVE_TASK).values(),
        *ssn.hook_fns(SIMULATE_ALLOCATABLE).values(),
    ]
    return all(isinstance(getattr(fn, "__self__", None), QueueCharging) for fn in fns)


class QueueSumSimulation(NodeSimulation):
    """A ``NodeSimulation`` whose plugin half is shared by every node of one search.

    Tasks still leave and rejoin this node's copy (the node's resources and predicates are
    its own), but the plugins only learn the victims' net charges when the queue check
    asks, and the search answers for a set of charges it has seen on another node from
    memory: with
    the same victims' shapes on a hundred candidates, the queue arithmetic runs once
    instead of once per victim per node. Only for plugins that pass ``queue_sums_only``.
    """

    def __init__(
        self, search: VictimSearch, queue: QueueInfo, node: NodeInfo, check_allocatable: bool
    ) -> None:
        super().__init__(search.ssn, CycleState(), search.preemptor, queue, node, check_allocatable)
        self.search = search
        self.net: dict[Charge, int] = {}
        self.sample: dict[Charge, TaskInfo] = {}

    def queue_allows(self) -> bool:
        return self.search.queue_allows(self)

    def remove(self, task: TaskInfo) -> None:
        charge = self._charge(task)
        self.net[charge] = self.net.get(charge, 0) + 1
        self.node.remove_task(task)

    def add(self, task: TaskInfo) -> None:
        charge = self._charge(task)
        self.net[charge] = self.net.get(charge, 0) - 1
        self.node.add_task(task)

    def _charge(self, task: TaskInfo) -> Charge:
        job = self.ssn.jobs.get(task.job)
        req = task.resreq
        scalars = tuple(req.scalars.items()) if req.scalars else ()
        charge = (job.queue if job is not None else None, req.milli_cpu, req.memory, scalars)
        self.sample.setdefault(charge, task)
        return charge


def _fit_key(task: TaskInfo) -> tuple[object, ...]:
    """All ``could_fit_with`` reads of a task: whether its status is added apart, and its
    request (scalars in their map's order: a different order only misses a match)."""
    req = task.resreq
    scalars = tuple(req.scalars.items()) if req.scalars else ()
    return task.status in _ADDED_APART, req.milli_cpu, req.memory, scalars


class PdbBudgets:
    """The cluster's PodDisruptionBudgets by namespace (a budget only selects pods of its
    own), without the empty selectors kube-scheduler's ``filterPodsWithPDBViolation``
    passes over."""

    def __init__(self, pdbs: Sequence[PodDisruptionBudget]) -> None:
        self._by_namespace: dict[str, list[tuple[int, PodDisruptionBudget]]] = {}
        for i, pdb in enumerate(pdbs):
            if pdb.match_labels or pdb.match_expressions:
                self._by_namespace.setdefault(pdb.namespace, []).append((i, pdb))

    def violations(self, victims: Sequence[TaskInfo]) -> int:
        """How many victims would break a budget, counted as kube-scheduler does: each
        matching budget's allowance is spent victim by victim in the order given; a pod
        without labels matches nothing there."""
        left: dict[int, int] = {}
        violations = 0
        for victim in victims:
            if not victim.labels:
                continue
            violated = False
            for i, pdb in self._by_namespace.get(victim.namespace, ()):
                if not pdb.matches(victim.namespace, victim.labels):
                    continue
                allowed = left[i] = left.get(i, pdb.disruptions_allowed) - 1
                if allowed < 0:
                    violated = True
            if violated:
                violations += 1
        return violations


def count_pdb_violations(pdbs: Sequence[PodDisruptionBudget], victims: Sequence[TaskInfo]) -> int:
    """``PdbBudgets(pdbs).violations(victims)``, for one victim set."""
    return PdbBudgets(pdbs).violations(victims)
