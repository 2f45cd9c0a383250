"""Each documented difference between kube-scheduler's native scores (the rendered
profile) and Volcano's (the engine's nodeorder and binpack), pinned on a small cluster.

The native side is ``native_model.py`` (kube-scheduler's NodeResourcesFit arithmetic); the
engine side is a session's node scores. Where the two agree up to a constant and integer
rounding, a property says so; every other difference has an example where the best node
differs, so a change that removes (or widens) it shows here and in docs/scheduler-config.md.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from app.schedconfig.render import score_plan
from scheduler_core.conf import load_configuration
from tests.app.schedconfig.native_model import balanced_score, fit_score
from tests.builders import node, pod, session, task_of

#: nodeorder with only least-requested on, and binpack: the resource terms alone
RESOURCE_ONLY = (
    'actions: "allocate"\ntiers:\n- plugins:\n  - name: nodeorder\n    arguments:\n'
    "      leastrequested.weight: {least}\n      balancedresource.weight: 0\n"
    "      nodeaffinity.weight: 0\n      tainttoleration.weight: 0\n"
    "      podaffinity.weight: 0\n      podtopologyspread.weight: 0\n"
    "  - name: binpack\n    arguments: {{binpack.weight: {weight}, binpack.cpu: {cpu}, "
    "binpack.memory: {memory}}}\n"
)

Obj = dict[str, Any]


def engine_scores(conf: str, objects: list[Obj], incoming: Obj) -> dict[str, float]:
    ssn = session([*objects, incoming], conf)
    task = task_of(ssn, f"ns/{incoming['metadata']['name']}")
    return dict(ssn.node_scores(task, list(ssn.nodes.values())))


def native_scores(conf: str, objects: list[Obj], incoming: Obj) -> dict[str, int]:
    plan = score_plan(load_configuration(conf))
    assert plan.expressible, plan.inexpressible
    weight, strategy = plan.weight("NodeResourcesFit"), plan.fit_strategy()
    assert strategy is not None
    nodes = [o for o in objects if o["kind"] == "Node"]
    scores = {}
    for n in nodes:
        name = n["metadata"]["name"]
        placed = [o for o in objects if o["kind"] == "Pod" and o["spec"].get("nodeName") == name]
        scores[name] = weight * fit_score(strategy, n, placed, incoming)
    return scores


def best(scores: dict[str, Any]) -> set[str]:
    top = max(scores.values())
    return {name for name, score in scores.items() if score == top}


def conf(least: int = 1, weight: int = 10, cpu: int = 1, memory: int = 1) -> str:
    return RESOURCE_ONLY.format(least=least, weight=weight, cpu=cpu, memory=memory)


@st.composite
def clusters(draw: st.DrawFn) -> tuple[list[Obj], Obj]:
    """Nodes with pods that all request cpu and memory, and an incoming pod that fits."""
    objects: list[Obj] = []
    for i in range(draw(st.integers(2, 4))):
        cores = draw(st.integers(2, 16))
        gib = draw(st.integers(2, 64))
        objects.append(node(f"n{i}", str(cores), f"{gib}Gi"))
        used_cpu = draw(st.integers(0, cores * 1000 - 1000))
        used_mem = draw(st.integers(0, gib * 1024 - 1024))
        if used_cpu and used_mem:
            objects.append(
                pod(f"p{i}", node_name=f"n{i}", cpu=f"{used_cpu}m", memory=f"{used_mem}Mi")
            )
    incoming = pod(
        "incoming", cpu=f"{draw(st.integers(1, 1000))}m", memory=f"{draw(st.integers(1, 1024))}Mi"
    )
    return objects, incoming


@settings(max_examples=40, deadline=None)
@given(
    clusters(),
    st.integers(0, 3),
    st.integers(0, 20),
    st.integers(1, 5),
    st.integers(1, 5),
)
def test_folded_fit_strategy_is_volcanos_sum_up_to_a_constant_and_rounding(
    cluster: tuple[list[Obj], Obj], least: int, weight: int, cpu: int, memory: int
) -> None:
    """Difference "integer rounding": least-requested plus binpack is one NodeResourcesFit
    strategy up to the constant 100 x least-requested weight and integer truncation, for
    pods that request cpu and memory on nodes whose pods all do."""
    text = conf(least, weight, cpu, memory)
    plan = score_plan(load_configuration(text))
    if not plan.expressible or plan.fit_strategy() is None:
        return  # the mixed-sign cases are the one-strategy limit (test_render)
    objects, incoming = cluster
    engine = engine_scores(text, objects, incoming)
    native = native_scores(text, objects, incoming)
    fit_weight = plan.weight("NodeResourcesFit")
    sign = 1 if plan.fit_strategy()["type"] == "MostAllocated" else -1  # type: ignore[index]
    # Volcano's sum is 100 x least + (the folded strategy's score - 100 x its weight when
    # it is LeastAllocated, whose scores count down from 100)
    constant = 100 * least - (0 if sign > 0 else 100 * fit_weight)
    # least-requested's mean truncates up to 1.5 a weight; kube-scheduler's per-resource
    # and mean truncations up to 2 a weight
    bound = 1.5 * least + 2 * fit_weight + 1e-6
    for name, score in engine.items():
        assert abs(score - constant - native[name]) <= bound, (name, engine, native)


def test_integer_rounding_can_tie_what_volcano_orders() -> None:
    """binpack's score is a float; kube-scheduler truncates each resource's score to a
    whole number, so nodes 0.4 % apart tie natively (kube-scheduler then picks at random)."""
    text = conf(least=0, weight=1)
    objects = [
        node("a", "10", "10Gi"),
        node("b", "10", "10Gi"),
        pod("ua", node_name="a", cpu="4050m", memory="5Gi"),
        pod("ub", node_name="b", cpu="4090m", memory="5Gi"),
    ]
    incoming = pod("incoming", cpu="1", memory="1Gi")
    assert best(engine_scores(text, objects, incoming)) == {"b"}
    assert best(native_scores(text, objects, incoming)) == {"a", "b"}


def test_a_pod_requesting_no_memory_is_packed_by_cpu_alone_in_volcano() -> None:
    """binpack skips a resource the pod does not request; kube-scheduler scores the pod with
    its non-zero default (200Mi memory), so memory still weighs half of MostAllocated."""
    text = conf(least=0, weight=1)
    objects = [
        node("cpu-full", "4", "16Gi"),
        node("mem-full", "4", "16Gi"),
        pod("c", node_name="cpu-full", cpu="3", memory="1Mi"),
        pod("m", node_name="mem-full", cpu="1m", memory="15Gi"),
    ]
    incoming = pod("incoming", cpu="1", memory=None)
    assert best(engine_scores(text, objects, incoming)) == {"cpu-full"}
    assert best(native_scores(text, objects, incoming)) == {"mem-full"}


def test_pods_without_requests_weigh_nothing_in_volcano_and_defaults_natively() -> None:
    """kube-scheduler counts a placed container without a cpu/memory request as 100m/200Mi
    (NonZeroRequested); Volcano counts it as nothing."""
    text = conf(least=0, weight=1)
    empty_pods = [pod(f"e{i}", node_name="many", cpu=None, memory=None) for i in range(8)]
    objects = [
        node("many", "2", "4Gi"),
        node("one", "2", "4Gi"),
        *empty_pods,
        pod("u", node_name="one", cpu="500m", memory="1Gi"),
    ]
    incoming = pod("incoming", cpu="100m", memory="100Mi")
    assert best(engine_scores(text, objects, incoming)) == {"one"}
    assert best(native_scores(text, objects, incoming)) == {"many"}


NODE_AFFINITY_ONLY = (
    'actions: "allocate"\ntiers:\n- plugins:\n  - name: nodeorder\n    arguments:\n'
    "      leastrequested.weight: 1\n      balancedresource.weight: 0\n"
    "      nodeaffinity.weight: 1\n      tainttoleration.weight: 0\n"
    "      podaffinity.weight: 0\n      podtopologyspread.weight: 0\n"
)


def test_node_affinity_adds_raw_term_weights_in_volcano_and_normalises_natively() -> None:
    """Volcano adds the matched preferred terms' weights (1..100) as they are; kube-scheduler
    normalises them so the best-matching node gets 100. A term of weight 1 is one point
    beside least-requested in Volcano, and a hundred natively."""
    objects = [
        node("preferred", "4", "8Gi", labels={"disk": "ssd"}),
        node("idle", "4", "8Gi"),
        pod("u", node_name="preferred", cpu="2", memory="4Gi"),
    ]
    incoming = pod("incoming", cpu="100m", memory="100Mi")
    incoming["spec"]["affinity"] = {
        "nodeAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {
                    "weight": 1,
                    "preference": {
                        "matchExpressions": [{"key": "disk", "operator": "In", "values": ["ssd"]}]
                    },
                }
            ]
        }
    }
    engine = engine_scores(NODE_AFFINITY_ONLY, objects, incoming)
    assert best(engine) == {"idle"}
    plan = score_plan(load_configuration(NODE_AFFINITY_ONLY))
    strategy = plan.fit_strategy()
    assert strategy is not None
    # kube-scheduler: NodeAffinity normalised (100 on the matching node) x 1, plus fit
    native = {
        "preferred": plan.weight("NodeAffinity") * 100
        + fit_score(strategy, objects[0], [objects[2]], incoming),
        "idle": fit_score(strategy, objects[1], [], incoming),
    }
    assert best(native) == {"preferred"}


def test_image_locality_is_scored_natively_but_not_by_the_engine() -> None:
    """The engine has no image data (nodeorder ignores imagelocality.weight); the rendered
    profile keeps Volcano's ImageLocality weight, which scores 0 on nodes without the
    pod's images."""
    plain = 'actions: "allocate"\ntiers:\n- plugins:\n  - name: nodeorder\n'
    heavy = plain + "    arguments: {imagelocality.weight: 50}\n"
    objects = [node("a"), node("b"), pod("u", node_name="a", cpu="2", memory="1Gi")]
    incoming = pod("incoming")
    assert engine_scores(plain, objects, incoming) == engine_scores(heavy, objects, incoming)
    assert score_plan(load_configuration(heavy)).weight("ImageLocality") == 50


BALANCED_ONLY = (
    'actions: "allocate"\ntiers:\n- plugins:\n  - name: nodeorder\n    arguments:\n'
    "      leastrequested.weight: 0\n      balancedresource.weight: 1\n"
    "      nodeaffinity.weight: 0\n      tainttoleration.weight: 0\n"
    "      podaffinity.weight: 0\n      podtopologyspread.weight: 0\n"
)


def test_balanced_allocation_scores_the_balance_after_in_volcano_and_its_change_natively() -> None:
    """Volcano scores how balanced the node is with the pod, (1 - std) x 100; kube-scheduler
    v1.36 how much the pod changes that, 75 + (after - before) / 2. A node already
    unbalanced that the pod balances a little wins natively; the better balanced node wins
    in Volcano."""
    objects = [
        node("balanced", "4", "8Gi"),
        node("lopsided", "4", "8Gi"),
        pod("b", node_name="balanced", cpu="1", memory="2Gi"),
        pod("l", node_name="lopsided", cpu="3", memory="1Gi"),
    ]
    incoming = pod("incoming", cpu="100m", memory="1Gi")
    engine = engine_scores(BALANCED_ONLY, objects, incoming)
    assert best(engine) == {"balanced"}
    plan = score_plan(load_configuration(BALANCED_ONLY))
    weight = plan.weight("NodeResourcesBalancedAllocation")
    assert weight == 2  # twice Volcano's: the balance-after term weighs what it does there
    native = {
        "balanced": weight * balanced_score(objects[0], [objects[2]], incoming),
        "lopsided": weight * balanced_score(objects[1], [objects[3]], incoming),
    }
    assert best(native) == {"lopsided"}
