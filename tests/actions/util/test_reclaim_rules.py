"""The live reclaim rules' share arithmetic: which dimensions a queue's deserved share speaks
for, and the two sides of "no boundary victims" (the preemptor's queue stays within its share,
a victim's queue keeps its share) over them."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler_core.actions.util.reclaim_rules import (
    compared_dimensions,
    keeps_share,
    lends_beyond_share,
    overused_dimensions,
    within_share,
)
from scheduler_core.api.resource import Resource
from scheduler_core.framework.session import QueueShare

GPU = "nvidia.com/gpu"
GI = 2**30


def share(allocated: Resource, deserved: Resource) -> QueueShare:
    return QueueShare(allocated=allocated, deserved=deserved)


@pytest.mark.parametrize(
    ("deserved", "dims", "compared"),
    [
        # spec.deserved of cpu and memory: the pod count and a GPU are not its business
        (Resource(2000, 4 * GI), ["cpu", "memory", "pods", GPU], ["cpu", "memory"]),
        # Resource always has cpu and memory: below the epsilon they say nothing
        (Resource(0, 4 * GI), ["cpu", "memory"], ["memory"]),
        # a scalar present at zero is "deserves none"; a missing one is no opinion
        (Resource(2000, 0, {GPU: 0.0}), ["cpu", GPU], ["cpu", GPU]),
        (Resource(2000, 0, {"example.com/fpga": 1000.0}), ["cpu", GPU], ["cpu"]),
        # pods is never weighed, even where the share carries it (proportion's water-filling)
        (Resource(2000, 0, {"pods": 4.0}), ["cpu", "pods"], ["cpu"]),
        (Resource(), ["cpu", "memory"], []),
    ],
)
def test_a_share_is_compared_only_in_the_dimensions_it_names(
    deserved: Resource, dims: list[str], compared: list[str]
) -> None:
    assert compared_dimensions(share(Resource(), deserved), dims) == compared


def test_a_capacity_queue_within_its_cpu_and_memory_may_reclaim_whatever_else_is_asked() -> None:
    # q3 of the live report: deserves 2 cpu and 4Gi, holds nothing; its pod asks 1 cpu, 128Mi
    # and (as every pod) one pod slot, which the deserved share does not name.
    q3 = share(Resource(), Resource(2000, 4 * GI))
    request = Resource(1000, 128 * 2**20, {"pods": 1.0})
    assert within_share(q3, request, ["cpu", "memory", "pods"])
    # q1: deserves 1 cpu, holds 4 — over in cpu only; it keeps its share after giving one.
    q1 = share(Resource(4000, 512 * 2**20, {"pods": 4.0}), Resource(1000, 4 * GI))
    assert overused_dimensions(q1, ["cpu", "memory"]) == ["cpu"]
    assert keeps_share(q1, request, ["cpu", "memory"])
    assert not keeps_share(q1, Resource(3500, 0), ["cpu", "memory"])


def test_a_queue_that_deserves_none_of_what_is_asked_lends_all_of_it_and_never_reclaims() -> None:
    best_effort = share(Resource(3000, GI), Resource())
    assert lends_beyond_share(best_effort, ["cpu"])
    assert keeps_share(best_effort, Resource(3000, GI), ["cpu"])
    assert not within_share(best_effort, Resource(1000, 0), ["cpu"])


def test_a_queue_at_its_share_in_every_named_dimension_lends_nothing() -> None:
    at_share = share(Resource(2000, 8 * GI, {GPU: 1000.0}), Resource(2000, 4 * GI))
    # above its share only in memory, which the preemptor does not ask for; the GPU it holds
    # is not named by its share at all
    assert not lends_beyond_share(at_share, ["cpu", GPU])
    assert not keeps_share(at_share, Resource(1000, 0, {GPU: 1000.0}), ["cpu", GPU])


# --- properties -------------------------------------------------------------------------

DIMS = ("cpu", "memory", GPU, "pods")
amounts = st.integers(min_value=0, max_value=8).map(lambda n: n * 1000.0)


@st.composite
def resources(draw: st.DrawFn, *, may_omit: bool) -> Resource:
    """A resource in whole units; with ``may_omit`` each dimension may be left out (cpu and
    memory at zero, a scalar missing), as a queue's ``spec.deserved`` leaves them out."""
    res = Resource()
    for name in DIMS:
        if may_omit and draw(st.booleans()):
            continue
        amount = draw(amounts)
        if name == "cpu":
            res.milli_cpu = amount
        elif name == "memory":
            res.memory = amount
        else:
            res.set_scalar(name, amount if name != "pods" else amount / 1000)
    return res


requests = resources(may_omit=True).filter(lambda r: not r.is_empty())


def asked(request: Resource) -> list[str]:
    return [n for n in request.resource_names() if n != "pods"]


@settings(max_examples=300, deadline=None)
@given(
    deserved=resources(may_omit=True),
    allocated=resources(may_omit=False),
    request=requests,
    noise=resources(may_omit=False),
)
def test_what_a_deserved_share_does_not_name_never_changes_a_verdict(
    deserved: Resource, allocated: Resource, request: Resource, noise: Resource
) -> None:
    dims = asked(request)
    before = share(allocated, deserved)
    # Move every dimension the share does not name, in the allocation and in the request.
    unnamed = [n for n in DIMS if n not in compared_dimensions(before, list(DIMS))]
    moved_alloc, moved_req = allocated.clone(), request.clone()
    for name in unnamed:
        for target in (moved_alloc, moved_req):
            value = target.get(name) + noise.get(name)
            if name == "cpu":
                target.milli_cpu = value
            elif name == "memory":
                target.memory = value
            else:
                target.set_scalar(name, value)
    after = share(moved_alloc, deserved)
    if compared_dimensions(before, dims):  # whatever is added elsewhere, the named part decides
        assert within_share(before, request, dims) == within_share(after, moved_req, dims)
        assert keeps_share(before, request, dims) == keeps_share(after, moved_req, dims)
        assert lends_beyond_share(before, dims) == lends_beyond_share(after, dims)


@settings(max_examples=400, deadline=None)
@given(
    p_deserved=resources(may_omit=True),
    p_allocated=resources(may_omit=False),
    v_deserved=resources(may_omit=True),
    v_allocated=resources(may_omit=False),
    moved=requests,
)
def test_what_one_reclaim_moves_the_next_cannot_move_back(
    p_deserved: Resource,
    p_allocated: Resource,
    v_deserved: Resource,
    v_allocated: Resource,
    moved: Resource,
) -> None:
    """A pod of ``moved``'s size goes from the victim's queue to the preemptor's under the
    live rules; a pod of the same size in the victim's queue can then never take it back
    (both demands unchanged): no eviction ping-pong, however the two shares name their
    dimensions."""
    dims = asked(moved)
    preemptor, victim = share(p_allocated, p_deserved), share(v_allocated, v_deserved)
    if not (
        within_share(preemptor, moved, dims)
        and lends_beyond_share(victim, dims)
        and keeps_share(victim, moved, dims)
    ):
        return
    preemptor_after = share(p_allocated.clone().add(moved), p_deserved)
    victim_after = share(v_allocated.clone().sub_without_assert(moved), v_deserved)
    back = (
        within_share(victim_after, moved, dims)
        and lends_beyond_share(preemptor_after, dims)
        and keeps_share(preemptor_after, moved, dims)
    )
    assert not back
