"""The renderer: which score plugins, weights and NodeResourcesFit strategy express a conf,
what cannot be expressed (a warning, and prioritizeVerb kept), and the configuration's
other blocks (extender entry, leader election, profiles)."""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from app.schedconfig.render import (
    ExtenderOptions,
    LeaderElectionOptions,
    Rendered,
    RenderError,
    Scoring,
    render_scheduler_config,
    score_plan,
)
from scheduler_core.conf import default_configuration, load_configuration

URL = "http://127.0.0.1:8888/"
DEFAULT_REST = [
    ("TaintToleration", 1),
    ("NodeAffinity", 1),
    ("PodTopologySpread", 2),
    ("InterPodAffinity", 1),
    ("NodeResourcesBalancedAllocation", 2),
    ("ImageLocality", 1),
]


def conf_text(nodeorder: str | None = "", binpack: str | None = None) -> str:
    """One tier with nodeorder and/or binpack and the given inline arguments."""
    lines = ['actions: "allocate"', "tiers:", "- plugins:"]
    for name, arguments in (("nodeorder", nodeorder), ("binpack", binpack)):
        if arguments is None:
            continue
        lines.append(f"  - name: {name}")
        if arguments:
            lines.append(f"    arguments: {{{arguments}}}")
    return "\n".join(lines) + "\n"


def render(text: str, scoring: Scoring = "native", **kwargs: Any) -> Rendered:
    return render_scheduler_config(
        load_configuration(text),
        extender_url=kwargs.pop("extender_url", URL),
        scheduler_names=kwargs.pop("scheduler_names", ["queue-scheduler"]),
        scoring=scoring,
        **kwargs,
    )


def fit(kind: str, **weights: int) -> dict[str, Any]:
    names = {"gpu": "nvidia.com/gpu"}
    return {
        "type": kind,
        "resources": [{"name": names.get(r, r), "weight": w} for r, w in weights.items()],
    }


# --- the score plan -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("nodeorder", "binpack", "fit_weight", "strategy"),
    [
        # Volcano's default nodeorder alone: least-requested, cpu and memory alike
        ("", None, 1, fit("LeastAllocated", cpu=1, memory=1)),
        # the default conf: 1 x least + 10 x binpack = const + 9 x most-allocated
        ("", "binpack.weight: 10", 9, fit("MostAllocated", cpu=1, memory=1)),
        # binpack alone
        ("leastrequested.weight: 0", "", 1, fit("MostAllocated", cpu=1, memory=1)),
        (
            "leastrequested.weight: 0",
            "binpack.weight: 5, binpack.cpu: 3, binpack.memory: 1",
            5,
            fit("MostAllocated", cpu=3, memory=1),
        ),
        # least 1 and binpack 2 with cpu 3 / memory 1: k = -1/2 + 2 x 3/4 = 1 (cpu),
        # -1/2 + 2 x 1/4 = 0 (memory): most-allocated on cpu alone, weight 1
        (
            "",
            "binpack.weight: 2, binpack.cpu: 3, binpack.memory: 1",
            1,
            fit("MostAllocated", cpu=1),
        ),
        # most-requested outweighs least-requested by 2
        ("mostrequested.weight: 3", None, 2, fit("MostAllocated", cpu=1, memory=1)),
        (
            "leastrequested.weight: 4, mostrequested.weight: 1",
            None,
            3,
            fit("LeastAllocated", cpu=1, memory=1),
        ),
        # extended resources with binpack alone: binpack's own weights
        (
            "leastrequested.weight: 0",
            "binpack.weight: 3, binpack.resources: nvidia.com/gpu, "
            "binpack.resources.nvidia.com/gpu: 4",
            3,
            fit("MostAllocated", cpu=1, memory=1, gpu=4),
        ),
        # least and most cancel: NodeResourcesFit does not score
        ("leastrequested.weight: 2, mostrequested.weight: 2", None, 0, None),
        # binpack with weight 0 is off, as in Volcano
        ("", "binpack.weight: 0", 1, fit("LeastAllocated", cpu=1, memory=1)),
    ],
)
def test_least_most_and_binpack_fold_into_one_fit_strategy(
    nodeorder: str, binpack: str | None, fit_weight: int, strategy: dict[str, Any] | None
) -> None:
    plan = score_plan(load_configuration(conf_text(nodeorder, binpack)))
    assert plan.expressible, plan.inexpressible
    assert plan.weight("NodeResourcesFit") == fit_weight
    assert plan.fit_strategy() == strategy


def test_default_conf_plan() -> None:
    plan = score_plan(default_configuration())
    assert plan.expressible and not plan.notes
    expected = dict(DEFAULT_REST) | {"NodeResourcesFit": 9}
    assert dict(plan.plugins) == expected
    # kube-scheduler's own order of its score plugins
    assert [name for name, _ in plan.plugins] == [
        "TaintToleration",
        "NodeAffinity",
        "NodeResourcesFit",
        "PodTopologySpread",
        "InterPodAffinity",
        "NodeResourcesBalancedAllocation",
        "ImageLocality",
    ]


@pytest.mark.parametrize(
    ("arguments", "plugin", "weight"),
    [
        # doubled: kube-scheduler v1.36 scores half the balance after placing the pod
        ("balancedresource.weight: 3", "NodeResourcesBalancedAllocation", 6),
        ("nodeaffinity.weight: 4", "NodeAffinity", 4),
        ("tainttoleration.weight: 5", "TaintToleration", 5),
        ("podaffinity.weight: 6", "InterPodAffinity", 6),
        ("podtopologyspread.weight: 7", "PodTopologySpread", 7),
        ("imagelocality.weight: 8", "ImageLocality", 8),
        ("nodeaffinity.weight: 0", "NodeAffinity", 0),
    ],
)
def test_nodeorder_weights_map_one_to_one(arguments: str, plugin: str, weight: int) -> None:
    plan = score_plan(load_configuration(conf_text(arguments)))
    assert plan.weight(plugin) == weight


def test_nodeorder_entries_add_up_and_disabled_node_order_counts_nothing() -> None:
    text = (
        'actions: "allocate"\ntiers:\n- plugins:\n  - name: nodeorder\n'
        "    arguments: {nodeaffinity.weight: 2}\n- plugins:\n  - name: nodeorder\n"
        "    arguments: {nodeaffinity.weight: 3}\n  - name: nodeorder\n"
        "    enableNodeOrder: false\n    arguments: {nodeaffinity.weight: 50}\n"
    )
    plan = score_plan(load_configuration(text))
    assert plan.weight("NodeAffinity") == 5
    assert plan.weight("NodeResourcesFit") == 2  # least-requested 1 + 1


def test_no_node_order_plugin_scores_nothing() -> None:
    plan = score_plan(load_configuration(conf_text(None)))
    assert plan.plugins == () and plan.plugin_config == ()


def test_balanced_allocation_balances_gpus_as_volcano_does() -> None:
    plan = score_plan(default_configuration())
    (balanced,) = [c for c in plan.plugin_config if c["name"] == "NodeResourcesBalancedAllocation"]
    assert [r["name"] for r in balanced["args"]["resources"]] == ["cpu", "memory", "nvidia.com/gpu"]


def test_topology_spread_has_no_system_default_constraints() -> None:
    """Volcano spreads only by a pod's own constraints; kube-scheduler's system defaults
    (by hostname and zone for pods of a Service or ReplicaSet) would score other pods."""
    plan = score_plan(default_configuration())
    (spread,) = [c for c in plan.plugin_config if c["name"] == "PodTopologySpread"]
    assert spread["args"] == {"defaultingType": "List", "defaultConstraints": []}


@pytest.mark.parametrize(
    ("nodeorder", "binpack", "says"),
    [
        # the one-strategy limit: binpack packs cpu, least-requested spreads memory
        ("", "binpack.weight: 1, binpack.cpu: 1, binpack.memory: 0", "one NodeResourcesFit"),
        # extended resources beside least-requested: different divisors
        ("", "binpack.resources: nvidia.com/gpu", "binpack.resources nvidia.com/gpu"),
        ("nodeaffinity.weight: -1", None, "takes a weight of 1"),
        ("balancedresource.weight: -2", None, "takes a weight of 1"),
        # a resource weight beyond kube-scheduler's 1..100
        ("leastrequested.weight: 0", "binpack.cpu: 300, binpack.memory: 1", "1 to 100"),
    ],
)
def test_inexpressible_conf_warns_and_keeps_prioritize(
    nodeorder: str, binpack: str | None, says: str
) -> None:
    text = conf_text(nodeorder, binpack)
    assert not score_plan(load_configuration(text)).expressible
    rendered = render(text)
    assert rendered.prioritize
    assert any(says in w and "prioritizeVerb" in w for w in rendered.warnings), rendered.warnings
    (entry,) = rendered.document["extenders"]
    assert entry["prioritizeVerb"] == "prioritize" and entry["weight"] == 12
    # the extender alone scores: no native plugin counts twice
    assert rendered.profile("queue-scheduler")["plugins"] == {
        "score": {"disabled": [{"name": "*"}]}
    }


def test_two_binpack_entries_are_inexpressible() -> None:
    text = (
        'actions: "allocate"\ntiers:\n- plugins:\n  - name: binpack\n'
        "    arguments: {binpack.cpu: 2}\n  - name: binpack\n"
    )
    assert "appears 2 times" in score_plan(load_configuration(text)).inexpressible[0]


def test_unknown_argument_is_noted_without_prioritize() -> None:
    rendered = render(conf_text("leastrequested.weigth: 5"))
    assert not rendered.prioritize
    assert any("'leastrequested.weigth'" in w for w in rendered.warnings)


def test_unavailable_plugin_is_noted() -> None:
    text = 'actions: "allocate"\ntiers:\n- plugins:\n  - name: nodeorder\n  - name: numaaware\n'
    rendered = render(text)
    assert not rendered.prioritize
    assert any("numaaware" in w for w in rendered.warnings)


# --- the document -------------------------------------------------------------------------


def test_native_default_document() -> None:
    rendered = render_scheduler_config(
        default_configuration(), extender_url=URL, scheduler_names=["queue-scheduler"]
    )
    assert not rendered.prioritize and rendered.warnings == []
    doc = rendered.document
    assert doc["apiVersion"] == "kubescheduler.config.k8s.io/v1"
    assert doc["kind"] == "KubeSchedulerConfiguration"
    assert doc["percentageOfNodesToScore"] == 100
    assert doc["extenders"] == [
        {
            "urlPrefix": URL,
            "filterVerb": "filter",
            "preemptVerb": "preempt",
            "nodeCacheCapable": True,
            "httpTimeout": "5s",
            "ignorable": False,
        }
    ]
    (profile,) = doc["profiles"]
    assert profile["plugins"]["score"]["disabled"] == [{"name": "*"}]
    enabled = {p["name"]: p["weight"] for p in profile["plugins"]["score"]["enabled"]}
    assert enabled == dict(DEFAULT_REST) | {"NodeResourcesFit": 9}
    assert "prioritize" not in rendered.yaml


def test_extender_scoring_keeps_prioritize_and_disables_native_scores() -> None:
    rendered = render_scheduler_config(
        default_configuration(),
        extender_url=URL,
        scheduler_names=["queue-scheduler"],
        scoring="extender",
        extender=ExtenderOptions(weight=7),
    )
    assert rendered.prioritize and rendered.warnings == []
    (entry,) = rendered.document["extenders"]
    assert (entry["prioritizeVerb"], entry["weight"]) == ("prioritize", 7)
    (profile,) = rendered.document["profiles"]
    assert profile == {
        "schedulerName": "queue-scheduler",
        "plugins": {"score": {"disabled": [{"name": "*"}]}},
    }


def test_one_profile_per_scheduler_name() -> None:
    rendered = render(
        conf_text(""), scheduler_names=["a", "b", "c"], leader_election=LeaderElectionOptions()
    )
    profiles = rendered.document["profiles"]
    assert [p["schedulerName"] for p in profiles] == ["a", "b", "c"]
    assert all(p["plugins"] == profiles[0]["plugins"] for p in profiles)
    assert rendered.document["leaderElection"]["resourceName"] == "a"


@pytest.mark.parametrize(
    ("options", "block"),
    [
        (None, {"leaderElect": False}),
        (LeaderElectionOptions(leader_elect=False, resource_name="x"), {"leaderElect": False}),
        (LeaderElectionOptions(), {"leaderElect": True, "resourceName": "queue-scheduler"}),
        (
            LeaderElectionOptions(
                resource_name="lease",
                resource_namespace="ns",
                lease_duration="30s",
                renew_deadline="20s",
                retry_period="4s",
            ),
            {
                "leaderElect": True,
                "resourceNamespace": "ns",
                "resourceName": "lease",
                "leaseDuration": "30s",
                "renewDeadline": "20s",
                "retryPeriod": "4s",
            },
        ),
    ],
)
def test_leader_election_block(
    options: LeaderElectionOptions | None, block: dict[str, Any]
) -> None:
    assert render(conf_text(""), leader_election=options).document["leaderElection"] == block


@pytest.mark.parametrize(
    ("kwargs", "says"),
    [
        ({"extender_url": "ftp://x/"}, "http(s)://"),
        ({"extender_url": "http://:80/"}, "http(s)://"),
        ({"extender_url": "http://h:99999/"}, "Port out of range"),
        ({"extender_url": "http://h/?a=1"}, "query"),
        ({"scheduler_names": []}, "at least one"),
        ({"scheduler_names": ["a", "a"]}, "twice"),
        ({"scheduler_names": [" a"]}, "not a scheduler name"),
        ({"leader_election": LeaderElectionOptions(lease_duration="15")}, "duration"),
        ({"leader_election": LeaderElectionOptions(lease_duration="5s")}, "longer than"),
        ({"leader_election": LeaderElectionOptions(retry_period="9s")}, "1.2"),
        ({"leader_election": LeaderElectionOptions(resource_name="")}, "resource name"),
        ({"extender": ExtenderOptions(http_timeout="soon")}, "httpTimeout"),
        ({"extender": ExtenderOptions(tls_config={"caFile": "/ca"})}, "https"),
        ({"percentage_of_nodes_to_score": 101}, "percentageOfNodesToScore"),
        ({"scoring": "both"}, "native or extender"),
    ],
)
def test_bad_input_is_refused(kwargs: dict[str, Any], says: str) -> None:
    with pytest.raises(RenderError, match=says.replace("(", r"\(").replace(")", r"\)")):
        render(conf_text(""), **kwargs)


def test_https_url_turns_https_on_with_its_tls_config() -> None:
    rendered = render(
        conf_text(""),
        extender_url="https://127.0.0.1:8888/",
        extender=ExtenderOptions(tls_config={"caFile": "/tls/ca.crt", "serverName": "x"}),
    )
    (entry,) = rendered.document["extenders"]
    assert entry["enableHTTPS"] is True
    assert entry["tlsConfig"] == {"caFile": "/tls/ca.crt", "serverName": "x"}


def test_yaml_is_the_document() -> None:
    import yaml

    rendered = render_scheduler_config(
        default_configuration(), extender_url=URL, scheduler_names=["a", "b"]
    )
    assert yaml.safe_load(rendered.yaml) == rendered.document


# --- no weight is ever dropped ------------------------------------------------------------

DIRECT = {
    "balancedresource.weight": ("NodeResourcesBalancedAllocation", 2),
    "nodeaffinity.weight": ("NodeAffinity", 1),
    "tainttoleration.weight": ("TaintToleration", 1),
    "podaffinity.weight": ("InterPodAffinity", 1),
    "podtopologyspread.weight": ("PodTopologySpread", 1),
    "imagelocality.weight": ("ImageLocality", 1),
}


@settings(max_examples=300, deadline=None)
@given(
    st.fixed_dictionaries({key: st.integers(-2, 6) for key in DIRECT}),
    st.integers(-2, 4),
    st.integers(-1, 4),
    st.integers(-2, 20),
    st.integers(-1, 5),
    st.integers(-1, 5),
    st.one_of(st.none(), st.integers(0, 4)),
    st.floats(0, 1),
    st.floats(0, 1),
)
def test_every_weight_is_expressed_or_warned_about(
    direct: dict[str, int],
    least: int,
    most: int,
    scale: int,
    cpu: int,
    memory: int,
    gpu: int | None,
    u_cpu: float,
    u_memory: float,
) -> None:
    """Either the profile expresses every weight (the direct ones as they are, least/most/
    binpack as a NodeResourcesFit strategy whose score is theirs up to a constant), or the
    renderer warns and keeps prioritizeVerb."""
    nodeorder = ", ".join(
        [f"{k}: {v}" for k, v in direct.items()]
        + [f"leastrequested.weight: {least}", f"mostrequested.weight: {most}"]
    )
    binpack = f"binpack.weight: {scale}, binpack.cpu: {cpu}, binpack.memory: {memory}"
    if gpu is not None:
        binpack += f", binpack.resources: nvidia.com/gpu, binpack.resources.nvidia.com/gpu: {gpu}"
    text = conf_text(nodeorder, binpack)
    plan = score_plan(load_configuration(text))
    rendered = render(text)
    if not plan.expressible:
        assert rendered.prioritize
        assert len([w for w in rendered.warnings if "prioritizeVerb" in w]) == len(
            plan.inexpressible
        )
        return
    assert not rendered.prioritize
    for key, weight in direct.items():
        plugin, factor = DIRECT[key]
        assert plan.weight(plugin) == (weight * factor if weight > 0 else 0)
    # The folded strategy against Volcano's resource terms for a pod requesting cpu and
    # memory, no gpu (binpack reads a negative resource weight as 1, as Volcano does): equal
    # up to a constant, so the difference to the empty node is the same on both sides.
    b_cpu, b_memory = (1 if w < 0 else w for w in (cpu, memory))
    strategy = plan.fit_strategy()

    def volcano(u_c: float, u_m: float) -> float:
        weight_sum = b_cpu + b_memory  # binpack scores 0 everywhere without one
        packed = scale * (b_cpu * u_c + b_memory * u_m) / weight_sum if weight_sum else 0
        mean = (u_c + u_m) / 2
        return 100 * (least * (1 - mean) + most * mean + packed)

    def native(u_c: float, u_m: float) -> float:
        if strategy is None:
            return 0.0
        weights = {r["name"]: r["weight"] for r in strategy["resources"]}
        counted = {r: w for r, w in weights.items() if r in ("cpu", "memory")}
        if not counted:
            return 0.0  # only the gpu, which the pod does not request
        utilisation = {"cpu": u_c, "memory": u_m}
        mean = sum(w * utilisation[r] for r, w in counted.items()) / sum(counted.values())
        most_allocated = strategy["type"] == "MostAllocated"
        return plan.weight("NodeResourcesFit") * 100 * (mean if most_allocated else 1 - mean)

    offset = volcano(0, 0) - native(0, 0)
    assert volcano(u_cpu, u_memory) - native(u_cpu, u_memory) == pytest.approx(offset, abs=1e-6)


def test_the_rendered_yaml_says_workload_aware_preemption_bypasses_the_extender() -> None:
    text = render(conf_text()).yaml
    head = [line for line in text.splitlines() if line.startswith("#")]
    assert any("WorkloadAwarePreemption" in line for line in head)
    assert "bypassed" in " ".join(head)
    assert yaml.safe_load(text)["kind"] == "KubeSchedulerConfiguration"
