"""The three verbs over real HTTP on loopback, fed kube-scheduler's captured requests."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from app.serving.server import ServerSettings
from scheduler_core.extender.decisions import FilterResult, NodeVictims
from tests.builders import filter_result

from ..captured import FULL, NODE_CACHE, body, doc, requests
from ..conftest import Live, LiveFactory
from ..fake_backend import FakeBackend, scripted_scores

FILTER_KEYS = ["Nodes", "NodeNames", "FailedNodes", "FailedAndUnresolvableNodes", "Error"]
JSON = {"Content-Type": "application/json"}


def post(svc: Live, path: str, raw: bytes) -> Any:
    r = svc.client.post(path, content=raw, headers=JSON)
    assert r.status_code == 200, r.text
    assert r.headers["content-type"] == "application/json"
    return r.json()


def assert_partition(answer: dict[str, Any], inputs: list[str]) -> None:
    """Every input node in exactly one of NodeNames / FailedNodes / FailedAndUnresolvable."""
    passed = answer["NodeNames"]
    if passed is None:
        passed = [n["metadata"]["name"] for n in answer["Nodes"]["items"]]
    assert set(passed) <= set(inputs)
    groups = [set(passed), set(answer["FailedNodes"]), set(answer["FailedAndUnresolvableNodes"])]
    for node in inputs:
        assert sum(node in g for g in groups) == 1, node
    assert set().union(*groups) == set(inputs)


@pytest.mark.parametrize("name", requests(NODE_CACHE, "filter"))
def test_filter_node_cache_mode_matches_captured_shape(svc: Live, name: str) -> None:
    req = doc(NODE_CACHE, name)
    answer = post(svc, "/filter", body(NODE_CACHE, name))
    assert list(answer) == FILTER_KEYS
    assert answer["Nodes"] is None
    assert answer["NodeNames"] == req["NodeNames"]
    assert answer["FailedNodes"] == {} and answer["FailedAndUnresolvableNodes"] == {}
    assert answer["Error"] == ""
    # the pass-through capture answered the same sets
    captured = doc(NODE_CACHE, name.replace(".req.", ".resp."))
    assert {k: captured[k] for k in captured if k != "Nodes"} == {
        k: answer[k] for k in captured if k != "Nodes"
    }
    assert svc.backend.verbs_called() == ["filter"]
    assert svc.backend.calls[-1][2] == req["NodeNames"]


@pytest.mark.parametrize("name", requests(FULL, "filter"))
def test_filter_full_mode_answers_node_objects(svc: Live, name: str) -> None:
    req = doc(FULL, name)
    answer = post(svc, "/filter", body(FULL, name))
    assert list(answer) == FILTER_KEYS
    assert answer["NodeNames"] is None
    assert answer["Nodes"]["items"] == req["Nodes"]["items"]
    assert answer["Nodes"] == doc(FULL, name.replace(".req.", ".resp."))["Nodes"]


def test_filter_full_mode_keeps_only_passing_node_objects(live: LiveFactory) -> None:
    def decide(pod: Any, names: list[str]) -> FilterResult:
        return filter_result(["node-b"], {"node-a": "queue q1 is overused"}, {})

    svc = live(backend=FakeBackend(filter_fn=decide))
    req = doc(FULL, "001-filter.req.json")
    answer = post(svc, "/filter", body(FULL, "001-filter.req.json"))
    by_name = {n["metadata"]["name"]: n for n in req["Nodes"]["items"]}
    assert answer["Nodes"]["items"] == [by_name["node-b"]]
    assert answer["FailedNodes"] == {"node-a": "queue q1 is overused"}
    assert_partition(answer, list(by_name))


def test_filter_answer_is_sanitised_into_a_partition_of_the_input(live: LiveFactory) -> None:
    def sloppy(pod: Any, names: list[str]) -> FilterResult:
        return filter_result(
            ["n3", "n1", "n2", "ghost"],  # out of order, a stranger, n2 also failed
            failed={"n2": "over quota", "other-ghost": "x"},
            unresolvable={"n3": "queue closed"},  # also claimed as passing
            codes={"n2": "queue-overused", "n3": "queue-closed"},
        )  # n4 gets no verdict at all

    svc = live(backend=FakeBackend(filter_fn=sloppy))
    inputs = ["n1", "n2", "n3", "n4"]
    answer = post(svc, "/filter", b'{"Pod": {}, "NodeNames": ["n1", "n2", "n3", "n4"]}')
    assert answer["NodeNames"] == ["n1"]
    assert answer["FailedNodes"]["n2"] == "over quota"
    assert answer["FailedAndUnresolvableNodes"] == {"n3": "queue closed"}
    assert "n4" in answer["FailedNodes"]  # never silently dropped: stays a preemption candidate
    assert_partition(answer, inputs)
    assert svc.metric("queue_extender_filter_rejections_total", reason="queue-overused") == 1
    assert svc.metric("queue_extender_filter_rejections_total", reason="queue-closed") == 1
    assert svc.metric("queue_extender_filter_rejections_total", reason="not-evaluated") == 1
    assert svc.metric("queue_extender_decisions_total", verb="filter", outcome="passed") == 1


def test_filter_all_rejected_outcomes(live: LiveFactory) -> None:
    verdict: dict[str, FilterResult] = {}
    svc = live(backend=FakeBackend(filter_fn=lambda pod, names: verdict["d"]))
    verdict["d"] = filter_result([], {}, {"a": "queue closed", "b": "queue closed"})
    answer = post(svc, "/filter", b'{"Pod": {}, "NodeNames": ["a", "b"]}')
    assert answer["NodeNames"] == [] and len(answer["FailedAndUnresolvableNodes"]) == 2
    verdict["d"] = filter_result([], {"a": "overused"}, {"b": "closed"}, error="")
    post(svc, "/filter", b'{"Pod": {}, "NodeNames": ["a", "b"]}')
    assert svc.metric("queue_extender_decisions_total", verb="filter", outcome="unresolvable") == 1
    assert svc.metric("queue_extender_decisions_total", verb="filter", outcome="failed") == 1
    assert svc.metric("queue_extender_filter_rejections_total", reason="unresolvable") == 2
    assert svc.metric("queue_extender_filter_rejections_total", reason="unschedulable") == 1


def test_filter_backend_reported_error_is_forwarded(live: LiveFactory) -> None:
    svc = live(
        backend=FakeBackend(
            filter_fn=lambda pod, names: filter_result([], error="cache not synced")
        )
    )
    answer = post(svc, "/filter", b'{"Pod": {}, "NodeNames": ["a"]}')
    assert answer["Error"] == "cache not synced"
    assert svc.metric("queue_extender_decisions_total", verb="filter", outcome="error") == 1


@pytest.mark.parametrize("run", [NODE_CACHE, FULL])
def test_prioritize_both_modes(live: LiveFactory, run: str) -> None:
    svc = live(
        backend=FakeBackend(
            prioritize_fn=lambda pod, names: scripted_scores(("node-b", 7), ("node-a", 3))
        )
    )
    for name in requests(run, "prioritize"):
        answer = post(svc, "/prioritize", body(run, name))
        assert answer == [{"Host": "node-a", "Score": 3}, {"Host": "node-b", "Score": 7}]
    assert svc.metric("queue_extender_decisions_total", verb="prioritize", outcome="scored") == 3


def test_prioritize_clamps_scores_and_fills_missing_nodes(live: LiveFactory) -> None:
    svc = live(
        backend=FakeBackend(
            prioritize_fn=lambda pod, names: scripted_scores(("a", 99), ("b", -4), ("stranger", 5))
        )
    )
    answer = post(svc, "/prioritize", b'{"Pod": {}, "NodeNames": ["a", "b", "c"]}')
    assert answer == [
        {"Host": "a", "Score": 10},
        {"Host": "b", "Score": 0},
        {"Host": "c", "Score": 0},
    ]


@pytest.mark.parametrize(
    ("scores", "sent"),
    [
        ([3, 10, 0], [3, 10, 0]),  # the engine's usual answer, encoded from the array
        ([99, -4, 5], [10, 0, 5]),  # the request's names, but values out of range
        ([7.9, 2.0, 1.5], [7, 2, 1]),  # not ints
    ],
)
def test_prioritize_sends_only_scores_within_range_for_the_requested_names(
    live: LiveFactory, scores: list[float], sent: list[int]
) -> None:
    pairs = list(zip(["a", "b", "c"], scores, strict=True))
    svc = live(backend=FakeBackend(prioritize_fn=lambda pod, names: scripted_scores(*pairs)))
    answer = svc.client.post("/prioritize", content=b'{"Pod": {}, "NodeNames": ["a", "b", "c"]}')
    expected = [{"Host": host, "Score": score} for host, score in zip("abc", sent, strict=True)]
    assert answer.json() == expected
    assert answer.content == orjson.dumps(expected)  # the bytes the dict path writes


@pytest.mark.parametrize("run", [NODE_CACHE, FULL])
def test_preempt_both_modes_answer_meta_victims(svc: Live, run: str) -> None:
    for name in requests(run, "preempt"):
        answer = post(svc, "/preempt", body(run, name))
        assert list(answer) == ["NodeNameToMetaVictims"]
        assert answer == doc(run, name.replace(".req.", ".resp."))
    assert svc.metric("queue_extender_preemption_victims_total") == 4


def test_preempt_drops_nodes_without_victims(live: LiveFactory) -> None:
    def engine(pod: Any, candidates: dict[str, list[str]]) -> dict[str, NodeVictims]:
        return {
            "a": NodeVictims(uids=["u2", "u1", "u2"], num_pdb_violations=1),
            "b": NodeVictims(uids=[], num_pdb_violations=0),
            "not-a-candidate": NodeVictims(uids=["u9"], num_pdb_violations=0),
        }

    svc = live(backend=FakeBackend(preempt_fn=engine))
    raw = (
        b'{"Pod": {}, "NodeNameToVictims": null, "NodeNameToMetaVictims": {'
        b'"a": {"Pods": [{"UID": "u1"}], "NumPDBViolations": 0},'
        b'"b": {"Pods": [{"UID": "u3"}], "NumPDBViolations": 0},'
        b'"c": {"Pods": [], "NumPDBViolations": 0}}}'
    )
    answer = post(svc, "/preempt", raw)
    assert answer == {
        "NodeNameToMetaVictims": {
            "a": {"Pods": [{"UID": "u2"}, {"UID": "u1"}], "NumPDBViolations": 1}
        }
    }
    assert svc.backend.calls[-1][2] == {"a": ["u1"], "b": ["u3"], "c": []}


def test_preempt_with_no_valid_node_answers_an_empty_map(live: LiveFactory) -> None:
    svc = live(backend=FakeBackend(preempt_fn=lambda pod, c: {}))
    answer = post(svc, "/preempt", body(NODE_CACHE, "008-preempt.req.json"))
    assert answer == {"NodeNameToMetaVictims": {}}
    assert svc.metric("queue_extender_decisions_total", verb="preempt", outcome="no_victims") == 1


def test_unmanaged_pods_pass_through_without_calling_the_verbs(live: LiveFactory) -> None:
    svc = live(backend=FakeBackend(managed=False))
    f = post(svc, "/filter", b'{"Pod": {}, "NodeNames": ["a", "b"]}')
    assert f["NodeNames"] == ["a", "b"] and f["FailedNodes"] == {}
    full = post(svc, "/filter", body(FULL, "001-filter.req.json"))
    assert full["Nodes"]["items"] == doc(FULL, "001-filter.req.json")["Nodes"]["items"]
    p = post(svc, "/prioritize", b'{"Pod": {}, "NodeNames": ["a", "b"]}')
    assert p == [{"Host": "a", "Score": 0}, {"Host": "b", "Score": 0}]
    raw = (
        b'{"Pod": {}, "NodeNameToMetaVictims": {'
        b'"a": {"Pods": [{"UID": "u1"}], "NumPDBViolations": 2}, "b": {"Pods": []}}}'
    )
    e = post(svc, "/preempt", raw)
    assert e == {"NodeNameToMetaVictims": {"a": {"Pods": [{"UID": "u1"}], "NumPDBViolations": 2}}}
    full_pre = post(svc, "/preempt", body(FULL, "008-preempt.req.json"))
    assert full_pre == doc(FULL, "008-preempt.resp.json")
    assert svc.backend.verbs_called() == []
    assert svc.metric("queue_extender_decisions_total", verb="filter", outcome="unmanaged") == 2


def test_all_lowercase_bodies_work_over_http(svc: Live) -> None:
    f = post(svc, "/filter", body(NODE_CACHE, "001-filter.req.json").lower())
    assert f["NodeNames"] == ["node-a", "node-b"]
    p = post(svc, "/prioritize", body(FULL, "002-prioritize.req.json").lower())
    assert [h["Host"] for h in p] == ["node-a", "node-b"]
    e = post(svc, "/preempt", body(NODE_CACHE, "008-preempt.req.json").lower())
    assert set(e["NodeNameToMetaVictims"]) == {"node-a", "node-b"}


def test_unknown_keys_are_ignored(svc: Live) -> None:
    raw = b'{"Pod": {"metadata": {"name": "p"}}, "NodeNames": ["a"], "Future": {"x": 1}}'
    assert post(svc, "/filter", raw)["NodeNames"] == ["a"]
    raw = (
        b'{"Pod": {}, "NodeNameToMetaVictims": {"a": {"Pods": [{"UID": "u", "Extra": 1}]}}, "X": 2}'
    )
    assert post(svc, "/preempt", raw)["NodeNameToMetaVictims"]["a"]["Pods"] == [{"UID": "u"}]


def test_verbs_under_a_prefix_and_custom_names(live: LiveFactory) -> None:
    settings = ServerSettings(
        url_prefix="/scheduler/", filter_verb="predicates", prioritize_verb="priorities"
    )
    svc = live(settings)
    assert post(svc, "/scheduler/predicates", b'{"Pod": {}, "NodeNames": ["a"]}')["NodeNames"] == [
        "a"
    ]
    assert post(svc, "/scheduler/priorities", b'{"Pod": {}, "NodeNames": ["a"]}')[0]["Host"] == "a"
    assert svc.client.post("/filter", content=b"{}").status_code == 404
