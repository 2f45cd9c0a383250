"""The leader's status write-back loop: PodGroup and Queue status, their events and gauges.

Every ``interval`` the leader looks at the cluster (only when it changed since the last look),
derives each PodGroup's status and each Queue's allocation in one pass (``status_pass``:
phases as Volcano's cycle reaches them, admissions one after the other), and writes only
what differs from what it last wrote or read. The Queue counters are counted from the phases
the cycle leaves in the API server: a PodGroup whose write was refused or failed counts in
the phase it still has there, never in the one it was meant to get. However many pod events
arrived in between, one cycle writes each object at most once, and a token bucket caps the
writes per second; what the bucket refuses is picked up by a later cycle. Nothing here runs on
the verbs' threads: a slow or failing API server delays the write-back, never a scheduling
answer.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable, Iterable
from contextlib import AbstractContextManager
from datetime import UTC, datetime
from typing import Any, Final
from urllib.parse import quote

from prometheus_client import CollectorRegistry, Gauge
from prometheus_client import Counter as Counter_

from scheduler_core.api.job import JobInfo
from scheduler_core.api.snapshot import ClusterSnapshot
from scheduler_core.api.task import TaskInfo
from scheduler_core.conf import SchedulerConfiguration
from scheduler_core.framework.memo import SessionMemos
from scheduler_core.framework.session import Session

from .events import NORMAL, WARNING, ObjectRef, TokenBucket
from .periodic import BACKGROUND_SHARE, Periodic
from .podgroup_status import (
    PHASES,
    TOPOLOGY_DOMAIN_ANNOTATION,
    UNSCHEDULABLE,
    PodGroupFacts,
    next_status,
)
from .queue_status import resource_list, status_patch
from .rest import ApiError
from .runtime import Controller
from .snapshot import sharing_tasks
from .status_pass import (
    DomainOf,
    GroupStatus,
    HoldReason,
    QueueStatus,
    derive,
    nothing_to_write,
)

log = logging.getLogger(__name__)

GROUP: Final = "scheduling.volcano.sh"
VERSION: Final = "v1beta1"
API_VERSION: Final = f"{GROUP}/{VERSION}"
CONFLICT_RETRIES: Final = 3

#: The same codes as reasons of the event on a held pod.
POD_EVENT_REASONS: Final = {
    "gang-invalid": "GangInvalid",
    "queue-capability": "QueueCapability",
    "queue-overused": "QueueOverused",
    "gang-unsatisfiable": "GangUnsatisfiable",
    "queue-closed": "QueueClosed",
    "queue-missing": "QueueMissing",
    "topology-no-domain": "TopologyUnsatisfiable",
}


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class StatusWriter:
    """Writes PodGroup status (through the object: the CRD has no status subresource) and
    Queue status (through ``/status``) while this replica leads."""

    def __init__(
        self,
        controller: Controller,
        snapshot: Callable[[], ClusterSnapshot],
        conf: Callable[[], SchedulerConfiguration],
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
        native_api_version: str = "scheduling.k8s.io/v1alpha2",
        domain_of: DomainOf | None = None,
    ) -> None:
        """``native_api_version`` is the served version of Kubernetes PodGroups, which the
        events about them name."""
        self.native_api_version = native_api_version
        self._controller = controller
        self._rest = controller.rest
        self._recorder = controller.recorder
        self._snapshot = snapshot
        self._conf = conf
        self._locked = locked
        self._version = version
        self._hold_reason = hold_reason
        self._domain_of = domain_of
        self._managed = frozenset(managed_schedulers)
        self._namespaces = frozenset(namespaces)
        self.interval = interval
        self._bucket = TokenBucket(qps, burst)
        self._worker = Periodic(
            "status-writer",
            interval,
            self._leader_cycle,
            what="status write-back cycle",
            max_share=BACKGROUND_SHARE,
        )
        self._seen_version = -1
        self._dirty = True  # something was left unwritten last cycle
        #: What the plugins remember from one pass's session to the next.
        self.memos = SessionMemos()
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
            if group.native:
                self._native_group(group)
                continue
            desired = group.phase
            if self._pg_known.get(group.key) == (desired, group.facts):
                phases_by_queue.setdefault(group.queue, Counter())[desired] += 1
                continue
            if not self._take_token():
                complete = False
                # Counted as the API server still has it: the counters never run ahead.
                phases_by_queue.setdefault(group.queue, Counter())[group.known_phase] += 1
                continue
            held = self._write_podgroup(group)
            if held is not None:
                phases_by_queue.setdefault(group.queue, Counter())[held] += 1
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

    def _observe(self) -> tuple[list[GroupStatus], list[QueueStatus]]:
        # Only the copy is made under the state's lock: its own jobs and nodes around the
        # cache's task objects, which the cache replaces and never changes. The pass itself
        # (a session and the enqueue action over every pending job) runs outside the lock,
        # so the verbs never wait for it.
        with self._locked():
            shared = self._snapshot()
            if nothing_to_write(shared):
                return [], []
            snapshot = sharing_tasks(shared)
        result = derive(
            snapshot,
            self._conf(),
            self._phase,
            self._held,
            managed=self._managed,
            namespaces=self._namespaces,
            memos=self.memos,
            domain_of=self._domain if self._domain_of is not None else None,
        )
        return result.groups, result.queues

    def _held(self, ssn: Session, job: JobInfo, task: TaskInfo) -> tuple[str, str] | None:
        """The engine's hold reason, asked under the state's lock: it reads the verbs' own
        queue accounting, which the verbs change under that lock."""
        with self._locked():
            return self._hold_reason(ssn, job, task)

    def _domain(self, ssn: Session, job: JobInfo) -> str | None:
        """A topology gang's domain, asked under the state's lock: it reads the choices the
        verbs keep, which they change under that lock."""
        assert self._domain_of is not None
        with self._locked():
            return self._domain_of(ssn, job)

    # ------------------------------------------------------------------ PodGroups

    def _write_podgroup(self, group: GroupStatus) -> str | None:
        """Write the group's status; the phase the API server holds afterwards as far as
        this replica knows (None: the PodGroup is gone)."""
        key = group.key
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
                    return None
                log.warning("status write-back: cannot read PodGroup %s: %s", key, exc)
                self._dirty = True
                return group.known_phase
            current = fresh.get("status") or {}
            status = next_status(current, group.facts, _now())
            phase = str(status.get("phase"))
            annotations = _with_domain(fresh, group.facts.domain)
            if status == current and annotations is None:
                self._pg_known[key] = (phase, group.facts)
                self._phase[key] = phase
                return phase
            fresh["status"] = status
            if annotations is not None:
                fresh.setdefault("metadata", {})["annotations"] = annotations
            try:
                self._rest.put(path, fresh, "podgroups")
            except ApiError as exc:
                if exc.conflict:
                    continue  # someone wrote in between: read again, recompute
                if exc.not_found:
                    return None
                log.warning("status write-back: cannot update PodGroup %s: %s", key, exc)
                self._dirty = True
                return str(current.get("phase") or group.known_phase)
            self._pg_known[key] = (phase, group.facts)
            self._phase[key] = phase
            self._podgroup_events(fresh, current, status)
            return phase
        log.warning("status write-back: PodGroup %s kept changing; retrying later", key)
        self._dirty = True
        return group.known_phase

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

    def _native_group(self, group: GroupStatus) -> None:
        """A Kubernetes PodGroup: its status is kube-scheduler's, so it is told about with
        events only (on the PodGroup and its held pods), once per change of its facts, and it
        is not among the Volcano PodGroups a Queue's status counts."""
        if self._pg_known.get(group.key) == (group.phase, group.facts):
            return
        self._pg_known[group.key] = (group.phase, group.facts)
        hold = group.facts.hold
        if hold is None:
            return
        self._recorder.record(
            ObjectRef("PodGroup", group.name, group.namespace, api_version=self.native_api_version),
            WARNING,
            UNSCHEDULABLE,
            f"{hold.reason}: {hold.message}",
            action="Schedule",
        )
        self._held_pod_events(group)

    def _held_pod_events(self, group: GroupStatus) -> None:
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

    def _queue_needs_write(self, queue: QueueStatus, counts: Counter[str]) -> bool:
        wanted = (resource_list(queue.allocated), tuple(sorted(counts.items())))
        return self._queue_known.get(queue.name) != wanted

    def _write_queue(self, queue: QueueStatus, counts: Counter[str]) -> None:
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


def _with_domain(obj: dict[str, Any], domain: str | None) -> dict[str, str] | None:
    """The PodGroup's annotations with its network domain set (or, with none, removed);
    None when they already say so."""
    annotations = dict((obj.get("metadata") or {}).get("annotations") or {})
    if annotations.get(TOPOLOGY_DOMAIN_ANNOTATION) == domain:
        return None
    if domain is None:
        del annotations[TOPOLOGY_DOMAIN_ANNOTATION]
    else:
        annotations[TOPOLOGY_DOMAIN_ANNOTATION] = domain
    return annotations


def _condition(status: dict[str, Any], ctype: str) -> dict[str, Any] | None:
    for condition in status.get("conditions") or []:
        if condition.get("type") == ctype:
            return dict(condition)
    return None
