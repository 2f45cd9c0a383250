"""Properties of the answer-sanity rules, whatever the backend returns."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from app.verbs.filter import NOT_EVALUATED, filter_outcome, keep_to_inputs, rejection_codes
from app.verbs.preempt import keep_valid_victims
from app.verbs.prioritize import clamp_scores
from app.verbs.protocol import encode_host_priorities, encode_host_score_array, split_failed
from scheduler_core.extender.decisions import NodeVictims
from scheduler_core.extender.prioritize import HostScores
from tests.builders import filter_result

NODES = st.sampled_from([f"n{i}" for i in range(8)] + ["ghost-1", "ghost-2"])
INPUTS = st.lists(st.sampled_from([f"n{i}" for i in range(8)]), unique=True, max_size=8)
REASONS = st.dictionaries(NODES, st.text(max_size=5), max_size=10)


@settings(max_examples=200, deadline=None)
@given(
    inputs=INPUTS,
    passed=st.lists(NODES, max_size=10),
    failed=REASONS,
    unresolvable=REASONS,
    codes=st.dictionaries(NODES, st.sampled_from(["queue-overused", "queue-closed"])),
)
def test_filter_answer_is_always_a_partition_of_the_input(
    inputs: list[str],
    passed: list[str],
    failed: dict[str, str],
    unresolvable: dict[str, str],
    codes: dict[str, str],
) -> None:
    d = filter_result(passed, failed, unresolvable, codes)
    a = keep_to_inputs(inputs, d)
    sent_failed, sent_unresolvable = split_failed(a.failed)
    groups = [set(a.passed), set(sent_failed), set(sent_unresolvable)]
    assert set().union(*groups) == set(inputs)
    assert sum(len(g) for g in groups) == len(inputs)
    # order of the passing names is the input order
    assert a.passed == [n for n in inputs if n in groups[0]]
    # the more conservative verdict wins and nothing passes that the backend did not pass
    assert groups[0] <= set(passed)
    assert {n for n in unresolvable if n in inputs} == groups[2]
    # a node is rejected by the backend, or lacked a verdict
    for node, reason in sent_failed.items():
        assert reason == failed.get(node, NOT_EVALUATED)
    outcome = filter_outcome(a)
    if a.passed:
        assert outcome == "passed"
    elif sent_unresolvable and not sent_failed:
        assert outcome == "unresolvable"
    else:
        assert outcome == "failed"
    assert bool(rejection_codes(a)) == bool(sent_failed or sent_unresolvable)


@settings(max_examples=100, deadline=None)
@given(
    inputs=INPUTS,
    scores=st.lists(st.tuples(NODES, st.integers(min_value=-100, max_value=100)), max_size=12),
)
def test_scores_are_clamped_to_the_extender_range_for_input_nodes(
    inputs: list[str], scores: list[tuple[str, int]]
) -> None:
    out = clamp_scores(inputs, scores)
    assert set(out) <= set(inputs)
    assert all(0 <= v <= 10 for v in out.values())
    last = dict(scores)  # the last score given for a host wins
    for host in inputs:
        if host in last:
            assert out[host] == max(0, min(10, last[host]))
        else:
            assert host not in out


@settings(max_examples=100, deadline=None)
@given(
    candidates=st.dictionaries(NODES, st.lists(st.text(min_size=1, max_size=3), max_size=3)),
    result=st.dictionaries(
        NODES,
        st.builds(
            NodeVictims,
            uids=st.lists(st.text(min_size=1, max_size=3), max_size=4),
            num_pdb_violations=st.integers(min_value=-2, max_value=3),
        ),
    ),
)
def test_preempt_answer_has_only_candidate_nodes_with_victims(
    candidates: dict[str, list[str]], result: dict[str, NodeVictims]
) -> None:
    out = keep_valid_victims(candidates, result)
    assert set(out) <= set(candidates) & set(result)
    for node, victims in out.items():
        assert victims.uids and len(victims.uids) == len(set(victims.uids))
        assert victims.num_pdb_violations >= 0
        # first-seen order (the priority order) is kept
        assert victims.uids == list(dict.fromkeys(result[node].uids))
    for node in set(candidates) & set(result):
        assert (node in out) == bool(result[node].uids)


@settings(max_examples=100, deadline=None)
@given(
    inputs=INPUTS,
    scores=st.lists(st.integers(min_value=-100, max_value=100), min_size=8, max_size=8),
)
def test_an_engine_array_answer_encodes_as_the_clamped_pairs(
    inputs: list[str], scores: list[int]
) -> None:
    answer = HostScores(inputs, np.array(scores[: len(inputs)], dtype=np.int64))
    pairs = list(zip(inputs, scores[: len(inputs)], strict=True))
    assert list(answer) == [(host, max(0, min(10, s))) for host, s in pairs]
    assert encode_host_score_array(answer.names, answer.scores.tolist()) == (
        encode_host_priorities(inputs, clamp_scores(inputs, pairs))
    )
