"""explain, the pending list and the what-if name a topology gang's network domain and why
(the tiers tried, what each could hold), or why it has none, or why its request is ignored;
they look at the choice without keeping one for the verbs."""

from __future__ import annotations

import dataclasses

import pytest

from app.api.status_page import render_queue
from scheduler_core.api.topology import NetworkTopologyRequest, TopologyMode
from scheduler_core.conf import DEFAULT_CONF, default_configuration
from scheduler_core.extender.filter_verb import filter_pod
from scheduler_core.insight.explain import Step, explain_podgroup
from scheduler_core.insight.pending import pending_jobs
from scheduler_core.insight.queues import queue_view
from scheduler_core.insight.whatif import WhatIfRequest, prepare, run_prepared, what_if
from tests.builders import (
    SPINE_LEAF,
    accounting,
    pod,
    podgroup,
    spine_leaf_cluster,
    with_label_topology,
    with_label_tree,
    with_network_topology,
    with_requests,
)
from tests.insight.conftest import fingerprint

HARD_LEAF = NetworkTopologyRequest(TopologyMode.HARD, highest_tier_allowed=1)
SOFT_LEAF = NetworkTopologyRequest(TopologyMode.SOFT, highest_tier_allowed=1)
ALL_BUSY = {"n1": "2", "n5": "2", "n9": "2", "n13": "2"}  # every leaf holds 3 of 4 members


def topology_step(steps: list[Step]) -> Step:
    [step] = [s for s in steps if s.name == "topology"]
    return step


@pytest.mark.parametrize(
    ("busy", "request_", "verdict", "state", "domain", "detail"),
    [
        (
            {"n1": "2"},
            HARD_LEAF,
            "pass",
            "placed",
            "s/b",
            "domain s/b (tier 1): s/b (tier 1 (leaf), 4 nodes) holds all 4 members not placed yet",
        ),
        (
            ALL_BUSY,
            HARD_LEAF,
            "fail",
            "refused",
            None,
            "no domain (hard, tier ≤ 1): needs 4 pods (cpu 16, memory 4Gi) within one tier-1 "
            "domain; the most any tier-1 domain holds is 3 (s/a)",
        ),
        (
            ALL_BUSY,
            SOFT_LEAF,
            "info",
            "anywhere",
            None,
            "the request is soft, so its members go anywhere in the cluster",
        ),
    ],
    ids=["placed", "hard-refused", "soft-anywhere"],
)
def test_explain_names_the_domain_and_why(
    busy: dict[str, str],
    request_: NetworkTopologyRequest,
    verdict: str,
    state: str,
    domain: str | None,
    detail: str,
) -> None:
    acct, _ = accounting(spine_leaf_cluster(busy, 4))
    with_label_topology(acct, SPINE_LEAF, {"ns/g": request_})
    before = fingerprint(acct)
    answer = explain_podgroup(acct, "ns", "g")
    step = topology_step(answer.steps)
    assert (step.verdict, step.numbers["state"], step.numbers["domain"]) == (verdict, state, domain)
    assert detail in step.detail
    if state != "placed":
        assert step.numbers["tried"] == [{"tier": 1, "best": "s/a", "holds": 3}]
    # read-only: no choice kept for the verbs, nothing else changed
    assert len(acct.domains) == 0 and fingerprint(acct) == before


def test_explain_counts_nodes_outside_the_domain_and_says_the_choice_is_kept() -> None:
    acct, _ = accounting(spine_leaf_cluster({"n1": "2"}, 4))
    with_label_topology(acct, SPINE_LEAF, {"ns/g": HARD_LEAF})
    filter_pod(acct, pod("g-0", cpu="4", group="g"), [f"n{i}" for i in range(16)])
    answer = explain_podgroup(acct, "ns", "g")
    step = topology_step(answer.steps)
    assert step.numbers["kept"] is True and "kept for the gang" in step.detail
    [nodes] = [s for s in answer.steps if s.name == "nodes"]
    assert nodes.numbers["rejections"]["outside network domain s/b"] == 12
    assert nodes.numbers["fitting"] == 4


def test_explain_tells_a_gang_its_request_is_ignored_when_the_configuration_turns_it_off() -> None:
    conf = default_configuration()
    conf.network_topology = dataclasses.replace(conf.network_topology, enabled=False)
    acct, _ = accounting(spine_leaf_cluster(ALL_BUSY, 4))
    acct.use_configuration(conf)
    with_label_topology(acct, SPINE_LEAF, {"ns/g": HARD_LEAF})
    step = topology_step(explain_podgroup(acct, "ns", "g").steps)
    assert step.verdict == "info" and step.numbers["state"] == "ignored"
    assert "networkTopology.enabled is false" in step.detail
    assert "not honoured" in step.detail


def test_the_pending_list_shows_each_gangs_domain() -> None:
    acct, _ = accounting(spine_leaf_cluster(ALL_BUSY, 4))
    with_label_topology(acct, SPINE_LEAF, {"ns/g": HARD_LEAF})
    [row] = pending_jobs(acct, "default").jobs
    assert row.topology == "none (hard, tier ≤ 1)"
    assert row.code == "topology-no-domain"
    assert len(acct.domains) == 0


def test_a_what_if_names_the_domain_each_gang_would_land_in() -> None:
    acct, _ = accounting(spine_leaf_cluster({"n1": "2"}, 4))
    prepared = prepare(acct, acct.conf, WhatIfRequest(add=[pod("x")], scope="all"))
    with_label_tree(prepared.fork, SPINE_LEAF)
    with_requests(prepared.fork, {"ns/g": HARD_LEAF})
    [view] = run_prepared(prepared).domains
    assert (view.job, view.state, view.domain, view.tier) == ("ns/g", "placed", "s/b", 1)
    assert view.request == "hard, tier ≤ 1"


def test_the_status_page_shows_a_gangs_domain_beside_why_it_waits() -> None:
    acct, _ = accounting(spine_leaf_cluster(ALL_BUSY, 4))
    with_label_topology(acct, SPINE_LEAF, {"ns/g": HARD_LEAF})
    view = queue_view(acct, "default")
    assert view is not None
    html = render_queue(view, pending_jobs(acct, "default"))
    assert "<th>Network domain</th>" in html
    assert "none (hard, tier ≤ 1)" in html


def test_a_submitted_podgroups_own_request_gets_its_domain_in_the_what_if() -> None:
    conf = DEFAULT_CONF + "networkTopology:\n  labelLevels: [spine, leaf]\n"
    cluster = [o for o in spine_leaf_cluster({"n1": "2"}, 0) if o["kind"] != "PodGroup"]
    acct, _ = accounting(cluster, conf)
    gang = with_network_topology(podgroup("new", 4, phase="Pending"), "hard", tier=1)
    members = [pod(f"new-{i}", cpu="4", group="new") for i in range(4)]
    [view] = what_if(acct, acct.conf, WhatIfRequest(add=[gang, *members])).domains
    assert (view.job, view.state, view.domain) == ("ns/new", "placed", "s/b")
