"""No eviction loops: a long random churn over the engine, the loop's decision every step.

While demands stay the same (no arrival, completion or weight change in between), no cycle
may move capacity back the way an earlier one took it: if queue A reclaimed from queue B,
B never reclaims from A until demands change.
"""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler_core.api.resource import Resource
from scheduler_core.controller.decision import decide, live_configuration
from tests.builders import Obj, node, pod, queue, snapshot
from tests.controller.reclaim_world import World, reclaim_conf

LIVE = live_configuration(reclaim_conf())
STEPS = 1000


def reversals(seed: int) -> tuple[int, int]:
    """(flow reversals, evictions) over STEPS steps of churn."""
    rng = random.Random(seed)
    world = World(nodes=3, node_cpu=4, weights={"q0": 1, "q1": 2, "q2": 1})
    epoch = 0
    flows: set[tuple[str, str]] = set()  # (from, to) in this epoch
    reversed_flows = evictions = 0
    for _ in range(STEPS):
        if rng.random() < 0.3 and world.churn(rng):
            epoch += 1
            flows.clear()
        world.place()
        decision = world.reclaim(LIVE)
        for planned in decision.evictions:
            evictions += 1
            flow = (planned.victim_queue, planned.preemptor_queue)
            if (flow[1], flow[0]) in flows:
                reversed_flows += 1
            flows.add(flow)
    return reversed_flows, evictions


def test_no_cycle_reverses_an_earlier_flow_while_demands_are_unchanged() -> None:
    reversed_flows, evictions = reversals(seed=11)
    assert evictions > 20  # the churn does make the loop reclaim
    assert reversed_flows == 0


@st.composite
def clusters(draw: st.DrawFn) -> list[Obj]:
    sizes = draw(st.lists(st.integers(2, 6), min_size=1, max_size=4))
    objs: list[Obj] = [node(f"n{i}", cpu=str(c), memory=f"{c}Gi") for i, c in enumerate(sizes)]
    queues = [f"q{i}" for i in range(draw(st.integers(2, 3)))]
    objs += [queue(q, draw(st.integers(1, 3))) for q in queues]
    serial = 0
    for i, capacity in enumerate(sizes):
        free = capacity
        while free > 0 and draw(st.booleans()):
            cpu = draw(st.integers(1, free))
            serial += 1
            objs.append(
                pod(
                    f"r{serial}",
                    queue=draw(st.sampled_from(queues)),
                    cpu=str(cpu),
                    memory=f"{cpu}Gi",
                    node_name=f"n{i}",
                )
            )
            free -= cpu
    for _ in range(draw(st.integers(0, 6))):
        serial += 1
        cpu = draw(st.integers(1, 3))
        objs.append(
            pod(f"w{serial}", queue=draw(st.sampled_from(queues)), cpu=str(cpu), memory=f"{cpu}Gi")
        )
    return objs


@settings(max_examples=100, deadline=None)
@given(clusters())
def test_after_a_committed_reclaim_every_victim_queue_keeps_its_deserved_share(
    objs: list[Obj],
) -> None:
    decision = decide(snapshot(objs), LIVE)
    taken: dict[str, Resource] = {}
    dims: dict[str, set[str]] = {}
    for planned in decision.evictions:
        taken.setdefault(planned.victim_queue, Resource.empty()).add(planned.victim.resreq)
        assert planned.preemptor is not None
        share = decision.shares[planned.victim_queue]
        assert share is not None
        over = {
            n
            for n in ("cpu", "memory")
            if planned.preemptor.init_resreq.get(n) > 0
            and share.allocated.get(n) > share.deserved.get(n)
        }
        dims.setdefault(planned.victim_queue, set()).update(over)
    for name, resources in taken.items():
        share = decision.shares[name]
        assert share is not None
        assert dims[name], f"queue {name} was not above its share in anything reclaimed"
        for dim in dims[name]:
            after = share.allocated.get(dim) - resources.get(dim)
            assert after >= share.deserved.get(dim) - 1e-6, (name, dim, after)
