"""What the preempt verb has handed out, remembered until the cluster catches up.

kube-scheduler evicts the victims the preempt verb names and nominates the preemptor to
the node they free, but our cache sees the deletions and the nomination only a moment
later. Until then a second preempt call (another member of the same gang, or another pod)
would see the same victims still running and hand them out again, and a gang member
waiting on its freed slot would look as if it had no place at all. A grant records the
answer: which preemptor, which node, which victims. It ends when the preemptor is bound
or deleted, or after a timeout.

A preemptor that asks again while it holds a grant (kube-scheduler preempts
asynchronously, and may try the same pod again before the first evictions show) is
answered from its grant alone (``held_by``), never with new victims elsewhere: the first
answer's victims are already on their way out, and more would be evicted in vain.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Literal

from scheduler_core.api.types import TaskStatus
from scheduler_core.cache.state import ClusterState
from scheduler_core.logutil import v

log = logging.getLogger("scheduler_core.accounting.grants")


@dataclass(slots=True, frozen=True)
class Grant:
    preemptor: str  # pod key, namespace/name
    job: str
    node: str
    victims: tuple[str, ...]  # victim pod UIDs
    expires: float
    #: The rest of the answer, given again to a preemptor that asks again.
    num_pdb_violations: int = 0
    mode: Literal["preempt", "reclaim"] | None = None


class PreemptionGrants:
    """Grants by preemptor; one preemptor may hold grants on several candidate nodes until
    kube-scheduler's choice shows (a victim gone, or the preemptor's nominated node)."""

    def __init__(self, ttl: float = 30.0, clock: Callable[[], float] = time.monotonic) -> None:
        self.ttl = ttl
        self.clock = clock
        self._by_preemptor: dict[str, dict[str, Grant]] = {}
        #: Victim UID -> until when it is still reported as handed out after its grant
        #: ended (the preemptor bound before a watcher of evictions looked).
        self._ended: dict[str, float] = {}
        #: Preemptors holding grants that the cache has shown: one that then disappears
        #: is gone (deleted), one never shown is only not delivered yet.
        self._seen: set[str] = set()

    def __len__(self) -> int:
        return sum(len(g) for g in self._by_preemptor.values())

    def grants(self) -> Iterable[Grant]:
        for per_node in self._by_preemptor.values():
            yield from per_node.values()

    def held_by(self, preemptor: str) -> dict[str, Grant]:
        """The grants ``preemptor`` holds, by node (empty when it holds none)."""
        return dict(self._by_preemptor.get(preemptor, {}))

    def victims_handed_out(self) -> set[str]:
        """Victim UIDs of the grants held now and of those that ended within the last
        ``ttl`` seconds: what the verb approved, even when its grant ended before anyone
        looked (the preemptor bound at once)."""
        self._forget_ended(self.clock())
        return {uid for grant in self.grants() for uid in grant.victims} | set(self._ended)

    def _end(self, grants: Iterable[Grant], now: float) -> None:
        for grant in grants:
            for uid in grant.victims:
                self._ended[uid] = now + self.ttl

    def _forget_ended(self, now: float) -> None:
        """Drop the ended grants' victims older than ``ttl`` (also where nothing asks for
        them: without the gang preemption watch they would pile up)."""
        if self._ended:
            self._ended = {uid: until for uid, until in self._ended.items() if until > now}

    def record(
        self,
        preemptor: str,
        job: str,
        node: str,
        victims: Iterable[str],
        *,
        num_pdb_violations: int = 0,
        mode: Literal["preempt", "reclaim"] | None = None,
    ) -> None:
        grant = Grant(
            preemptor,
            job,
            node,
            tuple(victims),
            self.clock() + self.ttl,
            num_pdb_violations,
            mode,
        )
        self._by_preemptor.setdefault(preemptor, {})[node] = grant

    def prune(self, state: ClusterState) -> None:
        """Drops grants the cluster has caught up with. Call with the state's lock held."""
        now = self.clock()
        self._forget_ended(now)
        for key in list(self._by_preemptor):
            per_node = self._by_preemptor[key]
            task = state.task(key)
            if task is None:
                gone = key in self._seen
            else:
                self._seen.add(key)
                gone = task.status != TaskStatus.PENDING
            if gone:
                log.log(v(4), "Preemptor <%s> is bound or gone: its grants end", key)
                self._end(per_node.values(), now)
                del self._by_preemptor[key]
                self._seen.discard(key)
                continue
            for node, grant in list(per_node.items()):
                if grant.expires <= now:
                    log.log(v(3), "Grant of node <%s> to <%s> expired", node, key)
                    self._end([grant], now)
                    del per_node[node]
            # (A preemptor the cache has not shown yet keeps its grants until it shows, or
            # until they expire: not shown is not gone.)
            nominated = task.nominated_node_name if task is not None else ""
            chosen = nominated or self._node_with_victims_gone(state, per_node)
            if chosen and chosen in per_node:
                for node in [n for n in per_node if n != chosen]:
                    self._end([per_node.pop(node)], now)
            if not per_node:
                del self._by_preemptor[key]
                self._seen.discard(key)

    @staticmethod
    def _node_with_victims_gone(state: ClusterState, per_node: dict[str, Grant]) -> str:
        """The node kube-scheduler chose: the one whose victims started to disappear."""
        nodes = state.nodes_view()
        for name, grant in per_node.items():
            node = nodes.get(name)
            if node is None:
                continue
            if any(
                uid not in node.tasks or node.tasks[uid].status != TaskStatus.RUNNING
                for uid in grant.victims
            ):
                return name
        return ""

    def held_by_others(self, preemptor: str) -> set[str]:
        """Nodes whose freed room is promised to another preemptor."""
        return {
            node
            for key, per_node in self._by_preemptor.items()
            if key != preemptor
            for node in per_node
        }

    def preemptors_in_job(self, job: str, exclude: str = "") -> set[str]:
        return {
            key
            for key, per_node in self._by_preemptor.items()
            if key != exclude and any(g.job == job for g in per_node.values())
        }
