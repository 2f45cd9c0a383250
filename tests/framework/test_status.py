"""Status: which codes leave room for eviction, and how a verdict reads to a person."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given
from hypothesis import strategies as st

from scheduler_core.framework.status import SUCCESS, Code, Status, unschedulable

# code -> (is_success, resolvable, not_evaluable)
CODES: list[tuple[Code, bool, bool, bool]] = [
    (Code.SUCCESS, True, False, False),
    (Code.UNSCHEDULABLE, False, True, False),
    (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, False, False, False),
    (Code.ERROR, False, False, False),
    (Code.SKIP, False, False, False),
    (Code.WAIT, False, False, False),
    (Code.NOT_EVALUABLE, False, False, True),
]


def test_the_table_names_every_code() -> None:
    assert {row[0] for row in CODES} == set(Code)


@pytest.mark.parametrize(("code", "success", "resolvable", "not_evaluable"), CODES)
def test_only_plain_unschedulable_leaves_room_for_eviction(
    code: Code, success: bool, resolvable: bool, not_evaluable: bool
) -> None:
    status = Status(code, ["why"])
    assert (status.is_success, status.resolvable, status.not_evaluable) == (
        success,
        resolvable,
        not_evaluable,
    )


@pytest.mark.parametrize(
    ("status", "message", "text"),
    [
        (Status(Code.UNSCHEDULABLE, ["a", "b"]), "a, b", "a, b"),
        (Status(Code.ERROR), "", "Error"),
        (
            Status(Code.UNSCHEDULABLE, ["Insufficient cpu"], task="ns/p", node="n1"),
            "Insufficient cpu",
            "task ns/p on node n1: Insufficient cpu",
        ),
        (SUCCESS, "", "Success"),
    ],
)
def test_message_is_the_reasons_in_one_line_and_str_falls_back_to_the_code(
    status: Status, message: str, text: str
) -> None:
    assert (status.message, str(status)) == (message, text)


@given(
    reason=st.text(), code=st.sampled_from(["queue-overused", "queue-closed"]), may=st.booleans()
)
def test_an_extender_rejection_keeps_its_reason_exactly_and_its_metric_code(
    reason: str, code: str, may: bool
) -> None:
    status = unschedulable(code, reason, resolvable=may)
    assert (status.message, status.reason_code, status.resolvable) == (reason, code, may)
    assert not status.is_success


def test_a_status_cannot_be_changed_once_made() -> None:
    status = Status(Code.UNSCHEDULABLE, ["why"])
    with pytest.raises(dataclasses.FrozenInstanceError):
        status.code = Code.SUCCESS  # type: ignore[misc]
