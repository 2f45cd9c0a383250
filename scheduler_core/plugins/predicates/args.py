"""predicates' arguments, read once into a typed record.

The switches follow Volcano's accessor rule (``GetBool``): a bool, or a string Go's
``strconv.ParseBool`` reads ("true", "1", "F"...); anything else leaves the default. The
cluster's default spread constraints are the one argument refused when malformed (a
``ValueError`` naming the key and the entry), since ignoring a mistyped constraint would
silently change where pods may go.
"""

from __future__ import annotations

from dataclasses import dataclass

from scheduler_core.api.pod_constraints import TopologySpreadConstraint
from scheduler_core.framework.arguments import Arguments
from scheduler_core.framework.keyed_args import keyed, read_keyed
from scheduler_core.plugins.predicates.topology_spread import (
    DEFAULT_CONSTRAINTS,
    SYSTEM_DEFAULT_CONSTRAINTS,
    parse_default_constraints,
)

NODE_AFFINITY_ENABLE = "predicate.NodeAffinityEnable"
TAINT_TOLERATION_ENABLE = "predicate.TaintTolerationEnable"
CACHE_ENABLE = "predicate.CacheEnable"
NODE_PORTS_ENABLE = "predicate.NodePortsEnable"
POD_AFFINITY_ENABLE = "predicate.PodAffinityEnable"
POD_TOPOLOGY_SPREAD_ENABLE = "predicate.PodTopologySpreadEnable"


@dataclass(frozen=True, slots=True)
class PredicatesArgs:
    """Which of the filters run, and the spread constraints a pod without its own gets."""

    node_affinity_enable: bool = keyed(True, NODE_AFFINITY_ENABLE)
    taint_toleration_enable: bool = keyed(True, TAINT_TOLERATION_ENABLE)
    #: cache the node-static verdicts per (job, task role, node)
    cache_enable: bool = keyed(False, CACHE_ENABLE)
    node_ports_enable: bool = keyed(True, NODE_PORTS_ENABLE)
    pod_affinity_enable: bool = keyed(True, POD_AFFINITY_ENABLE)
    pod_topology_spread_enable: bool = keyed(True, POD_TOPOLOGY_SPREAD_ENABLE)
    #: ``predicate.DefaultTopologySpreadConstraints``; kube-scheduler's system defaults
    #: (``ScheduleAnyway``, so they never filter) when the key is absent
    default_constraints: tuple[TopologySpreadConstraint, ...] = SYSTEM_DEFAULT_CONSTRAINTS

    @property
    def hard_defaults(self) -> bool:
        """Whether a default constraint can refuse a node (``DoNotSchedule``)."""
        return any(c.hard for c in self.default_constraints)

    @classmethod
    def parse(cls, arguments: Arguments) -> PredicatesArgs:
        """The record for ``arguments``; a ``ValueError`` naming the key for malformed
        default spread constraints."""
        switches = read_keyed(cls, bool, arguments.get_bool)
        raw_constraints = arguments.raw().get(DEFAULT_CONSTRAINTS)
        return cls(
            **switches,
            default_constraints=(
                parse_default_constraints(raw_constraints)
                if raw_constraints is not None
                else SYSTEM_DEFAULT_CONSTRAINTS
            ),
        )
