"""The numpy node scoring of nodeorder and binpack against an oracle written here.

Each formula is written once in the plugins, on arrays; the batch hooks run it on the
session table's rows, the per-node path on arrays read from the nodes it is given. So the
two paths agreeing proves little by itself: both are compared, to the float, with an
oracle in this module that computes kube-scheduler's and Volcano's formulas node by node
in plain Python (integer arithmetic on Python ints, floats in the order the Go code adds
them). The property tests draw nodes (cpu, memory, GPU and another extended resource, used
and pipelined amounts, labels, taints), pods (zero and best-effort requests, GPUs,
preferred node-affinity terms with every operator, tolerations) and plugin arguments; one
of them draws amounts and weights far beyond int64, which only the per-node path takes.
The other tests pin what keeps the arrays honest: the session's own node changes reach
them, nodes outside the table and amounts too large for int64 go to the per-node path,
and V(4) still logs per node.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scheduler_core.api.node import NodeInfo, Taint
from scheduler_core.api.resource import Resource
from scheduler_core.api.snapshot import ClusterSnapshot
from scheduler_core.api.task import NodeSelectorRequirement, TaskInfo, Toleration
from scheduler_core.api.types import TaskStatus
from scheduler_core.conf import load_configuration
from scheduler_core.extender.prioritize import (
    MAX_EXTENDER_PRIORITY,
    extender_scale,
    extender_scores,
)
from scheduler_core.framework.framework import open_session
from scheduler_core.framework.hooks import BATCH_NODE_ORDER
from scheduler_core.framework.session import Session
from scheduler_core.framework.statement import Statement
from scheduler_core.logutil import v
from scheduler_core.plugins.binpack import BinpackPlugin
from scheduler_core.plugins.nodeorder import NodeOrderPlugin
from scheduler_core.plugins.predicates import term_matches
from scheduler_core.plugins.util.node_table import NodeTable, intolerable_prefer_no_schedule
from scheduler_core.plugins.util.short_lists import SHORT_LIST_NODES
from tests.builders import node, pod, session, task_of, tiers

GPU = "nvidia.com/gpu"
FOO = "example.com/foo"

SETTINGS = settings(
    max_examples=200,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)

# --- strategies -----------------------------------------------------------------------------


def amount(top: int) -> st.SearchStrategy[float]:
    """Zero often, else whole amounts (what quantities convert to) of every magnitude up
    to ``top`` (small ones are where one unit moves an integer score), halves sometimes."""
    magnitude = st.integers(0, top.bit_length() - 1).flatmap(
        lambda e: st.integers(2**e, min(2 ** (e + 1), top))
    )
    return st.one_of(
        st.just(0.0),
        magnitude.map(float),
        magnitude.map(lambda x: x - 0.5),
    )


def resource(cpu: int, memory: int, gpu: int, foo: int) -> st.SearchStrategy[Resource]:
    return st.builds(
        lambda c, m, g, f, with_scalars: Resource(
            c, m, ({GPU: g, FOO: f, "pods": 110.0} if with_scalars else None)
        ),
        amount(cpu),
        amount(memory),
        amount(gpu),
        amount(foo),
        st.booleans(),
    )


LABEL_KEYS = ("zone", "gpu", "rank", "tier")
LABEL_VALUES = ("a", "b", "1", "10", "-3", "x")

labels = st.dictionaries(st.sampled_from(LABEL_KEYS), st.sampled_from(LABEL_VALUES), max_size=4)
taints = st.lists(
    st.builds(
        Taint,
        key=st.sampled_from(("a", "b", "c")),
        value=st.sampled_from(("", "v")),
        effect=st.sampled_from(("PreferNoSchedule", "NoSchedule", "NoExecute", "")),
    ),
    max_size=3,
).map(tuple)


#: Amounts and weights the ``big`` draws reach: far beyond int64 (and float64's 2**53).
BIG = 2**80


@st.composite
def nodes(draw: st.DrawFn, big: bool = False) -> list[NodeInfo]:
    out = []
    for i in range(draw(st.integers(1, 8))):
        if big:
            allocatable = draw(resource(BIG, BIG, BIG, BIG))
        else:
            allocatable = draw(resource(64_000, 2**38, 8_000, 4_000))
        info = NodeInfo.new(f"n{i}", allocatable, labels=draw(labels), taints=draw(taints))
        # used and pipelined up to beyond allocatable: overflow paths are scored too
        if big:
            info.used = draw(resource(BIG, BIG, BIG, BIG))
            info.pipelined = draw(resource(BIG // 4, BIG // 4, BIG // 4, BIG // 4))
        else:
            info.used = draw(resource(80_000, 2**38 + 2**36, 10_000, 5_000))
            info.pipelined = draw(resource(20_000, 2**36, 3_000, 2_000))
        out.append(info)
    return out


requirements = st.builds(
    NodeSelectorRequirement,
    key=st.sampled_from(LABEL_KEYS),
    operator=st.sampled_from(("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt", "Bogus")),
    values=st.lists(st.sampled_from((*LABEL_VALUES, "0", "5", "zz")), max_size=3).map(tuple),
)
term_weight = st.one_of(st.integers(-5, 0), st.integers(1, 100))
big_weight = st.integers(2**50, BIG) | st.integers(-BIG, -(2**50))


def preferred(weight: st.SearchStrategy[int]) -> st.SearchStrategy[tuple[Any, ...]]:
    terms = st.tuples(weight, st.lists(requirements, max_size=3).map(tuple))
    return st.lists(terms, max_size=4).map(tuple)


tolerations = st.lists(
    st.builds(
        Toleration,
        key=st.sampled_from(("", "a", "b", "c")),
        operator=st.sampled_from(("Equal", "Exists", "")),
        value=st.sampled_from(("", "v")),
        effect=st.sampled_from(("", "PreferNoSchedule", "NoSchedule")),
    ),
    max_size=3,
).map(tuple)


@st.composite
def pods(draw: st.DrawFn, big: bool = False) -> TaskInfo:
    if big:
        request = draw(resource(BIG, BIG, BIG, BIG))
        affinity = draw(preferred(term_weight | big_weight))
    else:
        request = draw(resource(8_000, 2**34, 4_000, 2_000))
        affinity = draw(preferred(term_weight))
    request.add_scalar("pods", 1)  # as every converted task
    return TaskInfo(
        uid="ns-p",
        name="p",
        namespace="ns",
        job="ns/p",
        resreq=request,
        init_resreq=request.clone(),
        preferred_affinity=affinity,
        tolerations=draw(tolerations),
    )


@st.composite
def configurations(draw: st.DrawFn, big: bool = False) -> str:
    weight = st.integers(-3, 20) | big_weight if big else st.integers(-3, 20)
    nodeorder = {
        "leastrequested.weight": draw(weight),
        "mostrequested.weight": draw(weight),
        "balancedresource.weight": draw(weight),
        "nodeaffinity.weight": draw(weight),
        "tainttoleration.weight": draw(weight),
    }
    extra = draw(st.lists(st.sampled_from((GPU, FOO, "pods")), unique=True))
    resource_weight = st.integers(-2, 5) | big_weight if big else st.integers(-2, 5)
    binpack: dict[str, Any] = {
        "binpack.weight": draw(st.integers(-2, 20) | big_weight if big else st.integers(-2, 20)),
        "binpack.cpu": draw(resource_weight),
        "binpack.memory": draw(resource_weight),
        "binpack.resources": ", ".join(extra),
    }
    for name in extra:
        if draw(st.booleans()):
            binpack[f"binpack.resources.{name}"] = draw(resource_weight)
    conf = {
        "actions": "",
        "tiers": [
            {
                "plugins": [
                    {"name": "nodeorder", "arguments": nodeorder},
                    {"name": "binpack", "arguments": binpack},
                ]
            }
        ],
    }
    return yaml.safe_dump(conf)


def open_on(node_list: list[NodeInfo], conf: str) -> Session:
    snapshot = ClusterSnapshot(nodes={n.name: n for n in node_list})
    return open_session(snapshot, load_configuration(conf), clone=False)


def plugins(ssn: Session) -> tuple[NodeOrderPlugin, BinpackPlugin | None]:
    nodeorder = ssn.plugins["nodeorder"]
    binpack = ssn.plugins.get("binpack")
    assert isinstance(nodeorder, NodeOrderPlugin)
    if binpack is None or "binpack" not in ssn.hook_fns(BATCH_NODE_ORDER):
        return nodeorder, None  # absent, or weight 0: no hook
    assert isinstance(binpack, BinpackPlugin)
    return nodeorder, binpack


# --- the oracle: kube-scheduler's and Volcano's formulas, node by node, in plain Python ------


def oracle_least(requested: int, capacity: int) -> int:
    if capacity == 0 or requested > capacity:
        return 0
    return (capacity - requested) * 100 // capacity


def oracle_most(requested: int, capacity: int) -> int:
    if capacity == 0:
        return 0
    return min(requested, capacity) * 100 // capacity


def oracle_mean(pairs: list[tuple[int, int]], scorer: Callable[[int, int], int]) -> int:
    """Resources with capacity 0 neither score nor count."""
    scores = [scorer(requested, capacity) for requested, capacity in pairs if capacity != 0]
    return sum(scores) // len(scores) if scores else 0


def oracle_balanced(fractions: list[float]) -> int:
    capped = [min(f, 1.0) for f in fractions]
    std = 0.0
    if len(capped) == 2:
        std = abs((capped[0] - capped[1]) / 2)
    elif len(capped) > 2:
        mean = sum(capped) / len(capped)
        std = math.sqrt(sum((f - mean) * (f - mean) for f in capped) / len(capped))
    return int((1 - std) * 100)


def oracle_node_order_fn(plugin: NodeOrderPlugin, task: TaskInfo, n: NodeInfo) -> float:
    """Volcano's per-node ``NodeOrderFn`` of nodeorder: every score but taint toleration."""
    req = task.resreq
    cpu = req.milli_cpu or 100.0  # kube-scheduler's defaults for a pod requesting none
    memory = req.memory or 200.0 * 1024 * 1024
    requested = {name: n.used.get(name) + n.pipelined.get(name) for name in ("cpu", "memory")}
    pairs = [
        (int(requested["cpu"] + cpu), int(n.allocatable.milli_cpu)),
        (int(requested["memory"] + memory), int(n.allocatable.memory)),
    ]
    balanced = [name for name in ("cpu", "memory", GPU) if name != GPU or req.get(GPU) != 0]
    if any(req.get(name) for name in balanced):
        fractions = [
            (n.used.get(name) + n.pipelined.get(name) + req.get(name)) / n.allocatable.get(name)
            for name in balanced
            if n.allocatable.get(name) != 0
        ]
        balance = oracle_balanced(fractions)
    else:
        balance = 0  # best-effort pods are not balanced
    affinity = sum(
        weight
        for weight, requirements in task.preferred_affinity
        if weight != 0 and term_matches(requirements, n.labels)
    )
    score = 0.0
    for value, weight in (
        (oracle_mean(pairs, oracle_least), plugin.args.least_requested_weight),
        (oracle_mean(pairs, oracle_most), plugin.args.most_requested_weight),
        (balance, plugin.args.balanced_resource_weight),
        (affinity, plugin.args.node_affinity_weight),
    ):
        if weight != 0:
            score += value * weight
    return score


def oracle_taint_toleration(
    plugin: NodeOrderPlugin, task: TaskInfo, candidates: list[NodeInfo]
) -> dict[str, float]:
    """kube-scheduler's reverse normalisation of the untolerated PreferNoSchedule taints."""
    if plugin.args.taint_toleration_weight == 0:
        return {}
    raw = {n.name: intolerable_prefer_no_schedule(task, n) for n in candidates}
    top = max(raw.values(), default=0)
    weight = plugin.args.taint_toleration_weight
    return {
        name: float((100 if top == 0 else 100 - 100 * count // top) * weight)
        for name, count in raw.items()
    }


def oracle_nodeorder(
    plugin: NodeOrderPlugin, task: TaskInfo, candidates: list[NodeInfo]
) -> dict[str, float]:
    """nodeorder's batch answer: the per-node scores, then taint toleration, then the
    pod-level scores (inter-pod affinity, spread: other modules' business, taken as given)."""
    scores = {n.name: oracle_node_order_fn(plugin, task, n) for n in candidates}
    for name, score in oracle_taint_toleration(plugin, task, candidates).items():
        scores[name] += score
    extra = plugin._pod_level_scores(task, candidates)
    if extra is not None:
        for name, score in extra.items():
            scores[name] += score
    return scores


def oracle_binpack_fn(plugin: BinpackPlugin, task: TaskInfo, n: NodeInfo) -> float:
    """Volcano's binpack: the weighted mean utilisation after placing the pod, over the
    resources it requests that have a weight; 0 if a weighted one would overflow."""
    weights = plugin.args
    score = 0.0
    weight_sum = 0
    for name in task.resreq.resource_names():
        request = task.resreq.get(name)
        weight = weights.resources.get(name)
        if request == 0 or weight is None:
            continue
        allocatable = n.allocatable.get(name)
        if allocatable != 0 and weight != 0:
            used_finally = request + n.used.get(name)
            if used_finally > allocatable:
                return 0.0
            score += used_finally * weight / allocatable
        weight_sum += weight
    if weight_sum > 0:
        score /= weight_sum
    return score * 100 * weights.weight


def oracle_binpack(
    plugin: BinpackPlugin, task: TaskInfo, candidates: list[NodeInfo]
) -> dict[str, float]:
    return {n.name: oracle_binpack_fn(plugin, task, n) for n in candidates}


def assert_same_as_scalar(ssn: Session, task: TaskInfo, candidates: list[NodeInfo]) -> None:
    """Both plugins' batch hooks take the vector path, agree with the per-node path and
    give the oracle's floats."""
    nodeorder, binpack = plugins(ssn)
    table = NodeTable.of(ssn)
    vector = nodeorder.vector_node_scores(table, task, candidates)
    assert vector is not None  # the vector path was taken, not the fallback
    assert vector == oracle_nodeorder(nodeorder, task, candidates)
    assert vector == nodeorder.scalar_node_scores(task, candidates)
    assert nodeorder.batch_node_score(task, candidates) == vector
    if binpack is not None:
        packed = binpack.vector_node_scores(table, task, candidates)
        assert packed is not None
        assert packed == oracle_binpack(binpack, task, candidates)
        assert packed == binpack.scalar_node_scores(task, candidates)
        assert binpack.batch_node_score(task, candidates) == packed


def reference_scale(raw: Mapping[str, float]) -> dict[str, int]:
    """The extender scale one node at a time, as first written."""
    best = max(raw.values(), default=0.0)
    if best <= 0:
        return {name: 0 for name in raw}
    scaled = {}
    for name, score in raw.items():
        if score <= 0:
            scaled[name] = 0
        elif score >= best:
            scaled[name] = MAX_EXTENDER_PRIORITY
        else:
            scaled[name] = math.floor(MAX_EXTENDER_PRIORITY * score / best + 1e-9)
    return scaled


# --- properties -------------------------------------------------------------------------------


@SETTINGS
@given(node_list=nodes(), task=pods(), conf=configurations(), data=st.data())
def test_batch_scores_equal_scalar_scores(
    node_list: list[NodeInfo], task: TaskInfo, conf: str, data: st.DataObject
) -> None:
    ssn = open_on(node_list, conf)
    # all nodes in table order, then a drawn subset in any order (duplicates allowed), as
    # kube-scheduler hands the extender the nodes that passed its filters
    assert_same_as_scalar(ssn, task, node_list)
    subset = data.draw(st.lists(st.sampled_from(node_list), max_size=10))
    assert_same_as_scalar(ssn, task, subset)

    # and the extender's 0..10 answer is the one of the oracle's scores added in Volcano's
    # order (per-node hooks plugin by plugin, then the batch one)
    nodeorder, binpack = plugins(ssn)
    reference = {n.name: 0.0 for n in node_list}
    for n in node_list:
        reference[n.name] += oracle_node_order_fn(nodeorder, task, n)
        assert nodeorder.node_score(task, n) == oracle_node_order_fn(nodeorder, task, n)
        if binpack is not None:
            reference[n.name] += oracle_binpack_fn(binpack, task, n)
            assert binpack.node_score(task, n) == oracle_binpack_fn(binpack, task, n)
    for name, score in oracle_taint_toleration(nodeorder, task, node_list).items():
        reference[name] += score
    assert extender_scores(ssn, task, node_list) == reference_scale(reference)


@SETTINGS
@given(
    node_list=nodes(big=True), task=pods(big=True), conf=configurations(big=True), data=st.data()
)
def test_amounts_and_weights_beyond_int64_are_scored_exactly(
    node_list: list[NodeInfo], task: TaskInfo, conf: str, data: st.DataObject
) -> None:
    # The per-node path scores them, on Python ints where int64 would overflow; the vector
    # path declines what it cannot compute exactly and gives the oracle's floats otherwise.
    ssn = open_on(node_list, conf)
    candidates = data.draw(st.lists(st.sampled_from(node_list), max_size=10)) + node_list
    nodeorder, binpack = plugins(ssn)
    table = NodeTable.of(ssn)
    for n in node_list:
        assert nodeorder.node_score(task, n) == oracle_node_order_fn(nodeorder, task, n)
    expected = oracle_nodeorder(nodeorder, task, candidates)
    assert nodeorder.scalar_node_scores(task, candidates) == expected
    assert nodeorder.vector_node_scores(table, task, candidates) in (None, expected)
    total = dict(expected)
    if binpack is not None:
        packed = oracle_binpack(binpack, task, candidates)
        assert binpack.scalar_node_scores(task, candidates) == packed
        assert binpack.vector_node_scores(table, task, candidates) in (None, packed)
        for name, score in packed.items():
            total[name] += score
    assert ssn.node_scores(task, candidates) == total


@SETTINGS
@given(
    raw=st.dictionaries(
        st.sampled_from([f"n{i}" for i in range(12)]),
        st.floats(-1e6, 1e9, allow_nan=False) | st.sampled_from((0.0, -0.0, 1.0, 275.0)),
        max_size=12,
    )
)
def test_extender_scale_equals_the_per_node_loop(raw: dict[str, float]) -> None:
    assert extender_scale(raw) == reference_scale(raw)


# --- the session's own changes reach the arrays ---------------------------------------------

DEFAULT_TIERS = """\
actions: ""
tiers:
- plugins:
  - name: nodeorder
  - name: binpack
    arguments: {binpack.weight: 10}
"""


def busy_cluster() -> list[dict[str, Any]]:
    return [
        node("n1", "8", "16Gi"),
        node("n2", "8", "16Gi"),
        node("n3", "4", "8Gi"),
        pod("run1", node_name="n1", cpu="2", memory="4Gi"),
        pod("run2", node_name="n2", cpu="6", memory="2Gi"),
        pod("p", cpu="1", memory="2Gi"),
        pod("q", cpu="2", memory="1Gi"),
    ]


def test_statement_operations_are_seen_by_the_arrays() -> None:
    ssn = session(busy_cluster(), DEFAULT_TIERS)
    p, q = task_of(ssn, "ns/p"), task_of(ssn, "ns/q")
    candidates = list(ssn.nodes.values())
    before = ssn.node_scores(p, candidates)  # builds the arrays
    assert_same_as_scalar(ssn, p, candidates)

    stmt = Statement(ssn)
    stmt.allocate(q, ssn.nodes["n3"])
    assert_same_as_scalar(ssn, p, candidates)
    assert ssn.node_scores(p, candidates)["n3"] != before["n3"]

    stmt.pipeline(task_of(ssn, "ns/p"), "n1")  # pipelined amounts count for nodeorder
    assert_same_as_scalar(ssn, q, candidates)

    stmt.evict(task_of(ssn, "ns/run2"), "test")
    assert_same_as_scalar(ssn, q, candidates)

    stmt.discard()  # the discarded allocations have lost their node name by now
    assert ssn.node_scores(p, candidates) == before
    assert_same_as_scalar(ssn, p, candidates)


def test_each_session_has_its_own_table_shared_by_both_plugins() -> None:
    first = session(busy_cluster(), DEFAULT_TIERS)
    second = session(busy_cluster(), DEFAULT_TIERS)
    table = NodeTable.of(first)
    assert NodeTable.of(first) is table
    assert NodeTable.of(second) is not table
    candidates = list(first.nodes.values())
    rows = table.rows(candidates)
    assert rows is not None
    assert rows[1] == [n.name for n in candidates]


def test_a_list_changed_in_place_is_looked_up_again() -> None:
    ssn = session(busy_cluster(), DEFAULT_TIERS)
    p = task_of(ssn, "ns/p")
    candidates = list(ssn.nodes.values())
    first = ssn.node_scores(p, candidates)
    candidates.reverse()
    candidates[0] = ssn.nodes["n1"]  # same length, same list object, other nodes
    assert_same_as_scalar(ssn, p, candidates)
    again = ssn.node_scores(p, candidates)
    assert set(again) == {"n1", "n2"}
    assert again["n1"] == first["n1"]


# --- fallbacks and short cuts ------------------------------------------------------------------


def test_nodes_outside_the_table_take_the_scalar_path() -> None:
    ssn = session(busy_cluster(), DEFAULT_TIERS)
    p = task_of(ssn, "ns/p")
    nodeorder, binpack = plugins(ssn)
    assert binpack is not None
    stranger = ssn.nodes["n1"].clone()
    stranger.used = Resource(7000.0, 1024.0**3)
    candidates = [ssn.nodes["n2"], stranger]
    assert nodeorder.vector_node_scores(NodeTable.of(ssn), p, candidates) is None
    assert binpack.vector_node_scores(NodeTable.of(ssn), p, candidates) is None
    # the stranger's own amounts are scored, not the table's row for "n1"
    assert nodeorder.batch_node_score(p, candidates) == nodeorder.scalar_node_scores(p, candidates)
    assert binpack.batch_node_score(p, candidates)["n1"] == binpack.node_score(p, stranger)
    assert binpack.node_score(p, stranger) != binpack.node_score(p, ssn.nodes["n1"])


def test_amounts_too_large_for_int64_take_the_scalar_path() -> None:
    huge = NodeInfo.new("big", Resource(4000.0, 2.0**62))
    small = NodeInfo.new("small", Resource(4000.0, 2.0**33))
    ssn = open_on([huge, small], DEFAULT_TIERS)
    task = TaskInfo("u", "p", "ns", "ns/p", Resource(1000.0, 2.0**30), Resource(1000.0, 2.0**30))
    nodeorder, _ = plugins(ssn)
    assert nodeorder.vector_node_scores(NodeTable.of(ssn), task, [huge, small]) is None
    assert ssn.node_scores(task, [huge, small])["big"] > 0


def test_only_prefer_no_schedule_tainted_nodes_are_examined() -> None:
    prefer = {"key": "a", "value": "", "effect": "PreferNoSchedule"}
    ssn = session(
        [node("t", taints=[prefer]), node("u"), node("w"), pod("p")],
        tiers("nodeorder"),
    )
    p = task_of(ssn, "ns/p")
    counts = NodeTable.of(ssn).prefer_no_schedule_counts(p)
    assert counts.tolist() == [1, 0, 0]
    assert_same_as_scalar(ssn, p, list(ssn.nodes.values()))


def test_preferred_affinity_masks_follow_requirement_semantics() -> None:
    ssn = session(
        [
            node("a", labels={"zone": "a", "rank": "10"}),
            node("b", labels={"zone": "b", "rank": "x"}),
            node("c", labels={}),
            pod("p"),
        ],
        tiers("nodeorder"),
    )
    table = NodeTable.of(ssn)

    def mask(op: str, *values: str, key: str = "zone") -> list[bool]:
        found = table.requirement_mask(NodeSelectorRequirement(key, op, values))
        return [bool(x) for x in found]

    assert mask("In", "a", "q") == [True, False, False]
    assert mask("NotIn", "a") == [False, True, True]
    assert mask("Exists") == [True, True, False]
    assert mask("DoesNotExist") == [False, False, True]
    assert mask("Gt", "5", key="rank") == [True, False, False]
    assert mask("Lt", "5", key="rank") == [False, False, False]
    assert mask("Gt", "5", "6", key="rank") == [False, False, False]
    assert mask("Bogus", "a") == [False, False, False]


def test_verbose_logging_scores_on_the_scalar_path(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(v(4), logger="scheduler_core.plugins"):
        ssn = session(busy_cluster(), DEFAULT_TIERS)
        p = task_of(ssn, "ns/p")
        candidates = list(ssn.nodes.values())
        got = ssn.node_scores(p, candidates)
    totals = [r for r in caplog.records if r.getMessage().startswith("Total Score for task")]
    packs = [r for r in caplog.records if r.getMessage().startswith("Binpack score for Task")]
    assert len(totals) == len(packs) == len(candidates)
    quiet = session(busy_cluster(), DEFAULT_TIERS)
    assert quiet.node_scores(task_of(quiet, "ns/p"), list(quiet.nodes.values())) == got


def test_pipelined_amounts_count_for_nodeorder_only() -> None:
    # A pipelined task is on its node as "pipelined": nodeorder counts it as requested,
    # binpack (Volcano reads ``used``) does not; the arrays must keep the two apart.
    ssn = session(busy_cluster(), DEFAULT_TIERS)
    nodeorder, binpack = plugins(ssn)
    assert binpack is not None
    p, q = task_of(ssn, "ns/p"), task_of(ssn, "ns/q")
    candidates = list(ssn.nodes.values())
    spread_before = nodeorder.batch_node_score(p, candidates)["n3"]
    packed_before = binpack.batch_node_score(p, candidates)["n3"]
    Statement(ssn).pipeline(q, "n3")
    assert q.status == TaskStatus.PIPELINED
    assert_same_as_scalar(ssn, p, candidates)
    assert nodeorder.batch_node_score(p, candidates)["n3"] < spread_before
    assert binpack.batch_node_score(p, candidates)["n3"] == packed_before


# --- scores kept per pod shape ----------------------------------------------------------------


@st.composite
def changes(draw: st.DrawFn, node_list: list[NodeInfo]) -> list[tuple[int, Resource, Resource]]:
    """New used and pipelined amounts for drawn nodes: none, a few, or more than a short
    list holds (the kept scores then start again from the whole table)."""
    count = draw(st.sampled_from((0, 1, 2, SHORT_LIST_NODES + 1)))
    return [
        (
            draw(st.integers(0, len(node_list) - 1)),
            draw(resource(80_000, 2**38 + 2**36, 10_000, 5_000)),
            draw(resource(20_000, 2**36, 3_000, 2_000)),
        )
        for _ in range(count)
    ]


@SETTINGS
@given(
    node_list=nodes(),
    shapes=st.lists(pods(), min_size=1, max_size=3),
    conf=configurations(),
    data=st.data(),
)
def test_kept_scores_are_the_floats_of_the_table_as_it_is_now(
    node_list: list[NodeInfo], shapes: list[TaskInfo], conf: str, data: st.DataObject
) -> None:
    """Pods of a few shapes scored call after call while nodes' amounts change between the
    calls (as the live cache changes them and the accounting session names them): every
    answer is the oracle's on the nodes as they are now."""
    ssn = open_on(node_list, conf)
    nodeorder, binpack = plugins(ssn)
    table = NodeTable.of(ssn)
    for _ in range(data.draw(st.integers(1, 6))):
        for index, used, pipelined in data.draw(changes(node_list)):
            node_list[index].used, node_list[index].pipelined = used, pipelined
            table.nodes_changed([node_list[index].name])
        task = data.draw(st.sampled_from(shapes))
        candidates = data.draw(st.lists(st.sampled_from(node_list), min_size=1, max_size=10))
        vector = nodeorder.vector_node_scores(table, task, candidates)
        if vector is not None:  # None: a column too large (balanced), as before keeping
            assert vector == oracle_nodeorder(nodeorder, task, candidates)
        if binpack is not None:
            packed = binpack.vector_node_scores(table, task, candidates)
            assert packed is not None
            assert packed == oracle_binpack(binpack, task, candidates)


def counting_rows_part(plugin: NodeOrderPlugin | BinpackPlugin) -> list[int]:
    """Count the plugin's array passes: one list entry per call of ``rows_part``, its
    length the number of rows."""
    calls: list[int] = []
    real = plugin.rows_part

    def counted(table: NodeTable, task: TaskInfo, rows: Any) -> Any:
        calls.append(len(rows))
        return real(table, task, rows)

    plugin.rows_part = counted  # type: ignore[method-assign]
    return calls


def test_a_changed_node_is_scored_again_alone_and_the_rest_is_kept() -> None:
    node_list = [NodeInfo.new(f"n{i}", Resource(8000, 2**34)) for i in range(40)]
    ssn = open_on(node_list, "tiers:\n- plugins: [{name: nodeorder}, {name: binpack}]\n")
    nodeorder, binpack = plugins(ssn)
    assert binpack is not None
    table = NodeTable.of(ssn)
    request = Resource(1000, 2**30)
    task = TaskInfo(
        uid="u", name="p", namespace="ns", job="ns/p", resreq=request, init_resreq=request.clone()
    )
    offered = node_list[:30]

    def score_twice(
        plugin: NodeOrderPlugin | BinpackPlugin, used: int
    ) -> tuple[Mapping[str, float], Mapping[str, float]]:
        calls = counting_rows_part(plugin)
        first = plugin.vector_node_scores(table, task, offered)
        assert calls == [40]  # the whole table, once for the shape
        node_list[3].used = Resource(used, 2**33)
        table.nodes_changed(["n3"])
        again = plugin.vector_node_scores(table, task, offered)
        assert calls == [40]  # no array pass: the changed row alone, on Python numbers
        assert first is not None and again is not None
        assert again["n3"] != first["n3"]
        assert {n: s for n, s in again.items() if n != "n3"} == {
            n: s for n, s in first.items() if n != "n3"
        }
        return first, again

    assert score_twice(nodeorder, 6000)[1] == oracle_nodeorder(nodeorder, task, offered)
    assert score_twice(binpack, 3000)[1] == oracle_binpack(binpack, task, offered)


def test_more_changes_than_a_short_list_score_the_whole_table_again() -> None:
    node_list = [NodeInfo.new(f"n{i}", Resource(8000, 2**34)) for i in range(40)]
    ssn = open_on(node_list, "tiers:\n- plugins: [{name: nodeorder}]\n")
    nodeorder, _ = plugins(ssn)
    table = NodeTable.of(ssn)
    request = Resource(1000, 2**30)
    task = TaskInfo(
        uid="u", name="p", namespace="ns", job="ns/p", resreq=request, init_resreq=request.clone()
    )
    calls = counting_rows_part(nodeorder)
    nodeorder.vector_node_scores(table, task, node_list)
    for n in node_list[: SHORT_LIST_NODES + 1]:
        n.used = Resource(4000, 2**32)
        table.nodes_changed([n.name])
    scores = nodeorder.vector_node_scores(table, task, node_list)
    assert calls == [40, 40]
    assert scores is not None
    assert dict(scores.items()) == oracle_nodeorder(nodeorder, task, node_list)


def test_changes_older_than_the_table_keeps_are_not_answered() -> None:
    node_list = [NodeInfo.new(f"n{i}", Resource(8000, 2**34)) for i in range(4)]
    ssn = open_on(node_list, "tiers:\n- plugins: [{name: nodeorder}]\n")
    table = NodeTable.of(ssn)
    mark = table.mark()
    table.nodes_changed(["n1"])
    assert table.changed_since(mark) == [1]
    for _ in range(300):  # more re-reads than the table keeps for 4 rows
        table.nodes_changed(["n2"])
        table.mark()
    assert table.changed_since(mark) is None
    assert table.changed_since(table.mark()) == []


def gpu_pod_on_gpu_nodes() -> tuple[list[NodeInfo], Session, TaskInfo]:
    """40 nodes with GPUs and a pod balancing three resources (cpu, memory and GPUs)."""
    node_list = [NodeInfo.new(f"n{i}", Resource(8000, 2**34, {GPU: 8.0})) for i in range(40)]
    ssn = open_on(node_list, "tiers:\n- plugins: [{name: nodeorder}]\n")
    request = Resource(1000, 2**30, {GPU: 2.0})
    task = TaskInfo(
        uid="u", name="p", namespace="ns", job="ns/p", resreq=request, init_resreq=request.clone()
    )
    return node_list, ssn, task


def test_a_gpu_pods_changed_node_is_scored_again_alone() -> None:
    """Balancing three resources, the population standard deviation, node by node: a GPU
    pod's scores are kept like any other's, and a changed node is scored again alone."""
    node_list, ssn, task = gpu_pod_on_gpu_nodes()
    nodeorder, _ = plugins(ssn)
    table = NodeTable.of(ssn)
    offered = node_list[:30]
    calls = counting_rows_part(nodeorder)
    for used in (0, 3000, 5000):
        node_list[3].used = Resource(used, 2**33, {GPU: 4.0 + used / 1000})
        table.nodes_changed(["n3"])
        scores = nodeorder.vector_node_scores(table, task, offered)
        assert scores is not None
        assert dict(scores.items()) == oracle_nodeorder(nodeorder, task, offered)
    assert calls == [40]  # the whole table once, then n3 alone


def test_a_pod_no_row_can_be_scored_again_for_alone_is_not_kept() -> None:
    """A pod whose scores no row can be brought up to date for one by one is not kept, so
    each call is one array pass over the offered rows, not two over the whole table."""
    node_list, ssn, task = gpu_pod_on_gpu_nodes()
    nodeorder, _ = plugins(ssn)
    nodeorder.row_scorer = lambda task: None  # type: ignore[method-assign]
    table = NodeTable.of(ssn)
    offered = node_list[:30]
    calls = counting_rows_part(nodeorder)
    for used in (0, 3000, 5000):
        node_list[3].used = Resource(used, 2**33, {GPU: 4.0})
        table.nodes_changed(["n3"])
        scores = nodeorder.vector_node_scores(table, task, offered)
        assert scores is not None
        assert dict(scores.items()) == oracle_nodeorder(nodeorder, task, offered)
    assert calls == [30, 30, 30]
