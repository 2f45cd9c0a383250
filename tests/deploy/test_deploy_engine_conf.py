"""The engine's volcano-scheduler.conf as mounted: valid, and the design's default."""

from __future__ import annotations

import yaml

from scheduler_core.conf import default_configuration, load_configuration
from scheduler_core.engine import check_configuration

from .deploy_manifests import Manifest, engine_configuration_text

EXPECTED_ACTIONS = ["enqueue", "allocate", "preempt", "reclaim"]
EXPECTED_TIERS = [
    ["priority", "gang", "conformance"],
    ["drf", "predicates", "proportion", "nodeorder", "binpack"],
]


def test_parses_as_yaml_with_the_expected_actions(documents: list[Manifest]) -> None:
    raw = yaml.safe_load(engine_configuration_text(documents))
    assert isinstance(raw["actions"], str)
    assert [a.strip() for a in raw["actions"].split(",")] == EXPECTED_ACTIONS
    tiers = [[p["name"] for p in tier["plugins"]] for tier in raw["tiers"]]
    assert tiers == EXPECTED_TIERS
    plugins = {p["name"]: p for tier in raw["tiers"] for p in tier["plugins"]}
    # Gang and DRF must not nominate victims of their own (the Volcano chart's default).
    assert plugins["gang"]["enablePreemptable"] is False
    assert plugins["drf"]["enablePreemptable"] is False


def test_the_engine_loads_it_as_its_default(documents: list[Manifest]) -> None:
    """The engine's own loader accepts it and reads the same tiers and flags as its default."""
    mounted = load_configuration(engine_configuration_text(documents), "ConfigMap")
    default = default_configuration()
    assert mounted.actions == default.actions == EXPECTED_ACTIONS
    assert [[(p.name, p.flags) for p in t.plugins] for t in mounted.tiers] == [
        [(p.name, p.flags) for p in t.plugins] for t in default.tiers
    ]


def test_it_has_no_configuration_warning(documents: list[Manifest]) -> None:
    """The extender runs with --strict-conf: a warning here would stop it from starting."""
    mounted = load_configuration(engine_configuration_text(documents), "ConfigMap")
    assert check_configuration(mounted).warnings == []
