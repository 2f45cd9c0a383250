"""Short node lists are scored in plain Python to the same floats as the array path.

Below ``SHORT_LIST_NODES`` nodes, nodeorder's and binpack's batch hooks score node by node on
Python numbers instead of on arrays (a call of a few dozen array operations has a fixed cost
that a short list does not repay). The properties draw the same nodes, pods and arguments
as the array path's own tests and compare the two paths, and the oracle, to the float.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from scheduler_core.api.node import NodeInfo
from scheduler_core.api.resource import Resource
from scheduler_core.api.task import TaskInfo
from scheduler_core.framework.node_scores import NodeScoreArray
from scheduler_core.plugins.nodeorder.scores import PodRequests
from scheduler_core.plugins.util.node_table import NodeTable
from scheduler_core.plugins.util.short_lists import SHORT_LIST_NODES
from tests.plugins.util.test_table_scoring import (
    SETTINGS,
    configurations,
    nodes,
    open_on,
    oracle_binpack,
    oracle_nodeorder,
    plugins,
    pods,
)


@SETTINGS
@given(node_list=nodes(), task=pods(), conf=configurations(), data=st.data())
def test_short_lists_score_to_the_array_paths_floats(
    node_list: list[NodeInfo], task: TaskInfo, conf: str, data: st.DataObject
) -> None:
    ssn = open_on(node_list, conf)
    nodeorder, binpack = plugins(ssn)
    table = NodeTable.of(ssn)
    # all nodes, then a drawn subset in any order (repeats allowed), as kube-scheduler offers
    for candidates in (node_list, data.draw(st.lists(st.sampled_from(node_list), max_size=10))):
        short = nodeorder.short_node_scores(task, candidates)
        vector = nodeorder.vector_node_scores(table, task, candidates)
        if short is None:
            # only where the pod balances more than two resources
            assert len(PodRequests.of(task).balanced) > 2
        else:
            assert short == vector == oracle_nodeorder(nodeorder, task, candidates)
            assert nodeorder.batch_node_score(task, candidates) == short
        if binpack is not None:
            packed = binpack.short_node_scores(task, candidates)
            assert packed is not None
            assert packed == binpack.vector_node_scores(table, task, candidates)
            assert packed == oracle_binpack(binpack, task, candidates)
            assert binpack.batch_node_score(task, candidates) == packed


@SETTINGS
@given(
    node_list=nodes(big=True), task=pods(big=True), conf=configurations(big=True), data=st.data()
)
def test_amounts_and_weights_beyond_int64_are_declined_or_exact(
    node_list: list[NodeInfo], task: TaskInfo, conf: str, data: st.DataObject
) -> None:
    ssn = open_on(node_list, conf)
    nodeorder, binpack = plugins(ssn)
    candidates = data.draw(st.lists(st.sampled_from(node_list), max_size=10)) + node_list
    expected = oracle_nodeorder(nodeorder, task, candidates)
    assert nodeorder.short_node_scores(task, candidates) in (None, expected)
    if binpack is not None:
        packed = oracle_binpack(binpack, task, candidates)
        assert binpack.short_node_scores(task, candidates) in (None, packed)


@pytest.mark.parametrize(
    ("count", "arrays"), [(1, False), (SHORT_LIST_NODES, False), (SHORT_LIST_NODES + 1, True)]
)
def test_lists_longer_than_the_crossover_take_the_array_path(count: int, arrays: bool) -> None:
    node_list = [NodeInfo.new(f"n{i}", Resource(8000, 2**34)) for i in range(count)]
    ssn = open_on(node_list, "tiers:\n- plugins: [{name: nodeorder}, {name: binpack}]\n")
    nodeorder, binpack = plugins(ssn)
    request = Resource(1000, 2**30)
    task = TaskInfo(
        uid="u", name="p", namespace="ns", job="ns/p", resreq=request, init_resreq=request.clone()
    )
    assert binpack is not None
    for plugin in (nodeorder, binpack):
        assert isinstance(plugin.batch_node_score(task, node_list), NodeScoreArray) is arrays
