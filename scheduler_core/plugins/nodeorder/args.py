"""nodeorder's arguments, read once into a typed record.

Each is a weight, an integer read with Volcano's accessor rule (``GetInt``): a key that is
absent, or holds anything but an integer (a string, a float, a bool), leaves its default.
Nothing is refused; a weight of 0 turns its score off.
"""

from __future__ import annotations

from dataclasses import dataclass

from scheduler_core.framework.arguments import Arguments
from scheduler_core.framework.keyed_args import keyed, read_keyed

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

    least_requested_weight: int = keyed(1, LEAST_REQUESTED_WEIGHT)
    most_requested_weight: int = keyed(0, MOST_REQUESTED_WEIGHT)
    balanced_resource_weight: int = keyed(1, BALANCED_RESOURCE_WEIGHT)
    node_affinity_weight: int = keyed(1, NODE_AFFINITY_WEIGHT)
    taint_toleration_weight: int = keyed(1, TAINT_TOLERATION_WEIGHT)
    pod_affinity_weight: int = keyed(1, POD_AFFINITY_WEIGHT)
    pod_topology_spread_weight: int = keyed(2, POD_TOPOLOGY_SPREAD_WEIGHT)
    #: read as Volcano reads it, but not scored by the engine (no image data in the model);
    #: kube-scheduler's configuration carries it (``app/schedconfig``)
    image_locality_weight: int = keyed(1, IMAGE_LOCALITY_WEIGHT)

    @classmethod
    def parse(cls, arguments: Arguments) -> NodeOrderArgs:
        return cls(**read_keyed(cls, int, arguments.get_int))
