"""The queue record's share arithmetic."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler_core.api.resource import MIN_RESOURCE, Resource, share
from scheduler_core.plugins.fairshare.attrs import QueueAttr, proportion_share
from tests.api.test_resource_laws import resources


def _share_by_dimension(attr: QueueAttr) -> float:
    """The share as Volcano's helpers work it out: ``max`` of ``Share`` over the deserved
    dimensions of at least the epsilon."""
    deserved, allocated = attr.deserved, attr.allocated
    result = 0.0
    if deserved.milli_cpu >= MIN_RESOURCE:
        result = share(allocated.milli_cpu, deserved.milli_cpu)
    if deserved.memory >= MIN_RESOURCE:
        result = max(result, share(allocated.memory, deserved.memory))
    for name, quant in (deserved.scalars or {}).items():
        if quant >= MIN_RESOURCE:
            result = max(result, share((allocated.scalars or {}).get(name, 0.0), quant))
    return result


tiny = st.sampled_from([0.0, 0.05, MIN_RESOURCE, 0.5]).map(lambda a: Resource(a, a, {"x": a}))


@settings(max_examples=300, deadline=None, database=None)
@given(resources(), st.one_of(resources(), tiny))
def test_proportion_share_is_the_largest_share_of_a_deserved_dimension(
    allocated: Resource, deserved: Resource
) -> None:
    attr = QueueAttr(name="q", allocated=allocated, deserved=deserved)
    assert proportion_share(attr) == _share_by_dimension(attr)
