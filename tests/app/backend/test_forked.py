"""A computation run in a forked child: its value or its exception comes back, the child
runs at the lowest priority in a process of its own, and a child that dies is an error."""

from __future__ import annotations

import os

import pytest

from app.backend.forked import ForkedFailure, run_forked
from scheduler_core.insight.whatif import WhatIfError


def test_the_value_comes_back_from_another_process() -> None:
    assert run_forked(lambda: (os.getpid(), [1, {"a": 2}])) != (os.getpid(), [1, {"a": 2}])
    pid, value = run_forked(lambda: (os.getpid(), [1, {"a": 2}]))
    assert pid != os.getpid() and value == [1, {"a": 2}]


def test_the_child_runs_at_the_lowest_priority() -> None:
    assert run_forked(lambda: os.nice(0)) == 19


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
