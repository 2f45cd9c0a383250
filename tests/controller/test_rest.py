"""The REST client's eviction-grade write (one deadline, no hidden retries, sent or not) and
the API server's clock read from the ``Date`` header."""

from __future__ import annotations

from datetime import UTC, datetime
from email.utils import format_datetime, parsedate_to_datetime
from typing import Any

import pytest
import urllib3
from hypothesis import given
from hypothesis import strategies as st
from prometheus_client import CollectorRegistry

from scheduler_core.controller.eviction import EvictionResult, evict
from scheduler_core.controller.rest import ApiError, RestClient, ServerClock


class Response:
    def __init__(self, status: int, data: bytes = b"{}", date: str | None = None) -> None:
        self.status = status
        self.reason = "reason"
        self.data = data
        self.headers = {"Date": date} if date else {}


class Pool:
    """A urllib3 pool manager answering one canned response or raising one error."""

    def __init__(self, answer: Response | BaseException) -> None:
        self.answer = answer
        self.calls: list[dict[str, Any]] = []

    def request(self, method: str, url: str, **kwargs: Any) -> Response:
        self.calls.append({"method": method, "url": url, **kwargs})
        if isinstance(self.answer, BaseException):
            raise self.answer
        return self.answer


class ApiClient:
    def __init__(self, pool: Pool) -> None:
        self.rest_client = type("R", (), {"pool_manager": pool})()

    def param_serialize(self, method: str, path: str, **kwargs: Any) -> tuple[Any, ...]:
        query = "&".join(f"{k}={v}" for k, v in kwargs.get("query_params") or [])
        return method, f"https://api{path}?{query}", kwargs["header_params"], None, None


def client(answer: Response | BaseException, wall: float = 1000.0) -> tuple[RestClient, Pool]:
    pool = Pool(answer)
    return RestClient(ApiClient(pool), CollectorRegistry(), wall=lambda: wall), pool


def test_the_deadline_bounds_the_whole_request_and_is_told_to_the_server() -> None:
    rest, pool = client(Response(201))
    rest.post_within("/api/v1/namespaces/ns/pods/p/eviction", {"kind": "Eviction"}, "x", 2.5)
    [call] = pool.calls
    assert call["retries"] is False
    assert call["timeout"].total == 2.5
    assert call["url"].endswith("?timeout=2500ms")


@pytest.mark.parametrize("deadline", [0.0, -1.0, float("nan")])
def test_a_request_without_a_positive_deadline_is_refused(deadline: float) -> None:
    rest, pool = client(Response(201))
    with pytest.raises(ValueError):
        rest.post_within("/x", {}, "x", deadline)
    assert pool.calls == []


def connect_failure() -> BaseException:
    return urllib3.exceptions.NewConnectionError(None, "refused")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("answer", "result"),
    [
        (Response(201), EvictionResult.OK),
        (Response(429, b'{"message": "budget"}'), EvictionResult.PDB),
        (Response(404), EvictionResult.GONE),
        (Response(409), EvictionResult.GONE),
        (Response(403), EvictionResult.ERROR),
        (Response(500), EvictionResult.UNKNOWN),
        (Response(504), EvictionResult.UNKNOWN),
        (urllib3.exceptions.ReadTimeoutError(None, "/x", "timed out"), EvictionResult.UNKNOWN),  # type: ignore[arg-type]
        (urllib3.exceptions.ProtocolError("connection broken"), EvictionResult.UNKNOWN),
        (connect_failure(), EvictionResult.NOT_SENT),
        (urllib3.exceptions.ConnectTimeoutError("connect timed out"), EvictionResult.NOT_SENT),
    ],
)
def test_an_eviction_is_done_refused_unknown_or_never_sent(
    answer: Response | BaseException, result: EvictionResult
) -> None:
    rest, _ = client(answer)
    assert evict(rest, "ns", "p", "uid", deadline=3.0) is result


def test_only_a_request_that_never_left_is_marked_unsent() -> None:
    rest, _ = client(connect_failure())
    with pytest.raises(ApiError) as refused:
        rest.post_within("/x", {}, "x", 1.0)
    assert not refused.value.sent and not refused.value.ambiguous
    rest, _ = client(urllib3.exceptions.ProtocolError("reset"))
    with pytest.raises(ApiError) as broken:
        rest.post_within("/x", {}, "x", 1.0)
    assert broken.value.sent and broken.value.ambiguous


def test_the_servers_clock_is_read_from_the_date_header_of_an_answer() -> None:
    server = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)
    local = server.timestamp() - 120.0  # our clock is two minutes behind
    rest, _ = client(Response(201, date=format_datetime(server, usegmt=True)), wall=local)
    assert rest.clock.now() == local
    rest.post_within("/x", {}, "x", 1.0)
    assert rest.clock.offset == pytest.approx(120.5)
    assert rest.clock.now() == pytest.approx(server.timestamp() + 0.5)


@given(st.text(max_size=40))
def test_an_unreadable_date_header_changes_nothing(header: str) -> None:
    clock = ServerClock(CollectorRegistry(), wall=lambda: 5.0)
    try:
        parsed = parsedate_to_datetime(header)
    except (TypeError, ValueError, IndexError, OverflowError):
        parsed = None
    clock.observe(header, 5.0, 5.0)
    if parsed is None:
        assert clock.offset is None and clock.now() == 5.0


@given(
    offset=st.floats(-1e6, 1e6, allow_nan=False),
    rtt=st.floats(0.0, 10.0, allow_nan=False),
)
def test_the_offset_is_within_a_second_and_half_the_round_trip(offset: float, rtt: float) -> None:
    """Whenever in the round trip the server stamped its Date header, the learned offset
    differs from the true one by at most a second (the header's resolution) plus half the
    round trip."""
    sent = 1_700_000_000.0
    received = sent + rtt
    for at in (sent, (sent + received) / 2, received):
        true_server_time = at + offset
        header = format_datetime(datetime.fromtimestamp(int(true_server_time), UTC), usegmt=True)
        clock = ServerClock(CollectorRegistry(), wall=lambda: received)
        clock.observe(header, sent, received)
        assert clock.offset is not None
        assert abs(clock.offset - offset) <= 1.0 + rtt / 2 + 1e-6
