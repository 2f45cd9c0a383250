"""Active reclaim: every interval, on the leader only, run the engine's reclaim on the live
cluster and carry out what it commits.

kube-scheduler asks the extender for victims only when its own dry run finds lower-priority
pods, so a queue below its share among equal-priority pods never gets capacity back by
itself. This loop closes that gap with the engine's own decision (``decision.decide``, the
reclaim action with the live rules on), and then, per eviction: the Eviction API (so PDBs
hold), an event on the victim and one on the preemptor, and a reservation of the preemptor's
queue share (an assumed pod the filter verb counts) so that the capacity goes to the pod it
was freed for.

It never acts on doubt: not while the cache is unsynced or unhealthy, and not while a pod it
evicted is still shown Running by the cache (the informers have not caught up: a decision
then would count that pod twice and evict again). The state's lock is held only to copy the
snapshot; deciding, evicting and recording happen outside it, on one daemon thread.
"""

from __future__ import annotations

import logging
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from scheduler_core.api.job import JobInfo
from scheduler_core.api.snapshot import ClusterSnapshot
from scheduler_core.api.task import TaskInfo
from scheduler_core.api.types import TaskStatus
from scheduler_core.conf import SchedulerConfiguration
from scheduler_core.framework.memo import SessionMemos
from scheduler_core.logutil import v

from .decision import CycleDecision, PlannedEviction, decide, live_configuration
from .events import NORMAL, WARNING, EventRecorder, ObjectRef
from .eviction import EvictionResult, evict
from .periodic import Periodic
from .rest import RestClient

#: The event reason on a waiting pod the loop does not evict for because it cannot judge it.
NOT_EVALUABLE_REASON = "NotEvaluable"

#: How many of the last evictions the loop remembers for people to read.
HISTORY_SIZE = 50

log = logging.getLogger(__name__)

#: How long an evicted pod may still look Running in the cache before the loop stops
#: waiting for the informers and decides again (a watch can lag; it cannot lag forever).
CONFIRM_TIMEOUT = 30.0

#: Volcano's latency buckets (milliseconds): 5 ms doubling 15 times.
_LATENCY_BUCKETS = tuple(5.0 * 2**i for i in range(15))


@dataclass(frozen=True, slots=True)
class ReclaimOptions:
    interval: float = 1.0
    dry_run: bool = False
    max_evictions: int = 0
    max_evictions_per_queue: int = 0


class ReclaimMetrics:
    def __init__(self, registry: CollectorRegistry | None) -> None:
        self.transactions = Counter(
            "volcano_eviction_transactions",
            "Committed eviction transactions (one per preemptor job), by action.",
            ["action"],
            registry=registry,
        )
        # Volcano's name has no _total suffix; prometheus_client adds one to counters.
        self.attempts = Gauge(
            "volcano_total_preemption_attempts",
            "Preemption and reclaim attempts that committed evictions (only ever increases).",
            registry=registry,
        )
        self.victims = Gauge(
            "volcano_pod_preemption_victims",
            "Victims selected by the last reclaim cycle.",
            registry=registry,
        )
        self.latency = Histogram(
            "volcano_action_scheduling_latency_milliseconds",
            "Time an action took in the reclaim loop's cycle, in milliseconds.",
            ["action"],
            buckets=_LATENCY_BUCKETS,
            registry=registry,
        )
        self.cycle = Histogram(
            "queue_extender_reclaim_cycle_seconds",
            "One reclaim cycle: snapshot, decision, evictions.",
            registry=registry,
        )
        self.evictions = Counter(
            "queue_extender_reclaim_evictions",
            "Evictions the reclaim loop decided, by result (ok, pdb, gone, error, dry-run).",
            ["result"],
            registry=registry,
        )
        self.skipped = Counter(
            "queue_extender_reclaim_cycles_skipped",
            "Cycles not run, by reason (not-leader, not-synced, awaiting-informers, "
            "nothing-waiting, unchanged, error).",
            ["reason"],
            registry=registry,
        )
        for result in EvictionResult:
            self.evictions.labels(result.value)


class ReclaimLoop:
    """See the module docstring. ``snapshot`` returns a private copy of the live cluster (the
    caller takes the lock for the copy only); ``reserve`` keeps a preemptor's queue share for
    it; ``ready`` says whether the cache can be trusted; ``task`` looks a pod up by key."""

    def __init__(
        self,
        conf: SchedulerConfiguration,
        options: ReclaimOptions,
        *,
        rest: RestClient,
        recorder: EventRecorder,
        is_leader: Callable[[], bool],
        ready: Callable[[], bool],
        snapshot: Callable[[], ClusterSnapshot],
        task: Callable[[str], TaskInfo | None],
        reserve: Callable[[TaskInfo, JobInfo], None],
        registry: CollectorRegistry | None = None,
        clock: Callable[[], float] = time.monotonic,
        waiting: Callable[[], bool] | None = None,
        version: Callable[[], int] | None = None,
    ) -> None:
        self.options = options
        self.conf = self.live(conf)
        self.rest = rest
        self.recorder = recorder
        self.is_leader = is_leader
        self.ready = ready
        self.snapshot = snapshot
        self.task = task
        self.reserve = reserve
        self.metrics = ReclaimMetrics(registry)
        self.clock = clock
        self.waiting = waiting
        self.version = version
        #: The cluster's version when a cycle last decided nothing and no time-based rule
        #: could change that: the same cluster needs no second look.
        self._quiet_at: int | None = None
        self.cycles = 0
        #: What the plugins remember from one cycle's session to the next.
        self.memos = SessionMemos()
        #: pod key -> (uid, deadline): evicted, not yet seen leaving by the cache
        self._unconfirmed: dict[str, tuple[str, float]] = {}
        #: The last evictions (and dry-run decisions), newest last, for the status page.
        self.history: deque[tuple[float, EvictionResult, PlannedEviction]] = deque(
            maxlen=HISTORY_SIZE
        )
        self._wall_clock = time.time
        self._worker = Periodic(
            "reclaim-loop",
            options.interval,
            self.run_once,
            what="reclaim cycle",
            on_error=self.metrics.skipped.labels("error").inc,
        )

    def live(self, conf: SchedulerConfiguration) -> SchedulerConfiguration:
        """``conf`` as this loop decides by it (the live rules and the loop's limits); raises
        ``ValueError`` when its reclaim arguments cannot be used."""
        return live_configuration(
            conf,
            max_evictions=self.options.max_evictions,
            max_evictions_per_queue=self.options.max_evictions_per_queue,
        )

    def use_configuration(self, conf: SchedulerConfiguration) -> None:
        """Decide by ``conf`` from the next cycle on (a cycle reads ``self.conf`` once, so one
        in progress finishes with the configuration it started with); raises ``ValueError``,
        keeping the current one, when its reclaim arguments cannot be used."""
        self.conf = self.live(conf)
        self._quiet_at = None

    # --- thread -------------------------------------------------------------------------

    def start(self) -> ReclaimLoop:
        self._worker.start()
        return self

    def stop(self, timeout: float = 5.0) -> None:
        self._worker.stop(timeout)

    # --- one cycle ----------------------------------------------------------------------

    def run_once(self) -> CycleDecision | None:
        """One cycle; None when it did not run (not leading, not synced, waiting, or nothing
        that could be decided otherwise than last time)."""
        if not self.is_leader():
            self.metrics.skipped.labels("not-leader").inc()
            self._quiet_at = None
            return None
        if not self.ready():
            self.metrics.skipped.labels("not-synced").inc()
            return None
        if self._awaiting_informers():
            self.metrics.skipped.labels("awaiting-informers").inc()
            return None
        if self.waiting is not None and not self.waiting():
            self.metrics.skipped.labels("nothing-waiting").inc()
            return None
        version = self.version() if self.version is not None else None
        if version is not None and version == self._quiet_at:
            self.metrics.skipped.labels("unchanged").inc()
            return None
        started = time.perf_counter()
        decision = decide(self.snapshot(), self.conf, memos=self.memos)
        quiet = not decision.evictions and not decision.time_sensitive
        self._quiet_at = version if quiet else None
        for action, ms in decision.latency_ms.items():
            self.metrics.latency.labels(action).observe(ms)
        self.metrics.victims.set(len(decision.evictions))
        self._carry_out(decision)
        self._not_evaluable(decision)
        self.metrics.cycle.observe(time.perf_counter() - started)
        self.cycles += 1
        return decision

    def _awaiting_informers(self) -> bool:
        now = self.clock()
        for key, (uid, deadline) in list(self._unconfirmed.items()):
            task = self.task(key)
            gone = task is None or task.uid != uid or task.status != TaskStatus.RUNNING
            if gone or deadline <= now:
                if not gone:
                    log.warning(
                        "Evicted pod %s still shows Running after %.0fs", key, CONFIRM_TIMEOUT
                    )
                del self._unconfirmed[key]
        return bool(self._unconfirmed)

    def _carry_out(self, decision: CycleDecision) -> None:
        done: dict[str, list[PlannedEviction]] = {}  # preemptor key -> its evictions that went
        transactions: dict[str, str] = {}  # preemptor job -> action
        for planned in decision.evictions:
            if not self.is_leader():  # lost the lease mid-cycle: stop at once
                log.warning("Lost the leader lease: remaining evictions dropped")
                return
            result = self._evict(planned)
            self.metrics.evictions.labels(result.value).inc()
            if result in (EvictionResult.OK, EvictionResult.DRY_RUN):
                self.history.append((self._wall_clock(), result, planned))
                key = planned.preemptor.key if planned.preemptor is not None else ""
                done.setdefault(key, []).append(planned)
                if planned.preemptor_job is not None:
                    transactions[planned.preemptor_job.uid] = planned.action
        for action in transactions.values():
            self.metrics.transactions.labels(action).inc()
            self.metrics.attempts.inc()
        for evicted in done.values():
            self._preemptor_side(evicted)

    def _not_evaluable(self, decision: CycleDecision) -> None:
        """An event on each waiting pod the cycle would have evicted for if it could judge
        where the pod fits, naming what it could not judge (recorded as a series: the same
        note again within the recorder's window only counts)."""
        for task, err in decision.not_evaluable.values():
            if not self.is_leader():
                return
            ref = ObjectRef(kind="Pod", name=task.name, namespace=task.namespace, uid=task.uid)
            note = (
                "not evicting for this pod: the scheduler extender cannot judge where it "
                f"fits ({err.plugin}): {'; '.join(err.reasons)}"
            )
            log.log(v(2), "Pod %s is not evaluable, nothing evicted for it: %s", task.key, note)
            self.recorder.record(ref, WARNING, NOT_EVALUABLE_REASON, note)

    def _evict(self, planned: PlannedEviction) -> EvictionResult:
        victim = planned.victim
        reason = "Reclaimed" if planned.action == "reclaim" else "Preempted"
        ref = ObjectRef(kind="Pod", name=victim.name, namespace=victim.namespace, uid=victim.uid)
        if self.options.dry_run:
            log.info("Would evict pod %s on node %s: %s", victim.key, planned.node, planned.rule)
            would = "WouldReclaim" if planned.action == "reclaim" else "WouldPreempt"
            self.recorder.record(ref, NORMAL, would, f"dry run: {planned.rule}")
            return EvictionResult.DRY_RUN
        result = evict(self.rest, victim.namespace, victim.name, victim.uid)
        if result is EvictionResult.OK:
            log.info("Evicted pod %s on node %s: %s", victim.key, planned.node, planned.rule)
            self.recorder.record(ref, NORMAL, reason, planned.rule)
            self._unconfirmed[victim.key] = (victim.uid, self.clock() + CONFIRM_TIMEOUT)
        elif result is EvictionResult.PDB:
            self.recorder.record(
                ref,
                WARNING,
                "ReclaimBlocked",
                f"a PodDisruptionBudget forbids evicting it now; will retry: {planned.rule}",
            )
        return result

    def _preemptor_side(self, evicted: list[PlannedEviction]) -> None:
        first = evicted[0]
        preemptor, job = first.preemptor, first.preemptor_job
        if preemptor is None or job is None:
            return
        victims = ", ".join(p.victim.key for p in evicted)
        ref = ObjectRef(
            kind="Pod", name=preemptor.name, namespace=preemptor.namespace, uid=preemptor.uid
        )
        verb = "would evict" if self.options.dry_run else "evicted"
        note = (
            f"{verb} {len(evicted)} pod(s) of queue {first.victim_queue} ({victims}) on node "
            f"{first.preemptor_node} for this pod of queue {first.preemptor_queue}; {first.rule}"
        )
        reclaim = first.action == "reclaim"
        if self.options.dry_run:
            reason = "WouldReclaim" if reclaim else "WouldPreempt"
        else:
            reason = "Reclaiming" if reclaim else "Preempting"
        self.recorder.record(ref, NORMAL, reason, note)
        if not self.options.dry_run:
            self.reserve(preemptor, job)
