"""The reclaim cycle's decision taken in a forked child, off the verbs' interpreter.

A cycle over ten thousand waiting pods is a second or more of pure Python. On the loop's
thread it held the GIL that the verbs' event loop needs between every read and write: while
it ran, kube-scheduler's filter calls took up to twice as long (the bench row
``filter-beside-reclaim``). In a child it runs on its own interpreter, and on the other core
when there is one; the loop's thread only waits for the answer with the GIL let go.

The answer crosses back as a pickle. Most of what it names are the snapshot's own waiting
pods (every pod told that no eviction can help it, ten thousand in a backlog), and the parent
holds the same snapshot: those cross as references (job uid, pod uid) to the parent's
objects, not as copies. A pod the session changed (a victim, a preemptor placed) is the
session's own copy, so it crosses whole, as it would have been handed over on a thread.

What the child learns for the next cycle (the plugins' memos) dies with it: each cycle in a
child starts from what the parent's memos held. With the fork and the pages it copies, that
makes a cycle a tenth to a quarter longer than on a warm thread, spent on another core.
"""

from __future__ import annotations

import io
import pickle
from contextlib import AbstractContextManager
from datetime import datetime
from typing import cast

from scheduler_core.api.snapshot import ClusterSnapshot
from scheduler_core.api.task import TaskInfo
from scheduler_core.cache.list_pager import GC_PAUSE
from scheduler_core.conf import SchedulerConfiguration
from scheduler_core.framework.memo import SessionMemos

from .decision import CycleDecision, decide
from .forked import run_forked

#: Niceness of the deciding child: below the verbs, kube-scheduler and the API server on a
#: busy machine, not so low that a cycle waits behind every other process (a what-if's
#: child, which nobody waits on, runs at 19).
DECIDE_NICENESS = 10
#: Seconds a deciding child may take before it is stopped and the cycle counted failed: far
#: beyond a cycle over ten thousand waiting pods on a loaded core, short enough that a child
#: stuck for any reason does not stop reclaim for long.
DECIDE_TIMEOUT = 300.0

#: How a snapshot's pod is named across the pipe: (job uid, pod uid).
TaskRef = tuple[str, str]


def decide_forked(
    snapshot: ClusterSnapshot,
    conf: SchedulerConfiguration,
    *,
    memos: SessionMemos | None = None,
    now: datetime | None = None,
    timeout: float = DECIDE_TIMEOUT,
) -> CycleDecision:
    """``decide(snapshot, conf, memos=memos, now=now)`` computed in a forked child; the
    parent's ``snapshot`` and ``memos`` are left as they were. Raises what ``decide`` raised,
    or ``ForkedFailure`` when the child gave no answer (killed, out of memory, past
    ``timeout``)."""

    #: Filled in the child, before its session replaces any pod by a copy of its own.
    refs: dict[int, tuple[TaskInfo, TaskRef]] = {}

    def compute() -> CycleDecision:
        refs.update((id(task), (task, ref)) for task, ref in _snapshot_tasks(snapshot))
        return decide(snapshot, conf, memos=memos, now=now)

    def dumps(value: object) -> bytes:
        out = io.BytesIO()
        _RefPickler(out, refs).dump(value)
        return out.getvalue()

    def loads(data: bytes) -> object:
        return _RefUnpickler(io.BytesIO(data), snapshot).load()

    hold: list[AbstractContextManager[object]] = [GC_PAUSE.locked()]
    if snapshot.usage_history is not None:
        hold.append(snapshot.usage_history.locked())
    return run_forked(
        compute,
        niceness=DECIDE_NICENESS,
        timeout=timeout,
        hold=hold,
        dumps=dumps,
        loads=loads,
    )


def _snapshot_tasks(snapshot: ClusterSnapshot) -> list[tuple[TaskInfo, TaskRef]]:
    """Every pod of the snapshot's jobs with its name across the pipe."""
    return [
        (task, (job.uid, task.uid)) for job in snapshot.jobs.values() for task in job.tasks.values()
    ]


class _RefPickler(pickle.Pickler):
    """Pickles a pod of the snapshot, as the fork left it, by its name; anything else by
    value. ``refs`` holds each pod with its name, keyed by ``id``: held, no pod is freed
    while the child runs, so no other object can take its ``id``."""

    def __init__(self, out: io.BytesIO, refs: dict[int, tuple[TaskInfo, TaskRef]]) -> None:
        super().__init__(out, protocol=pickle.HIGHEST_PROTOCOL)
        self._refs = refs

    def persistent_id(self, obj: object) -> TaskRef | None:
        if type(obj) is not TaskInfo:
            return None
        known = self._refs.get(id(obj))
        if known is None or known[0] is not obj:
            return None
        return known[1]


class _RefUnpickler(pickle.Unpickler):
    """Reads a pod named by ``_RefPickler`` as the parent's own object of that name."""

    def __init__(self, data: io.BytesIO, snapshot: ClusterSnapshot) -> None:
        super().__init__(data)
        self._snapshot = snapshot

    def persistent_load(self, pid: object) -> TaskInfo:
        job_uid, task_uid = cast(TaskRef, pid)
        return self._snapshot.jobs[job_uid].tasks[task_uid]
