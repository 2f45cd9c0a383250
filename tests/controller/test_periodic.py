"""The background loops' thread: how long it pauses after a pass, and a stop that wakes it."""

from __future__ import annotations

import threading

import pytest
from hypothesis import given
from hypothesis import strategies as st

from scheduler_core.controller.periodic import Periodic, pause_after


@pytest.mark.parametrize(
    ("interval", "took", "max_share", "pause"),
    [
        (1.0, 0.1, 0.25, 1.0),  # a short pass: the interval
        (1.0, 0.5, None, 1.0),  # no share asked for: always the interval
        (1.0, 1.0, 0.25, 3.0),  # a 1 s pass takes a quarter of the next 4 s
        (1.0, 2.3, 0.25, 6.9),
        (2.0, 0.5, 0.5, 2.0),
        (1.0, 0.0, 0.25, 1.0),
    ],
)
def test_a_long_pass_is_followed_by_a_longer_pause(
    interval: float, took: float, max_share: float | None, pause: float
) -> None:
    assert pause_after(interval, took, max_share) == pytest.approx(pause)


@given(
    interval=st.floats(0.01, 10),
    took=st.floats(0, 100),
    max_share=st.floats(0.01, 1),
)
def test_passes_never_take_more_than_their_share_of_the_time(
    interval: float, took: float, max_share: float
) -> None:
    pause = pause_after(interval, took, max_share)
    assert pause >= interval
    assert took <= max_share * (took + pause) + 1e-9


@pytest.mark.parametrize("max_share", [0.0, -0.5, 1.5])
def test_a_share_outside_zero_to_one_is_refused(max_share: float) -> None:
    with pytest.raises(ValueError, match="max_share"):
        Periodic("p", 1.0, lambda: None, what="pass", max_share=max_share)


def test_the_pause_after_a_pass_follows_its_duration_and_stop_ends_the_wait() -> None:
    ran = threading.Event()
    readings = iter([0.0, 10.0])  # the pass starts at 0 and ends at 10 s
    loop = Periodic(
        "p", 0.01, ran.set, what="pass", max_share=0.5, clock=lambda: next(readings, 20.0)
    )
    loop.start()
    assert ran.wait(5)
    loop.stop(timeout=5)  # wakes the 10 s pause at once
    assert loop.pause == pytest.approx(10.0)  # a 10 s pass at half a core: 10 s of pause
    assert loop._thread is not None and not loop._thread.is_alive()
