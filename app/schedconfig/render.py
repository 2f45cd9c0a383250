"""Render the KubeSchedulerConfiguration (kubescheduler.config.k8s.io/v1, kube-scheduler
v1.36) that runs an engine conf with one extender call per pod.

Volcano's ``nodeorder`` is kube-scheduler's own score plugins under other names, and
``binpack`` is ``NodeResourcesFit`` with a ``MostAllocated`` strategy and resource weights.
Scoring them again in Python, over HTTP, for every pod costs a second call per pod; so by
default (``scoring="native"``) each profile carries the score plugins, weights and
``NodeResourcesFit`` strategy that express the conf, and the extender entry has only
``filterVerb`` and ``preemptVerb``. ``scoring="extender"`` keeps Volcano's exact scores: the
extender's ``prioritizeVerb`` orders the nodes and every native score plugin is disabled,
so nothing is counted twice.

How the conf becomes score plugins (``score_plan``):

* ``nodeorder``'s weights map onto kube-scheduler's plugins of the same name:
  ``balancedresource`` → NodeResourcesBalancedAllocation (cpu, memory and nvidia.com/gpu, as
  Volcano balances) at twice the weight, because kube-scheduler v1.36 scores the change of
  balance, 75 + (balance after − balance before) / 2, where Volcano scores the balance after
  placing the pod: doubled, the balance-after term weighs what it weighs in Volcano (the
  balance-before term is a documented difference); ``nodeaffinity`` → NodeAffinity,
  ``tainttoleration`` → TaintToleration, ``podaffinity`` → InterPodAffinity,
  ``podtopologyspread`` → PodTopologySpread (without kube-scheduler's system default
  constraints, which Volcano does not have), ``imagelocality`` → ImageLocality (Volcano
  scores it; the engine, without image data, does not).
* ``leastrequested``, ``mostrequested`` and ``binpack`` all score utilisation, and
  kube-scheduler allows one ``NodeResourcesFit`` strategy per profile. Per resource r with
  utilisation u_r, least-requested is 100·(1 − u_r) and most-requested 100·u_r, each
  averaged over cpu and memory; binpack is 100·B·Σ b_r·u_r / Σ b_r. Their weighted sum is
  a constant plus 100·Σ k_r·u_r with k_r = (most − least)/2 + B·b_r/Σb, which is
  ``MostAllocated`` with plugin weight Σ k_r and resource weights ∝ k_r when every k_r ≥ 0,
  and ``LeastAllocated`` with weight −Σ k_r when every k_r ≤ 0. A constant added to every
  node's score changes no ranking, so the fold is exact up to integer rounding.
* Anything else (mixed signs, a negative plugin weight, binpack's extra resources beside a
  least/most-requested term, a resource weight beyond kube-scheduler's 1..100, two binpack
  entries) cannot be expressed: the plan says so in a warning and the configuration keeps
  ``prioritizeVerb`` (scoring by the extender) for that conf. A weight is never dropped.

Pure: no I/O, no clock; the command line (``app/cli/scheduler_config.py``) and the
benchmarks call it.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal
from urllib.parse import urlsplit

import yaml

import scheduler_core.plugins  # noqa: F401 - registers every plugin (their names, defaults)
from scheduler_core.conf import SchedulerConfiguration, unavailable_plugins
from scheduler_core.framework.arguments import Arguments
from scheduler_core.framework.registry import plugin_names
from scheduler_core.plugins.binpack import BINPACK_RESOURCES_PREFIX, BinpackArgs
from scheduler_core.plugins.nodeorder.args import (
    BALANCED_RESOURCE_WEIGHT,
    IMAGE_LOCALITY_WEIGHT,
    LEAST_REQUESTED_WEIGHT,
    MOST_REQUESTED_WEIGHT,
    NODE_AFFINITY_WEIGHT,
    POD_AFFINITY_WEIGHT,
    POD_TOPOLOGY_SPREAD_WEIGHT,
    TAINT_TOLERATION_WEIGHT,
    NodeOrderArgs,
)
from scheduler_core.plugins.nodeorder.scores import BALANCED_RESOURCES

API_VERSION = "kubescheduler.config.k8s.io/v1"
KIND = "KubeSchedulerConfiguration"

Scoring = Literal["native", "extender"]
SCORINGS: tuple[Scoring, ...] = ("native", "extender")

#: kube-scheduler's bounds: a resource weight of a scoring strategy is 1..100
#: (``validateResources``); a plugin weight is an int32.
MAX_RESOURCE_WEIGHT = 100
MAX_PLUGIN_WEIGHT = 2**31 - 1

FIT = "NodeResourcesFit"
BALANCED = "NodeResourcesBalancedAllocation"
NODE_AFFINITY = "NodeAffinity"
TAINT_TOLERATION = "TaintToleration"
INTER_POD_AFFINITY = "InterPodAffinity"
POD_TOPOLOGY_SPREAD = "PodTopologySpread"
IMAGE_LOCALITY = "ImageLocality"

#: Said at the head of every rendered configuration: the one preemption kube-scheduler makes
#: without asking extenders, and how to keep it from bypassing the queue rules.
BYPASS_NOTE = (
    "# Workload-aware preemption (kube-scheduler's WorkloadAwarePreemption feature gate)\n"
    "# preempts for a whole Kubernetes PodGroup without asking extenders: the queue rules\n"
    "# are bypassed for those evictions, which the extender can only detect afterwards.\n"
    "# kube-scheduler 1.36 makes none in a profile with an extender, as here, but another\n"
    "# profile or scheduler can evict these pods that way: leave the gate off on every\n"
    "# kube-scheduler of the cluster (docs/native-gangs.md).\n"
)

#: kube-scheduler's own order of its score plugins (its v1 default set), kept so a rendered
#: profile reads like the defaults it replaces.
PLUGIN_ORDER = (
    TAINT_TOLERATION,
    NODE_AFFINITY,
    FIT,
    POD_TOPOLOGY_SPREAD,
    INTER_POD_AFFINITY,
    BALANCED,
    IMAGE_LOCALITY,
)

#: kube-scheduler v1.36's NodeResourcesBalancedAllocation scores 75 + (after - before) / 2:
#: its weight is Volcano's times this, so the balance after placing weighs the same.
BALANCED_WEIGHT_FACTOR = 2

#: nodeorder's arguments and the plugin each maps onto.
_DIRECT = (
    (BALANCED_RESOURCE_WEIGHT, BALANCED),
    (NODE_AFFINITY_WEIGHT, NODE_AFFINITY),
    (TAINT_TOLERATION_WEIGHT, TAINT_TOLERATION),
    (POD_AFFINITY_WEIGHT, INTER_POD_AFFINITY),
    (POD_TOPOLOGY_SPREAD_WEIGHT, POD_TOPOLOGY_SPREAD),
    (IMAGE_LOCALITY_WEIGHT, IMAGE_LOCALITY),
)
_NODEORDER_KEYS = frozenset(
    {LEAST_REQUESTED_WEIGHT, MOST_REQUESTED_WEIGHT, *(key for key, _ in _DIRECT)}
)
_BINPACK_KEYS = frozenset({"binpack.weight", "binpack.cpu", "binpack.memory", "binpack.resources"})

#: A Go ``time.Duration`` as metav1.Duration parses it (the units we accept).
_DURATION = re.compile(r"^(?:\d+(?:\.\d+)?(?:ns|us|µs|ms|s|m|h))+$")
_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)")
_UNIT_SECONDS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
#: client-go's leader election jitter: renewDeadline must exceed retryPeriod times this.
_JITTER_FACTOR = 1.2


class RenderError(ValueError):
    """The inputs cannot make a configuration kube-scheduler accepts; the message says which."""


@dataclass(frozen=True, slots=True)
class LeaderElectionOptions:
    """kube-scheduler's ``leaderElection`` block; ``None`` leaves kube-scheduler's default."""

    leader_elect: bool = True
    #: None: the first scheduler name (one Lease per scheduler deployment)
    resource_name: str | None = None
    resource_namespace: str | None = None
    lease_duration: str | None = None
    renew_deadline: str | None = None
    retry_period: str | None = None


@dataclass(frozen=True, slots=True)
class ExtenderOptions:
    """The extender entry's settings besides its URL and verbs (the chart's and deploy/'s)."""

    #: kube-scheduler multiplies the extender's 0..10 scores by 10 × weight; used only
    #: when prioritizeVerb is kept (kube-scheduler reads it for nothing else)
    weight: int = 12
    http_timeout: str = "5s"
    node_cache_capable: bool = True
    #: false: an extender error fails the attempt instead of skipping the queue rules
    ignorable: bool = False
    #: ``tlsConfig`` (caFile, certFile, keyFile, serverName) for an https URL
    tls_config: Mapping[str, str] | None = None


@dataclass(frozen=True, slots=True)
class ScorePlan:
    """The conf's node order as kube-scheduler score plugins.

    ``plugins`` is (name, weight) for every enabled score plugin, in kube-scheduler's
    order; ``plugin_config`` their arguments; ``inexpressible`` one line per part of the
    conf the plugins cannot express (then the extender must score); ``notes`` what
    deserves a look but changes nothing (arguments Volcano ignores too, plugins the
    engine skips)."""

    plugins: tuple[tuple[str, int], ...]
    plugin_config: tuple[dict[str, Any], ...]
    inexpressible: tuple[str, ...]
    notes: tuple[str, ...]

    @property
    def expressible(self) -> bool:
        return not self.inexpressible

    def weight(self, plugin: str) -> int:
        """The plugin's weight, 0 when it is not enabled."""
        return dict(self.plugins).get(plugin, 0)

    def fit_strategy(self) -> dict[str, Any] | None:
        """NodeResourcesFit's scoringStrategy, None when it does not score."""
        for entry in self.plugin_config:
            if entry["name"] == FIT:
                strategy: dict[str, Any] = entry["args"]["scoringStrategy"]
                return strategy
        return None


@dataclass(frozen=True, slots=True)
class Rendered:
    """The configuration as an object and as YAML, the warnings to show, and whether the
    extender still scores (``prioritizeVerb`` kept)."""

    document: dict[str, Any]
    warnings: list[str] = field(default_factory=list)
    prioritize: bool = False

    @property
    def yaml(self) -> str:
        """The YAML, headed by what the configuration cannot make go through the extender."""
        return BYPASS_NOTE + dump_yaml(self.document)

    def profile(self, scheduler_name: str) -> dict[str, Any]:
        for profile in self.document["profiles"]:
            if profile["schedulerName"] == scheduler_name:
                found: dict[str, Any] = profile
                return found
        raise KeyError(scheduler_name)


def dump_yaml(document: Mapping[str, Any]) -> str:
    """Block-style YAML in the document's own key order."""
    text: str = yaml.safe_dump(dict(document), sort_keys=False, default_flow_style=False)
    return text


# --- the conf's node order --------------------------------------------------------------


@dataclass(slots=True)
class _NodeOrder:
    """nodeorder's weights summed over every entry whose node order is on (scores add)."""

    least: int = 0
    most: int = 0
    direct: dict[str, int] = field(default_factory=lambda: {p: 0 for _, p in _DIRECT})


def _plugin_entries(conf: SchedulerConfiguration, name: str) -> list[tuple[str, Arguments]]:
    """(where, arguments) of every ``name`` entry whose node order Volcano calls; the
    arguments carry the plugin's record when the configuration has been checked."""
    return [
        (f"tiers[{i}].plugins[{j}] ({name})", Arguments(option.arguments, parsed=option.args))
        for i, tier in enumerate(conf.tiers)
        for j, option in enumerate(tier.plugins)
        if option.name == name and option.enabled("enableNodeOrder")
    ]


def _unknown_keys(where: str, arguments: Arguments, known: frozenset[str]) -> list[str]:
    return [
        f"{where}: argument {key!r} is not one Volcano reads; ignored (by the engine too)"
        for key in sorted(arguments.raw())
        if key not in known
    ]


def score_plan(conf: SchedulerConfiguration) -> ScorePlan:
    """What ``conf``'s nodeorder and binpack are as kube-scheduler score plugins."""
    inexpressible: list[str] = []
    notes = unavailable_plugins(conf, plugin_names())
    order = _NodeOrder()
    for where, arguments in _plugin_entries(conf, "nodeorder"):
        notes += _unknown_keys(where, arguments, _NODEORDER_KEYS)
        weights = arguments.typed(NodeOrderArgs)
        order.least += weights.least_requested_weight
        order.most += weights.most_requested_weight
        direct = {
            BALANCED: weights.balanced_resource_weight,
            NODE_AFFINITY: weights.node_affinity_weight,
            TAINT_TOLERATION: weights.taint_toleration_weight,
            INTER_POD_AFFINITY: weights.pod_affinity_weight,
            POD_TOPOLOGY_SPREAD: weights.pod_topology_spread_weight,
            IMAGE_LOCALITY: weights.image_locality_weight,
        }
        for name, weight in direct.items():
            order.direct[name] += weight

    binpacks = []
    for where, arguments in _plugin_entries(conf, "binpack"):
        packing = arguments.typed(BinpackArgs)
        extra = {k for k in arguments.raw() if k.startswith(BINPACK_RESOURCES_PREFIX)}
        notes += _unknown_keys(where, arguments, _BINPACK_KEYS | extra)
        # resource weights summing to 0: binpack scores 0 everywhere, whatever its weight
        if packing.weight != 0 and sum(packing.resources.values()) != 0:
            binpacks.append((where, packing.weight, dict(packing.resources)))

    plugins: dict[str, int] = {}
    config: list[dict[str, Any]] = []
    for name, weight in order.direct.items():
        if weight == 0:
            continue
        if weight < 0 or weight > MAX_PLUGIN_WEIGHT:
            key = next(k for k, p in _DIRECT if p == name)
            inexpressible.append(
                f"nodeorder {key} {weight}: kube-scheduler's {name} takes a weight of 1 to "
                f"{MAX_PLUGIN_WEIGHT}"
            )
            continue
        plugins[name] = weight * (BALANCED_WEIGHT_FACTOR if name == BALANCED else 1)

    fit = _fit_strategy(order, binpacks, inexpressible)
    if fit is not None:
        weight, strategy = fit
        plugins[FIT] = weight
        config.append({"name": FIT, "args": {"scoringStrategy": strategy}})
    if BALANCED in plugins:
        resources = [{"name": name, "weight": 1} for name in BALANCED_RESOURCES]
        config.append({"name": BALANCED, "args": {"resources": resources}})
    if POD_TOPOLOGY_SPREAD in plugins:
        # Volcano spreads only by the pod's own constraints: no system defaults.
        spread_args = {"defaultingType": "List", "defaultConstraints": []}
        config.append({"name": POD_TOPOLOGY_SPREAD, "args": spread_args})
    ordered = tuple((name, plugins[name]) for name in PLUGIN_ORDER if name in plugins)
    config.sort(key=lambda entry: PLUGIN_ORDER.index(entry["name"]))
    return ScorePlan(ordered, tuple(config), tuple(inexpressible), tuple(notes))


def _fit_strategy(
    order: _NodeOrder,
    binpacks: list[tuple[str, int, dict[str, int]]],
    inexpressible: list[str],
) -> tuple[int, dict[str, Any]] | None:
    """(NodeResourcesFit's weight, its scoringStrategy) for least/most-requested and
    binpack together, None when none of them scores; an inexpressible mix is added to
    ``inexpressible`` and gives None."""
    delta = order.most - order.least  # the most-requested minus least-requested weight
    if len(binpacks) > 1:
        places = ", ".join(where for where, _, _ in binpacks)
        inexpressible.append(
            f"binpack appears {len(binpacks)} times with node order on ({places}): each "
            "divides by its own resource weights, which one NodeResourcesFit cannot express"
        )
        return None
    # Twice k_r times binpack's weight sum: whole numbers whatever the weights.
    coefficients: dict[str, int]
    if binpacks:
        where, scale, resources = binpacks[0]
        total = sum(resources.values())
        extra = sorted(r for r, w in resources.items() if r not in ("cpu", "memory") and w)
        if extra and delta != 0:
            inexpressible.append(
                f"{where}: binpack.resources {', '.join(extra)} beside nodeorder's "
                f"least/most-requested weights ({order.least}/{order.most}): binpack divides "
                "by the weights of the resources each pod requests and least/most-requested "
                "by cpu and memory, which one NodeResourcesFit cannot express"
            )
            return None
        coefficients = {
            r: (delta * total if r in ("cpu", "memory") else 0) + 2 * scale * w
            for r, w in resources.items()
        }
        plugin_weight = delta + scale
    else:
        coefficients = {"cpu": delta, "memory": delta}
        plugin_weight = delta
    nonzero = {r: k for r, k in coefficients.items() if k != 0}
    if not nonzero:
        return None
    if any(k > 0 for k in nonzero.values()) and any(k < 0 for k in nonzero.values()):
        shown = ", ".join(f"{r} {'+' if k > 0 else '-'}" for r, k in sorted(nonzero.items()))
        inexpressible.append(
            f"least-requested {order.least}, most-requested {order.most} and binpack together "
            f"favour full nodes for some resources and empty ones for others ({shown}): one "
            "NodeResourcesFit strategy cannot"
        )
        return None
    kind = "MostAllocated" if plugin_weight > 0 else "LeastAllocated"
    divisor = math.gcd(*nonzero.values())
    weights = {r: abs(k) // divisor for r, k in nonzero.items()}
    too_big = {r: w for r, w in weights.items() if w > MAX_RESOURCE_WEIGHT}
    if too_big or abs(plugin_weight) > MAX_PLUGIN_WEIGHT:
        inexpressible.append(
            f"NodeResourcesFit {kind} would need resource weights {weights} and weight "
            f"{abs(plugin_weight)}; kube-scheduler takes resource weights of 1 to "
            f"{MAX_RESOURCE_WEIGHT}"
        )
        return None
    listed = [{"name": r, "weight": weights[r]} for r in _resource_order(weights)]
    return abs(plugin_weight), {"type": kind, "resources": listed}


def _resource_order(weights: Mapping[str, int]) -> list[str]:
    """cpu, memory, then extended resources by name."""
    first = [r for r in ("cpu", "memory") if r in weights]
    return first + sorted(r for r in weights if r not in ("cpu", "memory"))


# --- the document -------------------------------------------------------------------------


def _seconds(value: str, what: str) -> float:
    if not _DURATION.match(value):
        raise RenderError(f"{what}: {value!r} is not a duration like 15s, 1m30s or 500ms")
    return sum(float(n) * _UNIT_SECONDS[unit] for n, unit in _DURATION_PART.findall(value))


def _leader_election(
    options: LeaderElectionOptions | None, scheduler_names: Sequence[str]
) -> dict[str, Any]:
    if options is None or not options.leader_elect:
        return {"leaderElect": False}
    block: dict[str, Any] = {"leaderElect": True}
    if options.resource_namespace is not None:
        if not options.resource_namespace:
            raise RenderError("leader election: the resource namespace must not be empty")
        block["resourceNamespace"] = options.resource_namespace
    name = options.resource_name if options.resource_name is not None else scheduler_names[0]
    if not name:
        raise RenderError("leader election: the resource name must not be empty")
    block["resourceName"] = name
    timings = {
        "leaseDuration": options.lease_duration,
        "renewDeadline": options.renew_deadline,
        "retryPeriod": options.retry_period,
    }
    # kube-scheduler's defaults, to check the relations between given and default values
    seconds = {"leaseDuration": 15.0, "renewDeadline": 10.0, "retryPeriod": 2.0}
    for key, value in timings.items():
        if value is not None:
            seconds[key] = _seconds(value, f"leader election {key}")
            if seconds[key] <= 0:
                raise RenderError(f"leader election {key}: must be more than 0, not {value}")
            block[key] = value
    if seconds["leaseDuration"] <= seconds["renewDeadline"]:
        raise RenderError("leader election: leaseDuration must be longer than renewDeadline")
    if seconds["renewDeadline"] <= _JITTER_FACTOR * seconds["retryPeriod"]:
        raise RenderError(
            f"leader election: renewDeadline must be longer than {_JITTER_FACTOR} × retryPeriod"
        )
    return block


def _check_url(url: str) -> str:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise RenderError(f"extender URL {url!r}: expected http(s)://host[:port][/path]")
    try:
        parts.port  # noqa: B018 - raises on a malformed port
    except ValueError as exc:
        raise RenderError(f"extender URL {url!r}: {exc}") from None
    if parts.query or parts.fragment:
        raise RenderError(f"extender URL {url!r}: no query or fragment (verbs are appended)")
    return parts.scheme


def _check_names(scheduler_names: Sequence[str]) -> None:
    if not scheduler_names:
        raise RenderError("scheduler names: at least one is needed")
    seen: set[str] = set()
    for name in scheduler_names:
        if not name or name != name.strip():
            raise RenderError(f"scheduler names: {name!r} is not a scheduler name")
        if name in seen:
            raise RenderError(f"scheduler names: {name!r} is listed twice")
        seen.add(name)


def _profile(name: str, plan: ScorePlan, prioritize: bool) -> dict[str, Any]:
    score: dict[str, Any] = {"disabled": [{"name": "*"}]}
    profile: dict[str, Any] = {"schedulerName": name, "plugins": {"score": score}}
    if prioritize:
        return profile  # the extender's scores alone: nothing counted twice
    if plan.plugins:
        score["enabled"] = [{"name": plugin, "weight": weight} for plugin, weight in plan.plugins]
    if plan.plugin_config:
        profile["pluginConfig"] = [dict(entry) for entry in plan.plugin_config]
    return profile


def render_scheduler_config(
    conf: SchedulerConfiguration,
    *,
    extender_url: str,
    scheduler_names: Sequence[str],
    scoring: Scoring = "native",
    leader_election: LeaderElectionOptions | None = None,
    extender: ExtenderOptions | None = None,
    percentage_of_nodes_to_score: int = 100,
    client_connection: Mapping[str, Any] | None = None,
) -> Rendered:
    """The KubeSchedulerConfiguration for ``conf``: one profile per scheduler name.

    ``scoring="native"`` scores with kube-scheduler's plugins when the conf can be expressed
    by them (``score_plan``), else keeps the extender's ``prioritizeVerb`` with a warning;
    ``scoring="extender"`` always keeps it. ``client_connection`` is copied as given (a
    kubeconfig path for a kube-scheduler that runs outside a pod). Raises ``RenderError``
    for inputs kube-scheduler would refuse."""
    if scoring not in SCORINGS:
        raise RenderError(f"scoring: expected native or extender, not {scoring!r}")
    _check_names(scheduler_names)
    scheme = _check_url(extender_url)
    ext = extender or ExtenderOptions()
    if not 0 <= percentage_of_nodes_to_score <= 100:
        raise RenderError("percentageOfNodesToScore: expected 0 to 100")
    _seconds(ext.http_timeout, "extender httpTimeout")

    plan = score_plan(conf)
    warnings = list(plan.notes)
    prioritize = scoring == "extender" or not plan.expressible
    if scoring == "native" and not plan.expressible:
        warnings += [
            f"{line}; the extender keeps scoring (prioritizeVerb)" for line in plan.inexpressible
        ]
    if prioritize and ext.weight <= 0:
        raise RenderError("extender weight: kube-scheduler needs a positive weight to prioritize")

    entry: dict[str, Any] = {"urlPrefix": extender_url, "filterVerb": "filter"}
    if prioritize:
        entry["prioritizeVerb"] = "prioritize"
        entry["weight"] = ext.weight
    entry["preemptVerb"] = "preempt"
    entry["nodeCacheCapable"] = ext.node_cache_capable
    entry["httpTimeout"] = ext.http_timeout
    entry["ignorable"] = ext.ignorable
    if scheme == "https":
        entry["enableHTTPS"] = True
        if ext.tls_config:
            entry["tlsConfig"] = dict(ext.tls_config)
    elif ext.tls_config:
        raise RenderError("tlsConfig needs an https extender URL")

    document: dict[str, Any] = {"apiVersion": API_VERSION, "kind": KIND}
    if client_connection is not None:
        document["clientConnection"] = dict(client_connection)
    document["leaderElection"] = _leader_election(leader_election, scheduler_names)
    document["percentageOfNodesToScore"] = percentage_of_nodes_to_score
    document["profiles"] = [_profile(name, plan, prioritize) for name in scheduler_names]
    document["extenders"] = [entry]
    return Rendered(document, warnings, prioritize)
