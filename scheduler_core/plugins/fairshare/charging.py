"""The half of proportion and capacity that moves a task's request in and out of its queue:
the session's allocate / evict events and the same on a preemptor's what-if copy. Both
plugins register it with ``register`` so the five hooks cannot be wired differently."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import ClassVar

from scheduler_core.api.queue import QueueInfo
from scheduler_core.api.task import TaskInfo
from scheduler_core.framework.hooks import (
    CYCLE_STATE,
    QUEUE_SHARE,
    SIMULATE_ADD_TASK,
    SIMULATE_REMOVE_TASK,
)
from scheduler_core.framework.session import EventHandler, QueueShare, Session
from scheduler_core.logutil import v
from scheduler_core.plugins.fairshare.attrs import QueueAttr, QueueAttrs, trace

log = logging.getLogger("scheduler_core.plugins.fairshare")
_V4 = v(4)


class QueueCharging:
    """The half of proportion and capacity that moves a task's request in and out of its
    queue: the session's event handlers (allocate / evict) and the same on a preemptor's
    what-if copy (simulated add / remove). Each plugin says how to find a task's queue
    attribute, which ancestors also carry it, and how share is computed; Volcano recomputes
    share for the queue itself only, not for its ancestors.
    """

    name: ClassVar[str]
    log_label: ClassVar[str] = ""
    queue_opts: dict[str, QueueAttr]

    def _attr_of_task(self, task: TaskInfo, opts: Mapping[str, QueueAttr]) -> QueueAttr | None:
        raise NotImplementedError

    def _lineage(self, attr: QueueAttr, opts: Mapping[str, QueueAttr]) -> list[QueueAttr]:
        del attr, opts
        return []

    def _share(self, attr: QueueAttr) -> float:
        raise NotImplementedError

    def _charge(self, opts: Mapping[str, QueueAttr], task: TaskInfo, add: bool) -> None:
        attr = self._attr_of_task(task, opts)
        if attr is None:
            return
        for charged in (attr, *self._lineage(attr, opts)):
            if add:
                charged.allocated.add(task.resreq)
            else:
                charged.allocated.sub_without_assert(task.resreq)
        attr.share = self._share(attr)
        # (Charged on every filtered pod's assumption: no call below -v 4.)
        if opts is self.queue_opts and log.isEnabledFor(_V4):
            trace(
                log,
                _V4,
                "%s %s: task <%s/%s>, resreq <%s>, share <%s>",
                self.log_label,
                "AllocateFunc" if add else "DeallocateFunc",
                task.namespace,
                task.name,
                task.resreq,
                attr.share,
            )

    def _queue_share(self, queue: QueueInfo) -> QueueShare | None:
        """Copies, so a caller may do arithmetic on them without touching the plugin."""
        attr = self.queue_opts.get(queue.name)
        if attr is None:
            return None
        return QueueShare(allocated=attr.allocated.clone(), deserved=attr.deserved.clone())

    # session events
    def _on_allocate(self, task: TaskInfo) -> None:
        self._charge(self.queue_opts, task, add=True)

    def _on_allocate_all(self, tasks: Sequence[TaskInfo]) -> None:
        """``_on_allocate`` of each task in turn, each queue's share worked out once, after
        its last charge, instead of after every one. A share is read from its own queue's
        record only, and a charge to one queue changes no other's record, so the shares
        come out as charging one at a time would leave them. A charge that also moves
        ancestors (a hierarchy) is made as one at a time makes it, once the shares owed so
        far are worked out: an ancestor's sum moves without its share being worked out."""
        opts = self.queue_opts
        if log.isEnabledFor(_V4):  # a line a charge, each with its share as it stands
            for task in tasks:
                self._charge(opts, task, add=True)
            return
        owed: dict[int, QueueAttr] = {}
        for task in tasks:
            attr = self._attr_of_task(task, opts)
            if attr is None:
                continue
            lineage = self._lineage(attr, opts)
            if lineage:
                for record in owed.values():
                    record.share = self._share(record)
                owed.clear()
                self._charge(opts, task, add=True)
                continue
            attr.allocated.add(task.resreq)
            owed[id(attr)] = attr
        for record in owed.values():
            record.share = self._share(record)

    def _on_deallocate(self, task: TaskInfo) -> None:
        self._charge(self.queue_opts, task, add=False)

    # what-if (topology-aware preemption, the extender's victim selection)
    def _cycle_state(self, task: TaskInfo) -> QueueAttrs:
        del task
        return QueueAttrs(source=self.queue_opts)

    def _state(self, state: Mapping[str, object]) -> QueueAttrs | None:
        attrs = state.get(self.name)
        return attrs if isinstance(attrs, QueueAttrs) else None

    def _simulate_add_task(
        self, state: Mapping[str, object], preemptor: TaskInfo, task: TaskInfo, node: object
    ) -> None:
        del preemptor, node
        attrs = self._state(state)
        if attrs is not None:
            self._charge(attrs, task, add=True)

    def _simulate_remove_task(
        self, state: Mapping[str, object], preemptor: TaskInfo, task: TaskInfo, node: object
    ) -> None:
        del preemptor, node
        attrs = self._state(state)
        if attrs is not None:
            self._charge(attrs, task, add=False)


def register(ssn: Session, plugin: QueueCharging) -> None:
    """Wire the plugin's charging into the session: the allocate/evict event handler, the
    what-if copy (cycle state, simulated add and remove) topology-aware preemption and the
    extender's victim selection use, and the queue's share as it stands (the live reclaim
    rules read it: a plugin that charged queues but kept its shares to itself would leave
    the loop judging every queue as unknown, and reclaiming nothing)."""
    ssn.add_hook(QUEUE_SHARE, plugin.name, plugin._queue_share)
    ssn.add_hook(CYCLE_STATE, plugin.name, plugin._cycle_state)
    ssn.add_hook(SIMULATE_ADD_TASK, plugin.name, plugin._simulate_add_task)
    ssn.add_hook(SIMULATE_REMOVE_TASK, plugin.name, plugin._simulate_remove_task)
    ssn.add_event_handler(
        EventHandler(
            allocate=plugin._on_allocate,
            deallocate=plugin._on_deallocate,
            allocate_all=plugin._on_allocate_all,
        )
    )
