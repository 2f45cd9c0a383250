"""NodeOrderArgs: every weight read with Volcano's ``GetInt`` rule, Volcano's defaults."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler_core.framework.arguments import Arguments
from scheduler_core.plugins.nodeorder import NodeOrderArgs
from scheduler_core.plugins.nodeorder import args as keys

#: (key, field, Volcano's default)
WEIGHTS = [
    (keys.LEAST_REQUESTED_WEIGHT, "least_requested_weight", 1),
    (keys.MOST_REQUESTED_WEIGHT, "most_requested_weight", 0),
    (keys.BALANCED_RESOURCE_WEIGHT, "balanced_resource_weight", 1),
    (keys.NODE_AFFINITY_WEIGHT, "node_affinity_weight", 1),
    (keys.TAINT_TOLERATION_WEIGHT, "taint_toleration_weight", 1),
    (keys.POD_AFFINITY_WEIGHT, "pod_affinity_weight", 1),
    (keys.POD_TOPOLOGY_SPREAD_WEIGHT, "pod_topology_spread_weight", 2),
    (keys.IMAGE_LOCALITY_WEIGHT, "image_locality_weight", 1),
]


@pytest.mark.parametrize(("key", "field", "default"), WEIGHTS)
def test_an_absent_weight_is_volcanos_default(key: str, field: str, default: int) -> None:
    assert getattr(NodeOrderArgs.parse(Arguments()), field) == default
    assert getattr(NodeOrderArgs(), field) == default


@pytest.mark.parametrize(("key", "field", "default"), WEIGHTS)
@pytest.mark.parametrize("value", [0, 7, -3, 2**60])
def test_an_integer_weight_is_taken_as_given(
    key: str, field: str, default: int, value: int
) -> None:
    assert getattr(NodeOrderArgs.parse(Arguments({key: value})), field) == value


@pytest.mark.parametrize(("key", "field", "default"), WEIGHTS)
@pytest.mark.parametrize("value", ["3", 2.5, True, None, [1]])
def test_anything_but_an_integer_leaves_the_default(
    key: str, field: str, default: int, value: Any
) -> None:
    assert getattr(NodeOrderArgs.parse(Arguments({key: value})), field) == default


def test_a_key_sets_its_own_weight_only() -> None:
    parsed = NodeOrderArgs.parse(Arguments({keys.MOST_REQUESTED_WEIGHT: 5, "unknown.weight": 9}))
    assert parsed == NodeOrderArgs(most_requested_weight=5)
