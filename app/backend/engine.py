"""The engine behind the HTTP port: cluster source, queue accounting and the verbs.

One object owns the cluster state (fed by informers, or loaded once from a YAML file) and
the accounting session; every verb takes the state's lock, because the informers' threads
write to it while the event loop reads.
"""

from __future__ import annotations

import gc
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import partial
from typing import Any

from app.api import models
from app.api.port import RecentEviction
from app.telemetry.metrics import AssumptionCounts, QueueMetrics
from app.verbs.ports import BadPodError
from scheduler_core.accounting.keeper import QueueAccounting
from scheduler_core.api.devices import DeviceQuotaNames
from scheduler_core.api.job import JobInfo
from scheduler_core.api.resource import Resource
from scheduler_core.api.task import TaskInfo
from scheduler_core.cache.convert import ConversionError
from scheduler_core.cache.state import ClusterState
from scheduler_core.conf import (
    SchedulerConfiguration,
)
from scheduler_core.controller.events import WARNING, ObjectRef
from scheduler_core.controller.eviction import EvictionResult
from scheduler_core.controller.forked import run_forked
from scheduler_core.controller.reclaim import ReclaimLoop
from scheduler_core.controller.runtime import Controller
from scheduler_core.extender.decisions import FilterResult, NodeVictims
from scheduler_core.extender.filter_verb import filter_pod
from scheduler_core.extender.holds import preempt_refusals
from scheduler_core.extender.managed import ManagedPods
from scheduler_core.extender.preempt_verb import preempt_pod
from scheduler_core.extender.prioritize import HostScores, prioritize_pod
from scheduler_core.insight.explain import (
    Explanation,
    explain_cached_pod,
    explain_podgroup,
    explain_requested_pod,
)
from scheduler_core.insight.lookup import NotFoundError
from scheduler_core.insight.pending import PendingPage, pending_jobs
from scheduler_core.insight.queues import QueueView, queue_view, queue_views
from scheduler_core.insight.topology import TopologyView, topology_view
from scheduler_core.insight.whatif import WhatIfRequest, WhatIfResult, prepare, run_prepared
from scheduler_core.report import queue_attrs, session_report

log = logging.getLogger("app.engine")

DEMO_CLUSTER = "demo-cluster.yaml"


@dataclass(slots=True)
class BackendOptions:
    scheduler_names: tuple[str, ...] = ("queue-scheduler",)
    manage_annotated: bool = False
    assume_ttl: float = 30.0
    group_window: float = 10.0
    refresh_interval: float = 0.0
    namespaces: tuple[str, ...] = field(default_factory=tuple)


class EngineBackend:
    """Implements ``app.verbs.ports.ExtenderBackend`` with the Volcano-style engine."""

    def __init__(
        self,
        state: ClusterState,
        conf: SchedulerConfiguration,
        options: BackendOptions | None = None,
        *,
        informers: Any = None,
        source: str = "static",
        controller: Controller | None = None,
    ) -> None:
        self.state = state
        self.conf = conf
        state.set_device_names(DeviceQuotaNames(dict(conf.device_class_mappings)))
        state.set_topology_levels(conf.network_topology.label_levels)
        self.options = options or BackendOptions()
        self.informers = informers
        self.source = source
        self.controller = controller  # the leader's write-back (live clusters only)
        self.accounting = QueueAccounting(
            state,
            conf,
            assume_ttl=self.options.assume_ttl,
            group_window=self.options.group_window,
            min_refresh_interval=self.options.refresh_interval,
        )
        self.managed = ManagedPods(
            self.options.scheduler_names, self.options.manage_annotated, self.options.namespaces
        )
        self._frozen = False
        self._serving = f"serving from {source}"

    # --- port -----------------------------------------------------------------------------

    def readiness(self) -> tuple[bool, str]:
        if self.informers is not None:
            ready, reason = self.informers.readiness()
            if not ready:
                return False, str(reason)
        if not self._frozen:
            # Once loaded the state stays loaded (a kind, once synced, stays so): asked on
            # every verb call, the kinds are counted only until then.
            if not self.state.has_synced():
                return False, "cluster state has not been loaded"
            self._freeze_once()
        return True, self._serving

    def use_configuration(self, conf: SchedulerConfiguration) -> None:
        """Decide by ``conf`` from the next verb on. Swapped under the state's lock, so no verb
        sees the accounting of one configuration and the tiers of another (a reclaim loop is
        handed the same configuration first, by whoever follows the file)."""
        with self.state.locked():
            self.conf = conf
            self.state.set_device_names(DeviceQuotaNames(dict(conf.device_class_mappings)))
            self.state.set_topology_levels(conf.network_topology.label_levels)
            self.accounting.use_configuration(conf)

    def _freeze_once(self) -> None:
        """Move the synced cluster into the GC's permanent generation.

        With 50,000 pods loaded a full collection takes 200+ ms and lands on whichever
        request triggers it; frozen objects are never scanned again (``gc.freeze``).
        Objects that arrive later are collected as usual.
        """
        if self._frozen:
            return
        self._frozen = True
        gc.collect()
        gc.freeze()
        log.info(
            "Cluster loaded: %s; %d objects frozen out of garbage collection",
            self.state.counts(),
            gc.get_freeze_count(),
        )

    def reserve(self, task: TaskInfo, job: JobInfo) -> None:
        """Keep ``task``'s queue share for it (the reclaim loop freed capacity for it): an
        assumed pod the filter verb counts until the pod binds or the assumption expires."""
        with self.state.locked():
            self.accounting.assume(task, job)

    def is_managed(self, pod: dict[str, Any]) -> bool:
        return self.managed(pod)

    def _not_synced(self) -> str:
        """Why the verbs must not decide yet ("" once every cache has synced).

        Before the informers have listed everything, the cache is empty or partial: every
        queue looks idle and every node free, so any answer would be a guess. Filter answers
        an error (with ``ignorable: false`` kube-scheduler retries the pod later), preempt
        names no victims, prioritize scores every node alike."""
        ready, reason = self.readiness()
        return "" if ready else reason

    def decode_offered_names(self, data: bytes) -> tuple[str, ...] | None:
        return self.state.decode_offered_names(data)

    def filter(self, pod: dict[str, Any], node_names: Sequence[str]) -> FilterResult:
        waiting = self._not_synced()
        if waiting:
            return FilterResult(
                [], error=f"queue extender cache not synced yet ({waiting}); retry later"
            )
        with self.state.locked():
            try:
                return filter_pod(self.accounting, pod, node_names)
            except ConversionError as exc:
                raise BadPodError(f"cannot read the pod: {exc}") from exc

    def prioritize(self, pod: dict[str, Any], node_names: list[str]) -> HostScores:
        if self._not_synced():
            return HostScores.neutral(node_names)
        with self.state.locked():
            try:
                return prioritize_pod(self.accounting, pod, node_names)
            except ConversionError as exc:
                # Bad input, not an engine failure: refused as filter refuses it (neutral
                # scores would hide the mistake and still let the pod be placed).
                raise BadPodError(f"cannot read the pod: {exc}") from exc

    def preempt(
        self, pod: dict[str, Any], candidates: dict[str, list[str]]
    ) -> dict[str, NodeVictims]:
        waiting = self._not_synced()
        if waiting:
            log.info("preempt: cache not synced yet (%s): no victims", waiting)
            return {}
        with self.state.locked():
            try:
                chosen = preempt_pod(self.accounting, pod, candidates)
            except ConversionError as exc:
                raise BadPodError(f"cannot read the pod: {exc}") from exc
            self._report_refusals(pod, candidates, chosen)
        return {
            node: NodeVictims(uids=victims.uids, num_pdb_violations=victims.num_pdb_violations)
            for node, victims in chosen.items()
        }

    def _report_refusals(
        self, pod: dict[str, Any], candidates: dict[str, list[str]], chosen: dict[str, Any]
    ) -> None:
        """Events on a preemptor whose proposed victims the queue rules protect: its
        preempt answer carries no text, so this is where a person reads why.

        Written by whichever replica answered the verb, leader or not: the replica that
        refused is the only one that knows, and a lease gap (a restart, a handover) must not
        leave kube-scheduler's "no candidate node for preemption" the only word. The
        recorder makes the repeats of one reason on one pod a single Event with a count."""
        controller = self.controller
        if controller is None or not controller.options.write_status:
            return
        if not any(candidates.values()):
            return
        try:
            refusals = preempt_refusals(self.accounting, pod, candidates, chosen)
        except Exception:  # an explanation must never cost the verb its answer
            log.exception("preempt: explaining the refused victims failed")
            return
        regarding = ObjectRef.of(pod, kind="Pod", api_version="v1")
        for refusal in refusals:
            controller.recorder.record(
                regarding,
                WARNING,
                refusal.reason,
                refusal.message,
                action="Preempt",
                leader_only=False,
            )

    def queue_metrics(self) -> list[QueueMetrics]:
        with self.state.locked():
            ssn = self.accounting.session()
            attrs = queue_attrs(ssn)
            rows = []
            for name, queue in sorted(ssn.queues.items()):
                attr = attrs.get(name)
                if attr is None and queue.implicit:
                    continue
                empty = Resource.empty()
                rows.append(
                    QueueMetrics(
                        name=name,
                        weight=float(queue.weight),
                        share=float(attr.share) if attr is not None else 0.0,
                        overused=ssn.overused(queue) if attr is not None else False,
                        allocated=attr.allocated if attr is not None else empty,
                        request=attr.request if attr is not None else empty,
                        deserved=attr.deserved if attr is not None else empty,
                        inqueue=attr.inqueue if attr is not None else empty,
                        capability=queue.capability,
                        real_capability=attr.real_capability if attr is not None else None,
                    )
                )
            return rows

    def assumption_counts(self) -> AssumptionCounts:
        """Read at scrape time. Assumptions expire lazily, when the accounting session is
        next used; using it here makes a quiet extender's gauge fall back to zero too."""
        with self.state.locked():
            self.accounting.session()
            acct = self.accounting
            return AssumptionCounts(
                len(acct.assumed),
                acct.expired,
                acct.unseen_refused,
                acct.unseen_dropped,
                acct.group_released,
                acct.refreshes,
                acct.follows,
                acct.one_off_sessions,
                acct.taken_in,
            )

    def explain(self, pod: dict[str, Any]) -> dict[str, Any]:
        """What filter would answer and why, without assuming the pod: the people's API's
        explanation (one derivation, one set of numbers), for a pod sent as kube-scheduler
        sends it, and whether this extender manages it. Raises ``BadPodError`` (one line
        naming the field) for a pod the engine cannot read."""
        with self.state.locked():
            try:
                explanation = explain_requested_pod(self.accounting, pod)
            except ConversionError as exc:
                raise BadPodError(f"cannot read the pod: {exc}") from exc
        doc = models.document(models.Explanation, explanation)
        return {"managed": self.is_managed(pod), **doc}

    # --- the read-only API (app.api.port.InsightBackend) -------------------------------

    def queues(self) -> list[QueueView]:
        with self.state.locked():
            return queue_views(self.accounting)

    def queue(self, name: str) -> QueueView:
        with self.state.locked():
            view = queue_view(self.accounting, name)
        if view is None:
            raise NotFoundError(f"queue {name} is not in the extender's cache")
        return view

    def pending(self, queue: str, limit: int) -> PendingPage:
        with self.state.locked():
            return pending_jobs(self.accounting, queue, limit)

    def explain_pod(self, namespace: str, name: str) -> Explanation:
        with self.state.locked():
            return explain_cached_pod(self.accounting, namespace, name)

    def explain_podgroup(self, namespace: str, name: str) -> Explanation:
        with self.state.locked():
            return explain_podgroup(self.accounting, namespace, name)

    def topology(self) -> TopologyView:
        with self.state.locked():
            return topology_view(self.state, self.conf)

    def whatif(self, request: WhatIfRequest) -> Callable[[], WhatIfResult]:
        """The dry run to call off the event loop; it runs in a forked child (see
        ``scheduler_core.controller.forked``), so it never competes with the verbs for the GIL."""
        with self.state.locked():
            prepared = prepare(self.accounting, self.conf, request)
            history = self.state.usage_history
        # The fork shares the live usage history, which informer threads record under its
        # lock: held across the fork, the child never finds it taken.
        hold = [history.locked()] if history is not None else []
        return partial(run_forked, partial(run_prepared, prepared), hold=hold)

    def debug_state(self) -> dict[str, Any]:
        with self.state.locked():
            ssn = self.accounting.session()
            report = session_report(ssn)
            views = queue_views(self.accounting)
            return {
                "source": self.source,
                "clusterVersion": self.state.version,
                "objects": self.state.counts(),
                # The people's API's queue views (/api/v1/queues): one set of numbers.
                "queues": [models.document(models.Queue, view) for view in views],
                "jobs": report["jobs"],
                # Sorted by pod key: dicts themselves have no order (two of them made this 500).
                "assumed": [
                    {"pod": key, "queue": a.queue}
                    for key, a in sorted(self.accounting.assumed.items())
                ],
            }


def recent_evictions(loop: ReclaimLoop) -> list[RecentEviction]:
    """The loop's last evictions as the status page shows them, newest first."""
    rows = []
    for at, result, planned in reversed(list(loop.history)):
        stamp = datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        prefix = {
            EvictionResult.DRY_RUN: "dry run: ",
            EvictionResult.UNKNOWN: "unconfirmed (no answer): ",
        }.get(result, "")
        rows.append(
            RecentEviction(planned.victim.key, planned.victim_queue, prefix + planned.rule, stamp)
        )
    return rows
