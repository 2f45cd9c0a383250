"""binpack: prefer the node the pod fills best, so whole nodes stay free for big pods.

Volcano's formula: for every resource the pod requests that has a weight,
``(used + request) / allocatable * weight``; the sum is divided by the sum of those weights
and scaled by ``MaxNodeScore (100) * binpack.weight``. A node where any weighted resource
would overflow scores 0. Arguments: ``binpack.weight`` (1), ``binpack.cpu`` (1),
``binpack.memory`` (1), ``binpack.resources`` (comma-separated extra resource names) and
``binpack.resources.<name>`` (1); a negative resource weight is taken as 1.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from scheduler_core.api.node import NodeInfo
from scheduler_core.api.task import TaskInfo
from scheduler_core.framework.arguments import Arguments
from scheduler_core.framework.registry import Plugin, register_plugin
from scheduler_core.framework.session import Session
from scheduler_core.logutil import v

log = logging.getLogger("scheduler_core.plugins.binpack")

MAX_NODE_SCORE = 100

BINPACK_WEIGHT = "binpack.weight"
BINPACK_CPU = "binpack.cpu"
BINPACK_MEMORY = "binpack.memory"
BINPACK_RESOURCES = "binpack.resources"
BINPACK_RESOURCES_PREFIX = BINPACK_RESOURCES + "."


@dataclass(slots=True)
class BinpackWeights:
    weight: int = 1
    cpu: int = 1
    memory: int = 1
    #: every scored resource by name, cpu and memory included
    resources: dict[str, int] = field(default_factory=dict)

    def __str__(self) -> str:
        extra = ", ".join(
            f"{name}[{w}]" for name, w in self.resources.items() if name not in ("cpu", "memory")
        )
        return (
            f"{BINPACK_WEIGHT}[{self.weight}], {BINPACK_CPU}[{self.cpu}], "
            f"{BINPACK_MEMORY}[{self.memory}], {extra or 'no extend resources.'}"
        )


def _non_negative(value: int) -> int:
    return 1 if value < 0 else value


def parse_weights(arguments: Arguments) -> BinpackWeights:
    weights = BinpackWeights(
        weight=arguments.get_int(BINPACK_WEIGHT, 1),
        cpu=_non_negative(arguments.get_int(BINPACK_CPU, 1)),
        memory=_non_negative(arguments.get_int(BINPACK_MEMORY, 1)),
    )
    for raw in arguments.get_str(BINPACK_RESOURCES, "").split(","):
        name = raw.strip()
        if name:
            weights.resources[name] = _non_negative(
                arguments.get_int(BINPACK_RESOURCES_PREFIX + name, 1)
            )
    weights.resources["cpu"] = weights.cpu
    weights.resources["memory"] = weights.memory
    return weights


def resource_binpacking_score(
    requested: float, capacity: float, used: float, weight: int
) -> float | None:
    """One resource's weighted utilisation after placing the pod; ``None`` if it overflows."""
    if capacity == 0 or weight == 0:
        return 0.0
    used_finally = requested + used
    if used_finally > capacity:
        return None
    return used_finally * weight / capacity


def weighted_requests(task: TaskInfo, weights: BinpackWeights) -> list[tuple[str, float, int]]:
    """(resource, request, weight) for every resource the pod requests that has a weight."""
    requested = task.resreq
    out: list[tuple[str, float, int]] = []
    for name in requested.resource_names():
        request = requested.get(name)
        if request == 0:
            continue
        weight = weights.resources.get(name)
        if weight is not None:
            out.append((name, request, weight))
    return out


def binpacking_score(
    task: TaskInfo,
    node: NodeInfo,
    weights: BinpackWeights,
    requests: list[tuple[str, float, int]] | None = None,
) -> float:
    """The node's binpack score for the task (``requests`` precomputed by the caller when
    it scores one task on many nodes)."""
    score = 0.0
    weight_sum = 0
    for name, request, weight in (
        requests if requests is not None else weighted_requests(task, weights)
    ):
        allocatable = node.allocatable.get(name)
        used = node.used.get(name)
        resource_score = resource_binpacking_score(request, allocatable, used, weight)
        if resource_score is None:
            log.log(
                v(4),
                "task %s/%s cannot binpack node %s: resource: %s is not enough, need %f, "
                "used %f, allocatable %f",
                task.namespace,
                task.name,
                node.name,
                name,
                request,
                used,
                allocatable,
            )
            return 0.0
        score += resource_score
        weight_sum += weight
    if weight_sum > 0:
        score /= weight_sum
    return score * MAX_NODE_SCORE * weights.weight


@register_plugin
class BinpackPlugin(Plugin):
    name = "binpack"

    def __init__(self, arguments: Arguments) -> None:
        super().__init__(arguments)
        self.weights = parse_weights(arguments)
        self._verbose = False
        self._last: tuple[TaskInfo, list[tuple[str, float, int]]] | None = None

    def on_session_open(self, ssn: Session) -> None:
        log.log(v(4), "Enter binpack plugin ... %s", self.weights)
        if self.weights.weight == 0:
            log.info("binpack weight is zero, skip node order function")
            return
        self._verbose = log.isEnabledFor(v(4))
        ssn.node_order_fns[self.name] = self.node_score

    def node_score(self, task: TaskInfo, node: NodeInfo) -> float:
        cached = self._last
        if cached is None or cached[0] is not task:
            cached = self._last = (task, weighted_requests(task, self.weights))
        score = binpacking_score(task, node, self.weights, cached[1])
        if self._verbose:
            log.log(
                v(4),
                "Binpack score for Task %s/%s on node %s is: %s",
                task.namespace,
                task.name,
                node.name,
                score,
            )
        return score
