"""Each queue's usage over time: what it held, integrated over time and decayed with a
half-life, per resource dimension.

The cache tells ``UsageHistory`` whenever what a queue holds changes (``held``, from the same
per-queue sums the sessions read, so a pod counts from the moment the cluster shows it bound
until it finishes or goes, and a pod the extender merely assumed never counts). Between two
changes the amount held is constant, so the decayed integral advances in closed form:

    U(t + dt) = U(t) * 2^(-dt/h) + H * (h / ln 2) * (1 - 2^(-dt/h))

where ``H`` is what was held over ``dt`` and ``h`` the half-life. The unit is amount x
seconds (milli-CPU seconds, byte seconds, device seconds). Nothing is sampled: a queue is
advanced only when its holding changes or when someone reads it.

Time within the process is the monotonic clock, so a step of the wall clock can neither
mint nor erase usage; a record that leaves the process (``export``) is stamped with the API
server's clock (``server_now``), and a record read back (``restore``) is decayed over the
time the API server says has passed since its stamp, never over a negative interval.
Usage is kept per queue whatever the queue's state: a closed queue whose pods still run
keeps accruing, because usage is measured from the pods, not from admissions.
"""

from __future__ import annotations

import json
import math
import threading
import time
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from types import MappingProxyType

from scheduler_core.api.resource import IGNORED_SCALARS, Resource

#: The shortest interval between two readings of the same history (a reading is what a
#: session sees; a reading per session would change every deserved share a little on every
#: session and defeat proportion's memo of its last loop).
MIN_REFRESH = 0.05
#: The longest interval between two readings, whatever the half-life.
MAX_REFRESH = 30.0


_LN2 = math.log(2.0)


def decay(elapsed: float, half_life: float) -> float:
    """What is left of one unit of usage after ``elapsed`` seconds."""
    return math.pow(2.0, -elapsed / half_life)


def accrual(elapsed: float, half_life: float) -> float:
    """The decayed integral of holding one unit for ``elapsed`` seconds, as of its end:
    the integral over s in [0, elapsed] of 2^(-(elapsed - s)/h)."""
    return half_life / _LN2 * -math.expm1(-elapsed * _LN2 / half_life)


def amounts(resource: Resource) -> dict[str, float]:
    """Every dimension a resource holds (cpu, memory and every scalar, devices included),
    except the pod-slot count, which is no resource a queue competes for."""
    out: dict[str, float] = {}
    if resource.milli_cpu > 0:
        out["cpu"] = resource.milli_cpu
    if resource.memory > 0:
        out["memory"] = resource.memory
    if resource.scalars:
        for name, quant in resource.scalars.items():
            if quant > 0 and name not in IGNORED_SCALARS:
                out[name] = quant
    return out


def advanced(
    usage: Mapping[str, float], held: Mapping[str, float], elapsed: float, half_life: float
) -> dict[str, float]:
    """``usage`` after ``elapsed`` seconds of holding ``held``."""
    if elapsed <= 0:
        return dict(usage)
    kept, gained = decay(elapsed, half_life), accrual(elapsed, half_life)
    out = {name: value * kept for name, value in usage.items()}
    for name, value in held.items():
        out[name] = out.get(name, 0.0) + value * gained
    return {name: value for name, value in out.items() if value > 0}


@dataclass(slots=True)
class _Queue:
    """One queue's decayed usage as of monotonic time ``at`` and what it has held since."""

    usage: dict[str, float] = field(default_factory=dict)
    held: dict[str, float] = field(default_factory=dict)
    at: float = 0.0
    restored: bool = False


@dataclass(frozen=True, slots=True)
class UsageRecord:
    """A queue's decayed usage as it leaves or enters the process: ``at`` on the API
    server's clock (seconds since the epoch), the half-life it was decayed with and the
    usage per dimension as of ``at``."""

    at: float
    half_life: float
    usage: Mapping[str, float]


@dataclass(frozen=True, slots=True)
class UsageReading:
    """Every queue's decayed usage at one moment, as sessions read it. ``half_life`` is the
    one it was decayed with; ``window`` says in words how far back it looks."""

    half_life: float
    usage: Mapping[str, Mapping[str, float]]

    def of(self, queue: str) -> Mapping[str, float]:
        return self.usage.get(queue, _NOTHING)


_NOTHING: Mapping[str, float] = MappingProxyType({})


class UsageHistory:
    """See the module docstring. One per live cache, shared by every replica's sessions;
    thread-safe (informer threads report, sessions read)."""

    def __init__(
        self,
        half_life: float,
        *,
        monotonic: Callable[[], float] = time.monotonic,
        server_now: Callable[[], float] = time.time,
    ) -> None:
        if half_life <= 0:
            raise ValueError("a usage half-life must be positive")
        self._half_life = half_life
        self._monotonic = monotonic
        self.server_now = server_now
        self._queues: dict[str, _Queue] = {}
        self._lock = threading.Lock()
        self._reading: UsageReading | None = None
        self._read_at = -math.inf

    @property
    def half_life(self) -> float:
        return self._half_life

    def configure(self, half_life: float) -> None:
        """Decay with ``half_life`` from now on; what accrued so far keeps what it accrued
        under the previous one (a changed configuration rewrites no history)."""
        if half_life <= 0:
            raise ValueError("a usage half-life must be positive")
        with self._lock:
            if half_life == self._half_life:
                return
            now = self._monotonic()
            for queue in self._queues.values():
                self._advance(queue, now)
            self._half_life = half_life
            self._reading = None

    def held(self, queue: str, amount: Resource) -> None:
        """The queue holds ``amount`` from now on (a change of what the cluster shows it
        holding: a pod bound, finished or deleted)."""
        now_held = amounts(amount)
        with self._lock:
            record = self._queues.get(queue)
            now = self._monotonic()
            if record is None:
                if not now_held:
                    return
                record = self._queues[queue] = _Queue(at=now)
            else:
                self._advance(record, now)
            record.held = now_held

    def _advance(self, record: _Queue, now: float) -> None:
        if now > record.at:
            record.usage = advanced(record.usage, record.held, now - record.at, self._half_life)
            record.at = now

    def _refresh(self) -> float:
        return min(MAX_REFRESH, max(MIN_REFRESH, self._half_life / 100.0))

    def locked(self) -> AbstractContextManager[object]:
        """The lock the records are changed under: held, they are whole and stay so (a
        caller forking a child that reads them holds it across the fork)."""
        return self._lock

    def epoch(self) -> int:
        """Moves once per refresh interval: a session that read the history in an earlier
        epoch sees usage older than a new one would (its holder may open it again)."""
        return int(self._monotonic() // self._refresh())

    def reading(self) -> UsageReading:
        """Every queue's usage now, taken again at most once per refresh interval (a
        hundredth of the half-life, between ``MIN_REFRESH`` and ``MAX_REFRESH``)."""
        now = self._monotonic()
        refresh = self._refresh()
        reading = self._reading
        if reading is not None and now - self._read_at < refresh:
            return reading
        with self._lock:
            half_life = self._half_life
            usage = {
                name: MappingProxyType(
                    advanced(record.usage, record.held, now - record.at, half_life)
                )
                for name, record in self._queues.items()
            }
            reading = self._reading = UsageReading(half_life, MappingProxyType(usage))
            self._read_at = now
        return reading

    def export(self, queue: str) -> UsageRecord | None:
        """The queue's usage now, stamped with the API server's clock; None when it has
        none."""
        with self._lock:
            record = self._queues.get(queue)
            if record is None:
                return None
            self._advance(record, self._monotonic())
            if not record.usage:
                return None
            return UsageRecord(self.server_now(), self._half_life, dict(record.usage))

    def restore(self, queue: str, stored: UsageRecord | None) -> bool:
        """Take up a queue's persisted usage, once per queue and process, on the first sight
        of the queue (``stored`` None: it had none; later records are then another
        replica's copy of what this one measured itself and are not added again).

        The record is decayed over the time the API server says has passed since it was
        stamped; nothing is accrued for that gap (what the queue held while no replica
        watched is unknown, and guessing could mint usage). Added to what this process has
        measured since it started. False when the queue was taken up already."""
        carried: dict[str, float] = {}
        if stored is not None:
            gap = max(0.0, self.server_now() - stored.at)
            carried = advanced(stored.usage, {}, gap, self._half_life)
        with self._lock:
            record = self._queues.get(queue)
            now = self._monotonic()
            if record is None:
                record = self._queues[queue] = _Queue(at=now)
            elif record.restored:
                return False
            else:
                self._advance(record, now)
            for name, value in carried.items():
                record.usage[name] = record.usage.get(name, 0.0) + value
            record.restored = True
            self._reading = None
            return True

    def forget(self, queue: str) -> None:
        """The queue is gone: its history goes with it."""
        with self._lock:
            self._queues.pop(queue, None)
            self._reading = None


#: The Queue annotation that carries a queue's decayed usage across restarts and leaders:
#: the Queue CRD's status has no room for it (its schema is Volcano's, not ours).
USAGE_HISTORY_ANNOTATION = "kube-queue-extender.io/usage-history"


class UsageRecordError(ValueError):
    """A persisted usage record that cannot be taken up (hand-edited, truncated, foreign)."""


def encode_record(record: UsageRecord) -> str:
    """The annotation's value: ``{"at": RFC 3339, "halfLife": seconds, "usage": {dim:
    amount x seconds}}``, compact and with sorted keys (equal records, equal text)."""
    stamp = datetime.fromtimestamp(record.at, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    body = {
        "at": stamp,
        "halfLife": record.half_life,
        "usage": {name: round(value, 3) for name, value in sorted(record.usage.items())},
    }
    return json.dumps(body, separators=(",", ":"), sort_keys=True)


def decode_record(text: str) -> UsageRecord:
    """The record an annotation holds; ``UsageRecordError`` saying what is wrong with it
    when it is not one this process wrote (a person may have edited it)."""
    try:
        body = json.loads(text)
    except ValueError as exc:
        raise UsageRecordError(f"not JSON: {exc}") from exc
    if not isinstance(body, dict):
        raise UsageRecordError("not a JSON object")
    unknown = set(body) - {"at", "halfLife", "usage"}
    if unknown:
        raise UsageRecordError(f"unknown field(s) {', '.join(sorted(unknown))}")
    at = body.get("at")
    if not isinstance(at, str):
        raise UsageRecordError("'at' must be an RFC 3339 time")
    try:
        stamped = datetime.fromisoformat(at.replace("Z", "+00:00"))
    except ValueError as exc:
        raise UsageRecordError(f"'at' {at!r} is not an RFC 3339 time") from exc
    if stamped.tzinfo is None:
        raise UsageRecordError(f"'at' {at!r} has no time zone")
    half_life = body.get("halfLife")
    if (
        not isinstance(half_life, (int, float))
        or isinstance(half_life, bool)
        or not math.isfinite(half_life)
        or half_life <= 0
    ):
        raise UsageRecordError("'halfLife' must be a positive number of seconds")
    usage = body.get("usage")
    if not isinstance(usage, dict):
        raise UsageRecordError("'usage' must be an object of resource name to amount")
    parsed: dict[str, float] = {}
    for name, value in usage.items():
        if (
            not isinstance(value, (int, float))
            or isinstance(value, bool)
            or not math.isfinite(value)
            or value < 0
        ):
            raise UsageRecordError(f"usage of {name!r} must be a finite amount >= 0")
        if value > 0:
            parsed[str(name)] = float(value)
    return UsageRecord(stamped.timestamp(), float(half_life), parsed)
