"""prioritize's array path gives the answer of the per-node dict path, float for float.

The reference is the path the extender took before: ``Session.node_scores`` (a dict filled
node by node), ``extender_scale`` on that dict, then one lookup per input name with 0 for a
node the cache does not know. Clusters, pods and plugin arguments (nodeorder and binpack,
every weight) are drawn by the strategies the vectorised-scoring tests use; the input names
mix known nodes in any order with unknown names and repeats; a per-node (scalar) hook and a
batch hook answering with a plain dict are added sometimes, so every branch of
``Session.node_score_array`` is compared.
"""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from scheduler_core.api.node import NodeInfo
from scheduler_core.api.task import TaskInfo
from scheduler_core.extender.prioritize import (
    MAX_EXTENDER_PRIORITY,
    HostScores,
    extender_scores,
    host_scores,
)
from scheduler_core.framework.hooks import BATCH_NODE_ORDER, NODE_ORDER
from scheduler_core.framework.session import Session
from tests.builders import node, pod, session, task_of, tiers
from tests.plugins.util.test_table_scoring import (
    SETTINGS,
    configurations,
    nodes,
    open_on,
    pods,
)


def dict_path(ssn: Session, task: TaskInfo, node_names: list[str]) -> list[tuple[str, int]]:
    """The answer as the extender computed it before the array path."""
    known = ssn.nodes
    listed = [known[name] for name in node_names if name in known]
    scores = extender_scores(ssn, task, listed) if listed else {}
    return [(name, scores.get(name, 0)) for name in node_names]


def scalar_hook(task: TaskInfo, n: NodeInfo) -> float:
    """A per-node score that differs between nodes and is not a whole number."""
    return (sum(map(ord, n.name)) % 7) / 3.0


def plain_dict_answers(ssn: Session) -> None:
    """Every batch hook answers with a plain dict that also names a node nobody asked about,
    so the session adds it name by name."""
    for name, fn in list(ssn.hook_fns(BATCH_NODE_ORDER).items()):

        def as_dict(task: TaskInfo, listed: list[NodeInfo], fn: object = fn) -> dict[str, float]:
            assert callable(fn)
            out = dict(fn(task, listed))
            out["not-asked"] = 1e9
            return out

        ssn.add_hook(BATCH_NODE_ORDER, name, as_dict)


@SETTINGS
@given(
    node_list=nodes(),
    task=pods(),
    conf=configurations(),
    scalar=st.booleans(),
    plain=st.booleans(),
    data=st.data(),
)
def test_array_path_answers_as_the_dict_path(
    node_list: list[NodeInfo],
    task: TaskInfo,
    conf: str,
    scalar: bool,
    plain: bool,
    data: st.DataObject,
) -> None:
    ssn = open_on(node_list, conf)
    if scalar:
        ssn.add_hook(NODE_ORDER, "nodeorder", scalar_hook)
    if plain:
        plain_dict_answers(ssn)
    names = [n.name for n in node_list]

    # the raw sums, bit for bit, for all nodes and for a shuffled unique subset
    subset = data.draw(st.permutations(node_list))[: data.draw(st.integers(0, len(node_list)))]
    for listed in (node_list, subset):
        raw = ssn.node_score_array(task, listed)
        assert raw is not None
        by_name = ssn.node_scores(task, listed)
        expected = np.array([by_name[n.name] for n in listed], dtype=np.float64)
        assert raw.tobytes() == expected.tobytes()

    # the 0..10 answer, with unknown names and repeats among the inputs; lists asked again
    # (as fresh lists, as kube-scheduler sends them) reuse what the session found for them
    inputs = data.draw(st.lists(st.sampled_from([*names, "unknown-a", "unknown-b"]), max_size=20))
    for asked in (names, list(names), inputs, list(inputs), names):
        got = host_scores(ssn, task, asked)
        assert isinstance(got, HostScores)
        assert list(got) == dict_path(ssn, task, asked)
        assert got.names == asked


def test_ties_all_score_the_top_of_the_range() -> None:
    ssn = session(
        [node("a", cpu="8"), node("b", cpu="8"), node("c", cpu="8"), pod("p", cpu="1")],
        tiers("binpack"),
    )
    task = task_of(ssn, "ns/p")
    got = host_scores(ssn, task, ["c", "a", "b"])
    assert list(got) == [("c", MAX_EXTENDER_PRIORITY), ("a", 10), ("b", 10)]
    assert list(got) == dict_path(ssn, task, ["c", "a", "b"])


def test_repeated_node_names_take_the_dict_path_and_match_it() -> None:
    ssn = session(
        [
            node("a", cpu="8"),
            node("b", cpu="8"),
            pod("p", cpu="1"),
            pod("q", cpu="4", node_name="b"),
        ],
        tiers("binpack"),
    )
    task = task_of(ssn, "ns/p")
    ssn.add_hook(NODE_ORDER, "binpack", scalar_hook)
    listed = [ssn.nodes["a"], ssn.nodes["b"], ssn.nodes["a"]]
    assert ssn.node_score_array(task, listed) is None
    assert list(host_scores(ssn, task, ["a", "b", "a"])) == dict_path(ssn, task, ["a", "b", "a"])
