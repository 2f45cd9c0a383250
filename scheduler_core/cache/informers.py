"""The set of informers feeding the engine's cluster state, with readiness and metrics.

One :class:`~scheduler_core.cache.reflector.Reflector` per watched kind (per namespace when the
service is restricted to namespaces), all sharing one ``kubernetes.client.ApiClient`` built from
a kubeconfig or the in-cluster service account, so authentication of every kind (tokens, client
certificates, exec plugins) is the client's business, not ours.
"""

from __future__ import annotations

import logging
import math
import os
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

from kubernetes import client as k8s_client
from kubernetes import config as k8s_config
from prometheus_client import CollectorRegistry
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector

from .condition import Phase
from .discovery import Served, discover
from .kinds import ALL_KINDS, KindSpec, OptionalKind
from .reflector import (
    Reflector,
    ReflectorOptions,
    ReflectorStatus,
)
from .sink_feed import EventSink
from .watch_protocol import EVENT_TYPES, RESTART_REASONS

log = logging.getLogger(__name__)

#: Seconds ``stale`` keeps its one-comparison answer short of the earliest deadline.
_FRESH_MARGIN = 1e-3

METRIC_PREFIX = "queue_extender_informer"
USER_AGENT = "kube-queue-extender/informers"


class _NamespacedSink:
    """Merges the reflectors of one kind restricted to several namespaces into one sink view.

    Each namespace needs its own list and watch (a field selector cannot OR namespaces, and a
    cluster-wide watch needs cluster-wide RBAC), so one kind has several threads. This wrapper
    keeps the sink's promise: calls for a kind never overlap (a lock), and ``synced(kind)`` is
    only said once every namespace has listed.
    """

    def __init__(self, sink: EventSink, namespaces: int) -> None:
        self._sink = sink
        self._lock = threading.Lock()
        self._expected = namespaces
        self._synced: set[int] = set()

    def scope(self, index: int) -> EventSink:
        return _ScopeSink(self, index)

    def upsert(self, kind: str, obj: dict[str, Any]) -> None:
        with self._lock:
            self._sink.upsert(kind, obj)

    def delete(self, kind: str, key: str) -> None:
        with self._lock:
            self._sink.delete(kind, key)

    def synced(self, kind: str, index: int) -> None:
        with self._lock:
            self._synced.add(index)
            if len(self._synced) == self._expected:
                self._sink.synced(kind)


class _ScopeSink:
    def __init__(self, shared: _NamespacedSink, index: int) -> None:
        self._shared = shared
        self._index = index

    def upsert(self, kind: str, obj: dict[str, Any]) -> None:
        self._shared.upsert(kind, obj)

    def delete(self, kind: str, key: str) -> None:
        self._shared.delete(kind, key)

    def synced(self, kind: str) -> None:
        self._shared.synced(kind, self._index)


def build_api_client(
    kubeconfig: str | None = None,
    *,
    context: str | None = None,
    in_cluster: bool | None = None,
    min_pool_size: int = 0,
) -> Any:
    """An ``ApiClient`` configured like kubectl would be.

    An explicit kubeconfig path wins; otherwise the in-cluster service account when running in
    a pod (``KUBERNETES_SERVICE_HOST`` set) or when ``in_cluster`` is true; otherwise the usual
    ``$KUBECONFIG`` / ``~/.kube/config``. The connection pool is widened so every watch keeps a
    connection of its own and lists still find one free.
    """
    configuration = k8s_client.Configuration()
    if kubeconfig:
        k8s_config.load_kube_config(  # type: ignore[no-untyped-call]
            config_file=kubeconfig,
            context=context,
            client_configuration=configuration,
            persist_config=False,
        )
    elif in_cluster or (in_cluster is None and os.environ.get("KUBERNETES_SERVICE_HOST")):
        k8s_config.load_incluster_config(  # type: ignore[no-untyped-call]
            client_configuration=configuration
        )
    else:
        k8s_config.load_kube_config(  # type: ignore[no-untyped-call]
            context=context, client_configuration=configuration, persist_config=False
        )
    current = configuration.connection_pool_maxsize or 0
    configuration.connection_pool_maxsize = max(current, min_pool_size)
    # TCP keepalive with client-go's timings, so a proxy silently dropping an idle watch is
    # noticed by the kernel too, not only by the watch read timeout.
    configuration.keep_alive = True
    api_client = k8s_client.ApiClient(configuration=configuration)
    api_client.user_agent = USER_AGENT  # names us in the API server's audit log
    return api_client


class InformerSet:
    """Starts, stops and reports on the reflectors of every watched kind."""

    def __init__(
        self,
        sink: EventSink,
        *,
        kubeconfig: str | None = None,
        context: str | None = None,
        in_cluster: bool | None = None,
        namespaces: Sequence[str] = (),
        kinds: Sequence[KindSpec] = ALL_KINDS,
        options: ReflectorOptions | None = None,
        registry: CollectorRegistry | None = None,
        api_client: Any = None,
        optional_kinds: Sequence[OptionalKind] = (),
        discovery_interval: float = 60.0,
    ) -> None:
        """``optional_kinds`` are watched besides ``kinds`` once discovery finds them served:
        asked at :meth:`start` and then every ``discovery_interval`` seconds until each is."""
        self.kinds: tuple[KindSpec, ...] = tuple(kinds)
        #: The optional kinds not watched yet; each leaves this tuple when its reflector
        #: starts.
        self.optional_kinds: tuple[OptionalKind, ...] = tuple(optional_kinds)
        self.discovery_interval = discovery_interval
        self._sink = sink
        self._discovery_stop = threading.Event()
        self._discovery: threading.Thread | None = None
        #: The optional kinds found served (and watched) since.
        self._discovered: set[str] = set()
        #: Each optional kind's last known answer (an unknown one is not known): what the
        #: log has said, so a repeated answer is not said again every round.
        self._answers: dict[str, Served] = {}
        #: Who waits for an optional kind to be watched (see :meth:`when_watched`).
        self._waiting: dict[str, list[Callable[[KindSpec], None]]] = {}
        self._waiting_lock = threading.Lock()
        self.namespaces: tuple[str, ...] = tuple(dict.fromkeys(n for n in namespaces if n))
        self.options = options or ReflectorOptions()
        self._started = False
        self._stopped = False
        self._owns_client = api_client is None
        if api_client is None:
            watches = sum(len(self._scopes(spec)) for spec in self.kinds) + sum(
                len(self._scopes(o.versions[0])) for o in self.optional_kinds
            )
            api_client = build_api_client(
                kubeconfig, context=context, in_cluster=in_cluster, min_pool_size=watches + 5
            )
        self.api_client = api_client
        self.reflectors: dict[str, list[Reflector]] = {
            spec.kind: self._reflectors_of(spec) for spec in self.kinds
        }
        #: Every reflector in one tuple, and whether all have synced (a reflector that has
        #: synced stays synced): readiness is asked on every filter call.
        self._flat: tuple[Reflector, ...] = tuple(r for g in self.reflectors.values() for r in g)
        self._all_synced = False
        #: Moved after a reflector is found stalled, or reflectors are added (see ``stale``).
        self._stall_epoch = 0
        #: (until, epoch): no reflector can be stale before monotonic time ``until`` while
        #: ``_stall_epoch`` is ``epoch`` (see ``stale``); one tuple, so written at once.
        self._fresh: tuple[float, int] = (-math.inf, -1)
        self.registry = registry if registry is not None else CollectorRegistry()
        self.registry.register(InformerCollector(self))

    def _scopes(self, spec: KindSpec) -> tuple[str | None, ...]:
        """The namespaces ``spec`` is listed in, one reflector each (None: cluster-wide)."""
        return self.namespaces if spec.namespaced and self.namespaces else (None,)

    def _reflectors_of(self, spec: KindSpec) -> list[Reflector]:
        scopes = self._scopes(spec)
        if len(scopes) == 1:
            sinks: list[EventSink] = [self._sink]
        else:
            shared = _NamespacedSink(self._sink, len(scopes))
            sinks = [shared.scope(i) for i in range(len(scopes))]
        return [
            Reflector(
                spec,
                self.api_client,
                scope_sink,
                namespace=ns,
                options=self.options,
                on_stall=self._stalled,
            )
            for ns, scope_sink in zip(scopes, sinks, strict=True)
        ]

    def all_reflectors(self) -> Iterator[Reflector]:
        return iter(self._flat)

    def start(self) -> None:
        """Start every reflector and ask discovery about the optional kinds once; returns
        then (see :meth:`wait_for_sync`), asking again in the background for those not
        served yet."""
        if self._started:
            raise RuntimeError("informers already started")
        self._started = True
        log.info(
            "starting informers for %s%s",
            ", ".join(spec.plural for spec in self.kinds),
            f" in namespaces {', '.join(self.namespaces)}" if self.namespaces else "",
        )
        for reflector in self.all_reflectors():
            reflector.start()
        if self.optional_kinds and not self._discover():
            self._discovery = threading.Thread(
                target=self._discover_until_served, name="informers-discovery", daemon=True
            )
            self._discovery.start()

    def _discover(self) -> bool:
        """Watch each optional kind the API server serves now (and we may list, where the
        kind asks); whether none is left to look for."""
        for optional in self.optional_kinds:
            found = discover(self.api_client, optional)
            said = self._answers.get(optional.kind)
            if found.answer is not Served.UNKNOWN:
                self._answers[optional.kind] = found.answer
            if found.answer is Served.YES and found.spec is not None:
                self._watch(optional, found.spec)
            elif found.answer is Served.NO and said is not Served.NO:
                log.info(
                    "%s is not served (%s): not watched; asked again every %.0fs",
                    optional.resource,
                    optional.absent,
                    self.discovery_interval,
                )
            elif found.answer is Served.FORBIDDEN and said is not Served.FORBIDDEN:
                assert found.spec is not None
                log.warning(
                    "%s is served but listing it is forbidden: not watched (grant get, list "
                    "and watch on %s, as the chart's ClusterRole does); asked again every %.0fs",
                    found.spec.crd_name,
                    optional.resource,
                    self.discovery_interval,
                )
        return not self.optional_kinds

    def _watch(self, optional: OptionalKind, spec: KindSpec) -> None:
        """Start watching ``spec``, found served. It is part of readiness from then on: while
        it lists, what it feeds (the network topology, native gangs) is not yet known, and
        deciding on half of it would place a hard gang across switches or a gang in part."""
        reflectors = self._reflectors_of(spec)
        self.reflectors = {**self.reflectors, spec.kind: reflectors}
        with self._waiting_lock:
            self.kinds = (*self.kinds, spec)
        self.optional_kinds = tuple(o for o in self.optional_kinds if o is not optional)
        self._discovered.add(spec.kind)
        self._flat = (*self._flat, *reflectors)
        self._all_synced = False
        self._stalled()  # (after the tuple: whoever sees the epoch move reads the new one)
        log.info("%s is served: watching it", spec.crd_name)
        if not self._stopped:
            for reflector in reflectors:
                reflector.start()
            self._tell_watched(spec)

    def when_watched(self, kind: str, callback: Callable[[KindSpec], None]) -> None:
        """Call ``callback`` with the watched version of ``kind``: now when it is watched
        already, else once discovery finds it served (from the discovery thread). What
        depends on an optional kind (native PodGroups' preemption watch) starts with it,
        however late the cluster serves it."""
        with self._waiting_lock:
            spec = next((s for s in self.kinds if s.kind == kind), None)
            if spec is None:
                self._waiting.setdefault(kind, []).append(callback)
                return
        callback(spec)

    def _tell_watched(self, spec: KindSpec) -> None:
        with self._waiting_lock:
            callbacks = self._waiting.pop(spec.kind, [])
        for callback in callbacks:
            try:
                callback(spec)
            except Exception:  # one waiter's failure must not stop discovery
                log.exception("starting what waited for %s failed", spec.crd_name)

    def _discover_until_served(self) -> None:
        while not self._discovery_stop.wait(self.discovery_interval):
            if self._stopped or self._discover():
                return

    def stop(self, timeout: float = 5.0) -> None:
        """Stop every reflector (cutting their watches) and close the client we built."""
        self._stopped = True
        self._discovery_stop.set()
        if self._discovery is not None:
            self._discovery.join(timeout)
        for reflector in self.all_reflectors():
            reflector.stop(timeout=0)
        deadline = time.monotonic() + timeout
        for reflector in self.all_reflectors():
            reflector.stop(timeout=max(0.0, deadline - time.monotonic()))
        if self._owns_client:
            self.api_client.close()

    def has_synced(self) -> bool:
        if not self._all_synced:
            self._all_synced = all(r.has_synced() for r in self._flat)
        return self._all_synced

    def wait_for_sync(self, timeout: float | None = None) -> bool:
        """Block until every informer has synced or ``timeout`` passes; says which."""
        deadline = None if timeout is None else time.monotonic() + timeout
        for reflector in self.all_reflectors():
            remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
            if not reflector.wait_for_sync(remaining):
                return False
        return True

    def _stalled(self) -> None:
        """A reflector was found stalled: the next ``stale`` asks every reflector."""
        self._stall_epoch += 1

    def stale(self) -> list[str]:
        """The informers whose cache may be behind the API server (a watch stalled, or
        nothing heard within the stall bound), each as ``name (why)``; empty when fresh.

        Asked on every verb call, so answered with one comparison while that is exact: once
        every reflector has synced, has heard something and is not stalled, none can be
        stale by its silence before the earliest of (last heard + stall bound), since what
        it last heard only moves later; and none can have stalled since as long as no
        reflector said so (each tells ``_stalled`` after setting its flag) and none was
        added. Kept a millisecond short of that deadline, so rounding never decides."""
        now = time.monotonic()
        until, epoch = self._fresh
        if now < until and epoch == self._stall_epoch:
            return []
        epoch = self._stall_epoch  # (before the reflectors are read)
        found = []
        earliest: float | None = math.inf
        for reflector in self._flat:
            why = reflector.stale(now)
            heard = reflector.stats.last_event_at
            if why or heard is None or not reflector.has_synced():
                earliest = None
            elif earliest is not None:
                earliest = min(earliest, heard + reflector.options.watch_read_timeout)
            if why and not self._withdrawn(reflector):
                found.append(f"{reflector.name} ({why})")
        if earliest is not None:
            self._fresh = (earliest - _FRESH_MARGIN, epoch)
        return found

    def _withdrawn(self, reflector: Reflector) -> bool:
        """Whether ``reflector`` watches an optional kind whose CRD was deleted since: what
        it fed is gone from the cluster, and waiting for it would stop every decision."""
        return reflector.spec.kind in self._discovered and (
            reflector.status().phase is Phase.NOT_INSTALLED
        )

    def fresh(self) -> bool:
        """Every informer synced and heard from within its stall bound: a cache to decide
        on."""
        return self.has_synced() and not self.stale()

    def heard_since(self, at: float) -> bool:
        """Every informer has delivered something after monotonic time ``at`` (and none is
        relisting after a stall): what the cache shows is newer than ``at``."""
        return all(r.heard_since(at) or self._withdrawn(r) for r in self.all_reflectors())

    def statuses(self) -> list[ReflectorStatus]:
        return [r.status() for r in self.all_reflectors()]

    def readiness(self) -> tuple[bool, str]:
        """(ready, reason): ready once every informer synced; the reason names the laggards."""
        if not self._started:
            return False, "informers not started"
        if self._stopped:
            return False, "informers stopped"
        # Asked on every filter call: the statuses (one object per informer) are built only
        # to name the laggards.
        waiting = [] if self.has_synced() else [s for s in self.statuses() if not s.synced]
        if waiting:
            parts = [f"{status.name} ({status.describe()})" for status in waiting]
            return False, "waiting for initial sync: " + ", ".join(parts)
        stale = self.stale()
        if stale:
            return False, "cache stale, nothing decided until it catches up: " + ", ".join(stale)
        return True, f"all {len(self.kinds)} informers synced"


class InformerCollector(Collector):
    """Exposes the reflectors' counters at scrape time.

    The reflector threads only bump plain integers (cheaper than prometheus children on the
    per-event path); this turns them into metric families, summing namespaces of one kind.
    Registered on the caller's registry, never on the process-global one.
    """

    def __init__(self, informers: InformerSet) -> None:
        self._informers = informers

    def describe(self) -> Iterable[Metric]:
        return _Families().all()

    def collect(self) -> Iterable[Metric]:
        f = _Families()
        now = time.monotonic()
        for kind, group in self._informers.reflectors.items():
            event_counts = dict.fromkeys(EVENT_TYPES, 0)
            restart_counts = dict.fromkeys(RESTART_REASONS, 0)
            relist_count = 0
            stall_count = 0
            last_event: float | None = None
            durations: list[float] = []
            for reflector in group:
                stats = reflector.stats
                for etype, count in dict(stats.events).items():
                    event_counts[etype] += count
                for reason, count in dict(stats.watch_restarts).items():
                    restart_counts[reason] += count
                relist_count += stats.relists
                stall_count += stats.stalls
                if stats.last_event_at is not None:
                    last_event = max(last_event or stats.last_event_at, stats.last_event_at)
                if stats.sync_duration is not None:
                    durations.append(stats.sync_duration)
            for etype, count in event_counts.items():
                f.events.add_metric([kind, etype.lower()], count)
            for reason, count in restart_counts.items():
                f.restarts.add_metric([kind, reason], count)
            f.relists.add_metric([kind], relist_count)
            f.stalls.add_metric([kind], stall_count)
            f.stale.add_metric([kind], 1.0 if any(r.stale(now) for r in group) else 0.0)
            if last_event is not None:
                f.age.add_metric([kind], max(0.0, now - last_event))
            if durations:
                f.duration.add_metric([kind], max(durations))
            f.synced.add_metric([kind], 1.0 if all(r.has_synced() for r in group) else 0.0)
            f.objects.add_metric([kind], sum(r.object_count for r in group))
        return f.all()


class _Families:
    """Fresh, empty metric families for one scrape."""

    def __init__(self) -> None:
        p = METRIC_PREFIX
        self.events = CounterMetricFamily(
            f"{p}_events",
            "Watch events and list results applied to the cache, by kind and type.",
            labels=["kind", "type"],
        )
        self.relists = CounterMetricFamily(
            f"{p}_relists", "Lists after the initial one (410 Gone etc.).", labels=["kind"]
        )
        self.stalls = CounterMetricFamily(
            f"{p}_watch_stalls",
            "Watches that delivered no event and no bookmark within the stall bound "
            "(each cut and relisted).",
            labels=["kind"],
        )
        self.stale = GaugeMetricFamily(
            f"{p}_stale",
            "1 while the informer's cache may be behind (a stalled watch not yet relisted, "
            "or nothing heard within the stall bound): nothing is decided meanwhile.",
            labels=["kind"],
        )
        self.restarts = CounterMetricFamily(
            f"{p}_watch_restarts",
            "Watches that ended and were reopened, by reason.",
            labels=["kind", "reason"],
        )
        self.age = GaugeMetricFamily(
            f"{p}_last_event_age_seconds",
            "Seconds since the last watch event, bookmark or list page.",
            labels=["kind"],
        )
        self.duration = GaugeMetricFamily(
            f"{p}_sync_duration_seconds",
            "Duration of the last complete list (initial sync or relist).",
            labels=["kind"],
        )
        self.synced = GaugeMetricFamily(
            f"{p}_synced", "1 once the initial list has been applied.", labels=["kind"]
        )
        self.objects = GaugeMetricFamily(
            f"{p}_objects", "Objects currently tracked by the informer.", labels=["kind"]
        )

    def all(self) -> list[Metric]:
        return [
            self.events,
            self.relists,
            self.stalls,
            self.stale,
            self.restarts,
            self.age,
            self.duration,
            self.synced,
            self.objects,
        ]
