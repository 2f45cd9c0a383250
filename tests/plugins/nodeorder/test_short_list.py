"""nodeorder node by node on Python numbers gives the arrays' floats: balanced allocation
over two resources and over three (a GPU pod's population standard deviation)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler_core.api.node import NodeInfo
from scheduler_core.api.resource import Resource
from scheduler_core.plugins.nodeorder.scores import PodRequests, balanced_scores
from scheduler_core.plugins.nodeorder.short_list import _short_balanced

GPU = "nvidia.com/gpu"
NAMES = ("cpu", "memory", GPU)

#: Amounts of every size the cache holds: none, small, ones that do not divide evenly,
#: and ones past what a node has (a fraction above 1 is capped).
amounts = st.one_of(
    st.just(0.0),
    st.integers(1, 64).map(float),
    st.floats(0.001, 2.0**40, allow_nan=False, allow_infinity=False),
)


def arrays_score(node: NodeInfo, pod: PodRequests) -> int:
    """``balanced_resource_scores``' steps on one-element arrays."""
    fractions, present = [], []
    for name, request in pod.balanced:
        allocatable = np.array([node.allocatable.get(name)])
        has = allocatable != 0
        requested = np.array([node.used.get(name) + node.pipelined.get(name)]) + request
        fractions.append(requested / np.where(has, allocatable, 1.0))
        present.append(has)
    return int(balanced_scores(fractions, present)[0])


def resource(values: tuple[float, float, float]) -> Resource:
    return Resource(values[0], values[1], {GPU: values[2]})


@settings(max_examples=500, deadline=None)
@given(
    allocatable=st.tuples(amounts, amounts, amounts),
    used=st.tuples(amounts, amounts, amounts),
    pipelined=st.tuples(amounts, amounts, amounts),
    request=st.tuples(amounts, amounts, amounts),
    with_gpu=st.booleans(),
)
def test_balanced_allocation_node_by_node_is_the_arrays_float(
    allocatable: tuple[float, float, float],
    used: tuple[float, float, float],
    pipelined: tuple[float, float, float],
    request: tuple[float, float, float],
    with_gpu: bool,
) -> None:
    node = NodeInfo.new("n1", resource(allocatable))
    node.used, node.pipelined = resource(used), resource(pipelined)
    names = NAMES if with_gpu else NAMES[:2]
    pod = PodRequests(
        cpu=request[0],
        memory=request[1],
        balanced=tuple(zip(names, request, strict=False)),
        best_effort=False,
    )
    assert _short_balanced(pod, node) == arrays_score(node, pod)
