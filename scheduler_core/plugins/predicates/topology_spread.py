"""kube-scheduler's PodTopologySpread filter: the ``DoNotSchedule`` constraints.

``SpreadState.build`` is its PreFilter for one incoming pod: for each hard constraint, the
number of placed pods its selector matches (in the pod's namespace) per domain (value of the
topology key), over the nodes the constraint counts: those carrying every constraint's key
and passing the constraint's node inclusion policies (``nodeAffinityPolicy`` Honor: the
pod's node selector and required node affinity; ``nodeTaintsPolicy`` Honor: no untolerated
NoSchedule / NoExecute taint). A domain with no matching pod counts with zero.

``filter`` on a node: ``count(domain) + (1 if the pod matches its own selector) - min``
must not exceed ``maxSkew``, where ``min`` is the smallest count over the domains, or 0
while there are fewer domains than ``minDomains``. A node without the key is
``UnschedulableAndUnresolvable``; too much skew is ``Unschedulable`` (evicting pods of the
crowded domain helps).

The node judged may be a what-if copy of the session's node (victims taken off it): its
domain's count is corrected by the difference, and the minimum follows from the two
smallest counts kept (kube-scheduler's critical paths), so no recount is needed.

Default constraints (``cluster_defaults``) apply to a pod with no constraint of its own,
selecting by the pod's own labels: kube-scheduler selects by the pod's Services and owning
controllers, which this engine does not watch. The system defaults are ``ScheduleAnyway``,
so by default none of them filters.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from scheduler_core.api.node import NodeInfo
from scheduler_core.api.pod_constraints import (
    HONOR,
    IN,
    SCHEDULE_ANYWAY,
    LabelRequirement,
    LabelSelector,
    TopologySpreadConstraint,
    spread_constraint_from,
)
from scheduler_core.api.task import TaskInfo
from scheduler_core.framework.status import Code, Status
from scheduler_core.plugins.predicates.label_index import LabelIndex
from scheduler_core.plugins.predicates.node_static import (
    HARD_TAINT_EFFECTS,
    matches_node_selector_and_affinity,
    untolerated_taint,
)
from scheduler_core.plugins.predicates.placed import placed_pods

ERR_REASON_CONSTRAINTS_NOT_MATCH = "node(s) didn't match pod topology spread constraints"
ERR_REASON_NODE_LABEL_NOT_MATCH = ERR_REASON_CONSTRAINTS_NOT_MATCH + " (missing required label)"

_INFINITE = 2**31 - 1

#: (pod, constraint, every constraint's key) -> the nodes the constraint counts for the pod,
#: by name, with their domain; and every such domain with a count of zero.
Included = Callable[
    [TaskInfo, TopologySpreadConstraint, tuple[str, ...]],
    tuple[Mapping[str, tuple[NodeInfo, str]], Mapping[str, int]],
]


def included_nodes(
    task: TaskInfo,
    constraint: TopologySpreadConstraint,
    keys: tuple[str, ...],
    nodes: Iterable[NodeInfo],
) -> dict[str, tuple[NodeInfo, str]]:
    """The nodes carrying every key that ``constraint``'s inclusion policies let count for
    ``task``, with their domain."""
    key = constraint.topology_key
    return {
        node.name: (node, node.labels[key])
        for node in nodes
        if all(k in node.labels for k in keys) and includes(task, constraint, node)
    }


def effective_constraints(
    task: TaskInfo, defaults: Sequence[TopologySpreadConstraint]
) -> tuple[TopologySpreadConstraint, ...]:
    """The pod's hard constraints; the hard cluster defaults when it has none at all (soft
    ones included), selecting by the pod's own labels (none: no default applies)."""
    if task.spread_constraints:
        return tuple(c for c in task.spread_constraints if c.hard)
    if not defaults or not task.labels:
        return ()
    selector = LabelSelector(
        tuple(LabelRequirement(k, IN, frozenset({v})) for k, v in sorted(task.labels.items()))
    )
    return tuple(
        TopologySpreadConstraint(
            max_skew=c.max_skew,
            topology_key=c.topology_key,
            when_unsatisfiable=c.when_unsatisfiable,
            selector=selector,
            min_domains=c.min_domains,
            node_affinity_policy=c.node_affinity_policy,
            node_taints_policy=c.node_taints_policy,
        )
        for c in defaults
        if c.hard
    )


def counts_on(task: TaskInfo, constraint: TopologySpreadConstraint, node: NodeInfo) -> int:
    """Placed pods on ``node`` the constraint's selector matches in the pod's namespace."""
    selector = constraint.selector
    if selector is None:
        return 0
    namespace = task.namespace
    return sum(
        1
        for pod in placed_pods(node, task.uid)
        if pod.namespace == namespace and selector.matches(pod.labels)
    )


def includes(task: TaskInfo, constraint: TopologySpreadConstraint, node: NodeInfo) -> bool:
    """The constraint's node inclusion policies."""
    if constraint.node_affinity_policy == HONOR and not matches_node_selector_and_affinity(
        task, node
    ):
        return False
    return not (
        constraint.node_taints_policy == HONOR
        and untolerated_taint(node.taints, task.tolerations, HARD_TAINT_EFFECTS) is not None
    )


@dataclass(slots=True)
class _Constraint:
    spec: TopologySpreadConstraint
    self_match: int
    counts: dict[str, int] = field(default_factory=dict)
    #: The smallest count and its domain, and the second smallest count.
    min_value: int = _INFINITE
    min_domain: str = ""
    second_value: int = _INFINITE
    #: Each counted node's domain and matching pods (nodes with none left out).
    per_node: dict[str, tuple[str, int]] = field(default_factory=dict)

    def finish(self) -> None:
        self.min_value, self.min_domain, self.second_value = _INFINITE, "", _INFINITE
        for domain, n in self.counts.items():
            if n < self.min_value or (n == self.min_value and domain < self.min_domain):
                self.second_value = self.min_value
                self.min_value, self.min_domain = n, domain
            elif n < self.second_value:
                self.second_value = n

    def global_minimum(self) -> int:
        min_domains = self.spec.min_domains or 1
        return 0 if len(self.counts) < min_domains else self.min_value

    def minimum(self, domain: str, count: int, new_domain: bool) -> int:
        """The smallest count once ``domain`` holds ``count``."""
        others = self.second_value if domain == self.min_domain else self.min_value
        smallest = min(others, count)
        domains = len(self.counts) + (1 if new_domain else 0)
        min_domains = self.spec.min_domains or 1
        return 0 if domains < min_domains else smallest


@dataclass(slots=True)
class SpreadState:
    """The PreFilter state of one incoming pod over the session's nodes."""

    task: TaskInfo
    constraints: list[_Constraint]

    @classmethod
    def build(
        cls,
        task: TaskInfo,
        nodes: Iterable[NodeInfo],
        defaults: Sequence[TopologySpreadConstraint] = (),
        index: LabelIndex | None = None,
        included: Included | None = None,
    ) -> SpreadState:
        """The counts over ``nodes``; with ``index`` (over the same nodes), only the nodes
        it names as candidates for a constraint's selector have their pods walked (the
        others hold none the selector matches, and count as zero in their domain). With
        ``included`` (the nodes of ``nodes`` a constraint counts, and their domains, as
        ``includes`` and the keys decide: the same for every pod with the same node
        inclusion fields), the nodes are not judged again for each pod."""
        specs = effective_constraints(task, defaults)
        constraints = [
            _Constraint(c, 1 if c.selector is not None and c.selector.matches(task.labels) else 0)
            for c in specs
        ]
        if constraints:
            keys = tuple(c.topology_key for c in specs)
            candidates = [
                index.candidates(c.spec.selector) if index is not None else None
                for c in constraints
            ]
            if included is not None:
                for c, names in zip(constraints, candidates, strict=True):
                    on, zeros = included(task, c.spec, keys)
                    c.counts = dict(zeros)
                    scan = on if names is None else [n for n in names if n in on]
                    for name in scan:
                        node, domain = on[name]
                        n = counts_on(task, c.spec, node)
                        if n:
                            c.counts[domain] += n
                            c.per_node[name] = (domain, n)
            else:
                for node in nodes:
                    labels = node.labels
                    if not all(key in labels for key in keys):
                        continue
                    for c, names in zip(constraints, candidates, strict=True):
                        if includes(task, c.spec, node):
                            domain = labels[c.spec.topology_key]
                            n = (
                                counts_on(task, c.spec, node)
                                if names is None or node.name in names
                                else 0
                            )
                            c.counts[domain] = c.counts.get(domain, 0) + n
                            if n:
                                c.per_node[node.name] = (domain, n)
            for c in constraints:
                c.finish()
        return cls(task, constraints)

    def recount(self, nodes: Mapping[str, NodeInfo], names: Iterable[str]) -> None:
        """Count the named nodes' pods again as they are now (labels and taints, hence
        which domain a node is of and whether it counts, do not change in a session)."""
        if not self.constraints:
            return
        task = self.task
        keys = [c.spec.topology_key for c in self.constraints]
        for name in names:
            node = nodes.get(name)
            for c in self.constraints:
                old = c.per_node.pop(name, None)
                if old is not None:
                    c.counts[old[0]] -= old[1]
                if node is None or not all(key in node.labels for key in keys):
                    continue
                if not includes(task, c.spec, node):
                    continue
                n = counts_on(task, c.spec, node)
                domain = node.labels[c.spec.topology_key]
                c.counts[domain] = c.counts.get(domain, 0) + n
                if n:
                    c.per_node[name] = (domain, n)
        for c in self.constraints:
            c.finish()

    @property
    def trivial(self) -> bool:
        return not self.constraints

    def filter(
        self, node: NodeInfo, base: NodeInfo | None, judged: TaskInfo | None = None
    ) -> Status | None:
        """The verdict on ``node``; ``base`` is the node of that name the state was built
        over (None if none was), whose pods ``node``'s replace in the counts. ``judged``: as
        in ``AffinityState.filter``, the pod asked about when the state is shared."""
        if not self.constraints:
            return None
        task = self.task if judged is None else judged
        labels = node.labels
        all_keys = all(c.spec.topology_key in labels for c in self.constraints)
        for c in self.constraints:
            domain = labels.get(c.spec.topology_key)
            if domain is None:
                return Status(
                    Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
                    [ERR_REASON_NODE_LABEL_NOT_MATCH],
                    task=task.key,
                    node=node.name,
                )
            count = c.counts.get(domain, 0)
            new_domain = False
            if node is not base and all_keys and includes(task, c.spec, node):
                delta = counts_on(task, c.spec, node)
                if base is not None:
                    delta -= counts_on(task, c.spec, base)
                else:
                    new_domain = domain not in c.counts
                count += delta
                minimum = c.minimum(domain, count, new_domain)
            else:
                minimum = c.global_minimum()
            if count + c.self_match - minimum > c.spec.max_skew:
                return Status(
                    Code.UNSCHEDULABLE,
                    [ERR_REASON_CONSTRAINTS_NOT_MATCH],
                    task=task.key,
                    node=node.name,
                )
        return None


def topology_spread_error(
    task: TaskInfo,
    node: NodeInfo,
    nodes: Mapping[str, NodeInfo],
    defaults: Sequence[TopologySpreadConstraint] = (),
) -> Status | None:
    """The filter on its own, with a PreFilter over ``nodes`` (for tests and one-off
    questions; the plugin keeps the state per pod instead)."""
    return SpreadState.build(task, nodes.values(), defaults).filter(node, nodes.get(node.name))


def parse_default_constraints(raw: object) -> tuple[TopologySpreadConstraint, ...]:
    """The ``predicate.DefaultTopologySpreadConstraints`` argument: a list of constraints
    as in a pod spec, without selectors (the pod's labels select). A malformed entry is a
    ``ValueError`` naming it, so a mistyped configuration is refused rather than ignored."""
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise ValueError(f"{DEFAULT_CONSTRAINTS}: expected a list of constraints")
    out = []
    for i, item in enumerate(raw):
        at = f"{DEFAULT_CONSTRAINTS}[{i}]"
        if not isinstance(item, Mapping):
            raise ValueError(f"{at}: expected a constraint")
        out.append(spread_constraint_from(item, at, None))
    return tuple(out)


#: The plugin argument naming the cluster's default constraints.
DEFAULT_CONSTRAINTS = "predicate.DefaultTopologySpreadConstraints"

#: kube-scheduler's system defaults: ScheduleAnyway, so they score but never filter.
SYSTEM_DEFAULT_CONSTRAINTS = (
    TopologySpreadConstraint(3, "kubernetes.io/hostname", SCHEDULE_ANYWAY, None),
    TopologySpreadConstraint(5, "topology.kubernetes.io/zone", SCHEDULE_ANYWAY, None),
)
