"""The task status classes: each is the bitwise test of Volcano's flags, for any status."""

from __future__ import annotations

import itertools
from collections.abc import Callable

import pytest

from scheduler_core.api.types import (
    TaskStatus,
    allocated_status,
    completed_status,
    preemptable_status,
    ready_status,
    scheduled_status,
    valid_status,
)

ALLOCATED = {TaskStatus.BOUND, TaskStatus.BINDING, TaskStatus.RUNNING, TaskStatus.ALLOCATED}
CLASSES: list[tuple[Callable[[TaskStatus], bool], set[TaskStatus]]] = [
    (allocated_status, ALLOCATED),
    (preemptable_status, {TaskStatus.BOUND, TaskStatus.RUNNING}),
    (completed_status, {TaskStatus.FAILED, TaskStatus.SUCCEEDED}),
    (
        scheduled_status,
        {TaskStatus.RUNNING, TaskStatus.BOUND, TaskStatus.FAILED, TaskStatus.SUCCEEDED},
    ),
    (ready_status, ALLOCATED | {TaskStatus.SUCCEEDED}),
    (valid_status, ALLOCATED | {TaskStatus.SUCCEEDED, TaskStatus.PIPELINED, TaskStatus.PENDING}),
]


@pytest.mark.parametrize(("test", "members"), CLASSES)
def test_a_status_class_holds_exactly_its_statuses(
    test: Callable[[TaskStatus], bool], members: set[TaskStatus]
) -> None:
    for status in TaskStatus:
        assert test(status) is (status in members), status


@pytest.mark.parametrize(("test", "members"), CLASSES)
def test_a_combined_flag_is_in_a_class_when_any_of_its_statuses_is(
    test: Callable[[TaskStatus], bool], members: set[TaskStatus]
) -> None:
    for a, b in itertools.combinations(TaskStatus, 2):
        assert test(a | b) is (a in members or b in members), (a, b)
