"""kube-scheduler v1.36's resource scores, written out for the tests: NodeResourcesFit
(LeastAllocated / MostAllocated with resource weights) as its ``resourceAllocationScorer``
computes them, on the objects the tests build (nodes and pods as API dicts).

Only what the differences between the native formula and Volcano's need: cpu and memory
(extended resources not requested are skipped, as kube-scheduler does), the node's
``NonZeroRequested`` (a container without a cpu/memory request counts 100m / 200Mi) and the
incoming pod's non-zero request; every step in int64 with truncating division.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from scheduler_core.api.quantity import milli_value, parse_quantity, value

DEFAULT_MILLI_CPU = 100
DEFAULT_MEMORY = 200 * 1024 * 1024
MAX_NODE_SCORE = 100


def _amount(name: str, quantity: str | None) -> int:
    if quantity is None:
        return 0
    q = parse_quantity(quantity)
    return milli_value(q) if name == "cpu" else value(q)


def pod_requests(pod: Mapping[str, Any], *, non_zero: bool) -> dict[str, int]:
    """Sum over the pod's containers; ``non_zero`` applies kube-scheduler's defaults per
    container that sets no cpu / memory request (``schedutil.GetNonzeroRequests``)."""
    total = {"cpu": 0, "memory": 0}
    for container in pod["spec"]["containers"]:
        requests = (container.get("resources") or {}).get("requests") or {}
        for name, default in (("cpu", DEFAULT_MILLI_CPU), ("memory", DEFAULT_MEMORY)):
            amount = _amount(name, requests.get(name))
            total[name] += amount if amount or not non_zero else default
    return total


def allocatable(node: Mapping[str, Any]) -> dict[str, int]:
    alloc = node["status"]["allocatable"]
    return {name: _amount(name, alloc.get(name)) for name in ("cpu", "memory")}


def fit_score(
    strategy: Mapping[str, Any],
    node: Mapping[str, Any],
    placed: Iterable[Mapping[str, Any]],
    pod: Mapping[str, Any],
) -> int:
    """NodeResourcesFit's score (0..100) of ``node`` holding ``placed`` for ``pod``."""
    capacity = allocatable(node)
    requested = {"cpu": 0, "memory": 0}
    for other in placed:
        for name, amount in pod_requests(other, non_zero=True).items():
            requested[name] += amount
    incoming = pod_requests(pod, non_zero=True)
    score = weight_sum = 0
    for resource in strategy["resources"]:
        name, weight = resource["name"], resource["weight"]
        if name not in capacity or capacity[name] == 0:
            continue
        used = requested[name] + incoming[name]
        if strategy["type"] == "MostAllocated":
            one = min(used, capacity[name]) * MAX_NODE_SCORE // capacity[name]
        elif used > capacity[name]:
            one = 0
        else:
            one = (capacity[name] - used) * MAX_NODE_SCORE // capacity[name]
        score += one * weight
        weight_sum += weight
    return score // weight_sum if weight_sum else 0


def _balance(requested: dict[str, int], capacity: dict[str, int]) -> int:
    """(1 - std of the utilisation fractions) x 100, truncated: cpu and memory."""
    fractions = [
        min(requested[name] / capacity[name], 1.0)
        for name in ("cpu", "memory")
        if capacity[name] != 0
    ]
    std = abs(fractions[0] - fractions[1]) / 2 if len(fractions) == 2 else 0.0
    return int((1 - std) * MAX_NODE_SCORE)


def balanced_score(
    node: Mapping[str, Any], placed: Iterable[Mapping[str, Any]], pod: Mapping[str, Any]
) -> int:
    """NodeResourcesBalancedAllocation of kube-scheduler v1.36: the change of balance the
    pod makes, ``75 + (balance after - balance before) / 2`` (50..100), on actual requests
    (no non-zero defaults)."""
    capacity = allocatable(node)
    before = {"cpu": 0, "memory": 0}
    for other in placed:
        for name, amount in pod_requests(other, non_zero=False).items():
            before[name] += amount
    incoming = pod_requests(pod, non_zero=False)
    after = {name: before[name] + incoming[name] for name in before}
    return (150 + _balance(after, capacity) - _balance(before, capacity)) // 2
