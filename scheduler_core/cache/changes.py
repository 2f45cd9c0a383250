"""ChangeLog: what the cluster's events changed of the inputs a session derives at open.

A read-only session over the live cache (the extender's accounting) reads most of what it
decides by live: jobs, their tasks and the nodes are the cache's own objects. What it
derives once, as it opens, is a small set of things:

- which jobs, nodes, queues, budgets and priority classes there are, and the node objects;
- per queue, the sums of its jobs' usage (allocated, request, inqueue, elastic) and the
  deserved shares that follow from the requests;
- per job, its allocated sum (drf), and per node, its amounts (the scoring table).

Every event is classified against that list:

- *inert*: changes none of it (a pod's labels, annotations, resourceVersion, nomination...,
  while its job, status, node, requests and gating stay as they were). Such an event does
  not move the decision version: a session opened before it answers as one opened after.
- *sums*: changes only the usage of jobs that exist before and after it, in the same queue,
  and the amounts of the nodes its pods are on (a pod added, bound, finished or deleted in
  an existing group; a PodGroup's phase or minResources). A session can follow it in place
  by re-deriving those jobs' queues and those nodes' rows.
  A plain pod's creation counts here too: its group of one *appears*, and nothing else
  does. A session follows it by taking the new job in where a new session would have it
  (last of the jobs), then re-deriving its queue as for any change of sums. Pods arrive
  all the time on a live cluster; were each creation structural, the next verb call would
  open a new session over every job. So does a plain pod's deletion: its group of one
  *goes*. A session follows it by letting the job go, then re-deriving its queue (and,
  where the job was its queue's first, the queues' order). Finished pods are deleted all
  the time on a busy cluster. A PodGroup's creation and deletion are followed the same way:
  its job appears (with the members that waited for it) or goes (its members wait again,
  on the nodes they hold).
- *structural*: anything else (a node, queue, budget or priority class event, a PodGroup
  moving queues or changing its network topology, a plain pod moving queues). Only a new
  session is sure to be right.

Anything not proven inert or sums-only is structural.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field

#: Sum changes remembered for a session to catch up with; a session further behind than
#: this many events is rebuilt, which is then the cheaper way anyway.
LOG_LIMIT = 512


@dataclass(slots=True)
class SumChanges:
    """Job ids whose usage and node names whose amounts changed, over a run of events, and
    the jobs that appeared and went among them (plain pods' groups of one, PodGroups' jobs),
    each in the order it happened (each is in ``jobs`` too)."""

    jobs: set[str] = field(default_factory=set)
    nodes: set[str] = field(default_factory=set)
    appeared: dict[str, None] = field(default_factory=dict)
    gone: dict[str, None] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return bool(self.jobs or self.nodes)


class ChangeLog:
    """The decision version (moved by every event that is not inert) and the sums-only
    changes since the last structural one. Callers hold the cluster state's lock."""

    def __init__(self, version: int = 0) -> None:
        self.version = version
        self._structural = version
        self._entries: deque[
            tuple[frozenset[str], frozenset[str], tuple[str, ...], tuple[str, ...]]
        ] = deque(maxlen=LOG_LIMIT)

    def structural(self) -> None:
        self.version += 1
        self._structural = self.version
        self._entries.clear()

    def sums(
        self,
        jobs: Iterable[str],
        nodes: Iterable[str],
        appeared: tuple[str, ...] = (),
        gone: tuple[str, ...] = (),
    ) -> None:
        """A sums-only event; ``appeared`` and ``gone``: the jobs it created and removed
        (also in ``jobs``)."""
        self.version += 1
        self._entries.append((frozenset(jobs), frozenset(nodes), appeared, gone))

    def since(self, version: int) -> SumChanges | None:
        """What changed after ``version``, or None when that takes a new session (a
        structural change came after it, or it is further back than the log reaches)."""
        behind = self.version - version
        if version < self._structural or behind > len(self._entries) or behind < 0:
            return None
        changes = SumChanges()
        for i in range(len(self._entries) - behind, len(self._entries)):
            jobs, nodes, appeared, gone = self._entries[i]
            changes.jobs |= jobs
            changes.nodes |= nodes
            if appeared:
                changes.appeared.update(dict.fromkeys(appeared))
            if gone:
                changes.gone.update(dict.fromkeys(gone))
        return changes
