"""The leader's status write-back loop: PodGroup and Queue status, their events and gauges.

Every ``interval`` the leader looks at the engine's accounting session (only when the cluster
changed since the last look), derives each PodGroup's status and each Queue's counters, and
writes only what differs from what it last wrote or read. However many pod events arrived in
between, one cycle writes each object at most once, and a token bucket caps the writes per
second; what the bucket refuses is picked up by a later cycle. Nothing here runs on the verbs'
threads: a slow or failing API server delays the write-back, never a scheduling answer.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable, Iterable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final
from urllib.parse import quote

from prometheus_client import CollectorRegistry, Gauge
from prometheus_client import Counter as Counter_

from scheduler_core.api.job import JobInfo
from scheduler_core.api.resource import Resource
from scheduler_core.api.task import TaskInfo
from scheduler_core.api.types import TaskStatus
from scheduler_core.engine import close_session
from scheduler_core.framework.session import Session

from .events import NORMAL, WARNING, ObjectRef, TokenBucket
from .periodic import Periodic
from .podgroup_status import (
    NOT_ENOUGH_RESOURCES,
    NOT_ENOUGH_TASKS,
    PHASES,
    UNSCHEDULABLE,
    Hold,
    PodGroupFacts,
    next_phase,
    next_status,
)
from .queue_status import resource_list, status_patch
from .rest import ApiError
from .runtime import Controller

log = logging.getLogger(__name__)

GROUP: Final = "scheduling.volcano.sh"
VERSION: Final = "v1beta1"
API_VERSION: Final = f"{GROUP}/{VERSION}"
CONFLICT_RETRIES: Final = 3

#: What the engine says holds one pending task: (rule code, sentence), or None.
HoldReason = Callable[[Session, JobInfo, TaskInfo], "tuple[str, str] | None"]

#: The filter's rule codes as Volcano condition reasons.
RULE_REASONS: Final = {
    "gang-invalid": NOT_ENOUGH_TASKS,
    "queue-capability": NOT_ENOUGH_RESOURCES,
    "queue-overused": NOT_ENOUGH_RESOURCES,
    "gang-unsatisfiable": NOT_ENOUGH_RESOURCES,
    "queue-closed": "QueueClosed",
    "queue-missing": "QueueMissing",
}
#: The same codes as reasons of the event on a held pod.
POD_EVENT_REASONS: Final = {
    "gang-invalid": "GangInvalid",
    "queue-capability": "QueueCapability",
    "queue-overused": "QueueOverused",
    "gang-unsatisfiable": "GangUnsatisfiable",
    "queue-closed": "QueueClosed",
    "queue-missing": "QueueMissing",
}


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass(frozen=True, slots=True)
class _Group:
    namespace: str
    name: str
    queue: str
    cached_phase: str
    facts: PodGroupFacts
    held_pods: tuple[tuple[str, str, str, str], ...]  # (namespace, name, uid, rule code)


@dataclass(frozen=True, slots=True)
class _Queue:
    name: str
    allocated: Resource


class StatusWriter:
    """Writes PodGroup status (through the object: the CRD has no status subresource) and
    Queue status (through ``/status``) while this replica leads."""

    def __init__(
        self,
        controller: Controller,
        open_session: Callable[[], Session],
        locked: Callable[[], AbstractContextManager[Any]],
        version: Callable[[], int],
        hold_reason: HoldReason,
        *,
        managed_schedulers: Iterable[str] = ("queue-scheduler",),
        namespaces: Iterable[str] = (),
        interval: float = 1.0,
        qps: float = 20.0,
        burst: int = 100,
        registry: CollectorRegistry | None = None,
    ) -> None:
        self._controller = controller
        self._rest = controller.rest
        self._recorder = controller.recorder
        self._session = open_session
        self._locked = locked
        self._version = version
        self._hold_reason = hold_reason
        self._managed = frozenset(managed_schedulers)
        self._namespaces = frozenset(namespaces)
        self.interval = interval
        self._bucket = TokenBucket(qps, burst)
        self._worker = Periodic(
            "status-writer", interval, self._leader_cycle, what="status write-back cycle"
        )
        self._seen_version = -1
        self._dirty = True  # something was left unwritten last cycle
        # What the API server holds, as far as we know: PodGroup key -> (phase, facts), queue
        # name -> the patch inputs. Forgotten when leadership changes hands.
        self._pg_known: dict[str, tuple[str, PodGroupFacts]] = {}
        self._queue_known: dict[str, tuple[dict[str, str], tuple[tuple[str, int], ...]]] = {}
        self._phase: dict[str, str] = {}
        self.cycles = 0
        registry = registry if registry is not None else controller.registry
        self._gauges = {
            phase: Gauge(
                f"volcano_queue_pod_group_{phase.lower()}_count",
                f"PodGroups in phase {phase}, per queue (Volcano's queue controller metric).",
                ["queue_name"],
                registry=registry,
            )
            for phase in PHASES
        }
        self._gauge_queues: set[str] = set()
        self._cycles = Counter_(
            "queue_extender_status_cycles",
            "Status write-back cycles that looked at a changed cluster (each writes every "
            "PodGroup and Queue at most once).",
            registry=registry,
        )
        controller.on_leading(start=self.forget, stop=self.forget)

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> StatusWriter:
        self._worker.start()
        return self

    def stop(self, timeout: float = 5.0) -> None:
        self._worker.stop(timeout)

    def forget(self) -> None:
        """A new term: what another leader wrote in between is unknown, so read again."""
        self._pg_known.clear()
        self._queue_known.clear()
        self._dirty = True

    def _leader_cycle(self) -> None:
        if self._controller.is_leader():
            self.cycle()

    # ------------------------------------------------------------------ one cycle

    def cycle(self) -> None:
        version = self._version()
        if version == self._seen_version and not self._dirty:
            return
        groups, queues = self._observe()
        # After a change, look once more a cycle later: objects that arrived while this cycle
        # read the cluster are seen, even if nothing changes after them.
        changed = version != self._seen_version
        self._seen_version = version
        self.cycles += 1
        self._cycles.inc()
        complete = True
        phases_by_queue: dict[str, Counter[str]] = {q.name: Counter() for q in queues}
        for group in groups:
            key = f"{group.namespace}/{group.name}"
            phase = self._phase.get(key, group.cached_phase)
            desired = next_phase(phase, group.facts)
            phases_by_queue.setdefault(group.queue, Counter())[desired] += 1
            if self._pg_known.get(key) == (desired, group.facts):
                continue
            if not self._take_token():
                complete = False
                continue
            self._write_podgroup(group)
            self._held_pod_events(group)
        self._set_gauges(phases_by_queue)
        for queue in queues:
            counts = phases_by_queue.get(queue.name, Counter())
            if not self._queue_needs_write(queue, counts):
                continue
            if not self._take_token():
                complete = False
                continue
            self._write_queue(queue, counts)
        self._dirty = not complete or changed

    def _take_token(self) -> bool:
        return self._bucket.delay() == 0.0

    # ------------------------------------------------------------------ observing

    def _observe(self) -> tuple[list[_Group], list[_Queue]]:
        groups: list[_Group] = []
        with self._locked():
            ssn = self._session()
            # Volcano's updateQueueStatus: the requests of every task in an allocated status,
            # summed per queue (assumed pods are not in the cluster yet, so not counted).
            allocated: dict[str, Resource] = {}
            for job in ssn.jobs.values():
                allocated.setdefault(job.queue, Resource.empty()).add(job.allocated)
            queues = [
                _Queue(name, allocated.get(name) or Resource.empty())
                for name, queue in sorted(ssn.queues.items())
                if not queue.implicit
            ]
            for job in ssn.jobs.values():
                if job.synthesized:
                    continue
                if self._namespaces and job.namespace not in self._namespaces:
                    continue
                groups.append(self._group(ssn, job))
            close_session(ssn, update_phases=False)
        return groups, queues

    def _group(self, ssn: Session, job: JobInfo) -> _Group:
        queue = ssn.queues.get(job.queue)
        held: list[tuple[str, str, str, str]] = []
        hold: Hold | None = None
        ready = job.is_ready()
        invalid = ssn.job_valid(job)
        if not ready:
            if invalid is not None:
                hold = Hold(invalid.reason or NOT_ENOUGH_TASKS, invalid.message or invalid.reason)
            else:
                pending = sorted(job.tasks_with(TaskStatus.PENDING), key=lambda t: t.name)
                for task in pending:
                    found = self._hold_reason(ssn, job, task)
                    if found is None:
                        continue
                    code, sentence = found
                    if hold is None:
                        unready = max(0, job.min_available - job.ready_task_num())
                        hold = Hold(
                            RULE_REASONS.get(code, NOT_ENOUGH_RESOURCES),
                            f"{unready}/{len(job.tasks)} tasks in gang unschedulable: {sentence}",
                        )
                    if task.scheduler_name in self._managed:
                        held.append((task.namespace, task.name, task.uid, code))
        admitted = (
            queue is not None
            and queue.is_open()
            and invalid is None
            and (job.min_resources is None or ssn.job_enqueueable(job))
        )
        facts = PodGroupFacts(
            min_member=job.min_available,
            scheduled=job.scheduled_task_num() + job.releasing_scheduled_task_num(),
            running=len(job.status_index.get(TaskStatus.RUNNING, {})),
            succeeded=len(job.status_index.get(TaskStatus.SUCCEEDED, {})),
            failed=len(job.status_index.get(TaskStatus.FAILED, {})),
            ready=ready,
            admitted=admitted,
            hold=hold,
        )
        return _Group(job.namespace, job.name, job.queue, job.phase.value, facts, tuple(held))

    # ------------------------------------------------------------------ PodGroups

    def _write_podgroup(self, group: _Group) -> None:
        key = f"{group.namespace}/{group.name}"
        path = (
            f"/apis/{GROUP}/{VERSION}/namespaces/{quote(group.namespace)}/podgroups/"
            f"{quote(group.name)}"
        )
        for _ in range(CONFLICT_RETRIES):
            try:
                fresh = self._rest.get(path)
            except ApiError as exc:
                if exc.not_found:
                    self._pg_known.pop(key, None)
                    return
                log.warning("status write-back: cannot read PodGroup %s: %s", key, exc)
                self._dirty = True
                return
            current = fresh.get("status") or {}
            status = next_status(current, group.facts, _now())
            phase = str(status.get("phase"))
            if status == current:
                self._pg_known[key] = (phase, group.facts)
                self._phase[key] = phase
                return
            fresh["status"] = status
            try:
                self._rest.put(path, fresh, "podgroups")
            except ApiError as exc:
                if exc.conflict:
                    continue  # someone wrote in between: read again, recompute
                if exc.not_found:
                    return
                log.warning("status write-back: cannot update PodGroup %s: %s", key, exc)
                self._dirty = True
                return
            self._pg_known[key] = (phase, group.facts)
            self._phase[key] = phase
            self._podgroup_events(fresh, current, status)
            return
        log.warning("status write-back: PodGroup %s kept changing; retrying later", key)
        self._dirty = True

    def _podgroup_events(
        self, obj: dict[str, Any], before: dict[str, Any], after: dict[str, Any]
    ) -> None:
        ref = ObjectRef.of(obj, kind="PodGroup", api_version=API_VERSION)
        old, new = before.get("phase") or "Pending", after.get("phase")
        if old != new:
            self._recorder.record(
                ref, NORMAL, str(new), f"PodGroup phase {old} -> {new}", action="UpdateStatus"
            )
        was = _condition(before, UNSCHEDULABLE)
        now = _condition(after, UNSCHEDULABLE)
        if now is not None and now.get("status") == "True" and was != now:
            self._recorder.record(
                ref,
                WARNING,
                UNSCHEDULABLE,
                f"{now.get('reason')}: {now.get('message', '')}",
                action="Schedule",
            )

    def _held_pod_events(self, group: _Group) -> None:
        for namespace, name, uid, code in group.held_pods:
            if group.facts.hold is None:
                break
            self._recorder.record(
                ObjectRef("Pod", name, namespace, uid),
                WARNING,
                POD_EVENT_REASONS.get(code, "QueueHold"),
                group.facts.hold.message,
                action="Schedule",
            )

    # ------------------------------------------------------------------ Queues

    def _queue_needs_write(self, queue: _Queue, counts: Counter[str]) -> bool:
        wanted = (resource_list(queue.allocated), tuple(sorted(counts.items())))
        return self._queue_known.get(queue.name) != wanted

    def _write_queue(self, queue: _Queue, counts: Counter[str]) -> None:
        wanted = (resource_list(queue.allocated), tuple(sorted(counts.items())))
        path = f"/apis/{GROUP}/{VERSION}/queues/{quote(queue.name)}"
        for _ in range(CONFLICT_RETRIES):
            try:
                fresh = self._rest.get(path)
            except ApiError as exc:
                if not exc.not_found:
                    log.warning("status write-back: cannot read Queue %s: %s", queue.name, exc)
                    self._dirty = True
                return
            patch = status_patch(fresh.get("status") or {}, queue.allocated, counts)
            if not patch:
                self._queue_known[queue.name] = wanted
                return
            body = {
                "metadata": {
                    "resourceVersion": (fresh.get("metadata") or {}).get("resourceVersion")
                },
                "status": patch,
            }
            try:
                self._rest.merge_patch(path + "/status", body, "queues/status")
            except ApiError as exc:
                if exc.conflict:
                    continue
                if not exc.not_found:
                    log.warning("status write-back: cannot patch Queue %s: %s", queue.name, exc)
                    self._dirty = True
                return
            self._queue_known[queue.name] = wanted
            return
        self._dirty = True

    def _set_gauges(self, phases_by_queue: dict[str, Counter[str]]) -> None:
        for name in self._gauge_queues - set(phases_by_queue):
            for gauge in self._gauges.values():
                gauge.remove(name)
        for name, counts in phases_by_queue.items():
            for phase, gauge in self._gauges.items():
                gauge.labels(name).set(counts.get(phase, 0))
        self._gauge_queues = set(phases_by_queue)


def _condition(status: dict[str, Any], ctype: str) -> dict[str, Any] | None:
    for condition in status.get("conditions") or []:
        if condition.get("type") == ctype:
            return dict(condition)
    return None
