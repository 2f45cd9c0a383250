"""A computation run in a forked child: its value or its exception comes back, the child
runs at a low priority in a process of its own, first to go when memory runs out, and a
child that dies or runs past its deadline is an error; a lock held across the fork is free
in the child."""

from __future__ import annotations

import os
import pickle
import threading
import time

import pytest

from scheduler_core.controller.forked import ForkedFailure, run_forked
from scheduler_core.insight.whatif import WhatIfError


def test_the_value_comes_back_from_another_process() -> None:
    assert run_forked(lambda: (os.getpid(), [1, {"a": 2}])) != (os.getpid(), [1, {"a": 2}])
    pid, value = run_forked(lambda: (os.getpid(), [1, {"a": 2}]))
    assert pid != os.getpid() and value == [1, {"a": 2}]


def test_the_child_runs_at_the_lowest_priority() -> None:
    assert run_forked(lambda: os.nice(0)) == 19


def test_the_child_runs_at_the_priority_asked_and_is_the_first_to_go_out_of_memory() -> None:
    def read_adj() -> str:
        with open("/proc/self/oom_score_adj") as adj:
            return adj.read().strip()

    assert run_forked(lambda: os.nice(0), niceness=10) == 10
    assert run_forked(read_adj) == "1000"


def test_a_child_past_its_deadline_is_stopped_and_is_an_error() -> None:
    with pytest.raises(ForkedFailure, match=r"no answer within 0\.3s"):
        run_forked(lambda: time.sleep(30), timeout=0.3)


def test_a_lock_held_across_the_fork_is_free_in_the_child_and_in_the_parent() -> None:
    """Without it the child would find taken for ever a lock that another thread held
    at the moment of the fork: here that thread holds it until the fork may proceed."""
    lock = threading.Lock()
    taken = threading.Event()

    def hold_a_while() -> None:
        with lock:
            taken.set()
            time.sleep(0.2)

    holder = threading.Thread(target=hold_a_while)
    holder.start()
    taken.wait()

    def take_it() -> bool:
        return lock.acquire(timeout=2)

    try:
        assert run_forked(take_it, hold=[lock], timeout=10) is True
    finally:
        holder.join()
    assert not lock.locked()


def test_the_value_crosses_by_the_callers_own_pickling() -> None:
    sent: list[bytes] = []

    def dumps(value: object) -> bytes:
        return pickle.dumps(value)

    def loads(data: bytes) -> object:
        sent.append(data)
        return pickle.loads(data)

    assert run_forked(lambda: {"a": 1}, dumps=dumps, loads=loads) == {"a": 1}
    assert len(sent) == 1


def test_the_exception_is_raised_in_the_caller() -> None:
    def refuse() -> None:
        raise WhatIfError("too much work: 9 (pending pods x nodes; at most 1)")

    with pytest.raises(WhatIfError, match="too much work"):
        run_forked(refuse)


def test_a_child_that_dies_without_an_answer_is_an_error() -> None:
    with pytest.raises(ForkedFailure):
        run_forked(lambda: os._exit(3))


def test_the_parent_state_is_never_changed_by_the_child() -> None:
    held = {"n": 1}

    def change() -> int:
        held["n"] = 2
        return held["n"]

    assert run_forked(change) == 2 and held == {"n": 1}


def test_the_child_holds_no_copy_of_the_parents_sockets() -> None:
    """A connection the parent closes must close for its peer at once, not when the child
    ends: the child keeps only its pipe and stdio."""
    import socket

    left, right = socket.socketpair()
    with left, right:

        def is_open() -> bool:
            try:
                os.fstat(left.fileno())
            except OSError:
                return False
            return True

        assert is_open()
        assert run_forked(is_open) is False
