"""Session: one scheduling cycle over a snapshot, with Volcano's tiered plugin hooks.

Plugins fill the hooks declared in ``hooks.py`` on session open; every ``Session`` method
below combines the enabled hooks exactly as Volcano's ``session_plugins.go`` does (per-tier
intersection for victims, votes for pipelined/enqueueable, first-tier answer for starving).
Actions only ever talk to plugins through these methods.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, TypeVar

import numpy as np

from scheduler_core.api.job import JobInfo
from scheduler_core.api.node import NodeInfo
from scheduler_core.api.queue import QueueInfo
from scheduler_core.api.resource import Resource
from scheduler_core.api.snapshot import ClusterSnapshot
from scheduler_core.api.task import TaskInfo
from scheduler_core.api.topology import EMPTY_TOPOLOGY, Topology
from scheduler_core.api.types import PodGroupPhase
from scheduler_core.conf import SchedulerConfiguration, Tier
from scheduler_core.framework.cannot_help_verdict import CannotHelp
from scheduler_core.framework.fit import PERMITTED, Vote
from scheduler_core.framework.hooks import (
    ADJUST_WEIGHTS,
    ALLOCATABLE,
    BATCH_NODE_ORDER,
    CYCLE_STATE,
    JOB_ENQUEUEABLE,
    JOB_ENQUEUED,
    JOB_ORDER,
    JOB_ORDER_KEY,
    JOB_PIPELINED,
    JOB_READY,
    JOB_STARVING,
    JOB_VALID,
    NODE_ORDER,
    OVERUSED,
    PRE_PREDICATE,
    PREDICATE,
    PREEMPTABLE,
    PREEMPTIVE,
    PREEMPTOR_KEY,
    QUEUE_ORDER,
    QUEUE_SHARE,
    RECLAIMABLE,
    SIMULATE_ADD_TASK,
    SIMULATE_ALLOCATABLE,
    SIMULATE_REMOVE_TASK,
    SIMULATION_FLAGS,
    TASK_ORDER,
    VICTIM_QUEUE_ORDER,
    CompareFn,
    Hook,
    VictimsFn,
    WeightAdjustment,
)
from scheduler_core.framework.hooks import CycleState as CycleState
from scheduler_core.framework.hooks import QueueShare as QueueShare
from scheduler_core.framework.memo import SessionMemos
from scheduler_core.framework.node_scores import FloatArray, NodeScoreArray
from scheduler_core.framework.priority_queue import PriorityQueue
from scheduler_core.framework.registry import AnyPlugin
from scheduler_core.framework.status import Status

log = logging.getLogger("scheduler_core.session")

#: ``Session.preemptor_key``'s functions when a plugin that votes on victims gives no key.
_NO_KEY: list[Any] = []

F = TypeVar("F")
T = TypeVar("T")


@dataclass(slots=True)
class EventHandler:
    """Plugins keep queue/job ``allocated`` current through these callbacks."""

    allocate: Callable[[TaskInfo], None] | None = None
    deallocate: Callable[[TaskInfo], None] | None = None
    #: ``allocate`` for several tasks at once, leaving the plugin exactly as allocating each
    #: in turn would (the accounting session charges its open assumptions back this way
    #: after following the cluster: tens of them on a busy queue, before most verb calls).
    #: Without it, ``allocate`` is called for each task.
    allocate_all: Callable[[Sequence[TaskInfo]], None] | None = None
    #: After the plugin's follow step (``Plugin.follow``), the open assumptions of the
    #: changed queues, each charged to the plugin before it: charge again what the step
    #: forgot of them. A plugin whose step forgets only some (drf keeps the records of the
    #: jobs whose sums did not move) takes only those. Without it, ``allocate_all``.
    charge_back: Callable[[Sequence[TaskInfo]], None] | None = None


@dataclass(slots=True)
class Eviction:
    """An eviction that a committed statement made effective."""

    task: TaskInfo
    node: str
    reason: str
    preemptor: TaskInfo | None


@dataclass
class Session:
    snapshot: ClusterSnapshot
    conf: SchedulerConfiguration
    uid: int = 0
    plugins: dict[str, AnyPlugin] = field(default_factory=dict)
    event_handlers: list[EventHandler] = field(default_factory=list)
    evictions: list[Eviction] = field(default_factory=list)
    bound: list[TaskInfo] = field(default_factory=list)
    total_resource: Resource = field(default_factory=Resource.empty)
    #: No statement will change a job here (the extender's accounting sessions): plugins may
    #: derive per-job state on first use instead of for every job at open.
    read_only: bool = False
    #: The only jobs the actions may schedule (admit, place, or preempt/reclaim for), or
    #: None for every job. A what-if asking "what if I submit this" sets it to the
    #: submitted jobs: every other job stays as it is, yet still counts for the queues'
    #: shares and may be a victim. Volcano has no such knob; it never changes a decision
    #: for the jobs it lets through.
    schedulable: frozenset[str] | None = None
    #: The jobs and nodes are private but their task objects are shared with the cache (a
    #: ``ClusterState.fork``): a statement takes a private copy of a task (``own``) before
    #: it changes one.
    shared_tasks: bool = False
    #: The time ages are judged at (a pod's minimum runtime), when the caller knows a better
    #: clock than the local one (the live loop passes the API server's); None: now, locally.
    now: datetime | None = None
    _owned: dict[str, TaskInfo] = field(default_factory=dict)
    #: How many times a task was placed or taken off a node (every allocate and deallocate
    #: event): what an action derived from the nodes holds while this stays the same.
    placements: int = 0
    #: task key -> why the engine cannot judge where that task fits, for the tasks a
    #: pre-predicate found so while actions or verbs considered them (the reclaim loop
    #: reports them as events, the preempt verb keeps kube-scheduler's victims for them).
    not_evaluable: dict[str, tuple[TaskInfo, Status]] = field(default_factory=dict)
    #: job uid -> (its waiting members, the sentence) for the gangs with a network topology
    #: request that reclaim would not evict for because no single domain could hold the
    #: whole gang even with the victims the queue rules allow (the reclaim loop tells them).
    no_domain: dict[str, tuple[tuple[TaskInfo, ...], str]] = field(default_factory=dict)
    #: task key -> why no eviction can help that task (``framework/cannot_help.py``), for
    #: the waiting tasks the actions found no victims for and judged so (the reclaim loop
    #: reports them as events).
    cannot_help: dict[str, tuple[TaskInfo, CannotHelp]] = field(default_factory=dict)

    #: hook -> plugin name -> function, filled by the plugins' ``on_session_open``
    _hooks: dict[Hook[Any], dict[str, Any]] = field(default_factory=dict)
    #: hook -> per tier, the functions of the plugins with the hook's flag on; worked out on
    #: a hook's first use after its last registration, not on every call
    _tiers: dict[Hook[Any], list[list[Any]]] = field(default_factory=dict)
    #: the same, the tiers run together: for the hooks every plugin answers in turn
    _flat: dict[Hook[Any], list[Any]] = field(default_factory=dict)
    #: ``preemptor_key``'s functions, worked out on first use after the hooks last changed
    _preemptor_keys: list[Callable[[TaskInfo], Hashable]] | None = None
    #: plugins whose simulate functions take part in simulated preemption
    simulating: frozenset[str] = frozenset()
    #: What plugins remember across the sessions of one owner (``framework/memo.py``).
    memos: SessionMemos = field(default_factory=SessionMemos)
    #: What plugins share within this session only (e.g. one node table for the scorers),
    #: gone with the session.
    shared: SessionMemos = field(default_factory=SessionMemos)

    #: What ``kept`` answered of each job, and the session state it answered in.
    _kept: dict[str, dict[str, tuple[JobInfo, PodGroupPhase, Any]]] = field(default_factory=dict)
    _kept_at: tuple[int, int, int] = (-1, -1, -1)

    _uids = itertools.count(1)

    def __post_init__(self) -> None:
        self.uid = next(self._uids)
        self.simulating = frozenset(
            option.name
            for tier in self.conf.tiers
            for option in tier.plugins
            if any(option.enabled(flag) for flag in SIMULATION_FLAGS)
        )
        if self.snapshot.total_allocatable is not None:
            self.total_resource = self.snapshot.total_allocatable.clone()
        else:
            total = Resource.empty()
            for node in self.snapshot.nodes.values():
                total.add(node.allocatable)
            self.total_resource = total

    # --- convenient views ---------------------------------------------------------------

    @property
    def jobs(self) -> dict[str, JobInfo]:
        return self.snapshot.jobs

    @property
    def nodes(self) -> dict[str, NodeInfo]:
        return self.snapshot.nodes

    def own(self, task: TaskInfo) -> TaskInfo:
        """The session's own copy of ``task``, to change: ``task`` itself unless the tasks
        are shared; else a clone, put in the place of the shared object in its job and on
        its node, so that whoever finds it there from now on finds the copy."""
        if not self.shared_tasks:
            return task
        mine = self._owned.get(task.uid)
        if mine is not None:
            return mine
        mine = task.clone()
        self._owned[task.uid] = mine
        job = self.jobs.get(task.job)
        if job is not None and task.uid in job.tasks:
            job.replace_task(mine)
        node = self.nodes.get(task.node_name)
        if node is not None and task.uid in node.tasks:
            node.tasks[task.uid] = mine
        return mine

    def schedulable_jobs(self) -> list[JobInfo]:
        """The jobs the actions consider, in the snapshot's order (see ``schedulable``)."""
        if self.schedulable is None:
            return list(self.jobs.values())
        return [job for uid, job in self.jobs.items() if uid in self.schedulable]

    @property
    def queues(self) -> dict[str, QueueInfo]:
        return self.snapshot.queues

    @property
    def topology(self) -> Topology:
        """The network topology gangs with a request are placed in; empty when requests
        are turned off in the configuration, so that no placement reads a tree then."""
        if not self.conf.network_topology.enabled:
            return EMPTY_TOPOLOGY
        return self.snapshot.topology

    @property
    def tiers(self) -> list[Tier]:
        return self.conf.tiers

    def moves(self) -> tuple[int, int, int]:
        """A stamp of what the session changed so far: its placements, evictions and bound
        tasks. Equal stamps mean nothing was placed, evicted or committed in between, so an
        answer derived from the session's jobs and nodes then still holds (``kept``, the
        actions' kept idle room and reclaim's kept queue votes)."""
        return (self.placements, len(self.evictions), len(self.bound))

    def kept(self, what: str, job: JobInfo, ask: Callable[[JobInfo], T]) -> T:
        """``ask(job)``, asked once while the session's jobs stand as they are: the answer is
        kept, under ``what``, until the session places, evicts or commits anything, or the
        job's phase moves (an action admits a job without any event).

        For the job-level questions the plugins answer from the job's tasks and their own
        records (whether it starves, is valid, is pipelined): those change only by a
        statement's operations (each fires a placement event, ``placements``), by a commit
        (an eviction recorded, a task bound) or by the phase. Preempt and reclaim ask each of
        ten thousand waiting jobs these, each action again. A read-only session (its jobs the
        live cache's, changed by events) asks every time."""
        if self.read_only:
            return ask(job)
        at = self.moves()
        if at != self._kept_at:
            self._kept = {}
            self._kept_at = at
        answers = self._kept.get(what)
        if answers is None:
            answers = self._kept[what] = {}
        entry = answers.get(job.uid)
        if entry is not None and entry[0] is job and entry[1] is job.phase:
            answer: T = entry[2]
            return answer
        answer = ask(job)
        answers[job.uid] = (job, job.phase, answer)
        return answer

    def release(self) -> None:
        """Let go of the plugins, their hooks and handlers, once the session is closed and
        will not be asked again. They refer back to the session (a bound method, a closure
        over it), which ties the session and the snapshot it holds into a reference cycle:
        left so, at ten thousand waiting jobs, the first collection after a reclaim cycle
        walks every job and node the cycle copied, to find them garbage. Released, they are
        freed as soon as their last holder lets go."""
        self.plugins.clear()
        self.event_handlers.clear()
        self._hooks.clear()
        self._tiers.clear()
        self._flat.clear()
        self._preemptor_keys = None
        self.shared = SessionMemos()
        self._kept = {}

    def add_event_handler(self, handler: EventHandler) -> None:
        self.event_handlers.append(handler)

    def fire_allocate(self, task: TaskInfo) -> None:
        self.placements += 1
        for handler in self.event_handlers:
            if handler.allocate is not None:
                handler.allocate(task)

    def fire_allocate_all(self, tasks: Sequence[TaskInfo]) -> None:
        """``fire_allocate`` of each of ``tasks`` in turn, each handler told of all of them
        at once where it can take them so (``EventHandler.allocate_all``). Handler by
        handler rather than task by task gives the same state: a handler keeps only its own
        plugin's, and reads no other's."""
        self._allocate_all(tasks, charge_back=False)

    def fire_charge_back(self, tasks: Sequence[TaskInfo]) -> None:
        """``fire_allocate_all`` of the open assumptions charged back after a follow, each
        handler taking them as its follow step left it (``EventHandler.charge_back``)."""
        self._allocate_all(tasks, charge_back=True)

    def _allocate_all(self, tasks: Sequence[TaskInfo], *, charge_back: bool) -> None:
        if not tasks:
            return
        self.placements += len(tasks)
        for handler in self.event_handlers:
            take = handler.charge_back if charge_back else None
            if take is None:
                take = handler.allocate_all
            if take is not None:
                take(tasks)
            elif handler.allocate is not None:
                for task in tasks:
                    handler.allocate(task)

    def fire_deallocate(self, task: TaskInfo) -> None:
        self.placements += 1
        for handler in self.event_handlers:
            if handler.deallocate is not None:
                handler.deallocate(task)

    # --- hooks ---------------------------------------------------------------------------

    def add_hook(self, hook: Hook[F], plugin: str, fn: F) -> None:
        """Fill ``hook`` for ``plugin`` (replacing what it registered before)."""
        self._hooks.setdefault(hook, {})[plugin] = fn
        self._tiers.pop(hook, None)
        self._flat.pop(hook, None)
        if hook is PREEMPTABLE or hook is PREEMPTOR_KEY:
            self._preemptor_keys = None

    def hook_fns(self, hook: Hook[F]) -> Mapping[str, F]:
        """Plugin name -> the function it registered for ``hook`` (tiers not applied)."""
        return self._hooks.get(hook, {})

    def _tiered(self, hook: Hook[F]) -> list[list[F]]:
        """Per tier, the functions of plugins that filled ``hook`` and have its flag on."""
        tiers = self._tiers.get(hook)
        if tiers is None:
            if not hook.tiered:
                raise ValueError(f"{hook} is not dispatched by tier")
            fns = self._hooks.get(hook, {})
            flag = hook.flag
            tiers = [
                [
                    fns[option.name]
                    for option in tier.plugins
                    if option.name in fns and (flag is None or option.enabled(flag))
                ]
                for tier in self.conf.tiers
            ]
            self._tiers[hook] = tiers
        return tiers

    def _all(self, hook: Hook[F]) -> list[F]:
        """Every tier's functions for ``hook``, in tier order: kept as one list, as the
        job checks ask for them hundreds of thousands of times a cycle at 10,000 jobs."""
        flat = self._flat.get(hook)
        if flat is None:
            flat = self._flat[hook] = [fn for fns in self._tiered(hook) for fn in fns]
        return flat

    def _victims(
        self, hook: Hook[VictimsFn], evictor: TaskInfo, evictees: list[TaskInfo]
    ) -> list[TaskInfo]:
        """Tiered intersection: a plugin answering with no victims vetoes its tier, and the
        first tier that reaches a non-empty verdict decides."""
        for fns in self._tiered(hook):
            victims: list[TaskInfo] | None = None
            for fn in fns:
                candidates, vote = fn(evictor, evictees)
                if vote == 0:
                    continue
                if not candidates:
                    victims = None
                    break
                if victims is None:
                    victims = list(candidates)
                else:
                    keep = {c.uid for c in candidates}
                    # An empty intersection stays empty for the rest of the tier: every
                    # plugin that voted vetoed the others' victims. (Volcano's newest code
                    # restarts the list from the next plugin's vote, a nil-slice accident that
                    # drops earlier vetoes, e.g. gang's; its older code and its comments keep
                    # the veto, and so do we: no victim may break a gang, whose
                    # survivors would otherwise hold resources without being able to run.)
                    victims = [v for v in victims if v.uid in keep]
            if victims:
                return victims
        return []

    # --- victim hooks -------------------------------------------------------------------

    def preemptable(self, preemptor: TaskInfo, preemptees: list[TaskInfo]) -> list[TaskInfo]:
        return self._victims(PREEMPTABLE, preemptor, preemptees)

    def preemptor_key(self, preemptor: TaskInfo) -> tuple[Hashable, ...] | None:
        """What ``preemptable`` reads of ``preemptor`` when every preemptee is of another
        job: the keys of the plugins whose preemptable hook is on, in tier order. Two
        preemptors with equal keys get the same victims among the same such preemptees in
        the same session state. None when such a plugin gives no key."""
        fns = self._preemptor_keys
        if fns is None:
            fns = self._preemptor_keys = self._preemptor_key_fns()
        if fns is _NO_KEY:
            return None
        return tuple(fn(preemptor) for fn in fns)

    def _preemptor_key_fns(self) -> list[Callable[[TaskInfo], Hashable]]:
        """``preemptor_key``'s functions in tier order, worked out once (it is asked once
        per preemptor); ``_NO_KEY`` when a plugin whose preemptable hook is on gives none."""
        victims = self._hooks.get(PREEMPTABLE, {})
        keys = self._hooks.get(PREEMPTOR_KEY, {})
        flag = PREEMPTABLE.flag
        fns: list[Callable[[TaskInfo], Hashable]] = []
        for tier in self.conf.tiers:
            for option in tier.plugins:
                if option.name not in victims or not (flag is None or option.enabled(flag)):
                    continue
                fn = keys.get(option.name)
                if fn is None:
                    return _NO_KEY
                fns.append(fn)
        return fns

    def reclaimable(self, reclaimer: TaskInfo, reclaimees: list[TaskInfo]) -> list[TaskInfo]:
        return self._victims(RECLAIMABLE, reclaimer, reclaimees)

    # --- queue hooks --------------------------------------------------------------------

    def overused(self, queue: QueueInfo) -> bool:
        return any(fn(queue) for fn in self._all(OVERUSED))

    def queue_share(self, queue: QueueInfo) -> QueueShare | None:
        """The first answer of the plugins that judge overuse (proportion, capacity), in
        tier order; None when no such plugin knows the queue."""
        for fn in self._all(QUEUE_SHARE):
            share = fn(queue)
            if share is not None:
                return share
        return None

    def weight_adjustments(self, weights: Mapping[str, int]) -> Mapping[str, WeightAdjustment]:
        """The first non-empty answer of the plugins that adjust queue weights, in tier
        order; empty (every weight stands) when no plugin filled the hook or none adjusts
        any of these queues."""
        for fn in self._all(ADJUST_WEIGHTS):
            adjustments = fn(weights)
            if adjustments:
                return adjustments
        return {}

    def preemptive(self, queue: QueueInfo, candidates: list[TaskInfo]) -> bool:
        return all(fn(queue, candidates) for fn in self._all(PREEMPTIVE))

    def allocatable_vote(self, queue: QueueInfo, task: TaskInfo) -> Vote:
        """May the queue take the task now; when not, the first refusing plugin's reason."""
        for fn in self._all(ALLOCATABLE):
            vote = fn(queue, task)
            if vote.rejected:
                return vote
        return PERMITTED

    def allocatable(self, queue: QueueInfo, task: TaskInfo) -> bool:
        return not self.allocatable_vote(queue, task).rejected

    # --- job hooks ----------------------------------------------------------------------

    def job_ready(self, job: JobInfo) -> bool:
        return all(fn(job) for fn in self._all(JOB_READY))

    def _vote(self, hook: Hook[Callable[[JobInfo], Vote]], job: JobInfo) -> Vote:
        """Tier by tier: any rejection decides (the rejecting vote, with its reason, is the
        answer); else the first tier with a permit decides; no opinion at all permits."""
        for fns in self._tiered(hook):
            permitted = False
            for fn in fns:
                vote = fn(job)
                if vote.code < 0:
                    return vote
                if vote.code > 0:
                    permitted = True
            if permitted:
                return PERMITTED
        return PERMITTED

    def job_pipelined(self, job: JobInfo) -> bool:
        return not self._vote(JOB_PIPELINED, job).rejected

    def job_enqueue_vote(self, job: JobInfo) -> Vote:
        """Whether the job may be admitted, and when not, the refusing plugin's reason."""
        return self._vote(JOB_ENQUEUEABLE, job)

    def job_enqueueable(self, job: JobInfo) -> bool:
        return not self.job_enqueue_vote(job).rejected

    def job_enqueued(self, job: JobInfo) -> None:
        for fn in self._all(JOB_ENQUEUED):
            fn(job)

    def job_starving(self, job: JobInfo) -> bool:
        """Answered by the first tier that has an enabled hook; no hook at all → not starving."""
        for fns in self._tiered(JOB_STARVING):
            if fns:
                return all(fn(job) for fn in fns)
        return False

    def job_valid(self, job: JobInfo) -> Status | None:
        for fn in self._all(JOB_VALID):
            result = fn(job)
            if result is not None and not result.is_success:
                return result
        return None

    # --- ordering -----------------------------------------------------------------------

    def _first_nonzero(self, hook: Hook[CompareFn], l: Any, r: Any) -> int:
        for fn in self._all(hook):
            j = fn(l, r)
            if j != 0:
                return j
        return 0

    def job_order_compare(self, l: JobInfo, r: JobInfo) -> int:
        return self._first_nonzero(JOB_ORDER, l, r)

    def job_order_fn(self, l: JobInfo, r: JobInfo) -> bool:
        j = self.job_order_compare(l, r)
        if j != 0:
            return j < 0
        if l.creation_timestamp == r.creation_timestamp:
            return l.uid < r.uid
        return l.creation_timestamp < r.creation_timestamp

    def job_order_key(self) -> Callable[[JobInfo], tuple[Any, ...]] | None:
        """One sort key a job in place of ``job_order_fn``'s pairwise walk through the
        plugins: the keys the plugins give in the chain's order (tier by tier, each plugin
        whose job order is on), then the creation time and the uid, as ``job_order_fn``
        breaks ties. None when a plugin in the chain orders jobs but gives no key.

        Comparing two such tuples is the chain's comparison: the first plugin whose keys
        differ decides, as the first nonzero compare does."""
        order = self._hooks.get(JOB_ORDER, {})
        keys = self._hooks.get(JOB_ORDER_KEY, {})
        flag = JOB_ORDER.flag
        fns: list[Callable[[JobInfo], Any]] = []
        for tier in self.conf.tiers:
            for option in tier.plugins:
                if option.name not in order or not (flag is None or option.enabled(flag)):
                    continue
                fn = keys.get(option.name)
                if fn is None:
                    return None
                fns.append(fn)

        def key(job: JobInfo) -> tuple[Any, ...]:
            return (*[fn(job) for fn in fns], job.creation_timestamp, job.uid)

        return key

    def job_queue(
        self, jobs: Iterable[JobInfo] = (), *, kept: bool = False
    ) -> PriorityQueue[JobInfo]:
        """A priority queue of jobs in the session's job order: by the plugins' sort key
        when every plugin in the chain gives one, else by ``job_order_fn``. ``kept``: each
        job's key is kept as the job answers are (``kept``), for the evicting actions, which
        push the same waiting jobs one after the other with nothing changed in between."""
        key = self.job_order_key()
        if key is None:
            return PriorityQueue(self.job_order_fn, jobs)
        if not kept:
            return PriorityQueue(key=key, items=jobs)
        plain = key

        def kept_key(job: JobInfo) -> tuple[Any, ...]:
            return self.kept("order", job, plain)

        return PriorityQueue(key=kept_key, items=jobs)

    def queue_order_fn(self, l: QueueInfo, r: QueueInfo) -> bool:
        j = self._first_nonzero(QUEUE_ORDER, l, r)
        if j != 0:
            return j < 0
        if l.creation_timestamp == r.creation_timestamp:
            return l.uid < r.uid
        return l.creation_timestamp < r.creation_timestamp

    def victim_queue_order_fn(self, l: QueueInfo, r: QueueInfo, preemptor: QueueInfo) -> bool:
        for fn in self._all(VICTIM_QUEUE_ORDER):
            j = fn(l, r, preemptor)
            if j != 0:
                return j < 0
        return not self.queue_order_fn(l, r)

    def task_compare(self, l: TaskInfo, r: TaskInfo) -> int:
        return self._first_nonzero(TASK_ORDER, l, r)

    def task_order_fn(self, l: TaskInfo, r: TaskInfo) -> bool:
        j = self.task_compare(l, r)
        if j != 0:
            return j < 0
        return compare_task(l, r)

    # --- predicates and node order -------------------------------------------------------

    def predicate(self, task: TaskInfo, node: NodeInfo) -> Status | None:
        for fn in self._all(PREDICATE):
            err = fn(task, node)
            if err is not None:
                return err
        return None

    def predicate_for_preempt(self, task: TaskInfo, node: NodeInfo) -> Status | None:
        """Only unresolvable failures reject a node: plain ``Unschedulable`` (no room, too
        many pods) is exactly what evicting victims can fix."""
        err = self.predicate(task, node)
        if err is not None and not err.resolvable:
            return err
        return None

    def pre_predicate(self, task: TaskInfo) -> str | None:
        for fn in self._all(PRE_PREDICATE):
            err = fn(task)
            if err:
                return err
        return None

    def not_evaluable_verdict(self, task: TaskInfo) -> Status | None:
        """Why the engine cannot judge where ``task`` fits (the pre-predicates failed and a
        plugin recorded it as not evaluable), or None: for the read-only answers."""
        if self.pre_predicate(task) is None:
            return None
        record = self.not_evaluable.get(task.key)
        return record[1] if record is not None else None

    def node_scores(self, task: TaskInfo, nodes: list[NodeInfo]) -> dict[str, float]:
        scores = {node.name: 0.0 for node in nodes}
        for fns in self._tiered(NODE_ORDER):
            for fn in fns:
                for node in nodes:
                    scores[node.name] += fn(task, node)
        for bfns in self._tiered(BATCH_NODE_ORDER):
            for bfn in bfns:
                for name, score in bfn(task, nodes).items():
                    if name in scores:
                        scores[name] += score
        return scores

    def node_score_array(
        self, task: TaskInfo, nodes: list[NodeInfo], names: list[str] | None = None
    ) -> FloatArray | None:
        """``node_scores`` as one array in the order of ``nodes``: the same additions in the
        same order, so the same floats, without a per-node dict when a batch hook answers
        with an array for exactly these nodes (the usual case, thousands of nodes a call).

        ``None`` when two nodes share a name: the dict path adds a scalar hook's score once
        per listed node but a batch hook's once per name, which one array per node cannot
        express; the caller then reads ``node_scores``. ``names``: the nodes' names, when the
        caller already knows them and that none repeats.
        """
        if names is None:
            names = [node.name for node in nodes]
            if len(set(names)) != len(names):
                return None
        total = np.zeros(len(nodes), dtype=np.float64)
        for fns in self._tiered(NODE_ORDER):
            for fn in fns:
                total += np.fromiter((fn(task, node) for node in nodes), np.float64, len(nodes))
        index: dict[str, int] | None = None
        for bfns in self._tiered(BATCH_NODE_ORDER):
            for bfn in bfns:
                answer = bfn(task, nodes)
                if isinstance(answer, NodeScoreArray) and answer.names == names:
                    total += answer.scores
                    continue
                if index is None:
                    index = {name: i for i, name in enumerate(names)}
                for name, score in answer.items():
                    i = index.get(name)
                    if i is not None:
                        total[i] += score
        return total

    # --- simulation (topology-aware preemption) -----------------------------------------

    def new_cycle_state(self, task: TaskInfo) -> CycleState:
        state = CycleState()
        for name, fn in self.hook_fns(CYCLE_STATE).items():
            state[name] = fn(task)
        return state

    def simulate_allocatable(self, state: CycleState, queue: QueueInfo, task: TaskInfo) -> bool:
        return all(fn(state, queue, task) for fn in self._all(SIMULATE_ALLOCATABLE))

    def simulate_remove_task(
        self, state: CycleState, preemptor: TaskInfo, victim: TaskInfo, node: NodeInfo
    ) -> None:
        for name, fn in self.hook_fns(SIMULATE_REMOVE_TASK).items():
            if name in self.simulating:
                fn(state, preemptor, victim, node)

    def simulate_add_task(
        self, state: CycleState, preemptor: TaskInfo, victim: TaskInfo, node: NodeInfo
    ) -> None:
        for name, fn in self.hook_fns(SIMULATE_ADD_TASK).items():
            if name in self.simulating:
                fn(state, preemptor, victim, node)

    # --- victims ordering (session_plugins.go BuildVictimsPriorityQueue) ----------------

    def build_victims_priority_queue(
        self, victims: list[TaskInfo], preemptor: TaskInfo
    ) -> PriorityQueue[TaskInfo]:
        """Pop order = eviction order: lowest value to its job and queue first."""
        preemptor_job = self.jobs.get(preemptor.job)

        def less(l: TaskInfo, r: TaskInfo) -> bool:
            if l.job == r.job:
                return not self.task_order_fn(l, r)
            l_job = self.jobs.get(l.job)
            r_job = self.jobs.get(r.job)
            if l_job is None or r_job is None:
                if l_job is None and r_job is None:
                    return not self.task_order_fn(l, r)
                return l_job is None
            if preemptor_job is None or l_job.queue == r_job.queue:
                cmp = self.job_order_compare(l_job, r_job)
                if cmp != 0:
                    return cmp > 0
                return not self.task_order_fn(l, r)
            l_queue = self.queues.get(l_job.queue)
            r_queue = self.queues.get(r_job.queue)
            p_queue = self.queues.get(preemptor_job.queue)
            if l_queue is None or r_queue is None or p_queue is None:
                return not self.task_order_fn(l, r)
            return self.victim_queue_order_fn(l_queue, r_queue, p_queue)

        return PriorityQueue(less, victims)


def _split_index(name: str) -> int | None:
    parts = name.split("-")
    if len(parts) < 3:
        return None
    try:
        return int(parts[-1])
    except ValueError:
        return None


def compare_task(l: TaskInfo, r: TaskInfo) -> bool:
    """Volcano's fallback task order: the job controller's task index, then age, then UID."""
    li, ri = _split_index(l.name), _split_index(r.name)
    if li is not None and ri is not None and li != ri:
        return li < ri
    if l.creation_timestamp == r.creation_timestamp:
        return l.uid < r.uid
    return l.creation_timestamp < r.creation_timestamp
