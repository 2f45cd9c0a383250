"""The numpy node scoring of nodeorder and binpack against their scalar reference.

The vectorised hooks must give exactly the float the scalar code gives, on every node: the
property tests draw nodes (cpu, memory, GPU and another extended resource, used and
pipelined amounts, labels, taints), pods (zero and best-effort requests, GPUs, preferred
node-affinity terms with every operator, tolerations) and plugin arguments, and compare the
two paths with ``==``. The other tests pin what keeps the arrays honest: the session's own
node changes reach them, nodes outside the table and amounts too large for int64 go to the
scalar path, and V(4) still logs per node.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
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
from scheduler_core.plugins.util.node_table import NodeTable
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


@st.composite
def nodes(draw: st.DrawFn) -> list[NodeInfo]:
    out = []
    for i in range(draw(st.integers(1, 8))):
        allocatable = draw(resource(64_000, 2**38, 8_000, 4_000))
        info = NodeInfo.new(f"n{i}", allocatable, labels=draw(labels), taints=draw(taints))
        # used and pipelined up to beyond allocatable: overflow paths are scored too
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
preferred = st.lists(
    st.tuples(
        st.one_of(st.integers(-5, 0), st.integers(1, 100)),
        st.lists(requirements, max_size=3).map(tuple),
    ),
    max_size=4,
).map(tuple)
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
def pods(draw: st.DrawFn) -> TaskInfo:
    request = draw(resource(8_000, 2**34, 4_000, 2_000))
    request.add_scalar("pods", 1)  # as every converted task
    return TaskInfo(
        uid="ns-p",
        name="p",
        namespace="ns",
        job="ns/p",
        resreq=request,
        init_resreq=request.clone(),
        preferred_affinity=draw(preferred),
        tolerations=draw(tolerations),
    )


weight = st.integers(-3, 20)


@st.composite
def configurations(draw: st.DrawFn) -> str:
    nodeorder = {
        "leastrequested.weight": draw(weight),
        "mostrequested.weight": draw(weight),
        "balancedresource.weight": draw(weight),
        "nodeaffinity.weight": draw(weight),
        "tainttoleration.weight": draw(weight),
    }
    extra = draw(st.lists(st.sampled_from((GPU, FOO, "pods")), unique=True))
    binpack: dict[str, Any] = {
        "binpack.weight": draw(st.integers(-2, 20)),
        "binpack.cpu": draw(st.integers(-2, 5)),
        "binpack.memory": draw(st.integers(-2, 5)),
        "binpack.resources": ", ".join(extra),
    }
    for name in extra:
        if draw(st.booleans()):
            binpack[f"binpack.resources.{name}"] = draw(st.integers(-2, 5))
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


def assert_same_as_scalar(ssn: Session, task: TaskInfo, candidates: list[NodeInfo]) -> None:
    """Both plugins' batch hooks take the vector path and agree with the scalar one."""
    nodeorder, binpack = plugins(ssn)
    table = NodeTable.of(ssn)
    vector = nodeorder.vector_node_scores(table, task, candidates)
    assert vector is not None  # the vector path was taken, not the fallback
    assert vector == nodeorder.scalar_node_scores(task, candidates)
    assert nodeorder.batch_node_score(task, candidates) == vector
    if binpack is not None:
        packed = binpack.vector_node_scores(table, task, candidates)
        assert packed is not None
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

    # and the extender's 0..10 answer is the one of the scalar scores added in Volcano's
    # order (per-node hooks plugin by plugin, then the batch one)
    nodeorder, binpack = plugins(ssn)
    reference = {n.name: 0.0 for n in node_list}
    for n in node_list:
        reference[n.name] += nodeorder.node_score(task, n)
        if binpack is not None:
            reference[n.name] += binpack.node_score(task, n)
    for name, score in nodeorder.taint_toleration_score(task, node_list).items():
        reference[name] += score
    assert extender_scores(ssn, task, node_list) == reference_scale(reference)


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
