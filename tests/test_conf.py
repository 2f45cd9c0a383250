"""The scheduler configuration loads Volcano's files unchanged, with Volcano's defaults."""

from __future__ import annotations

import logging

import pytest

from scheduler_core.api.snapshot import ClusterSnapshot
from scheduler_core.conf import (
    ConfigError,
    default_configuration,
    load_configuration,
    load_configuration_file,
)
from scheduler_core.engine import check_configuration
from scheduler_core.framework.framework import open_session
from scheduler_core.framework.registry import plugin_names

VOLCANO_HELM_CONF = """
actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
    enablePreemptable: false
  - name: conformance
- plugins:
  - name: overcommit
  - name: drf
    enablePreemptable: false
  - name: predicates
  - name: proportion
  - name: nodeorder
  - name: binpack
configurations:
- name: preempt
  arguments:
    enableTopologyAwarePreemption: true
    minCandidateNodesPercentage: 20
"""


def test_volcano_helm_file_loads_unchanged() -> None:
    conf = load_configuration(VOLCANO_HELM_CONF)
    assert conf.actions == ["enqueue", "allocate", "backfill"]
    assert [p.name for p in conf.tiers[0].plugins] == ["priority", "gang", "conformance"]
    assert conf.action_arguments("preempt") == {
        "enableTopologyAwarePreemption": True,
        "minCandidateNodesPercentage": 20,
    }


def test_unset_flags_default_to_true_except_hierarchy_and_cluster_order() -> None:
    gang = load_configuration(VOLCANO_HELM_CONF).tiers[0].plugins[1]
    assert gang.enabled("enablePreemptable") is False  # explicitly off
    assert gang.enabled("enableJobReady") is True
    assert gang.enabled("enabledOverused") is True
    assert gang.enabled("enableHierarchy") is False
    assert gang.enabled("enabledClusterOrder") is False


def test_unit_test_style_loading_leaves_unset_flags_off() -> None:
    conf = load_configuration(VOLCANO_HELM_CONF, apply_defaults=False)
    assert conf.tiers[0].plugins[0].enabled("enableJobOrder") is False


def test_default_configuration_is_the_helm_chart_tiers_with_our_actions() -> None:
    conf = default_configuration()
    assert conf.actions == ["enqueue", "allocate", "preempt", "reclaim"]
    assert [[p.name for p in t.plugins] for t in conf.tiers] == [
        ["priority", "gang", "conformance"],
        ["drf", "predicates", "proportion", "nodeorder", "binpack"],
    ]
    assert not conf.tiers[1].plugins[0].enabled("enablePreemptable")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('actions: "enqueue, alocate"', "unknown action 'alocate'"),
        ("actions: [enqueue]", "'actions' must be a comma-separated string"),
        ("tiers: {plugins: []}", "'tiers' must be a list"),
        ("actions: 'enqueue'\ntiers:\n- plugins:\n  - enableJobOrder: true", "needs a 'name'"),
        ("tiers:\n- plugins:\n  - name: gang\n    enableJobOrder: maybe", "must be true or false"),
        ("actions: 'enqueue\n  tiers: [", "malformed YAML"),
        ("- just\n- a list", "expected a mapping"),
        ("deviceClassMappings: [gpu]", "deviceClassMappings must be a mapping"),
        ("deviceClassMappings: {gpu.example.com: cpu}", "cpu is not a device resource"),
        ("deviceClassMappings: {gpu.example.com: 3}", "expected a resource name, got 3"),
        ("networkTopology: [x]", "networkTopology must be a mapping"),
        ("networkTopology: {enabled: maybe}", "networkTopology.enabled must be true or false"),
        ("networkTopology: {labelLevels: [a, a]}", "lists a label key twice"),
        ("networkTopology: {labelLevels: [a, '']}", "must be a list of label keys"),
        ("networkTopology: {enable: false}", "unknown key 'enable'"),
    ],
)
def test_bad_configuration_is_a_clear_error(text: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        load_configuration(text, "sched.conf")


def test_device_class_mappings_are_read_and_default_to_none() -> None:
    text = (
        "deviceClassMappings:\n"
        "  gpu.example.com: nvidia.com/gpu\n"
        "  a100.example.com: nvidia.com/gpu\n"
    )
    conf = load_configuration(text)
    assert conf.device_class_mappings == {
        "gpu.example.com": "nvidia.com/gpu",
        "a100.example.com": "nvidia.com/gpu",
    }
    assert load_configuration("actions: enqueue").device_class_mappings == {}


def test_network_topology_is_honoured_by_default_and_reads_label_levels() -> None:
    default = load_configuration("actions: enqueue").network_topology
    assert default.enabled and default.label_levels == ()
    conf = load_configuration("networkTopology: {enabled: false, labelLevels: [dc, spine]}")
    assert not conf.network_topology.enabled
    assert conf.network_topology.label_levels == ("dc", "spine")


def test_error_names_the_file(tmp_path: object) -> None:
    with pytest.raises(ConfigError, match=r"no-such\.conf: cannot read"):
        load_configuration_file("/nonexistent/no-such.conf")


def test_proportion_and_hierarchical_drf_in_one_tier_is_rejected() -> None:
    text = """
tiers:
- plugins:
  - name: drf
    enableHierarchy: true
  - name: proportion
"""
    with pytest.raises(ConfigError, match="cannot be enabled in the same tier"):
        load_configuration(text)


def test_unknown_plugin_is_skipped_with_a_warning_naming_it(
    caplog: pytest.LogCaptureFixture,
) -> None:
    conf = load_configuration("tiers:\n- plugins:\n  - name: no-such-plugin\n")
    with caplog.at_level(logging.WARNING):
        ssn = open_session(ClusterSnapshot(), conf)
    assert "no-such-plugin" in caplog.text
    assert ssn.plugins == {}


def test_plugins_the_engine_lacks_are_recorded_as_warnings_on_the_configuration() -> None:
    conf = check_configuration(load_configuration(VOLCANO_HELM_CONF), "volcano.conf")
    (warning,) = conf.warnings
    assert warning.startswith("volcano.conf: tiers[1].plugins[0]: plugin 'overcommit'")
    assert "proportion" in warning  # the available names, to spot a misspelling
    assert check_configuration(default_configuration()).warnings == []


def test_a_misspelt_plugin_is_a_warning_and_is_still_skipped() -> None:
    conf = check_configuration(
        load_configuration("tiers:\n- plugins:\n  - name: gang\n  - name: proportionn\n")
    )
    assert [w.split(": ", 1)[1] for w in conf.warnings] == [
        "tiers[0].plugins[1]: plugin 'proportionn' is not available, skipped "
        "(available: " + ", ".join(sorted(plugin_names())) + ")"
    ]
    assert set(open_session(ClusterSnapshot(), conf).plugins) == {"gang"}


def test_turning_network_topology_off_is_said_at_load_and_is_no_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING, logger="scheduler_core.conf"):
        conf = load_configuration(
            "networkTopology: {enabled: false}\ntiers:\n- plugins: [{name: gang}]\n", "c.yaml"
        )
    assert "c.yaml: networkTopology.enabled is false" in caplog.text
    assert conf.warnings == []
