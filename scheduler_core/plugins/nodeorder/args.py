"""nodeorder's arguments, read once into a typed record.

Each is a weight, an integer read with Volcano's accessor rule (``GetInt``): a key that is
absent, or holds anything but an integer (a string, a float, a bool), leaves its default.
Nothing is refused; a weight of 0 turns its score off.
"""

from __future__ import annotations

from dataclasses import dataclass

from scheduler_core.framework.arguments import Arguments

LEAST_REQUESTED_WEIGHT = "leastrequested.weight"
MOST_REQUESTED_WEIGHT = "mostrequested.weight"
BALANCED_RESOURCE_WEIGHT = "balancedresource.weight"
NODE_AFFINITY_WEIGHT = "nodeaffinity.weight"
TAINT_TOLERATION_WEIGHT = "tainttoleration.weight"
POD_AFFINITY_WEIGHT = "podaffinity.weight"
IMAGE_LOCALITY_WEIGHT = "imagelocality.weight"
POD_TOPOLOGY_SPREAD_WEIGHT = "podtopologyspread.weight"


@dataclass(frozen=True, slots=True)
class NodeOrderArgs:
    """The weight of each of kube-scheduler's scores nodeorder sums, Volcano's defaults."""

    least_requested_weight: int = 1
    most_requested_weight: int = 0
    balanced_resource_weight: int = 1
    node_affinity_weight: int = 1
    taint_toleration_weight: int = 1
    pod_affinity_weight: int = 1
    pod_topology_spread_weight: int = 2
    #: read as Volcano reads it, but not scored by the engine (no image data in the model);
    #: kube-scheduler's configuration carries it (``app/schedconfig``)
    image_locality_weight: int = 1

    @classmethod
    def parse(cls, arguments: Arguments) -> NodeOrderArgs:
        defaults = cls()
        return cls(
            least_requested_weight=arguments.get_int(
                LEAST_REQUESTED_WEIGHT, defaults.least_requested_weight
            ),
            most_requested_weight=arguments.get_int(
                MOST_REQUESTED_WEIGHT, defaults.most_requested_weight
            ),
            balanced_resource_weight=arguments.get_int(
                BALANCED_RESOURCE_WEIGHT, defaults.balanced_resource_weight
            ),
            node_affinity_weight=arguments.get_int(
                NODE_AFFINITY_WEIGHT, defaults.node_affinity_weight
            ),
            taint_toleration_weight=arguments.get_int(
                TAINT_TOLERATION_WEIGHT, defaults.taint_toleration_weight
            ),
            pod_affinity_weight=arguments.get_int(
                POD_AFFINITY_WEIGHT, defaults.pod_affinity_weight
            ),
            pod_topology_spread_weight=arguments.get_int(
                POD_TOPOLOGY_SPREAD_WEIGHT, defaults.pod_topology_spread_weight
            ),
            image_locality_weight=arguments.get_int(
                IMAGE_LOCALITY_WEIGHT, defaults.image_locality_weight
            ),
        )
