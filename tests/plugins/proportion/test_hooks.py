"""proportion's hooks: the one-candidate shortcut of the deserved-share fit."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler_core.api.resource import Resource
from scheduler_core.api.task import TaskInfo
from scheduler_core.cache.convert import pod_to_task
from scheduler_core.plugins.fairshare.attrs import QueueAttr
from scheduler_core.plugins.proportion.hooks import _fits_deserved
from tests.api.test_resource_laws import resources
from tests.builders import pod


def _candidate(name: str, resreq: Resource) -> TaskInfo:
    task = pod_to_task(pod(name, cpu="1"))
    task.resreq = resreq
    return task


def _fits_by_the_sum(attr: QueueAttr, candidates: list[TaskInfo]) -> bool:
    """The full path: the candidates' requests summed into a fresh resource first."""
    total = Resource.empty()
    for task in candidates:
        total.add(task.resreq)
    future = attr.allocated.clone().add(total)
    return future.less_equal_with_dimension_and_resources_name(attr.deserved, total)[0]


@settings(max_examples=300, deadline=None, database=None)
@given(resources(), resources(), st.lists(resources(), min_size=1, max_size=3))
def test_the_deserved_fit_of_one_or_more_candidates_is_that_of_their_summed_request(
    allocated: Resource, deserved: Resource, requests: list[Resource]
) -> None:
    attr = QueueAttr(name="q", allocated=allocated, deserved=deserved)
    before = repr(allocated)
    candidates = [_candidate(f"c{i}", r) for i, r in enumerate(requests)]
    assert _fits_deserved("q", attr, candidates) == _fits_by_the_sum(attr, candidates)
    assert repr(attr.allocated) == before  # judged on a copy
