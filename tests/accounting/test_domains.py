"""The keeper's choices: made once per gang, looked at without being kept by the read-only
views, and the domain a PodGroup carries (the kept one, else the one its placed members pin)."""

from __future__ import annotations

from scheduler_core.api.topology import NetworkTopologyRequest, TopologyMode
from tests.builders import (
    SPINE_LEAF,
    accounting,
    spine_leaf_cluster,
    with_label_topology,
)

HARD_LEAF = NetworkTopologyRequest(TopologyMode.HARD, highest_tier_allowed=1)


def test_a_look_keeps_nothing_and_a_second_look_is_not_a_second_trial() -> None:
    acct, _ = accounting(spine_leaf_cluster({"n1": "2"}, 4))
    with_label_topology(acct, SPINE_LEAF, {"ns/g": HARD_LEAF})
    ssn = acct.session()
    job = ssn.jobs["ns/g"]
    version = acct.state.decision_version
    first = acct.domains.peek(ssn, job, version)
    assert first is not None and first.domain is not None and first.domain.name == "s/b"
    assert acct.domains.peek(ssn, job, version) is first
    assert len(acct.domains) == 0 and acct.domains.made == 0
    kept = acct.domain_choice(ssn, job)
    assert kept is not None and len(acct.domains) == 1 and acct.domains.made == 1
    assert acct.domains.peek(ssn, job, version) is kept  # the verbs' choice wins


def test_a_podgroup_carries_the_kept_domain_then_the_one_its_placed_members_pin() -> None:
    acct, clock = accounting(
        spine_leaf_cluster({"n1": "2"}, 2, running={"g-run-0": "n12", "g-run-1": "n13"}), ttl=30
    )
    with_label_topology(acct, SPINE_LEAF, {"ns/g": HARD_LEAF})
    ssn = acct.session()
    job = ssn.jobs["ns/g"]
    assert acct.domains.domain_name(ssn, job) == "t/d"  # no choice yet: the members pin it
    assert acct.domain_choice(ssn, job) is not None
    assert acct.domains.domain_name(ssn, job) == "t/d"
    clock.now += 31
    assert acct.domains.get("ns/g") is None  # expired with no assumption to extend it
    assert acct.domains.domain_name(ssn, job) == "t/d"


def test_a_gang_with_no_member_placed_and_no_choice_carries_no_domain() -> None:
    acct, _ = accounting(spine_leaf_cluster({"n1": "2"}, 2))
    with_label_topology(acct, SPINE_LEAF, {"ns/g": HARD_LEAF})
    ssn = acct.session()
    assert acct.domains.domain_name(ssn, ssn.jobs["ns/g"]) is None
    other = next(j for j in ssn.jobs.values() if j.uid != "ns/g")
    assert acct.domains.domain_name(ssn, other) is None  # asks for none
