"""The domain a topology gang lands in: the lowest tier where every member not placed yet fits,
judged node by node; the fullest such domain; pinned by members already placed."""

from __future__ import annotations

import dataclasses
from typing import Any

from scheduler_core.api.snapshot import ClusterSnapshot
from scheduler_core.api.topology import (
    NetworkTopologyRequest,
    TopologyMode,
    build_from_labels,
)
from scheduler_core.conf import default_configuration
from scheduler_core.framework.framework import open_session
from scheduler_core.framework.session import Session
from scheduler_core.framework.topology_fit import choose_domain, count_fitting
from tests.builders import node, pod, podgroup, snapshot

LEVELS = ["spine", "leaf"]


def cluster(
    busy: dict[str, str], gang: int, cpu: str = "4", extra: list[Any] | None = None
) -> list[Any]:
    """8 nodes of 4 CPU: n0-n3 in leaf a, n4-n7 in leaf b, both under spine s; ``busy`` puts a
    pod of the given CPU on a node; a gang of ``gang`` pending pods of ``cpu`` each."""
    objects: list[Any] = [
        node(f"n{i}", cpu="4", labels={"spine": "s", "leaf": "a" if i < 4 else "b"})
        for i in range(8)
    ]
    for name, used in busy.items():
        objects.append(pod(f"busy-{name}", cpu=used, node_name=name))
    objects.append(podgroup("g", gang, phase="Inqueue"))
    objects += [pod(f"g-{i}", cpu=cpu, group="g") for i in range(gang)]
    return objects + (extra or [])


def open_with(objects: list[Any], request: NetworkTopologyRequest) -> Session:
    snap: ClusterSnapshot = snapshot(objects)
    snap.topology = build_from_labels(LEVELS, {n.name: n.labels for n in snap.nodes.values()})
    for job in snap.jobs.values():
        if job.name == "g":
            job.network_topology = request
    return open_session(snap, default_configuration())


HARD_LEAF = NetworkTopologyRequest(TopologyMode.HARD, highest_tier_allowed=1)


def gang_of(ssn: Session) -> Any:
    return next(j for j in ssn.jobs.values() if j.name == "g")


def test_one_busy_node_in_leaf_a_sends_a_four_pod_gang_to_leaf_b() -> None:
    ssn = open_with(cluster({"n1": "2"}, 4), HARD_LEAF)
    choice = choose_domain(ssn, gang_of(ssn))
    assert choice is not None and choice.domain is not None
    assert choice.domain.name == "s/b"
    assert choice.allows("n5") and not choice.allows("n0")


def test_the_fullest_leaf_that_holds_the_gang_is_chosen() -> None:
    # both leaves hold 2 pods of 4 CPU; leaf a is fuller (a 1-CPU pod on n0 and n1)
    ssn = open_with(cluster({"n0": "1", "n1": "1"}, 2), HARD_LEAF)
    choice = choose_domain(ssn, gang_of(ssn))
    assert choice is not None and choice.domain is not None
    assert choice.domain.name == "s/a"


def test_a_gang_too_big_for_a_leaf_goes_up_a_tier_when_allowed() -> None:
    ssn = open_with(
        cluster({}, 6), NetworkTopologyRequest(TopologyMode.HARD, highest_tier_allowed=2)
    )
    choice = choose_domain(ssn, gang_of(ssn))
    assert choice is not None and choice.domain is not None
    assert choice.domain.name == "s"
    assert [t.holds for t in choice.trials] == [4]


def test_hard_with_no_domain_names_the_best_there_is_and_allows_no_node() -> None:
    ssn = open_with(cluster({"n1": "2"}, 5), HARD_LEAF)
    choice = choose_domain(ssn, gang_of(ssn))
    assert choice is not None and choice.domain is None
    assert "needs 5 pods" in choice.reason
    assert "the most any tier-1 domain holds is 4 (s/b)" in choice.reason
    assert not any(choice.allows(f"n{i}") for i in range(8))


def test_soft_with_no_domain_falls_back_to_anywhere() -> None:
    ssn = open_with(
        cluster({}, 5), NetworkTopologyRequest(TopologyMode.SOFT, highest_tier_allowed=1)
    )
    choice = choose_domain(ssn, gang_of(ssn))
    assert choice is not None and choice.domain is None and choice.allows("n0")


def test_fit_is_judged_per_node_never_by_summing_free_capacity() -> None:
    # every node of leaf a has 2 CPU free (8 in all): no 4-CPU member fits there
    busy = {f"n{i}": "2" for i in range(8)}
    ssn = open_with(cluster(busy, 2), HARD_LEAF)
    choice = choose_domain(ssn, gang_of(ssn))
    assert choice is not None and choice.domain is None
    members = sorted(gang_of(ssn).tasks.values(), key=lambda t: t.name)
    assert count_fitting(ssn, members, ssn.nodes.values()) == 0


def test_a_member_already_running_pins_the_domain() -> None:
    objects = cluster({}, 3)
    objects.append(pod("g-placed", cpu="4", group="g", node_name="n6"))
    ssn = open_with(objects, HARD_LEAF)
    choice = choose_domain(ssn, gang_of(ssn))
    assert choice is not None and choice.domain is not None
    assert choice.domain.name == "s/b" and choice.pinned_by == ("n6",)


def test_a_job_that_asks_nothing_or_a_conf_that_turns_requests_off_gets_no_choice() -> None:
    ssn = open_with(cluster({}, 2), HARD_LEAF)
    other = dataclasses.replace(default_configuration())
    other.network_topology = dataclasses.replace(other.network_topology, enabled=False)
    off = open_session(ssn.snapshot, other)
    assert choose_domain(off, gang_of(off)) is None
    gang_of(ssn).network_topology = None
    assert choose_domain(ssn, gang_of(ssn)) is None


def test_a_malformed_request_holds_the_gang_with_its_sentence() -> None:
    malformed = NetworkTopologyRequest(TopologyMode.HARD, problem="sets both forms")
    ssn = open_with(cluster({}, 2), malformed)
    choice = choose_domain(ssn, gang_of(ssn))
    assert choice is not None and choice.domain is None
    assert choice.reason == "sets both forms"
    assert not choice.allows("n0")
