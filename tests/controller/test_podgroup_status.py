"""The PodGroup phase and condition machine, table-driven from Volcano's jobStatus rules."""

from __future__ import annotations

import pytest

from scheduler_core.controller.podgroup_status import (
    COMPLETED,
    INQUEUE,
    NOT_ENOUGH_RESOURCES,
    PENDING,
    RUNNING,
    SCHEDULED,
    UNKNOWN,
    UNSCHEDULABLE,
    Hold,
    PodGroupFacts,
    next_conditions,
    next_phase,
    next_status,
)

HOLD = Hold(NOT_ENOUGH_RESOURCES, "1/3 tasks in gang unschedulable: queue q1 is full")


def facts(
    *,
    min_member: int = 3,
    scheduled: int = 0,
    running: int = 0,
    succeeded: int = 0,
    failed: int = 0,
    ready: bool = False,
    admitted: bool = False,
    hold: Hold | None = None,
) -> PodGroupFacts:
    return PodGroupFacts(min_member, scheduled, running, succeeded, failed, ready, admitted, hold)


@pytest.mark.parametrize(
    ("current", "f", "expected"),
    [
        # not admitted, nothing scheduled: stays Pending
        (PENDING, facts(), PENDING),
        # enqueue's gate lets it in
        (PENDING, facts(admitted=True), INQUEUE),
        # Inqueue is never taken back by the status updater while below minMember
        (INQUEUE, facts(admitted=False), INQUEUE),
        # minMember scheduled and running
        (INQUEUE, facts(scheduled=3, running=3, ready=True), RUNNING),
        (PENDING, facts(scheduled=4, running=4, ready=True), RUNNING),
        # some finished, others still running: Running
        (RUNNING, facts(scheduled=3, running=1, succeeded=2, ready=True), RUNNING),
        # every scheduled member finished: Completed (failed ones count as finished)
        (RUNNING, facts(scheduled=3, succeeded=3, ready=True), COMPLETED),
        (RUNNING, facts(scheduled=3, succeeded=2, failed=1, ready=True), COMPLETED),
        # running members while the gang is held below minMember: Unknown
        (RUNNING, facts(scheduled=1, running=1, hold=HOLD), UNKNOWN),
        # fell below minMember without running members: back to Pending (not Inqueue)
        (RUNNING, facts(scheduled=1), PENDING),
        # a gang of one with nothing at all is not Running
        (PENDING, facts(min_member=0), PENDING),
    ],
)
def test_phase_follows_volcanos_job_status(current: str, f: PodGroupFacts, expected: str) -> None:
    assert next_phase(current, f) == expected


def test_a_held_gang_gets_unschedulable_with_the_rule_and_keeps_its_transition_time() -> None:
    first = next_conditions([], facts(hold=HOLD), "2025-01-01T00:00:00Z")
    assert first == [
        {
            "type": UNSCHEDULABLE,
            "status": "True",
            "lastTransitionTime": "2025-01-01T00:00:00Z",
            "reason": NOT_ENOUGH_RESOURCES,
            "message": HOLD.message,
        }
    ]
    again = next_conditions(first, facts(hold=HOLD), "2025-01-01T00:05:00Z")
    assert again == first  # nothing changed: the time stays


def test_a_new_message_is_a_new_transition() -> None:
    first = next_conditions([], facts(hold=HOLD), "t1")
    other = Hold(NOT_ENOUGH_RESOURCES, "2/3 tasks in gang unschedulable: queue q1 is full")
    [cond] = next_conditions(first, facts(hold=other), "t2")
    assert (cond["lastTransitionTime"], cond["message"]) == ("t2", other.message)


def test_a_ready_gang_is_scheduled_and_no_longer_unschedulable() -> None:
    held = next_conditions([], facts(hold=HOLD), "t1")
    conds = next_conditions(held, facts(scheduled=3, running=3, ready=True), "t2")
    by_type = {c["type"]: c for c in conds}
    assert by_type[UNSCHEDULABLE]["status"] == "False"
    assert by_type[SCHEDULED]["status"] == "True"
    assert by_type[SCHEDULED]["lastTransitionTime"] == "t2"


def test_conditions_of_other_types_are_kept_untouched() -> None:
    foreign = {"type": "Custom", "status": "True", "lastTransitionTime": "t0", "reason": "X"}
    conds = next_conditions([foreign], facts(hold=HOLD), "t1")
    assert conds[0] == foreign


def test_status_counts_and_foreign_fields() -> None:
    current = {"phase": INQUEUE, "minMember": 3, "extra": "kept"}
    status = next_status(current, facts(scheduled=3, running=2, succeeded=1, ready=True), "t")
    assert status["phase"] == RUNNING
    assert (status["running"], status["succeeded"]) == (2, 1)
    assert "failed" not in status  # zero and never set: not written
    assert status["extra"] == "kept"


def test_an_unchanged_status_is_equal_so_nothing_is_written() -> None:
    f = facts(scheduled=3, running=3, ready=True)
    once = next_status({}, f, "t1")
    assert next_status(once, f, "t2") == once
