"""Prometheus metrics: Volcano's queue gauges and the service's own request metrics.

Everything lives on a `CollectorRegistry` owned by the app (never the global one), so two
apps in one process (tests, benchmarks) never share counters. Queue gauges are computed at
scrape time from the backend, so they are never stale and a deleted queue's series simply
disappears (Volcano has to delete them by hand). Labelled children are bound once, since a
labelled update costs 2-3x a bound one on the hot path.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Final, Protocol

from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.exposition import CONTENT_TYPE_PLAIN_0_0_4, generate_latest
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector

from app.telemetry.logs import DEBUG_V
from scheduler_core.logutil import v

log = logging.getLogger(__name__)


class ResourceLike(Protocol):
    """Read-only view of a Volcano `Resource` (milli-CPU, memory bytes, milli scalars).

    Properties (not plain attributes) so that an engine class whose `scalars` is a plain
    dict, or a frozen dataclass, still satisfies the protocol.
    """

    @property
    def milli_cpu(self) -> float: ...

    @property
    def memory(self) -> float: ...

    @property
    def scalars(self) -> Mapping[str, float] | None: ...


@dataclass(slots=True)
class QueueMetrics:
    """One queue's state for the `volcano_queue_*` gauges, read at scrape time."""

    name: str
    weight: float
    share: float
    overused: bool
    allocated: ResourceLike
    request: ResourceLike
    deserved: ResourceLike
    inqueue: ResourceLike
    capability: ResourceLike | None = None
    real_capability: ResourceLike | None = None


@dataclass(frozen=True, slots=True)
class AssumptionCounts:
    """Pods filter passed that the cluster does not show bound yet (`assumed`), and how many
    assumptions ran out their TTL instead (`expired`, since start). Of pods the cache had not
    shown: those passed without being assumed (`unseen_refused`: implausible, or their queue
    held its cap) and assumptions dropped on the API server's word (`unseen_dropped`).
    And how the accounting session that counts them was kept current with the cluster,
    since start: opened over every job, followed in place, opened for one unseen pod."""

    assumed: int
    expired: int
    unseen_refused: int = 0
    unseen_dropped: int = 0
    #: Assumptions of native gangs released together because their group cycle failed.
    group_released: int = 0
    sessions_opened: int = 0
    sessions_followed: int = 0
    sessions_one_off: int = 0
    sessions_taken_in: int = 0


METRICS_CONTENT_TYPE: Final = CONTENT_TYPE_PLAIN_0_0_4

# 100 µs (a no-op round trip) to 5 s (kube-scheduler's default extender timeout).
DURATION_BUCKETS: Final = (
    0.0001,
    0.00025,
    0.0005,
    0.001,
    0.0025,
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1.0,
    2.5,
    5.0,
)

# Resource-valued queue attributes, by Volcano's metric infix.
_RESOURCE_ATTRS: Final = (
    ("allocated", "allocated"),
    ("request", "request"),
    ("deserved", "deserved"),
    ("inqueue", "inqueue"),
    ("capacity", "capability"),
    ("real_capacity", "real_capability"),
)


class VerbMetrics:
    """The pre-bound metric children of one verb (filter, prioritize, preempt, ...)."""

    __slots__ = ("_bad", "_decisions", "_duration", "_errors", "_outcomes", "_parent", "_verb")

    def __init__(self, parent: ServiceMetrics, verb: str) -> None:
        self._parent = parent
        self._verb = verb
        self._decisions = parent.decisions
        self._outcomes: dict[str, Counter] = {}
        self._errors = parent.errors.labels(verb=verb)
        self._bad = parent.bad_requests.labels(verb=verb)
        self._duration = parent.duration.labels(verb=verb)

    def observe(self, seconds: float) -> None:
        self._duration.observe(seconds)

    def outcome(self, outcome: str) -> None:
        child = self._outcomes.get(outcome)
        if child is None:
            child = self._decisions.labels(verb=self._verb, outcome=outcome)
            self._outcomes[outcome] = child
        child.inc()

    def error(self) -> None:
        self._errors.inc()

    def bad_request(self) -> None:
        self._bad.inc()


class ServiceMetrics:
    """The service's request metrics (`queue_extender_*`)."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.registry = registry
        self.duration = Histogram(
            "queue_extender_request_duration_seconds",
            "Time to answer one extender request, from the first body byte to the answer.",
            ["verb"],
            buckets=DURATION_BUCKETS,
            registry=registry,
        )
        self.decisions = Counter(
            "queue_extender_decisions_total",
            "Answers by verb and outcome (passed, failed, unresolvable, scored, victims, "
            "no_victims, unmanaged, error).",
            ["verb", "outcome"],
            registry=registry,
        )
        self.filter_rejections = Counter(
            "queue_extender_filter_rejections_total",
            "Filter answers rejecting at least one node, by the backend's reason code "
            "(counted once per answer and code).",
            ["reason"],
            registry=registry,
        )
        self.preemption_victims = Counter(
            "queue_extender_preemption_victims_total",
            "Victims proposed in preempt answers, summed over the answered nodes.",
            registry=registry,
        )
        self.errors = Counter(
            "queue_extender_errors_total",
            "Backend failures (exceptions or malformed answers), by verb.",
            ["verb"],
            registry=registry,
        )
        self.bad_requests = Counter(
            "queue_extender_bad_requests_total",
            "Requests rejected with HTTP 400, by verb.",
            ["verb"],
            registry=registry,
        )
        self._rejections: dict[str, Counter] = {}

    def verb(self, verb: str) -> VerbMetrics:
        return VerbMetrics(self, verb)

    def rejections(self, codes: Iterable[str]) -> None:
        for code in codes:
            child = self._rejections.get(code)
            if child is None:
                child = self.filter_rejections.labels(reason=code)
                self._rejections[code] = child
            child.inc()


class QueueCollector(Collector):
    """Volcano's `volcano_queue_*` gauges, read from the backend at scrape time."""

    def __init__(
        self,
        source: Callable[[], list[QueueMetrics]],
        on_error: Callable[[BaseException], None] | None = None,
    ) -> None:
        self._source = source
        self.on_error = on_error

    def describe(self) -> Iterable[Metric]:
        """Declares the names (for the registry's duplicate check) without asking the backend."""
        return self._families()

    def collect(self) -> Iterable[Metric]:
        try:
            queues = self._source()
        except Exception as exc:
            log.error("reading queue metrics from the backend failed: %s", exc)
            log.log(v(DEBUG_V), "queue metrics failure", exc_info=True)
            if self.on_error is not None:
                self.on_error(exc)
            return []
        families = self._families()
        for q in queues:
            _add_queue(families, q)
        return families

    @staticmethod
    def _families() -> list[Metric]:
        out: list[Metric] = []
        for attr, _ in _RESOURCE_ATTRS:
            out.append(_gauge(f"volcano_queue_{attr}_milli_cpu", f"{attr} milli-CPU of queue"))
            out.append(_gauge(f"volcano_queue_{attr}_memory_bytes", f"{attr} memory of queue"))
            out.append(
                GaugeMetricFamily(
                    f"volcano_queue_{attr}_scalar_resources",
                    f"{attr} scalar resources of queue",
                    labels=["queue_name", "resource"],
                )
            )
        out.append(_gauge("volcano_queue_share", "Share of queue"))
        out.append(_gauge("volcano_queue_weight", "Weight of queue"))
        out.append(_gauge("volcano_queue_overused", "If queue is overused (1) or not (0)"))
        return out


class AssumptionCollector(Collector):
    """Assumed pods and expired assumptions, read from the backend at scrape time.

    A pod stays assumed from the filter that passed it until the cluster shows it bound or
    deleted; a gauge that does not come back to zero once scheduling is quiet means
    assumptions leak (an answer kube-scheduler never received holds its queue's share until
    the TTL ends, which the expired counter shows).
    """

    def __init__(self, source: Callable[[], AssumptionCounts]) -> None:
        self._source = source

    def describe(self) -> Iterable[Metric]:
        return self._families(None)

    def collect(self) -> Iterable[Metric]:
        try:
            counts = self._source()
        except Exception as exc:
            log.error("reading assumptions from the backend failed: %s", exc)
            return []
        return self._families(counts)

    @staticmethod
    def _families(counts: AssumptionCounts | None) -> list[Metric]:
        assumed = GaugeMetricFamily(
            "queue_extender_assumed_pods",
            "Pods passed by filter that the cluster does not show bound or deleted yet.",
        )
        expired = CounterMetricFamily(
            "queue_extender_assumptions_expired",
            "Assumptions dropped after --assume-ttl without the cluster showing the pod bound.",
        )
        refused = CounterMetricFamily(
            "queue_extender_unseen_pods_not_assumed",
            "Pods the cache had not shown that filter passed without assuming them: an "
            "implausible namespace, name or UID, or their queue held its cap of such "
            "assumptions.",
        )
        dropped = CounterMetricFamily(
            "queue_extender_unseen_assumptions_dropped",
            "Assumptions of pods the cache had not shown, dropped because the API server said "
            "the pod does not exist.",
        )
        released = CounterMetricFamily(
            "queue_extender_group_assumptions_released",
            "Assumptions of Kubernetes PodGroup gang members released together because the "
            "group's cycle failed (a member reported unschedulable, or none bound within the "
            "group window).",
        )
        sessions = CounterMetricFamily(
            "queue_extender_accounting_sessions",
            "How the accounting session the verbs read was brought up to date with the "
            "cluster: opened anew over every job (way=opened), followed in place "
            "(way=followed), opened for one pod the cache had not shown yet (way=one_off), "
            "or, for such a pod's filter, followed in place with its job taken in "
            "(way=taken_in). Opened or one_off rising with every pod means each verb call "
            "pays for a session over the whole cluster.",
            labels=["way"],
        )
        if counts is not None:
            sessions.add_metric(["opened"], counts.sessions_opened)
            sessions.add_metric(["followed"], counts.sessions_followed)
            sessions.add_metric(["one_off"], counts.sessions_one_off)
            sessions.add_metric(["taken_in"], counts.sessions_taken_in)
            released.add_metric([], counts.group_released)
            assumed.add_metric([], counts.assumed)
            expired.add_metric([], counts.expired)
            refused.add_metric([], counts.unseen_refused)
            dropped.add_metric([], counts.unseen_dropped)
        return [assumed, expired, refused, dropped, released, sessions]


@dataclass(frozen=True, slots=True)
class ListenerCounts:
    """Connections one listener closed to protect itself: at its connection cap, and for
    sending no whole request within its read timeout."""

    listener: str
    at_cap: int
    read_timeout: int


class ListenerCollector(Collector):
    """Each listener's protective closes, read at scrape time. A rising count on the verbs
    listener means something holds or floods its connections while kube-scheduler waits;
    on the metrics or status listener, that those are being flooded (they never take the
    verbs' connections)."""

    def __init__(self, source: Callable[[], Iterable[ListenerCounts]]) -> None:
        self._source = source

    def describe(self) -> Iterable[Metric]:
        return [self._family()]

    def collect(self) -> Iterable[Metric]:
        family = self._family()
        for counts in self._source():
            family.add_metric([counts.listener, "connection_cap"], counts.at_cap)
            family.add_metric([counts.listener, "read_timeout"], counts.read_timeout)
        return [family]

    @staticmethod
    def _family() -> CounterMetricFamily:
        return CounterMetricFamily(
            "queue_extender_listener_connections_closed",
            "Connections a listener closed to protect itself: over its connection cap, or "
            "sending no whole request within its read timeout.",
            labels=["listener", "reason"],
        )


def _gauge(name: str, doc: str) -> GaugeMetricFamily:
    return GaugeMetricFamily(name, doc, labels=["queue_name"])


def _add_queue(families: list[Metric], q: QueueMetrics) -> None:
    """Appends one queue's samples; `families` is in `QueueCollector._families` order."""
    i = 0
    for _, field in _RESOURCE_ATTRS:
        res: ResourceLike | None = getattr(q, field)
        if res is not None:
            _gauge_of(families[i]).add_metric([q.name], res.milli_cpu)
            _gauge_of(families[i + 1]).add_metric([q.name], res.memory)
            scalars: Mapping[str, float] = res.scalars or {}
            for resource, value in sorted(scalars.items()):
                _gauge_of(families[i + 2]).add_metric([q.name, resource], value)
        i += 3
    _gauge_of(families[i]).add_metric([q.name], q.share)
    _gauge_of(families[i + 1]).add_metric([q.name], q.weight)
    _gauge_of(families[i + 2]).add_metric([q.name], 1.0 if q.overused else 0.0)


def _gauge_of(metric: Metric) -> GaugeMetricFamily:
    assert isinstance(metric, GaugeMetricFamily)
    return metric


def render(registries: Iterable[CollectorRegistry]) -> bytes:
    """The text exposition of the app's registry followed by any extra registries."""
    return b"".join(generate_latest(r) for r in registries)


def iter_registries(
    own: CollectorRegistry, extra: Iterable[CollectorRegistry]
) -> Iterator[CollectorRegistry]:
    yield own
    for r in extra:
        if r is not own:
            yield r
