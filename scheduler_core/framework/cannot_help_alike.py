"""The nodes' refusals of a waiting pod, judged once for all the pods that read alike.

``cannot_help`` walks the nodes, each emptied, to tell whether any eviction could place a
pod. A backlog of ten thousand plain pods in one cycle holds a handful of different specs:
the walk's answer is the same for every pod of one spec, as long as nothing was placed or
evicted in between, and walking it once per pod was a fifth of a reclaim pass at that scale.

Two pods read alike when every field of theirs but their identity (uid, name, job, creation
and start times) is equal: the predicates read the pod's spec and the cluster, never who the
pod is, except to leave a placed pod out of its own counts (a waiting pod is placed
nowhere). Whatever a new field of a pod holds, it is part of the likeness unless named
here as identity, so a field added later can only make fewer pods alike, never wrongly
more. Pods with volumes, device claims, scheduling gates or pod (anti-)affinity are judged
one by one: claims are reserved for a pod by its uid, and such pods are few.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import fields, is_dataclass
from typing import Final

from scheduler_core.api.resource import Resource
from scheduler_core.api.task import TaskInfo
from scheduler_core.framework.session import Session
from scheduler_core.framework.status import Status

#: The fields that say which pod it is, not what it asks.
_IDENTITY: Final = frozenset({"uid", "name", "job", "creation_timestamp", "start_time"})
_LIKENESS: Final = tuple(f.name for f in fields(TaskInfo) if f.name not in _IDENTITY)
#: Pods whose likeness is kept across sessions (by uid, with the task object it was read of);
#: beyond this the record starts again.
_KEYS_LIMIT: Final = 65536
#: The slot of the loop's ``SessionMemos`` that keeps the likeness of its tasks.
MEMO_SLOT: Final = "cannot_help.alike"

Refusals = list[Status] | None


def _hashable(value: object) -> object:
    """``value`` as something equal exactly when the values are equal, and hashable."""
    if isinstance(value, Resource):
        scalars = tuple(sorted(value.scalars.items())) if value.scalars else ()
        return (value.milli_cpu, value.memory, value.max_task_num, scalars)
    if isinstance(value, dict):
        return tuple(sorted((k, _hashable(v)) for k, v in value.items()))
    if isinstance(value, (tuple, list)):
        return tuple(_hashable(v) for v in value)
    if is_dataclass(value) and not isinstance(value, type):
        return (type(value), tuple(_hashable(getattr(value, f.name)) for f in fields(value)))
    return value


def likeness(task: TaskInfo) -> Hashable | None:
    """What two pods must share to get the same refusals; None: the pod is judged alone."""
    if task.volumes or task.resource_claims or task.scheduling_gates or task.pod_affinity:
        return None
    key = tuple(_hashable(getattr(task, name)) for name in _LIKENESS)
    try:
        hash(key)
    except TypeError:  # a field of a kind not read above: judged alone, never wrongly alike
        return None
    return key


class AlikeRefusals:
    """One session's node refusals by likeness, forgotten whenever the session places,
    evicts or commits anything (what the other nodes hold can change a verdict)."""

    def __init__(self, ssn: Session) -> None:
        self.session = ssn
        self._keys: dict[str, tuple[TaskInfo, Hashable | None]] = ssn.memos.slot(MEMO_SLOT, dict)
        self._known: dict[Hashable, Refusals] = {}
        self._at: tuple[int, ...] = ()

    def likeness_of(self, task: TaskInfo) -> Hashable | None:
        """``likeness(task)``, kept with the task object across the owner's sessions."""
        return self._likeness(task)

    def _likeness(self, task: TaskInfo) -> Hashable | None:
        kept = self._keys.get(task.uid)
        if kept is not None and kept[0] is task:
            return kept[1]
        key = likeness(task)
        if len(self._keys) >= _KEYS_LIMIT:
            self._keys.clear()
        self._keys[task.uid] = (task, key)
        return key

    def refusals(self, task: TaskInfo, judge: Callable[[], Refusals]) -> Refusals:
        """``judge()``'s answer for ``task``, or the one a pod alike got since the session
        last changed."""
        key = self._likeness(task)
        if key is None:
            return judge()
        ssn = self.session
        snapshot = ssn.snapshot
        at = (
            ssn.placements,
            len(ssn.evictions),
            len(ssn.bound),
            snapshot.placement_epoch.value,
            snapshot.storage.version,
        )
        if at != self._at:
            self._known = {}
            self._at = at
        if key in self._known:
            return self._known[key]
        found = self._known[key] = judge()
        return found
