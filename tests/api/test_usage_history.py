"""UsageHistory: the decayed integral of what each queue held, and its persisted record."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from scheduler_core.api.resource import Resource
from scheduler_core.api.usage_history import (
    UsageHistory,
    UsageRecord,
    UsageRecordError,
    accrual,
    advanced,
    decay,
    decode_record,
    encode_record,
)

H = 100.0


class Clocks:
    def __init__(self) -> None:
        self.mono = 0.0
        self.server = 1_800_000_000.0

    def history(self, half_life: float = H) -> UsageHistory:
        return UsageHistory(half_life, monotonic=lambda: self.mono, server_now=lambda: self.server)

    def wait(self, seconds: float) -> None:
        self.mono += seconds
        self.server += seconds


def cpu(milli: float) -> Resource:
    return Resource(milli, 0.0)


def usage_now(history: UsageHistory, clocks: Clocks, queue: str) -> dict[str, float]:
    clocks.wait(1.0)  # past the refresh interval, so the reading is taken again
    clocks.wait(-1.0)
    record = history.export(queue)
    return dict(record.usage) if record is not None else {}


@pytest.mark.parametrize(
    ("held_for", "then_idle", "expected"),
    [
        # holding 1000m for one half-life: h/ln2 * (1 - 1/2) * 1000
        (H, 0.0, 1000 * H / math.log(2) * 0.5),
        # ... and then nothing for one more half-life: half of that is left
        (H, H, 1000 * H / math.log(2) * 0.25),
        # holding for very long tends to the steady state 1000 * h / ln 2
        (50 * H, 0.0, 1000 * H / math.log(2)),
    ],
)
def test_usage_is_the_decayed_integral_of_what_was_held(
    held_for: float, then_idle: float, expected: float
) -> None:
    clocks = Clocks()
    history = clocks.history()
    history.held("q", cpu(1000))
    clocks.wait(held_for)
    history.held("q", Resource.empty())
    clocks.wait(then_idle)
    assert usage_now(history, clocks, "q")["cpu"] == pytest.approx(expected, rel=1e-9)


def test_every_dimension_counts_but_pod_slots() -> None:
    clocks = Clocks()
    history = clocks.history()
    held = Resource(1000, 2048)
    held.set_scalar("nvidia.com/gpu", 2000)
    held.set_scalar("pods", 3)
    history.held("q", held)
    clocks.wait(H)
    assert set(usage_now(history, clocks, "q")) == {"cpu", "memory", "nvidia.com/gpu"}


@given(steps=st.lists(st.tuples(st.floats(0, 1e4), st.floats(0.1, 500)), min_size=1, max_size=8))
def test_piecewise_advance_equals_one_advance_per_constant_stretch(
    steps: list[tuple[float, float]],
) -> None:
    """Splitting a stretch of constant holding into pieces changes nothing: the sum is the
    integral, not a sample."""
    whole: dict[str, float] = {}
    pieces: dict[str, float] = {}
    for held, elapsed in steps:
        whole = advanced(whole, {"cpu": held}, elapsed, H)
        pieces = advanced(pieces, {"cpu": held}, elapsed / 2, H)
        pieces = advanced(pieces, {"cpu": held}, elapsed / 2, H)
    assert pieces.get("cpu", 0.0) == pytest.approx(whole.get("cpu", 0.0), rel=1e-9, abs=1e-9)


def test_a_step_of_the_wall_clock_mints_nothing() -> None:
    """Within the process time is the monotonic clock: the server clock jumping a day ahead
    changes no usage."""
    clocks = Clocks()
    history = clocks.history()
    history.held("q", cpu(1000))
    clocks.mono += 10
    clocks.server += 86400
    history.held("q", Resource.empty())
    assert usage_now(history, clocks, "q")["cpu"] == pytest.approx(1000 * accrual(10, H))


def test_restore_decays_over_the_gap_and_adds_to_what_was_measured_since() -> None:
    clocks = Clocks()
    stored = UsageRecord(clocks.server - H, H, {"cpu": 800.0})
    history = clocks.history()
    history.held("q", cpu(1000))  # a pod seen before the Queue object
    clocks.wait(5)
    assert history.restore("q", stored)
    # a later record (another replica's copy of the same accrual) is not added again
    assert not history.restore("q", UsageRecord(clocks.server, H, {"cpu": 1e9}))
    history.held("q", Resource.empty())
    # stamped H before the start, taken up 5 s after it
    expected = 800.0 * decay(H + 5, H) + 1000 * accrual(5, H)
    assert usage_now(history, clocks, "q")["cpu"] == pytest.approx(expected)


def test_a_record_stamped_in_the_future_is_not_grown() -> None:
    clocks = Clocks()
    history = clocks.history()
    history.restore("q", UsageRecord(clocks.server + 3600, H, {"cpu": 800.0}))
    assert usage_now(history, clocks, "q") == {"cpu": 800.0}


def test_a_changed_half_life_rewrites_no_history() -> None:
    clocks = Clocks()
    history = clocks.history()
    history.held("q", cpu(1000))
    clocks.wait(H)
    history.configure(2 * H)
    history.held("q", Resource.empty())
    assert usage_now(history, clocks, "q")["cpu"] == pytest.approx(1000 * accrual(H, H))
    with pytest.raises(ValueError, match="positive"):
        history.configure(0)


def test_reading_is_taken_again_only_after_the_refresh_interval() -> None:
    clocks = Clocks()
    history = clocks.history()
    history.held("q", cpu(1000))
    clocks.wait(0.5)
    first = history.reading()
    clocks.wait(0.5)  # refresh is H/100 = 1 s
    assert history.reading() is first
    clocks.wait(1.0)
    assert history.reading().of("q")["cpu"] > first.of("q")["cpu"]


def test_record_round_trips_through_its_annotation_text() -> None:
    record = UsageRecord(1_800_000_000.25, 604800.0, {"cpu": 12.5, "nvidia.com/gpu": 3.0})
    text = encode_record(record)
    assert json.loads(text)["at"] == "2027-01-15T08:00:00.250000Z"
    assert decode_record(text) == record


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("{", "not JSON"),
        ("[]", "not a JSON object"),
        ('{"at":"2027-01-15T08:00:00Z","halfLife":60,"usage":{},"x":1}', "unknown field"),
        ('{"at":"yesterday","halfLife":60,"usage":{}}', "RFC 3339"),
        ('{"at":"2027-01-15T08:00:00","halfLife":60,"usage":{}}', "no time zone"),
        ('{"at":"2027-01-15T08:00:00Z","halfLife":0,"usage":{}}', "halfLife"),
        ('{"at":"2027-01-15T08:00:00Z","halfLife":60,"usage":[]}', "'usage' must be"),
        ('{"at":"2027-01-15T08:00:00Z","halfLife":60,"usage":{"cpu":-1}}', "cpu"),
        ('{"at":"2027-01-15T08:00:00Z","halfLife":60,"usage":{"cpu":"lots"}}', "cpu"),
    ],
)
def test_a_corrupt_record_is_refused_with_what_is_wrong(text: str, reason: str) -> None:
    with pytest.raises(UsageRecordError, match=reason):
        decode_record(text)
