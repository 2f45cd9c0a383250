"""The queue a native group that names none takes from its members."""

from __future__ import annotations

import pytest

from scheduler_core.cache.member_queues import MemberQueues


@pytest.mark.parametrize(
    ("notes", "expected"),
    [
        ([], "fallback"),
        ([("ns/a", "team-a")], "team-a"),
        # Members disagree: the one whose key sorts first wins, whatever order they came in.
        ([("ns/b", "team-b"), ("ns/a", "team-a")], "team-a"),
        ([("ns/a", "team-a"), ("ns/b", "team-b")], "team-a"),
        # A member that stops naming a queue no longer counts.
        ([("ns/a", "team-a"), ("ns/b", "team-b"), ("ns/a", "")], "team-b"),
        ([("ns/a", "team-a"), ("ns/a", "")], "fallback"),
    ],
)
def test_a_group_takes_the_queue_its_first_member_by_key_names(
    notes: list[tuple[str, str]], expected: str
) -> None:
    members = MemberQueues()
    for pod_key, queue in notes:
        members.note("ns/group", pod_key, queue)
    assert members.resolved("ns/group", "fallback") == expected


def test_a_fork_changes_nothing_of_the_original() -> None:
    members = MemberQueues()
    members.note("ns/group", "ns/a", "team-a")
    fork = members.fork()
    fork.note("ns/group", "ns/a", "")
    fork.note("ns/group", "ns/0", "team-0")
    assert members.resolved("ns/group", "fallback") == "team-a"
    assert fork.resolved("ns/group", "fallback") == "team-0"
