"""Memos belong to whoever opens sessions one after another, never to the process."""

from __future__ import annotations

from scheduler_core.conf import default_configuration
from scheduler_core.framework.framework import open_session
from scheduler_core.framework.memo import SessionMemos
from scheduler_core.plugins.proportion import MEMO_SLOT, ProportionMemo
from tests.builders import node, pod, podgroup, queue, snapshot


def test_a_slot_is_made_once_and_then_shared() -> None:
    memos = SessionMemos()
    first = memos.slot("x", list[int])
    first.append(1)
    assert memos.slot("x", list[int]) is first


def test_first_time_is_true_once_per_memos() -> None:
    one, other = SessionMemos(), SessionMemos()
    assert one.first_time("line")
    assert not one.first_time("line")
    assert other.first_time("line")


def test_sessions_of_one_owner_share_what_proportion_remembers_and_strangers_do_not() -> None:
    objects = [
        node("n1", "8", "8Gi"),
        queue("a", 1),
        podgroup("pa", queue="a"),
        pod("pa-0", group="pa", cpu="2"),
    ]
    owner = SessionMemos()
    first = open_session(snapshot(objects), default_configuration(), memos=owner)
    again = open_session(snapshot(objects), default_configuration(), memos=owner)
    stranger = open_session(snapshot(objects), default_configuration())
    remembered = owner.slot(MEMO_SLOT, ProportionMemo).last_fill
    assert remembered is not None
    assert stranger.memos.slot(MEMO_SLOT, ProportionMemo).last_fill is not remembered
    assert first.memos is again.memos is owner
