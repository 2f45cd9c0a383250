"""The objects the cache holds, as the engine models them, and the rules that keep them
consistent one event at a time: a pod's task in its job and on its node (or waiting for
either), a job made from its PodGroup or for a plain pod, each queue's sums. Each change
touches only what it names, and says what it changed of a session's inputs (``changes``).

No lock and no event counting here: ``ClusterState`` serialises the events and reads."""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from typing import Any

from scheduler_core.api.errors import NodeError
from scheduler_core.api.job import NATIVE_SOURCE, JobInfo
from scheduler_core.api.node import NodeInfo
from scheduler_core.api.pdb import PodDisruptionBudget
from scheduler_core.api.queue import DEFAULT_QUEUE, QueueInfo
from scheduler_core.api.resource import Resource
from scheduler_core.api.snapshot import PlacementEpoch
from scheduler_core.api.storage import StorageCatalog
from scheduler_core.api.task import TaskInfo
from scheduler_core.api.types import TaskStatus, completed_status
from scheduler_core.cache.changes import ChangeLog
from scheduler_core.cache.charging import DeviceCharging
from scheduler_core.cache.convert import (
    PodGroupInfo,
    named_queue,
    object_name,
    placement_convertible,
    pod_job_id,
    pod_queue_annotation,
    pod_to_task,
    replaced_placement,
)
from scheduler_core.cache.digest import stored_version
from scheduler_core.cache.jobs import (
    apply_podgroup,
    job_from_podgroup,
    native_job,
    native_phase,
    respec_synthesized,
    same_sums,
    synthesized_job,
    synthesized_queue,
)
from scheduler_core.cache.known_offers import KnownOffers
from scheduler_core.cache.member_queues import MemberQueues
from scheduler_core.cache.queue_sums import QueueSums
from scheduler_core.cache.topology_source import TopologySource

log = logging.getLogger("scheduler_core.cache")


class ClusterStore:
    def __init__(self) -> None:
        #: The decision version and what each event since the last structural one changed.
        self.changes = ChangeLog()
        #: Set by an event handler that classified its own event (a pod, a PodGroup); an
        #: event left unclassified is structural.
        self.classified = False
        self.tasks: dict[str, TaskInfo] = {}  # pod key -> task
        #: Pod key -> resourceVersion of the pod object its task was converted from, for
        #: the tasks that are exactly that conversion (see ``cached_task``). Emptied on every
        #: PriorityClass change: a pod without ``spec.priority`` takes its class's value at
        #: conversion, so a task converted before may differ from one converted now.
        self.converted: dict[str, str] = {}
        self.jobs: dict[str, JobInfo] = {}
        self.orphans: dict[str, dict[str, TaskInfo]] = {}  # job id -> tasks awaiting a PodGroup
        self.nodes: dict[str, NodeInfo] = {}
        #: Offered node-name lists found all in ``nodes`` (forgotten when one is removed).
        self.known_offers = KnownOffers()
        #: Nodes as their objects say, before their DRA devices are added (see
        #: ``DeviceCharging.with_devices``).
        self.node_base: dict[str, NodeInfo] = {}
        self.total_allocatable = Resource.empty()
        self.unplaced: dict[str, dict[str, TaskInfo]] = {}  # node name -> tasks awaiting it
        #: Keys of the waiting pods kube-scheduler found no node for: the reclaim loop asks
        #: whether there is one on every tick, and must not walk every waiting pod for it.
        self.unschedulable: set[str] = set()
        #: Pods as they were when kube-scheduler marked them as its preemption's victims
        #: (``DisruptionTarget``, ``PreemptionByScheduler``), for the leader's look at
        #: preemption it was not asked about: a victim may be gone within milliseconds, long
        #: before anyone polling would see it. Bounded; its reader drains it.
        self.marked_victims: deque[TaskInfo] = deque(maxlen=1024)
        self.queues: dict[str, QueueInfo] = {}
        self.podgroups: dict[str, PodGroupInfo] = {}
        #: The queues native groups' members name, for the groups that name none.
        self.member_queues = MemberQueues()
        self.priority_classes: dict[str, tuple[int, bool]] = {}
        self.pdbs: dict[str, PodDisruptionBudget] = {}
        self.storage = StorageCatalog()
        self.namespaces: dict[str, dict[str, str]] = {}
        self.placement = PlacementEpoch()
        #: Queue usage kept as jobs change, and the usage history it feeds.
        self.sums = QueueSums()
        #: DRA devices: what they add to nodes, what claims charge to pods.
        self.charging = DeviceCharging(self.storage)
        self._rederiving = False
        #: The network topology: HyperNodes, label levels, the last good tree, its refusal.
        self.topology = TopologySource()

    # --- pods -----------------------------------------------------------------------------

    def priority_values(self) -> dict[str, int]:
        """PriorityClass name -> value."""
        return {name: value for name, (value, _) in self.priority_classes.items()}

    def global_default(self) -> int | None:
        for value, is_default in self.priority_classes.values():
            if is_default:
                return value
        return None

    def put_pod(self, pod: dict[str, Any], *, placement_only: bool = False) -> None:
        """``placement_only``: the pod differs from the version the cache converted last
        in nothing but ``spec.nodeName`` and ``status`` (see ``read_digest``), so its task
        is made from the last one where that can be done exactly."""
        task = _converted(pod, self.tasks, self.priority_values, placement_only=placement_only)
        key = task.key  # one string for every map's key
        old = self.tasks.get(key)
        siblings = self.charging.note_pod(task, pod, old)
        before = self._jobs_of(old, task)
        job_id, synthesized = pod_job_id(pod)
        # A plain pod's group of one is re-derived from the pod on every update; kept as the
        # same object when it stays in its queue, so the update is a change of its sums
        # rather than a job going and another coming.
        queue = pod_queue_annotation(pod) if synthesized else ""
        kept = self.jobs.get(job_id) if old is not None and old.job == job_id else None
        if (
            kept is None
            or not synthesized
            or not kept.synthesized
            or kept.queue != synthesized_queue(queue)
        ):
            kept = None
        self._remove_pod(key, keep_job=kept is not None)
        self.tasks[key] = task
        version = stored_version(pod)
        if version and not task.resource_claims:
            # (A pod with device claims is charged its claims' devices here: its task is
            # more than the conversion.)
            self.converted[key] = version
        if task.unschedulable and task.status == TaskStatus.PENDING:
            self.unschedulable.add(key)
        if task.disruption_target and task.node_name and (old is None or not old.disruption_target):
            self.marked_victims.append(task)
        job = self.jobs.get(job_id)
        if kept is not None:
            respec_synthesized(kept, task)
        elif job is None and synthesized:
            job = synthesized_job(task, queue)
            self.jobs[job_id] = job
        if job is not None:
            job.add_task_info(task)
            self.touch(job_id)
        else:
            self.orphans.setdefault(job_id, {})[task.uid] = task
        self._place(task)
        self._classify_pod(old, task, before)
        native = not synthesized and native_job(job_id)
        if native or (old is not None and old.job != job_id and native_job(old.job)):
            if old is not None and old.job != job_id:
                self._note_member_queue(old.job, key, "")
            if native:
                self._note_member_queue(job_id, key, named_queue(pod))
        if siblings:
            self.rederive(siblings)

    def delete_pod(self, key: str) -> None:
        old = self.tasks.get(key)
        before = self._jobs_of(old, None)
        siblings = self.charging.forget_pod(key, old)
        self._remove_pod(key)
        self._classify_pod(old, None, before)
        if old is not None and native_job(old.job):
            self._note_member_queue(old.job, key, "")
        if siblings:
            self.rederive(siblings)

    def rederive(self, pod_keys: Iterable[str]) -> None:
        """Put the named claim pods again (their charge may have moved)."""
        if self._rederiving:
            return
        self._rederiving = True
        try:
            for key in sorted(pod_keys):
                pod = self.charging.claim_pods.get(key)
                if pod is not None:
                    self.put_pod(pod)
        finally:
            self._rederiving = False

    def _jobs_of(self, old: TaskInfo | None, new: TaskInfo | None) -> dict[str, JobInfo | None]:
        jobs = self.jobs
        before = {old.job: jobs.get(old.job)} if old is not None else {}
        if new is not None and (old is None or new.job != old.job):
            before[new.job] = jobs.get(new.job)
        return before

    def _classify_pod(
        self, old: TaskInfo | None, new: TaskInfo | None, before: dict[str, JobInfo | None]
    ) -> None:
        """Inert when the pod kept everything a sum reads; sums-only when its jobs are the
        same objects before and after, or one that is not is a plain pod's group of one
        that came or went with it; else left structural."""
        now = self.jobs
        appeared: tuple[str, ...] = ()
        gone: tuple[str, ...] = ()
        for uid, job in before.items():
            current = now.get(uid)
            if current is job:
                continue
            if job is None and current is not None and current.synthesized:
                appeared += (uid,)
                continue
            if job is not None and current is None and job.synthesized:
                gone += (uid,)
                continue
            return
        self.classified = True
        if old is not None and new is not None and same_sums(old, new):
            return
        jobs = [uid for uid, job in before.items() if job is not None]
        nodes = [t.node_name for t in (old, new) if t is not None and t.node_name]
        self.changes.sums((*jobs, *appeared), nodes, appeared, gone)

    def _place(self, task: TaskInfo) -> None:
        if not task.node_name or completed_status(task.status):
            return
        node = self.nodes.get(task.node_name)
        if node is None:
            self.unplaced.setdefault(task.node_name, {})[task.uid] = task
            return
        try:
            node.add_task(task)
        except NodeError as exc:
            log.warning("%s", exc)
        self.placement.value += 1

    def _remove_pod(self, key: str, *, keep_job: bool = False) -> None:
        """``keep_job``: the pod comes straight back into its kept job, whose caller
        re-derives the job's usage once it is back (deriving it for the moment between is
        half the cost of a bind's update)."""
        task = self.tasks.pop(key, None)
        if task is None:
            return
        self.converted.pop(key, None)
        self.unschedulable.discard(key)
        job = self.jobs.get(task.job)
        if job is not None:
            job.delete_task_info(task)
            if not keep_job:
                if job.synthesized and not job.tasks:
                    del self.jobs[task.job]
                self.touch(task.job)
        orphans = self.orphans.get(task.job)
        if orphans is not None:
            orphans.pop(task.uid, None)
            if not orphans:
                del self.orphans[task.job]
        node = self.nodes.get(task.node_name)
        if node is not None:
            node.remove_task(task)
            self.placement.value += 1
        waiting = self.unplaced.get(task.node_name)
        if waiting is not None:
            waiting.pop(task.uid, None)
            if not waiting:
                del self.unplaced[task.node_name]

    # --- nodes ----------------------------------------------------------------------------

    def put_node_base(self, base: NodeInfo) -> None:
        """A node as its object says: put with its DRA devices added."""
        self.topology.node_changed(self.node_base.get(base.name), base)
        self.node_base[base.name] = base
        self._put_node(self.charging.with_devices(base))

    def delete_node(self, name: str) -> None:
        self.topology.node_changed(self.node_base.pop(name, None), None)
        self.charging.node_problems.pop(name, None)
        node = self.nodes.pop(name, None)
        if node is not None:
            self.known_offers.forget()
            self.total_allocatable.sub_without_assert(node.allocatable)
        if node is not None and node.tasks:
            self.unplaced[name] = dict(node.tasks)

    def refresh_devices(self, nodes: Iterable[str]) -> None:
        """Put the named nodes again with their device counts (a structural change: the
        cluster's capacity moved)."""
        for name in sorted(nodes):
            base = self.node_base.get(name)
            if base is None:
                if name in self.storage.devices.nodes():
                    log.warning(
                        "DRA devices not counted: a ResourceSlice names node %s, which is "
                        "not in the cache",
                        name,
                    )
                continue
            self._put_node(self.charging.with_devices(base))

    def _put_node(self, node: NodeInfo) -> None:
        old = self.nodes.get(node.name)
        if old is not None:
            self.total_allocatable.sub_without_assert(old.allocatable)
        else:
            self.known_offers.node_added()
        self.total_allocatable.add(node.allocatable)
        tasks = list(old.tasks.values()) if old is not None else []
        tasks.extend(self.unplaced.pop(node.name, {}).values())
        self.nodes[node.name] = node
        for task in tasks:
            try:
                node.add_task(task)
            except NodeError as exc:
                log.warning("%s", exc)

    # --- podgroups, queues, priority classes ----------------------------------------------

    def put_podgroup(self, pg: PodGroupInfo) -> None:
        if pg.source == NATIVE_SOURCE and not pg.queue_named:
            pg = replace(pg, queue=self.member_queues.resolved(pg.uid, pg.queue))
        self.podgroups[pg.uid] = pg
        job = self.jobs.get(pg.uid)
        if (
            job is not None
            and job.queue == pg.queue
            and not job.synthesized
            and job.network_topology == pg.network_topology
        ):
            # The same job in the same queue: its spec and phase change its usage only.
            self.classified = True
            self.changes.sums([pg.uid], ())
        if job is None:
            job = job_from_podgroup(pg, self.priority_values(), self.global_default())
            self.jobs[pg.uid] = job
            for task in self.orphans.pop(pg.uid, {}).values():
                job.add_task_info(task)
            # A job appearing, with the members that waited for it: its queue's sums move,
            # and no node's amounts (the members were placed on their nodes already).
            self.classified = True
            self.changes.sums([pg.uid], (), appeared=(pg.uid,))
        else:
            apply_podgroup(job, pg, self.priority_values(), self.global_default())
        self.touch(pg.uid)

    def _note_member_queue(self, job_id: str, pod_key: str, queue: str) -> None:
        """Remember which queue a native group's member names (or that it names none), and
        move the job when its resolved queue changes: a job changing queue is structural."""
        self.member_queues.note(job_id, pod_key, queue)
        pg = self.podgroups.get(job_id)
        if pg is None or pg.queue_named:
            return
        queue_now = self.member_queues.resolved(job_id, DEFAULT_QUEUE)
        if queue_now != pg.queue:
            self.put_podgroup(replace(pg, queue=queue_now))
            self.changes.structural()

    def remove_podgroup(self, key: str) -> None:
        self.podgroups.pop(key, None)
        job = self.jobs.pop(key, None)
        if job is not None:
            if job.tasks:
                self.orphans[key] = dict(job.tasks)  # they stay on their nodes
            self.classified = True
            self.changes.sums([key], (), gone=(key,))
        self.touch(key)

    def touch(self, job_id: str) -> None:
        """Re-derive one job's contribution to its queue's usage (O(1) per event)."""
        job = self.jobs.get(job_id)
        if job is not None and job.source == NATIVE_SOURCE:
            job.phase = native_phase(job)
        self.sums.touch(job_id, job)

    def priority_classes_changed(self) -> None:
        """A PriorityClass came, changed or went: a task converted before may differ from
        one converted now, and every job's priority is derived again."""
        self.converted.clear()
        values, default = self.priority_values(), self.global_default()
        for uid, pg in self.podgroups.items():
            job = self.jobs.get(uid)
            if job is not None:
                apply_podgroup(job, pg, values, default)


def _converted(
    pod: dict[str, Any],
    tasks: Mapping[str, TaskInfo],
    priorities: Callable[[], dict[str, int]],
    *,
    placement_only: bool,
) -> TaskInfo:
    """``pod``'s task: the last one with its new placement when only ``spec.nodeName`` and
    ``status`` moved and that can be done exactly (a bind, mostly), else a full conversion."""
    if placement_only:
        namespace, name = object_name(pod, "Pod")
        last = tasks.get(f"{namespace or 'default'}/{name}")
        if last is not None and placement_convertible(last, pod):
            return replaced_placement(last, pod)
    # The classes are looked up only for a pod whose spec carries no priority (the API
    # server's admission writes it into every pod it stores).
    spec = pod.get("spec")
    has_priority = isinstance(spec, dict) and type(spec.get("priority")) is int
    return pod_to_task(pod, {} if has_priority else priorities())
