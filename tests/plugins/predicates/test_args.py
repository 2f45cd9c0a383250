"""PredicatesArgs: the switches read with Volcano's ``GetBool`` rule; malformed default spread
constraints refused with the key named."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler_core.api.pod_constraints import TopologySpreadConstraint
from scheduler_core.framework.arguments import Arguments
from scheduler_core.plugins.predicates import PredicatesArgs
from scheduler_core.plugins.predicates.args import (
    CACHE_ENABLE,
    NODE_AFFINITY_ENABLE,
    NODE_PORTS_ENABLE,
    POD_AFFINITY_ENABLE,
    POD_TOPOLOGY_SPREAD_ENABLE,
    TAINT_TOLERATION_ENABLE,
)
from scheduler_core.plugins.predicates.topology_spread import (
    DEFAULT_CONSTRAINTS,
    SYSTEM_DEFAULT_CONSTRAINTS,
)

HOST = "kubernetes.io/hostname"

#: (key, field, Volcano's default)
SWITCHES = [
    (NODE_AFFINITY_ENABLE, "node_affinity_enable", True),
    (TAINT_TOLERATION_ENABLE, "taint_toleration_enable", True),
    (CACHE_ENABLE, "cache_enable", False),
    (NODE_PORTS_ENABLE, "node_ports_enable", True),
    (POD_AFFINITY_ENABLE, "pod_affinity_enable", True),
    (POD_TOPOLOGY_SPREAD_ENABLE, "pod_topology_spread_enable", True),
]


def parse(raw: dict[str, Any]) -> PredicatesArgs:
    return PredicatesArgs.parse(Arguments(raw))


@pytest.mark.parametrize(("key", "field", "default"), SWITCHES)
def test_an_absent_switch_is_volcanos_default(key: str, field: str, default: bool) -> None:
    assert getattr(parse({}), field) is default
    assert getattr(PredicatesArgs(), field) is default


@pytest.mark.parametrize(("key", "field", "default"), SWITCHES)
@pytest.mark.parametrize(
    ("value", "expected"),
    [(True, True), (False, False), ("true", True), ("1", True), ("F", False), ("FALSE", False)],
)
def test_a_bool_or_a_go_bool_string_sets_the_switch(
    key: str, field: str, default: bool, value: Any, expected: bool
) -> None:
    assert getattr(parse({key: value}), field) is expected


@pytest.mark.parametrize(("key", "field", "default"), SWITCHES)
@pytest.mark.parametrize("value", ["yes", "off", 1, 0, None, [True]])
def test_anything_else_leaves_the_default(key: str, field: str, default: bool, value: Any) -> None:
    assert getattr(parse({key: value}), field) is default


def test_without_default_constraints_the_system_defaults_apply_and_never_filter() -> None:
    parsed = parse({})
    assert parsed.default_constraints == SYSTEM_DEFAULT_CONSTRAINTS
    assert not parsed.hard_defaults


@pytest.mark.parametrize(
    ("raw", "expected", "hard"),
    [
        ([], (), False),
        (
            [{"maxSkew": 2, "topologyKey": HOST, "whenUnsatisfiable": "DoNotSchedule"}],
            (TopologySpreadConstraint(2, HOST, "DoNotSchedule", None),),
            True,
        ),
        (
            [{"maxSkew": 1, "topologyKey": HOST, "whenUnsatisfiable": "ScheduleAnyway"}],
            (TopologySpreadConstraint(1, HOST, "ScheduleAnyway", None),),
            False,
        ),
    ],
)
def test_configured_default_constraints_replace_the_system_ones(
    raw: list[dict[str, Any]], expected: tuple[TopologySpreadConstraint, ...], hard: bool
) -> None:
    parsed = parse({DEFAULT_CONSTRAINTS: raw})
    assert parsed.default_constraints == expected
    assert parsed.hard_defaults is hard


@pytest.mark.parametrize(
    ("raw", "where"),
    [
        ({"maxSkew": 1}, r"predicate\.DefaultTopologySpreadConstraints: expected a list"),
        (["x"], r"predicate\.DefaultTopologySpreadConstraints\[0\]: expected a constraint"),
        (
            [{"maxSkew": 0, "topologyKey": HOST, "whenUnsatisfiable": "DoNotSchedule"}],
            r"predicate\.DefaultTopologySpreadConstraints\[0\]",
        ),
    ],
)
def test_malformed_default_constraints_are_refused_naming_the_key(raw: Any, where: str) -> None:
    with pytest.raises(ValueError, match=where):
        parse({DEFAULT_CONSTRAINTS: raw})
