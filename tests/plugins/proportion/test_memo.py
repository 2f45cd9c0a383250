"""proportion reuses its last deserved loop when only requests the loop never reached moved.

The reuse must be invisible: whatever the queues, weights, caps, guarantees and request
change, the deserved shares taken from the memo equal those of running the loop afresh.
"""

from __future__ import annotations

import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

from scheduler_core.api.resource import Resource
from scheduler_core.plugins import proportion
from scheduler_core.plugins.fairshare.attrs import QueueAttr
from scheduler_core.plugins.proportion import ProportionMemo, deserved_shares, water_fill

GPU = "nvidia.com/gpu"


def res(cpu: float, mem: float, gpu: float = 0.0) -> Resource:
    r = Resource(cpu, mem)
    if gpu:
        r.set_scalar(GPU, gpu)
    return r


def key(r: Resource) -> tuple[float, float, tuple[tuple[str, float], ...]]:
    return r.milli_cpu, r.memory, tuple(sorted((r.scalars or {}).items()))


amount = st.sampled_from([0.0, 500.0, 1000.0, 2500.0, 4000.0, 8000.0, 16000.0, 40000.0])
requests = st.builds(res, amount, amount, st.sampled_from([0.0, 0.0, 1000.0, 4000.0]))


@st.composite
def queues(draw: st.DrawFn) -> list[QueueAttr]:
    out = []
    for i in range(draw(st.integers(1, 6))):
        cap = draw(st.one_of(st.none(), requests))
        out.append(
            QueueAttr(
                name=f"q{i}",
                weight=draw(st.integers(1, 10)),
                request=draw(requests),
                real_capability=cap if cap is not None else res(1e12, 1e12, 1e12),
                guarantee=draw(st.one_of(st.just(Resource.empty()), requests)),
            )
        )
    return out


def copy_with(attrs: list[QueueAttr], changed: int, request: Resource) -> dict[str, QueueAttr]:
    out = {}
    for i, a in enumerate(attrs):
        out[a.name] = QueueAttr(
            name=a.name,
            weight=a.weight,
            request=request.clone() if i == changed else a.request.clone(),
            real_capability=a.real_capability.clone(),
            guarantee=a.guarantee.clone(),
        )
    return out


@settings(max_examples=400, deadline=None)
@given(
    attrs=queues(),
    total=st.builds(res, amount, amount, st.sampled_from([0.0, 2000.0, 8000.0])),
    which=st.integers(0, 5),
    delta=requests,
    grow=st.booleans(),
)
def test_deserved_from_the_memo_equals_the_loop_run_afresh(
    attrs: list[QueueAttr], total: Resource, which: int, delta: Resource, grow: bool
) -> None:
    memo = ProportionMemo()
    changed = which % len(attrs)
    deserved_shares(copy_with(attrs, -1, Resource.empty()), total, memo)
    before = memo.last_fill
    new_request = attrs[changed].request.clone()
    if grow:
        new_request.add(delta)
    else:
        new_request.sub_without_assert(delta)
        for name in new_request.resource_names():
            if new_request.get(name) < 0:
                new_request = attrs[changed].request.clone()
                break
    moved = copy_with(attrs, changed, new_request)
    deserved_shares(moved, total, memo)
    event("memo reused" if memo.last_fill is before else "loop ran")
    fresh = copy_with(attrs, changed, new_request)
    water_fill(fresh, total)
    for name, attr in fresh.items():
        assert key(moved[name].deserved) == key(attr.deserved), name
        assert moved[name].share == attr.share, name


def test_a_new_pod_in_a_backlogged_queue_reuses_the_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    """q0 asks for far more than its share: one more pending pod cannot move any share."""

    def attrs(extra_cpu: float) -> dict[str, QueueAttr]:
        big = res(1e12, 1e12)
        return {
            "q0": QueueAttr("q0", 1, request=res(40000 + extra_cpu, 8000), real_capability=big),
            "q1": QueueAttr("q1", 1, request=res(2000, 2000), real_capability=big),
        }

    memo = ProportionMemo()
    first = attrs(0)
    deserved_shares(first, res(10000, 10000), memo)

    def no_loop(*_: object, **__: object) -> None:
        raise AssertionError("the deserved loop ran again")

    monkeypatch.setattr(proportion.memo, "water_fill", no_loop)
    second = attrs(1000)
    deserved_shares(second, res(10000, 10000), memo)
    assert key(second["q0"].deserved) == key(first["q0"].deserved)


def test_a_request_the_loop_had_reached_runs_the_loop_again() -> None:
    """q1's request bound its deserved: one more pod of q1 raises q1's share."""

    def attrs(extra_cpu: float) -> dict[str, QueueAttr]:
        big = res(1e12, 1e12)
        return {
            "q0": QueueAttr("q0", 1, request=res(40000, 8000), real_capability=big),
            "q1": QueueAttr("q1", 1, request=res(2000 + extra_cpu, 2000), real_capability=big),
        }

    memo = ProportionMemo()
    first = attrs(0)
    deserved_shares(first, res(10000, 10000), memo)
    second = attrs(1000)
    deserved_shares(second, res(10000, 10000), memo)
    assert second["q1"].deserved.milli_cpu == first["q1"].deserved.milli_cpu + 1000


@settings(max_examples=200, deadline=None)
@given(attrs=queues(), total=st.builds(res, amount, amount, st.sampled_from([0.0, 8000.0])))
def test_the_passes_recorded_on_demand_end_at_the_shares_the_loop_gave(
    attrs: list[QueueAttr], total: Resource
) -> None:
    """The explain API's record is a replay of the loop on its inputs: each queue's last
    recorded step holds exactly the deserved share the session works with."""
    memo = ProportionMemo()
    opts = copy_with(attrs, -1, Resource.empty())
    record = deserved_shares(opts, total, memo)
    last_step = {step.queue: step for fill_round in record for step in fill_round.steps}
    for name, attr in opts.items():
        if name in last_step:
            assert key(last_step[name].deserved) == key(attr.deserved), name
    assert deserved_shares(copy_with(attrs, -1, Resource.empty()), total, memo) is record
