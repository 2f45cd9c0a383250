"""Active reclaim: every interval, on the leader only, run the engine's reclaim on the live
cluster and carry out what it commits.

kube-scheduler asks the extender for victims only when its own dry run finds lower-priority
pods, so a queue below its share among equal-priority pods never gets capacity back by
itself. This loop closes that gap with the engine's own decision (``decision.decide``, the
reclaim action with the live rules on), and then, per eviction: the Eviction API (so PDBs
hold), an event on the victim and one on the preemptor, and a reservation of the preemptor's
queue share (an assumed pod the filter verb counts) so that the capacity goes to the pod it
was freed for.

It never acts on doubt:

* not while the cache is unsynced, unhealthy or stale (a watch that delivered no event and no
  bookmark within its bound may have missed anything);
* not while a pod it evicted, or may have evicted (an eviction whose answer was lost counts as
  done), is still shown Running by the cache: a decision then would count that pod twice and
  evict again. It stops waiting when the cache shows the pod leaving, or when a cache that has
  heard from the API server since the bound still shows it running (then it was not evicted);
* not beyond its leadership: every eviction request has a deadline within the margin for
  which this replica is sure to still hold the lease (the API server is told the same
  deadline), and a request retried after a failed connection is sized against the margin
  again; with too little margin left the cycle stops;
* not faster than its brakes: at most ``max_evictions`` a cycle and ``max_evictions_per_minute``
  over any minute, and a victim whose eviction failed waits an exponentially growing time
  before it is tried again.

Minimum runtimes are judged on the API server's clock (``server_now``), not on the local one.
The state's lock is held only to copy the snapshot; deciding, evicting and recording happen
outside it, on one daemon thread.
"""

from __future__ import annotations

import logging
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Protocol

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from scheduler_core.api.job import JobInfo
from scheduler_core.api.snapshot import ClusterSnapshot
from scheduler_core.api.task import TaskInfo
from scheduler_core.api.types import TaskStatus
from scheduler_core.cache.list_pager import GC_PAUSE
from scheduler_core.conf import SchedulerConfiguration
from scheduler_core.framework.memo import SessionMemos
from scheduler_core.logutil import v

from .decision import (
    CycleDecision,
    PlannedEviction,
    decide,
    live_configuration,
)
from .events import NORMAL, WARNING, EventRecorder, ObjectRef
from .eviction import EvictionResult, evict
from .forked_decision import decide_forked
from .periodic import BACKGROUND_SHARE, Periodic
from .rest import RestClient

#: How many of the last evictions the loop remembers for people to read.
HISTORY_SIZE = 50

log = logging.getLogger(__name__)

#: How long an evicted pod may still look Running in the cache before the loop stops
#: waiting for the informers and decides again (a watch can lag; it cannot lag forever).
CONFIRM_TIMEOUT = 30.0

#: Defaults of the brakes: evictions a cycle, evictions over any 60 s (the loop is on the
#: leader only, so this is the cluster's rate), the deadline of one eviction request, and
#: the backoff of a victim whose eviction failed (doubling from the first to the cap).
DEFAULT_MAX_EVICTIONS = 10
DEFAULT_MAX_EVICTIONS_PER_MINUTE = 50
DEFAULT_EVICTION_TIMEOUT = 5.0
BACKOFF_INITIAL = 2.0
BACKOFF_CAP = 300.0

#: An eviction is not sent with less time than this left to it (the leadership margin ran
#: short): a request that cannot be answered in time would only end up unknown.
MIN_EVICTION_DEADLINE = 1.0

#: How often one eviction is sent when no connection could be made (each time sized again
#: against the leadership margin); a request that may have arrived is never sent twice.
EVICTION_ATTEMPTS = 3

#: Why an eviction the decision planned was held back (a metrics label each).
HELD_BACKOFF = "backoff"
HELD_RATE = "rate-limit"
HELD_LEADERSHIP = "leadership-margin"

#: Volcano's latency buckets (milliseconds): 5 ms doubling 15 times.
_LATENCY_BUCKETS = tuple(5.0 * 2**i for i in range(15))


@dataclass(frozen=True, slots=True)
class ReclaimOptions:
    """0 turns a cap off."""

    interval: float = 1.0
    dry_run: bool = False
    max_evictions: int = DEFAULT_MAX_EVICTIONS
    max_evictions_per_queue: int = 0
    max_evictions_per_minute: int = DEFAULT_MAX_EVICTIONS_PER_MINUTE
    eviction_timeout: float = DEFAULT_EVICTION_TIMEOUT
    #: Decide in a forked child (``forked_decision``), off the verbs' interpreter; False
    #: decides on the loop's thread (where no fork is possible, or to debug one process).
    fork: bool = False

    def __post_init__(self) -> None:
        for name in ("max_evictions", "max_evictions_per_queue", "max_evictions_per_minute"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be 0 (no limit) or more, not {getattr(self, name)}")
        if not self.eviction_timeout >= MIN_EVICTION_DEADLINE:
            raise ValueError(
                f"the eviction timeout must be at least {MIN_EVICTION_DEADLINE}s, "
                f"not {self.eviction_timeout}"
            )


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
            "Evictions the reclaim loop sent, by result (ok, pdb, gone, error, unknown: no "
            "clear answer, treated as done; not-sent: no connection; dry-run).",
            ["result"],
            registry=registry,
        )
        self.skipped = Counter(
            "queue_extender_reclaim_cycles_skipped",
            "Cycles not run, by reason (not-leader, not-synced, stale-cache, "
            "awaiting-informers, nothing-waiting: no waiting pod kube-scheduler found "
            "unschedulable, unchanged, error).",
            ["reason"],
            registry=registry,
        )
        self.held = Counter(
            "queue_extender_reclaim_evictions_held",
            "Planned evictions not sent, by reason (backoff: the victim failed lately; "
            "rate-limit: the per-minute cap; leadership-margin: too little lease left).",
            ["reason"],
            registry=registry,
        )
        for reason in (HELD_BACKOFF, HELD_RATE, HELD_LEADERSHIP):
            self.held.labels(reason)
        for result in EvictionResult:
            self.evictions.labels(result.value)


class ReclaimCluster(Protocol):
    """What the loop reads of the live cluster, and the one thing it writes back to the
    extender's accounting (``reserve``).

    ``ready``: whether the cache synced and can be trusted; ``fresh``: no watch is stalled or
    silent past its bound (whether the cache synced at all is ``ready``'s business);
    ``heard_since(t)``: every watch delivered an event or bookmark after monotonic time
    ``t``; ``snapshot``: a private copy of the cluster (the lock held for the copy only);
    ``waiting``: whether any waiting pod was found unschedulable by kube-scheduler (without
    one a cycle decides nothing);
    ``version``: the cluster's change counter; ``task``: a pod by key, from the cache;
    ``reserve``: keep a preemptor's queue share for it."""

    def ready(self) -> bool: ...

    def fresh(self) -> bool: ...

    def heard_since(self, monotonic: float) -> bool: ...

    def snapshot(self) -> ClusterSnapshot: ...

    def waiting(self) -> bool: ...

    def version(self) -> int: ...

    def task(self, key: str) -> TaskInfo | None: ...

    def reserve(self, task: TaskInfo, job: JobInfo) -> None: ...


class ReclaimLeader(Protocol):
    """Whom the loop acts for: the leadership it must hold while it evicts, the REST client
    its evictions go through, the recorder of its events and the API server's clock.

    ``leadership_valid_for`` is the leadership margin in seconds (0: not leading);
    ``server_now`` the API server's wall clock, on which minimum runtimes are judged."""

    @property
    def rest(self) -> RestClient: ...

    @property
    def recorder(self) -> EventRecorder: ...

    def is_leader(self) -> bool: ...

    def leadership_valid_for(self) -> float: ...

    def server_now(self) -> float: ...


class ReclaimLoop:
    """See the module docstring. ``cluster`` is what it reads of the cache (and where it
    reserves a preemptor's share), ``leader`` whom it acts for; ``clock`` is the monotonic
    clock of deadlines, backoffs and the rate window."""

    def __init__(
        self,
        conf: SchedulerConfiguration,
        options: ReclaimOptions,
        *,
        cluster: ReclaimCluster,
        leader: ReclaimLeader,
        registry: CollectorRegistry | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.options = options
        self.conf = self.live(conf)
        self.cluster = cluster
        self.leader = leader
        self.metrics = ReclaimMetrics(registry)
        self.clock = clock
        #: pod key -> (uid, failures in a row, monotonic time before which it is not retried)
        self._backoff: dict[str, tuple[str, int, float]] = {}
        #: monotonic times of the evictions of the last minute that may have been applied
        self._sent: deque[float] = deque()
        #: The cluster's version when a cycle last decided nothing and no time-based rule
        #: could change that: the same cluster needs no second look.
        self._quiet_at: int | None = None
        self.cycles = 0
        #: What the plugins remember from one cycle's session to the next.
        self.memos = SessionMemos()
        #: pod key -> (uid, deadline): evicted (or maybe evicted), not yet seen leaving
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
            max_share=BACKGROUND_SHARE,
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
        if self.leader.leadership_valid_for() <= 0:
            self.metrics.skipped.labels("not-leader").inc()
            self._quiet_at = None
            return None
        if not self.cluster.fresh():  # first: a stale cache also makes ``ready`` false
            self.metrics.skipped.labels("stale-cache").inc()
            return None
        if not self.cluster.ready():
            self.metrics.skipped.labels("not-synced").inc()
            return None
        if self._awaiting_informers():
            self.metrics.skipped.labels("awaiting-informers").inc()
            return None
        if not self.cluster.waiting():
            self.metrics.skipped.labels("nothing-waiting").inc()
            return None
        version = self.cluster.version()
        if version == self._quiet_at:
            self.metrics.skipped.labels("unchanged").inc()
            return None
        started = time.perf_counter()
        now = datetime.fromtimestamp(self.leader.server_now(), UTC)
        # The collector stays paused from the copy to the decision (see ``decide``): every
        # job and node copied is garbage once the decision is taken, and freed then by
        # reference counting, before a collection could walk them.
        with GC_PAUSE.paused():
            decision = (decide_forked if self.options.fork else decide)(
                self.cluster.snapshot(), self.conf, memos=self.memos, now=now
            )
        quiet = not decision.evictions and not decision.time_sensitive
        self._quiet_at = version if quiet else None
        for action, ms in decision.latency_ms.items():
            self.metrics.latency.labels(action).observe(ms)
        self.metrics.victims.set(len(decision.evictions))
        self._carry_out(decision)
        self._tell_unhelped(decision)
        self.metrics.cycle.observe(time.perf_counter() - started)
        self.cycles += 1
        return decision

    def _awaiting_informers(self) -> bool:
        now = self.clock()
        for key, (uid, deadline) in list(self._unconfirmed.items()):
            task = self.cluster.task(key)
            gone = task is None or task.uid != uid or task.status != TaskStatus.RUNNING
            if gone:
                del self._unconfirmed[key]
                continue
            # Past the bound, the pod is judged still running only on a cache that has
            # heard from every watch since: a stalled watch would show it running forever.
            if deadline <= now and self.cluster.heard_since(deadline):
                log.warning(
                    "Evicted pod %s still shows Running after %.0fs: taken as not evicted",
                    key,
                    CONFIRM_TIMEOUT,
                )
                del self._unconfirmed[key]
                self._failed(key, uid, now)
        return bool(self._unconfirmed)

    # --- brakes -------------------------------------------------------------------------

    def _failed(self, key: str, uid: str, now: float) -> None:
        """Another failure in a row for the victim ``key``: it waits twice as long as last
        time (from ``BACKOFF_INITIAL`` up to ``BACKOFF_CAP``) before it is tried again."""
        previous = self._backoff.get(key)
        failures = previous[1] + 1 if previous is not None and previous[0] == uid else 1
        wait = min(BACKOFF_CAP, BACKOFF_INITIAL * 2 ** (failures - 1))
        self._backoff[key] = (uid, failures, now + wait)
        log.info("Pod %s is not tried again for %.0fs (%d failures in a row)", key, wait, failures)

    def _held(self, group: list[PlannedEviction], now: float) -> str:
        """Why the evictions of one preemptor may not be sent now ("" when they may). They
        go together or not at all: part of a victim set frees too little for the pod it
        was chosen for, and would only disrupt."""
        for planned in group:
            victim = planned.victim
            backoff = self._backoff.get(victim.key)
            if backoff is None:
                continue
            uid, _, until = backoff
            if uid != victim.uid:
                del self._backoff[victim.key]  # another pod under the same name
            elif now < until:
                return HELD_BACKOFF
        cap = self.options.max_evictions_per_minute
        while self._sent and self._sent[0] <= now - 60.0:
            self._sent.popleft()
        if cap and len(self._sent) + len(group) > cap:
            return HELD_RATE
        return ""

    def _carry_out(self, decision: CycleDecision) -> None:
        done: dict[str, list[PlannedEviction]] = {}  # preemptor key -> its evictions that went
        transactions: dict[str, str] = {}  # preemptor job -> action
        groups: dict[str, list[PlannedEviction]] = {}  # in the decision's order
        for planned in decision.evictions:
            who = planned.preemptor.key if planned.preemptor is not None else planned.victim.key
            groups.setdefault(who, []).append(planned)
        for group in groups.values():
            held = self._held(group, self.clock()) if not self.options.dry_run else ""
            if held:
                self.metrics.held.labels(held).inc(len(group))
                log.info(
                    "Eviction of pod(s) %s held back: %s",
                    ", ".join(p.victim.key for p in group),
                    held,
                )
                if held == HELD_RATE:
                    break
                continue
            if not self._carry_out_group(group, done, transactions):
                break
        for action in transactions.values():
            self.metrics.transactions.labels(action).inc()
            self.metrics.attempts.inc()
        for evicted in done.values():
            self._preemptor_side(evicted)

    def _tell_unhelped(self, decision: CycleDecision) -> None:
        """An event on each waiting pod the cycle evicted nothing for and can say why:
        ``NotEvaluable`` (it cannot judge where the pod fits, and names what) or
        ``ReclaimCannotHelp`` (no eviction could make it fit, and names what is missing).
        Recorded as a series: the same reason again within the recorder's window only
        counts, so a pod hears each reason once until something changes."""
        for told in decision.unhelped():
            if not self.leader.is_leader():
                return
            task = told.task
            ref = ObjectRef(kind="Pod", name=task.name, namespace=task.namespace, uid=task.uid)
            log.log(
                v(2), "Pod %s: nothing evicted for it (%s): %s", task.key, told.reason, told.note
            )
            self.leader.recorder.record(ref, WARNING, told.reason, told.note)

    def _carry_out_group(
        self,
        group: list[PlannedEviction],
        done: dict[str, list[PlannedEviction]],
        transactions: dict[str, str],
    ) -> bool:
        """The evictions of one preemptor; False when the cycle must stop (the lease)."""
        for planned in group:
            if self.leader.leadership_valid_for() <= 0:  # lost the lease mid-cycle: stop at once
                log.warning("Lost the leader lease: remaining evictions dropped")
                return False
            result = self._evict(planned)
            if result is None:
                self.metrics.held.labels(HELD_LEADERSHIP).inc()
                log.warning(
                    "Too little of the leader lease is left to evict pod %s in time: "
                    "remaining evictions dropped",
                    planned.victim.key,
                )
                return False
            self.metrics.evictions.labels(result.value).inc()
            if result in (EvictionResult.OK, EvictionResult.UNKNOWN, EvictionResult.DRY_RUN):
                self.history.append((self._wall_clock(), result, planned))
                key = planned.preemptor.key if planned.preemptor is not None else ""
                done.setdefault(key, []).append(planned)
                if planned.preemptor_job is not None:
                    transactions[planned.preemptor_job.uid] = planned.action
            elif result is not EvictionResult.GONE:
                # Refused or not sent: the rest of this set would free too little for the
                # pod it was chosen for. A later cycle decides again.
                rest = group[group.index(planned) + 1 :]
                if rest:
                    log.info(
                        "Not evicting %s: %s of the same set was not evicted",
                        ", ".join(p.victim.key for p in rest),
                        planned.victim.key,
                    )
                break
        return True

    def _send(self, planned: PlannedEviction) -> EvictionResult | None:
        """The eviction request, each attempt with a deadline within the leadership margin
        as it is then; None when the margin is too short to send it at all."""
        victim = planned.victim
        result = EvictionResult.NOT_SENT
        for _ in range(EVICTION_ATTEMPTS):
            deadline = min(self.options.eviction_timeout, self.leader.leadership_valid_for())
            if deadline < MIN_EVICTION_DEADLINE:
                return None if result is EvictionResult.NOT_SENT else result
            result = evict(
                self.leader.rest, victim.namespace, victim.name, victim.uid, deadline=deadline
            )
            if result is not EvictionResult.NOT_SENT:
                break
        return result

    def _evict(self, planned: PlannedEviction) -> EvictionResult | None:
        victim = planned.victim
        reason = "Reclaimed" if planned.action == "reclaim" else "Preempted"
        ref = ObjectRef(kind="Pod", name=victim.name, namespace=victim.namespace, uid=victim.uid)
        if self.options.dry_run:
            log.info("Would evict pod %s on node %s: %s", victim.key, planned.node, planned.rule)
            would = "WouldReclaim" if planned.action == "reclaim" else "WouldPreempt"
            self.leader.recorder.record(ref, NORMAL, would, f"dry run: {planned.rule}")
            return EvictionResult.DRY_RUN
        result = self._send(planned)
        if result is None:
            return None
        now = self.clock()
        if result in (EvictionResult.OK, EvictionResult.UNKNOWN):
            self._sent.append(now)
            self._unconfirmed[victim.key] = (victim.uid, now + CONFIRM_TIMEOUT)
        if result in (EvictionResult.OK, EvictionResult.GONE):
            self._backoff.pop(victim.key, None)
        elif result is not EvictionResult.UNKNOWN:
            self._failed(victim.key, victim.uid, now)
        if result is EvictionResult.OK:
            log.info("Evicted pod %s on node %s: %s", victim.key, planned.node, planned.rule)
            self.leader.recorder.record(ref, NORMAL, reason, planned.rule)
        elif result is EvictionResult.UNKNOWN:
            self.leader.recorder.record(
                ref,
                WARNING,
                "EvictionUnconfirmed",
                f"the eviction got no clear answer; counted as evicted until the pod is seen "
                f"leaving or still running after {CONFIRM_TIMEOUT:.0f}s: {planned.rule}",
            )
        elif result is EvictionResult.PDB:
            self.leader.recorder.record(
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
        self.leader.recorder.record(ref, NORMAL, reason, note)
        if not self.options.dry_run:
            self.cluster.reserve(preemptor, job)
