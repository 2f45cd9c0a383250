"""Preemption the extender was not asked about, caught after the fact.

kube-scheduler asks extenders (the preempt verb) before it preempts for one pod, but its
workload-aware preemption, which preempts for a whole Kubernetes PodGroup, asks none. Its
victims still carry kube-scheduler's mark, a ``DisruptionTarget`` condition with reason
``PreemptionByScheduler``, before they go. The leader looks at every such victim once: one the
preempt verb did not hand out was evicted without the queue rules, and when the eviction broke
one of them it says which, with a Warning event on the PodGroups and on the victim's Queue, and
a counter by rule. Nothing is undone: the victim is already terminating; what the person gets
is the reason to turn that preemption off (docs/native-gangs.md).

The rules, as Volcano's reclaim and gang plugins apply them to a victim:

- the victim's queue was within its deserved share (allocated, the victim included, not above
  deserved in any dimension) and the preemptor was of another queue: reclaim takes only from
  a queue above its share;
- the victim's gang went below its minMember (more than one member needed, and the victim was
  one of the last minMember placed);
- the preemptor's queue is over its capability with the members it preempted for.

The preemptor is the job of the pending pods kube-scheduler nominated onto the victim's node;
when there is none, only the rule that needs no preemptor (the victim's gang) is judged.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Final

from prometheus_client import CollectorRegistry, Counter

from scheduler_core.api.display import dims
from scheduler_core.api.job import NATIVE_SOURCE, JobInfo
from scheduler_core.api.resource import ZERO, Resource
from scheduler_core.api.snapshot import ClusterSnapshot
from scheduler_core.api.task import TaskInfo
from scheduler_core.api.types import TaskStatus, allocated_status, ready_status
from scheduler_core.cache.state import ClusterState
from scheduler_core.conf import SchedulerConfiguration
from scheduler_core.controller.events import WARNING, ObjectRef
from scheduler_core.controller.periodic import Periodic
from scheduler_core.engine import close_session, open_session
from scheduler_core.framework.session import Session
from scheduler_core.logutil import v
from scheduler_core.report import queue_attrs

log = logging.getLogger(__name__)

RULE_DESERVED: Final = "victim-queue-within-deserved"
RULE_MIN_MEMBER: Final = "victim-gang-below-min-member"
RULE_CAPABILITY: Final = "preemptor-queue-over-capability"
RULES: Final = (RULE_DESERVED, RULE_MIN_MEMBER, RULE_CAPABILITY)
#: The reason of the Warning events.
REASON: Final = "PreemptionBypassedQueueRules"
VOLCANO_POD_GROUP_API: Final = "scheduling.volcano.sh/v1beta1"
QUEUE_API: Final = "scheduling.volcano.sh/v1beta1"
#: How long a victim the preempt verb handed out is remembered as ours (its grant may end
#: before kube-scheduler's mark on the victim is seen).
APPROVED_MEMORY: Final = 600.0
#: How many victims already judged are remembered, so that one seen again is not judged twice.
JUDGED_MEMORY: Final = 4096


@dataclass(frozen=True, slots=True)
class Bypass:
    """One victim evicted without the queue rules, and the rules its eviction broke."""

    victim: TaskInfo
    victim_job: JobInfo | None
    preemptor: JobInfo | None
    broken: tuple[tuple[str, str], ...]

    def note(self) -> str:
        by = (
            f"for pod group {self.preemptor.namespace}/{self.preemptor.name} "
            f"(queue {self.preemptor.queue})"
            if self.preemptor is not None
            else "for a preemptor the extender cannot name"
        )
        rules = "; ".join(sentence for _, sentence in self.broken)
        return (
            f"kube-scheduler preempted pod {self.victim.key} {by} without asking the extender, "
            f"breaking the queue rules: {rules}"
        )


def preemptor_of(snapshot: ClusterSnapshot, victim: TaskInfo) -> JobInfo | None:
    """The job whose pending pods kube-scheduler nominated onto the victim's node: a native
    group's first (the preemption that bypasses the extender is one for a pod group)."""
    found: list[JobInfo] = []
    for job in snapshot.jobs.values():
        if job.uid == victim.job:
            continue
        if any(
            t.nominated_node_name == victim.node_name for t in job.tasks_with(TaskStatus.PENDING)
        ):
            found.append(job)
    found.sort(key=lambda j: (j.source != NATIVE_SOURCE, j.uid))
    return found[0] if found else None


def judge(ssn: Session, victim: TaskInfo, preemptor: JobInfo | None) -> Bypass:
    """The queue rules the victim's eviction broke (``ssn`` is a read-only session over the
    cluster as it is, the victim perhaps already terminating)."""
    attrs = queue_attrs(ssn)
    victim_job = ssn.jobs.get(victim.job)
    broken: list[tuple[str, str]] = []
    if victim_job is not None and preemptor is not None and preemptor.queue != victim_job.queue:
        attr = attrs.get(victim_job.queue)
        if attr is not None:
            held = attr.allocated.clone()
            live = victim_job.tasks.get(victim.uid)
            if live is None or not allocated_status(live.status):
                held.add(victim.resreq)
            if held.less_equal(attr.deserved, ZERO):
                broken.append(
                    (
                        RULE_DESERVED,
                        f"queue {victim_job.queue} was within its deserved share "
                        f"(allocated {dims(held)}, deserved {dims(attr.deserved)})",
                    )
                )
    if victim_job is not None and victim_job.min_available > 1:
        others = sum(
            1
            for t in victim_job.tasks.values()
            if t.uid != victim.uid and ready_status(t.status) and not t.disruption_target
        )
        if others < victim_job.min_available:
            broken.append(
                (
                    RULE_MIN_MEMBER,
                    f"gang {victim_job.uid} went below its minMember {victim_job.min_available} "
                    f"({others} placed members left)",
                )
            )
    if preemptor is not None:
        attr = attrs.get(preemptor.queue)
        if attr is not None:
            wanted = Resource.empty()
            nominated = [
                t for t in preemptor.tasks_with(TaskStatus.PENDING) if t.nominated_node_name
            ]
            for task in nominated or preemptor.tasks_with(TaskStatus.PENDING):
                wanted.add(task.resreq)
            total = attr.allocated.clone().add(wanted)
            if not total.less_equal(attr.real_capability, ZERO):
                broken.append(
                    (
                        RULE_CAPABILITY,
                        f"queue {preemptor.queue} goes over its capability with the pods it "
                        f"preempted for ({dims(total)} above {dims(attr.real_capability)})",
                    )
                )
    return Bypass(victim, victim_job, preemptor, tuple(broken))


class GangPreemptionWatch:
    """The leader's look, each tick, at kube-scheduler's new preemption victims."""

    def __init__(
        self,
        state: ClusterState,
        conf: Callable[[], SchedulerConfiguration],
        approved: Callable[[], Iterable[str]],
        record: Callable[[ObjectRef, str, str, str], None],
        is_leader: Callable[[], bool],
        *,
        native_api_version: str = "scheduling.k8s.io/v1alpha2",
        registry: CollectorRegistry | None = None,
        interval: float = 1.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """``approved`` gives the pod UIDs the preempt verb hands out as victims now or
        handed out lately (``PreemptionGrants.victims_handed_out``); ``record`` is the
        event recorder's."""
        self._state = state
        self._conf = conf
        self._approved_now = approved
        self._record = record
        self._is_leader = is_leader
        self.native_api_version = native_api_version
        self._clock = clock
        #: Victims already judged (pod UID): each is looked at once.
        self._judged: dict[str, None] = {}
        self._approved: dict[str, float] = {}
        self.breaks = Counter(
            "queue_extender_gang_preemption_rule_breaks",
            "Victims of kube-scheduler's preemption the extender was not asked about whose "
            "eviction broke a queue rule, by rule.",
            ["rule"],
            registry=registry,
        )
        for rule in RULES:
            self.breaks.labels(rule)
        self._loop = Periodic(
            "gang-preemption-watch", interval, self.tick, what="the gang preemption watch"
        )

    def start(self) -> GangPreemptionWatch:
        self._loop.start()
        return self

    def stop(self, timeout: float = 5.0) -> None:
        self._loop.stop(timeout)

    def tick(self) -> list[Bypass]:
        """Judge the victims marked since the last tick; returns those that broke a rule."""
        now = self._clock()
        with self._state.locked():  # (the verbs change the grants under it)
            approved = list(self._approved_now())
        for uid in approved:
            self._approved[uid] = now + APPROVED_MEMORY
        self._approved = {uid: until for uid, until in self._approved.items() if until > now}
        if not self._is_leader():
            return []
        with self._state.locked():
            marked = list(self._state.marked_victims)
            self._state.marked_victims.clear()
            fresh = [t for t in marked if t.uid not in self._judged and t.uid not in self._approved]
            self._judged.update(dict.fromkeys(t.uid for t in marked))
            for uid in list(self._judged)[: max(0, len(self._judged) - JUDGED_MEMORY)]:
                del self._judged[uid]  # (a relist marks a victim again; keep the recent ones)
            if not fresh:
                return []
            # A private copy: the session must not read objects an event may change.
            snapshot = self._state.snapshot()
        preemptors = {t.uid: preemptor_of(snapshot, t) for t in fresh}
        ssn = open_session(snapshot, self._conf(), clone=False, read_only=True)
        try:
            found = [judge(ssn, t, preemptors[t.uid]) for t in fresh]
            queues = dict(ssn.queues)
        finally:
            close_session(ssn, update_phases=False)
        broke = [b for b in found if b.broken]
        for bypass in broke:
            self._report(bypass, {n for n, q in queues.items() if not q.implicit})
        for bypass in found:
            if not bypass.broken:
                log.log(
                    v(3),
                    "kube-scheduler preempted pod <%s> without asking the extender; no queue "
                    "rule broken",
                    bypass.victim.key,
                )
        return broke

    def _report(self, bypass: Bypass, real_queues: set[str]) -> None:
        note = bypass.note()
        log.warning("%s", note)
        for rule, _ in bypass.broken:
            self.breaks.labels(rule).inc()
        refs: list[ObjectRef] = []
        for job in (bypass.preemptor, bypass.victim_job):
            if job is not None and not job.synthesized:
                api = (
                    self.native_api_version
                    if job.source == NATIVE_SOURCE
                    else VOLCANO_POD_GROUP_API
                )
                refs.append(ObjectRef("PodGroup", job.name, job.namespace, api_version=api))
        if bypass.victim_job is not None and bypass.victim_job.queue in real_queues:
            refs.append(ObjectRef("Queue", bypass.victim_job.queue, api_version=QUEUE_API))
        for ref in dict.fromkeys(refs):
            self._record(ref, WARNING, REASON, note)
