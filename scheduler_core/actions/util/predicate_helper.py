"""Which nodes a task may go to, searched as Volcano's ``PredicateHelper`` does.

Shared by the preempt and reclaim actions (Volcano's ``util/predicate_helper.go``).
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from scheduler_core.api.node import NodeInfo
from scheduler_core.api.storage import StorageCatalog, placement_signature
from scheduler_core.api.task import TaskInfo
from scheduler_core.framework.status import Status

NodePredicate = Callable[[TaskInfo, NodeInfo], Status | None]

#: The argument both actions read (Volcano's ``conf.EnablePredicateErrCacheKey``).
PREDICATE_ERROR_CACHE_KEY = "predicateErrorCacheEnable"


def calculate_num_feasible_nodes_to_find(
    num_all_nodes: int,
    percentage_of_nodes_to_find: int = 0,
    min_nodes_to_find: int = 100,
    min_percentage_of_nodes_to_find: int = 5,
) -> int:
    """``CalculateNumOfFeasibleNodesToFind``: small clusters are searched whole; large ones
    until an adaptive share (50% minus 1% per 125 nodes, at least 5%) of nodes passed."""
    if num_all_nodes <= min_nodes_to_find or percentage_of_nodes_to_find >= 100:
        return num_all_nodes
    percentage = percentage_of_nodes_to_find
    if percentage <= 0:
        percentage = max(min_percentage_of_nodes_to_find, 50 - num_all_nodes // 125)
    return max(num_all_nodes * percentage // 100, min_nodes_to_find)


@dataclass
class PredicateHelper:
    """Volcano's ``PredicateHelper`` without the goroutines.

    Nodes are checked in the order given, starting where the previous call stopped, until
    enough feasible nodes were found; a predicate error is cached per ``job/role`` (tasks
    of one role share their constraints) when the task has a role and the cache is on.
    """

    enable_error_cache: bool = True
    percentage_of_nodes_to_find: int = 0
    _last_index: int = 0
    _errors: dict[str, dict[str, Status]] = field(default_factory=dict)

    def predicate_nodes(
        self, task: TaskInfo, nodes: Sequence[NodeInfo], predicate: NodePredicate
    ) -> tuple[list[NodeInfo], dict[str, Status]]:
        total = len(nodes)
        errors: dict[str, Status] = {}
        if total == 0:
            return [], errors
        wanted = calculate_num_feasible_nodes_to_find(total, self.percentage_of_nodes_to_find)
        group = f"{task.job}/{task.role}" if task.role else ""
        cached = self._errors.get(group) if group else None
        found: list[NodeInfo] = []
        processed = 0
        for i in range(total):
            if len(found) >= wanted:
                break
            node = nodes[(self._last_index + i) % total]
            processed += 1
            if self.enable_error_cache and cached is not None and node.name in cached:
                errors[node.name] = cached[node.name]
                continue
            err = predicate(task, node)
            if err is not None:
                if self.enable_error_cache and group:
                    self._errors.setdefault(group, {})[node.name] = err
                errors[node.name] = err
                continue
            found.append(node)
        self._last_index = (self._last_index + processed) % total
        return found, errors


def constraints_signature(task: TaskInfo, storage: StorageCatalog | None = None) -> str | None:
    """What the predicates that can reject a node for good read of a pod: node selector,
    required node affinity, tolerations, the topology keys of its spread constraints (a node
    without one is unresolvable), and what its volumes, device claims and gates can constrain
    (``placement_signature``, read in ``storage``). Pods with equal signatures get equal
    verdicts.

    None for a pod with required pod affinity: whether a node is near the pods it wants
    changes as pods leave and arrive within the session, so its verdicts are not kept."""
    affinity = task.pod_affinity
    if affinity is not None and affinity.required:
        return None
    selector = sorted(task.node_selector.items())
    # (A pod without constraints of its own takes the configured defaults if it has labels.)
    spread = [(c.topology_key, c.when_unsatisfiable) for c in task.spread_constraints] or bool(
        task.labels
    )
    signature = f"{selector!r}|{task.required_affinity!r}|{task.tolerations!r}|{spread!r}"
    if task.volumes or task.resource_claims or task.scheduling_gates:
        catalog = storage if storage is not None else StorageCatalog()
        signature += f"|{placement_signature(task, catalog)!r}"
    return signature


@dataclass
class HardVerdicts:
    """Per constraints signature, which of ``nodes`` fail ``predicate_for_preempt``.

    That predicate only rejects a node for unresolvable reasons, which no eviction or
    placement can change (that is what unresolvable means), and they depend only on the
    pod's constraints and the node. So within one session they are computed once per
    signature instead of once per waiting task: at 5,000 nodes the walk below was the
    largest cost of reclaim. The walk itself is ``PredicateHelper.predicate_nodes``'s, node
    for node: same start, same count, same rotation.
    """

    nodes: Sequence[NodeInfo]
    predicate: NodePredicate
    #: Where the pods' claims and volumes are looked up for their signatures.
    storage: StorageCatalog | None = None
    _feasible: dict[str, list[int]] = field(default_factory=dict)

    def feasible_indices(self, task: TaskInfo) -> list[int]:
        key = constraints_signature(task, self.storage)
        found = self._feasible.get(key) if key is not None else None
        if found is None:
            predicate = self.predicate
            found = [i for i, node in enumerate(self.nodes) if predicate(task, node) is None]
            if key is not None:
                self._feasible[key] = found
        return found

    def walk(self, helper: PredicateHelper, task: TaskInfo) -> list[NodeInfo]:
        """``helper.predicate_nodes(task, nodes, predicate)[0]``, from the cached verdicts."""
        return [self.nodes[i] for i in self.walk_indices(helper, task)]

    def walk_indices(self, helper: PredicateHelper, task: TaskInfo) -> list[int]:
        """Where in ``nodes`` ``walk``'s nodes are (the helper moved on as by ``walk``): a
        caller that may need none of them need not build the list."""
        total = len(self.nodes)
        if total == 0:
            return []
        wanted = calculate_num_feasible_nodes_to_find(total, helper.percentage_of_nodes_to_find)
        feasible = self.feasible_indices(task)
        start = helper._last_index % total
        split = bisect_left(feasible, start)
        taken = feasible[split : split + wanted]
        if len(taken) < wanted:
            taken += feasible[: min(split, wanted - len(taken))]
        processed = total if len(taken) < wanted else (taken[-1] - start) % total + 1
        helper._last_index = (start + processed) % total
        return taken

    def advance(self, helper: PredicateHelper, task: TaskInfo) -> None:
        """Move the helper on as ``walk_indices`` would, without taking its nodes: for a
        caller that knows beforehand that none of them would do (the rotation still decides
        where the next walk starts)."""
        total = len(self.nodes)
        if total == 0:
            return
        wanted = calculate_num_feasible_nodes_to_find(total, helper.percentage_of_nodes_to_find)
        feasible = self.feasible_indices(task)
        start = helper._last_index % total
        split = bisect_left(feasible, start)
        after = len(feasible) - split
        if after >= wanted:
            last = feasible[split + wanted - 1]
        else:
            wrapped = min(split, wanted - after)
            if after + wrapped < wanted:
                helper._last_index = start  # every node processed: back where it began
                return
            last = feasible[wrapped - 1] if wrapped else feasible[-1]
        helper._last_index = (start + (last - start) % total + 1) % total
