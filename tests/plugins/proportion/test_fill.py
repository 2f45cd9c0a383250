"""The deserved loop run quietly gives exactly what the loop written step by step gives.

``water_fill`` without a record or a trace takes a path with fewer intermediate objects
(``_fill_quietly``); the explain API's record and the V(4) trace take the step-by-step one
(``_fill_recorded``). Both must leave every queue with the same deserved share to the last
bit, scalar maps included (which keys, in which order, a missing map against an empty
one), and return the same remainder: the memo and the explain API read one or the other.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler_core.api.resource import Resource
from scheduler_core.plugins.fairshare.attrs import QueueAttr
from scheduler_core.plugins.proportion import water_fill
from scheduler_core.plugins.proportion.fill import _fill_quietly, _fill_recorded

SCALARS = ("nvidia.com/gpu", "pods", "hugepages-2Mi")

amount = st.sampled_from([0.0, 0.05, 500.0, 1000.0, 2500.0, 4000.0, 8000.0, 1e12])
scalar_amount = st.sampled_from([0.0, 0.05, 1.0, 3.0, 1000.0, 4000.0, 1e12])


@st.composite
def resources(draw: st.DrawFn, negative: bool = False) -> Resource:
    """A resource with no scalar map, an empty one, or some scalars (zero among them)."""
    kind = draw(st.sampled_from(["none", "empty", "some"]))
    scalars: dict[str, float] | None = None
    if kind == "empty":
        scalars = {}
    elif kind == "some":
        names = draw(st.lists(st.sampled_from(SCALARS), unique=True, max_size=3))
        values = scalar_amount | st.just(-1.0) if negative else scalar_amount
        scalars = {name: draw(values) for name in names}
    return Resource(draw(amount), draw(amount), scalars, draw(st.sampled_from([0, 0, 110])))


@st.composite
def queue_sets(draw: st.DrawFn) -> list[QueueAttr]:
    out = []
    for i in range(draw(st.integers(1, 7))):
        out.append(
            QueueAttr(
                name=f"q{i}",
                weight=draw(st.integers(0, 4)),
                request=draw(resources()),
                real_capability=draw(resources(negative=True)),
                guarantee=draw(resources(negative=True)),
                deserved=draw(resources(negative=True)),
            )
        )
    return out


def shape(r: Resource) -> tuple[float, float, int, list[tuple[str, float]] | None]:
    """Everything of a resource, scalar key order and a missing map included."""
    scalars = None if r.scalars is None else list(r.scalars.items())
    return r.milli_cpu, r.memory, r.max_task_num, scalars


def copies(attrs: list[QueueAttr]) -> dict[str, QueueAttr]:
    return {a.name: a.clone() for a in attrs}


@settings(max_examples=600, deadline=None)
@given(attrs=queue_sets(), total=resources())
def test_the_quiet_loop_gives_exactly_what_the_loop_step_by_step_gives(
    attrs: list[QueueAttr], total: Resource
) -> None:
    quiet, stepwise = copies(attrs), copies(attrs)
    left_quiet = _fill_quietly(quiet, total.clone())
    left_stepwise = _fill_recorded(stepwise, total.clone(), [], verbose=False)
    assert shape(left_quiet) == shape(left_stepwise)
    for name, attr in stepwise.items():
        assert shape(quiet[name].deserved) == shape(attr.deserved), name


@settings(max_examples=200, deadline=None)
@given(attrs=queue_sets(), total=resources())
def test_water_fill_with_a_record_leaves_the_shares_it_leaves_without(
    attrs: list[QueueAttr], total: Resource
) -> None:
    quiet, recorded = copies(attrs), copies(attrs)
    water_fill(quiet, total.clone())
    water_fill(recorded, total.clone(), [])
    for name, attr in recorded.items():
        assert shape(quiet[name].deserved) == shape(attr.deserved), name
        assert quiet[name].share == attr.share, name


def test_a_queue_capped_below_its_share_is_met_and_its_rest_goes_to_the_others() -> None:
    """The quiet path's own worked case: 12 CPUs, weights 1:1:1, q0 capped at 2."""
    attrs = {
        f"q{i}": QueueAttr(
            name=f"q{i}",
            weight=1,
            request=Resource(12000.0, 0.0),
            real_capability=Resource(2000.0 if i == 0 else 12000.0, 1e12),
        )
        for i in range(3)
    }
    left = water_fill(attrs, Resource(12000.0, 0.0))
    assert [a.deserved.milli_cpu for a in attrs.values()] == [2000.0, 5000.0, 5000.0]
    assert left.is_empty()
