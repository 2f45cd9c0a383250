"""Volcano's scheduler configuration format (``volcano-scheduler.conf``), loaded as Volcano does.

A Volcano user's file must work unchanged: the same keys (with Volcano's inconsistent
``enable``/``enabled`` spellings), the same defaults for unset flags, the same errors for an
unknown action or a malformed file. Plugins the engine does not have are skipped with a
warning at session open, as Volcano does.
"""

from __future__ import annotations

import logging
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

log = logging.getLogger(__name__)

#: YAML key of every plugin-option flag Volcano knows.
PLUGIN_FLAGS: tuple[str, ...] = (
    "enableJobOrder",
    "enableHierarchy",
    "enableJobReady",
    "enableJobPipelined",
    "enableTaskOrder",
    "enablePreemptable",
    "enableReclaimable",
    "enablePreemptive",
    "enableQueueOrder",
    "enabledClusterOrder",
    "enablePredicate",
    "enableBestNode",
    "enableNodeOrder",
    "enableTargetJob",
    "enableReservedNodes",
    "enableJobEnqueued",
    "enabledVictim",
    "enableJobStarving",
    "enabledOverused",
    "enabledAllocatable",
    "enabledHyperNodeOrder",
    "enabledSubJobReady",
    "enabledSubJobPipelined",
    "enabledSubJobOrder",
    "enabledHyperNodeGradient",
)

#: Flags the production loader leaves unset (false) instead of defaulting to true.
_NOT_DEFAULTED = frozenset({"enableHierarchy", "enabledClusterOrder"})

#: Every action name Volcano accepts; the engine may implement a subset.
VOLCANO_ACTIONS: frozenset[str] = frozenset(
    {"enqueue", "allocate", "backfill", "preempt", "reclaim", "shuffle"}
)

#: Volcano's Helm-chart tiers with our action list. binpack gets weight 10 so that, as the
#: extender's prioritize verb promises, packing wins over nodeorder's least-requested spreading
#: (the weighting Volcano's binpack documentation suggests for batch clusters).
DEFAULT_CONF = """\
actions: "enqueue, allocate, preempt, reclaim"
tiers:
- plugins:
  - name: priority
  - name: gang
    enablePreemptable: false
  - name: conformance
- plugins:
  - name: drf
    enablePreemptable: false
  - name: predicates
  - name: proportion
  - name: nodeorder
  - name: binpack
    arguments:
      binpack.weight: 10
"""


class ConfigError(ValueError):
    """The configuration cannot be used; the message names what is wrong and where."""


@dataclass(slots=True)
class PluginOption:
    """One plugin of a tier: its name, its hook flags and its arguments."""

    name: str
    flags: dict[str, bool | None] = field(default_factory=dict)
    arguments: dict[str, Any] = field(default_factory=dict)
    #: The plugin's typed record of ``arguments``, read when the engine checks the
    #: configuration (None until then, or for a plugin the engine does not have); sessions
    #: hand it to the plugin instead of reading the map again.
    args: object = field(default=None, compare=False, repr=False)

    def enabled(self, flag: str) -> bool:
        """Volcano's ``isEnabled``: an unset flag is off (the loader has already defaulted it)."""
        return self.flags.get(flag) is True


@dataclass(slots=True)
class Tier:
    plugins: list[PluginOption] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class NetworkTopologyConf:
    """``networkTopology``: whether a PodGroup's ``spec.networkTopology`` is honoured, and
    where the tree comes from. On by default, so that a user who writes a request sees it
    hold without editing the scheduler's configuration; ``enabled: false`` turns it off (said
    at load, and to each such gang in explain). ``labelLevels`` lists node label keys from
    the widest level to the narrowest: with it the tree is built from node labels and
    HyperNodes are not read; without it the tree comes from HyperNodes."""

    enabled: bool = True
    label_levels: tuple[str, ...] = ()


@dataclass(slots=True)
class SchedulerConfiguration:
    actions: list[str]
    tiers: list[Tier]
    configurations: dict[str, dict[str, Any]] = field(default_factory=dict)
    metrics: dict[str, str] = field(default_factory=dict)
    #: ``deviceClassMappings``: DRA device class -> the quota resource name its devices
    #: count under (e.g. ``gpu.example.com: nvidia.com/gpu``, so that a queue's quota covers
    #: device-plugin and DRA GPUs alike). A class with an ``extendedResourceName`` counts
    #: under that name whatever the mapping says; unmapped classes under
    #: ``deviceclass.resource.kubernetes.io/<class>``.
    device_class_mappings: dict[str, str] = field(default_factory=dict)
    network_topology: NetworkTopologyConf = field(default_factory=NetworkTopologyConf)
    #: What a session will skip with a warning (a plugin the engine does not have), one line
    #: each; filled by whoever knows the engine's plugins (see `unavailable_plugins`).
    warnings: list[str] = field(default_factory=list)

    def action_arguments(self, action: str) -> dict[str, Any]:
        return self.configurations.get(action, {})


def parse_actions(text: str, source: str = "configuration") -> list[str]:
    """Comma-separated, trimmed, in order; an unknown name is an error naming it."""
    names = [name.strip() for name in text.split(",") if name.strip()]
    for name in names:
        if name not in VOLCANO_ACTIONS:
            known = ", ".join(sorted(VOLCANO_ACTIONS))
            raise ConfigError(f"{source}: unknown action {name!r} (known actions: {known})")
    return names


def _plugin_option(raw: Any, where: str, apply_defaults: bool) -> PluginOption:
    if not isinstance(raw, dict) or not isinstance(raw.get("name"), str) or not raw["name"]:
        raise ConfigError(f"{where}: a plugin needs a 'name'")
    flags: dict[str, bool | None] = {}
    for flag in PLUGIN_FLAGS:
        value = raw.get(flag)
        if value is not None and not isinstance(value, bool):
            raise ConfigError(f"{where} ({raw['name']}): {flag} must be true or false")
        if value is None and apply_defaults and flag not in _NOT_DEFAULTED:
            value = True
        flags[flag] = value
    arguments = raw.get("arguments") or {}
    if not isinstance(arguments, dict):
        raise ConfigError(f"{where} ({raw['name']}): arguments must be a mapping")
    return PluginOption(name=raw["name"], flags=flags, arguments=dict(arguments))


def load_configuration(
    text: str, source: str = "configuration", *, apply_defaults: bool = True
) -> SchedulerConfiguration:
    """Parse a ``volcano-scheduler.conf`` document.

    ``apply_defaults=False`` keeps unset flags off, which is how Volcano's unit tests build
    tiers; production loading (the default) turns every unset flag on except
    ``enableHierarchy`` and ``enabledClusterOrder``.
    """
    try:
        raw = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigError(f"{source}: malformed YAML: {exc}".replace("\n", " ")) from exc
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise ConfigError(f"{source}: expected a mapping with 'actions' and 'tiers'")
    actions_text = raw.get("actions", "")
    if not isinstance(actions_text, str):
        raise ConfigError(f"{source}: 'actions' must be a comma-separated string")
    actions = parse_actions(actions_text, source)

    tiers: list[Tier] = []
    raw_tiers = raw.get("tiers") or []
    if not isinstance(raw_tiers, list):
        raise ConfigError(f"{source}: 'tiers' must be a list")
    for i, raw_tier in enumerate(raw_tiers):
        if not isinstance(raw_tier, dict):
            raise ConfigError(f"{source}: tiers[{i}] must be a mapping with 'plugins'")
        raw_plugins = raw_tier.get("plugins") or []
        if not isinstance(raw_plugins, list):
            raise ConfigError(f"{source}: tiers[{i}].plugins must be a list")
        plugins = [
            _plugin_option(p, f"{source}: tiers[{i}].plugins[{j}]", apply_defaults)
            for j, p in enumerate(raw_plugins)
        ]
        names = {p.name for p in plugins}
        if "proportion" in names and any(
            p.name == "drf" and p.flags.get("enableHierarchy") is True for p in plugins
        ):
            raise ConfigError(
                f"{source}: tiers[{i}]: proportion and drf with enableHierarchy "
                "cannot be enabled in the same tier"
            )
        tiers.append(Tier(plugins=plugins))

    configurations: dict[str, dict[str, Any]] = {}
    raw_confs = raw.get("configurations") or []
    if not isinstance(raw_confs, list):
        raise ConfigError(f"{source}: 'configurations' must be a list")
    for k, conf in enumerate(raw_confs):
        if not isinstance(conf, dict) or not isinstance(conf.get("name"), str):
            raise ConfigError(f"{source}: configurations[{k}] needs a 'name'")
        arguments = conf.get("arguments") or {}
        if not isinstance(arguments, dict):
            raise ConfigError(f"{source}: configurations[{k}].arguments must be a mapping")
        configurations[conf["name"]] = dict(arguments)

    metrics = raw.get("metrics") or {}
    if not isinstance(metrics, dict):
        raise ConfigError(f"{source}: 'metrics' must be a mapping")
    return SchedulerConfiguration(
        actions=actions,
        tiers=tiers,
        configurations=configurations,
        metrics={str(k): str(v) for k, v in metrics.items()},
        device_class_mappings=_device_class_mappings(raw.get("deviceClassMappings"), source),
        network_topology=_network_topology(raw.get("networkTopology"), source),
    )


def _network_topology(raw: Any, source: str) -> NetworkTopologyConf:
    """``networkTopology``: ``enabled`` (a boolean, default true) and ``labelLevels`` (a list
    of distinct, non-empty label keys, widest first)."""
    where = f"{source}: networkTopology"
    if raw is None:
        return NetworkTopologyConf()
    if not isinstance(raw, dict):
        raise ConfigError(f"{where} must be a mapping with 'enabled' and/or 'labelLevels'")
    unknown = sorted(set(raw) - {"enabled", "labelLevels"})
    if unknown:
        raise ConfigError(f"{where}: unknown key {unknown[0]!r} (known: enabled, labelLevels)")
    enabled = raw.get("enabled", True)
    if not isinstance(enabled, bool):
        raise ConfigError(f"{where}.enabled must be true or false")
    levels = raw.get("labelLevels") or []
    if not isinstance(levels, list) or not all(isinstance(k, str) and k for k in levels):
        raise ConfigError(f"{where}.labelLevels must be a list of label keys, widest first")
    if len(set(levels)) != len(levels):
        raise ConfigError(f"{where}.labelLevels lists a label key twice: {levels}")
    if not enabled:
        # Said once, at load: a user who wrote a request would otherwise see gangs spread
        # over switches with no word anywhere. Not a configuration warning: turning the
        # feature off is a choice, and ``--strict-conf`` must not refuse it.
        log.warning(
            "%s: networkTopology.enabled is false: PodGroups' spec.networkTopology is "
            "ignored and their gangs are placed by count, in any domain",
            source,
        )
    return NetworkTopologyConf(enabled=enabled, label_levels=tuple(levels))


#: Names a device class cannot count under: the native resources are not devices.
_NATIVE = frozenset({"cpu", "memory", "pods", "ephemeral-storage"})


def _device_class_mappings(raw: Any, source: str) -> dict[str, str]:
    """``deviceClassMappings``: a mapping of device class names to resource names."""
    if raw is None:
        return {}
    where = f"{source}: deviceClassMappings"
    if not isinstance(raw, dict):
        raise ConfigError(f"{where} must be a mapping of device class to resource name")
    out: dict[str, str] = {}
    for device_class, name in raw.items():
        if not isinstance(device_class, str) or not device_class:
            raise ConfigError(f"{where}: a device class name must be a non-empty string")
        if not isinstance(name, str) or not name or " " in name:
            raise ConfigError(f"{where}.{device_class}: expected a resource name, got {name!r}")
        if name in _NATIVE or name.startswith(("requests.", "limits.", "hugepages-")):
            raise ConfigError(f"{where}.{device_class}: {name} is not a device resource")
        out[device_class] = name
    return out


def unavailable_plugins(
    conf: SchedulerConfiguration, available: Collection[str], source: str = "configuration"
) -> list[str]:
    """One warning per plugin of ``conf`` that is not in ``available``.

    Volcano skips such a plugin with a log line and runs on, so a misspelt ``proportionn``
    silently turns fair share off; these lines let the caller show it where an operator looks.
    Actions need no such check: a name Volcano does not know is already an error, and the
    ones it knows but the engine lacks (backfill, shuffle) take no part in the verbs.
    """
    return [
        f"{source}: tiers[{i}].plugins[{j}]: plugin {option.name!r} is not available, skipped "
        f"(available: {', '.join(sorted(available))})"
        for i, tier in enumerate(conf.tiers)
        for j, option in enumerate(tier.plugins)
        if option.name not in available
    ]


def load_configuration_file(path: str | Path) -> SchedulerConfiguration:
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror or exc}") from exc
    return load_configuration(text, str(path))


def default_configuration() -> SchedulerConfiguration:
    return load_configuration(DEFAULT_CONF, "default configuration")
