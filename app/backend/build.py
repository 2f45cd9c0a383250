"""The composition root: one ``EngineBackend`` and everything that runs beside it.

``build_backend`` takes plain option dataclasses (the command line turns flags into them in
``app.cli``) and assembles the cluster source (a file, the demo cluster, or live informers),
the controller with its leader election, the status writer, the parked-pod requeuer, the
reclaim loop and the configuration watcher. It is the one place that starts threads, and it
returns them all in one finished record, ``Built``, whose ``close()`` stops them in the
reverse of the order they started. Only the entry points import it.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from importlib import resources
from pathlib import Path
from typing import Any, Generic, Protocol, TypeVar

from prometheus_client import CollectorRegistry

from app.api.port import RecentEvictionsProvider
from app.backend.conf_reload import ConfigurationWatcher
from app.backend.engine import DEMO_CLUSTER, BackendOptions, EngineBackend, recent_evictions
from app.telemetry.metrics import AssumptionCounts
from app.verbs.ports import ExtenderBackend
from scheduler_core.api.job import JobInfo
from scheduler_core.api.snapshot import ClusterSnapshot
from scheduler_core.api.task import TaskInfo
from scheduler_core.api.usage_history import UsageHistory
from scheduler_core.cache.state import ClusterState
from scheduler_core.cache.topology_metrics import TopologyCollector
from scheduler_core.cache.yaml_source import load_cluster_file, load_cluster_text
from scheduler_core.conf import (
    SchedulerConfiguration,
    default_configuration,
    load_configuration_file,
)
from scheduler_core.controller.decision import live_configuration
from scheduler_core.controller.reclaim import ReclaimLoop, ReclaimOptions
from scheduler_core.controller.runtime import Controller, ControllerOptions
from scheduler_core.controller.snapshot import anything_unschedulable, loop_snapshot
from scheduler_core.engine import check_configuration
from scheduler_core.plugins.usagehistory import configured_settings

log = logging.getLogger("app.engine")

NO_SOURCE = (
    "no cluster source: pass --in-cluster (in a pod), --kubeconfig FILE, "
    "--cluster FILE (a static snapshot) or --demo (the bundled demo cluster)"
)


@dataclass(frozen=True, slots=True)
class ClusterSource:
    """Where the cluster comes from: exactly one of a live API server (``kubeconfig``, or
    ``in_cluster``), a static file, or the bundled demo cluster."""

    kubeconfig: str | None = None
    in_cluster: bool = False
    cluster_file: str | None = None
    demo: bool = False
    #: Seconds a live watch may deliver no event and no bookmark before it counts as stalled
    #: (relisted; the cache stale, and nothing decided on it, until then).
    watch_stall_timeout: float = 90.0
    #: Seconds between asking the API server again for the optional kinds it does not serve
    #: yet (Volcano's HyperNodes, Kubernetes' own PodGroups), so one installed or enabled
    #: later is watched without a restart.
    discovery_interval: float = 60.0

    @property
    def live(self) -> bool:
        return bool(self.kubeconfig or self.in_cluster)


@dataclass(frozen=True, slots=True)
class BuildOptions:
    """Everything ``build_backend`` needs, already checked by the command line."""

    source: ClusterSource
    backend: BackendOptions = field(default_factory=BackendOptions)
    conf_path: str | None = None
    strict_conf: bool = False
    #: Seconds between looks at ``conf_path``; 0 follows nothing.
    conf_reload_interval: float = 0.0
    controller: ControllerOptions | None = None
    #: None when the reclaim loop is off.
    reclaim: ReclaimOptions | None = None


class Stoppable(Protocol):
    """A thread (or set of threads) the composition root started."""

    def stop(self) -> None: ...


#: The backend a record holds (``EngineBackend`` from ``build_backend``; a test double in
#: tests of the HTTP layer).
B = TypeVar("B", bound=ExtenderBackend, covariant=True)


@dataclass(frozen=True, slots=True)
class Built(Generic[B]):
    """Everything ``serve`` runs, finished: nothing is set on it, or on its backend, after
    ``build_backend`` returns it.

    ``backend`` answers the verbs (and, an ``EngineBackend``, the people's API);
    ``registry`` holds the informers', controller's, loop's and watcher's metrics (None when
    nothing registered any); ``assumptions`` feeds the assumed-pods gauge; ``warnings`` are
    what the configuration made the engine skip plus a refused reload, read at each /readyz
    and scrape; ``evictions`` the reclaim loop's last evictions for the status page (None
    without a loop); ``resign`` stops leading at once, the first thing a stop does (None
    without a controller); ``api_client`` the informers' kubernetes client (None for a file
    or the demo), through which ``--delegated-auth`` sends its reviews. ``parts`` are the
    started threads in the order they started."""

    backend: B
    registry: CollectorRegistry | None = None
    assumptions: Callable[[], AssumptionCounts] | None = None
    warnings: Callable[[], Sequence[str]] = tuple
    evictions: RecentEvictionsProvider | None = None
    resign: Callable[[], None] | None = None
    api_client: Any = None
    parts: tuple[Stoppable, ...] = field(default=())

    def close(self) -> None:
        """Stop leading first (no writer writes while the others stop), then every part in
        the reverse of the order it started: the configuration watcher, the reclaim loop, the
        status writer, the requeuer, the controller (which gives a held lease back) and the
        informers last."""
        stop_all(self.parts, self.resign)


def stop_all(parts: Sequence[Stoppable], resign: Callable[[], None] | None = None) -> None:
    """``resign``, then ``parts`` from the last started to the first; a step that fails is
    logged and the others still run (a stop must go on whatever one part does)."""
    steps = [resign] if resign is not None else []
    steps += [part.stop for part in reversed(parts)]
    for step in steps:
        try:
            step()
        except Exception:
            log.exception("stopping %s failed", getattr(step, "__qualname__", step))


def load_checked_configuration(options: BuildOptions) -> SchedulerConfiguration:
    """The scheduler configuration, refused (ValueError, one line) when the engine cannot
    run it, or when ``strict_conf`` is set and it carries warnings."""
    path = options.conf_path
    conf = load_configuration_file(path) if path else default_configuration()
    check_configuration(conf, path or "default configuration")
    if conf.warnings and options.strict_conf:
        raise ValueError(
            f"--strict-conf: {len(conf.warnings)} configuration warning(s): "
            + "; ".join(conf.warnings)
        )
    for warning in conf.warnings:
        log.warning("configuration warning: %s", warning)
    return conf


def build_backend(options: BuildOptions) -> Built[EngineBackend]:
    """Everything ``serve`` runs: a static file, the demo cluster, or live informers with
    the writers beside them. Raises ValueError with a one-line reason on a bad file or
    option."""
    conf = load_checked_configuration(options)
    if options.reclaim is not None:  # bad reclaim arguments in the configuration: fail now
        live_configuration(conf, max_evictions=options.reclaim.max_evictions)
    if options.source.live:
        return _build_live(options, conf)
    return _build_static(options, conf)


def _build_static(options: BuildOptions, conf: SchedulerConfiguration) -> Built[EngineBackend]:
    """A cluster read once from a file or the bundled demo: no thread but the configuration
    watcher."""
    source = options.source
    if source.cluster_file:
        loaded = load_cluster_file(source.cluster_file)
        where = source.cluster_file
    elif source.demo:
        loaded = load_cluster_text(demo_cluster_text(), "demo cluster")
        where = "the bundled demo cluster"
    else:
        # Never a silent default: a manifest that forgot its source must not schedule
        # against the demo's fake nodes.
        raise ValueError(NO_SOURCE)
    if loaded.skipped:
        log.info("%s", loaded.skipped_summary())
    state = ClusterState()
    state.apply_objects(loaded.objects)
    backend = EngineBackend(state, conf, options.backend, source=where)
    backend.readiness()  # a file is synced at once: freeze it now
    registry = CollectorRegistry() if _follows_configuration(options) else None
    watcher = watch_configuration(options, configuration_user(backend, None), registry)
    return Built(
        backend=backend,
        registry=registry,
        assumptions=backend.assumption_counts,
        warnings=configuration_warnings(backend, watcher),
        parts=(watcher,) if watcher is not None else (),
    )


def _build_live(options: BuildOptions, conf: SchedulerConfiguration) -> Built[EngineBackend]:
    """Live informers and, beside them, the controller, the requeuer, the status writer, the
    reclaim loop and the configuration watcher, started in that order."""
    source = options.source
    state = ClusterState()
    history = measure_usage(state, conf)  # before the first event
    informers = _informers(
        state, source.kubeconfig, source.watch_stall_timeout, source.discovery_interval
    )
    parts: list[Stoppable] = []
    try:
        informers.start()
        parts.append(informers)
        controller = Controller(
            informers.api_client,
            options.controller or ControllerOptions(),
            registry=informers.registry,
        ).start()
        parts.append(controller)
        history.server_now = controller.server_now
        backend = EngineBackend(
            state,
            conf,
            options.backend,
            informers=informers,
            source="the API server (" + (source.kubeconfig or "in-cluster") + ")",
            controller=controller,
        )
        parts.append(start_requeuer(backend, informers))
        writer = start_status_writer(backend, controller)
        if writer is not None:
            parts.append(writer)
        parts.append(start_gang_preemption_watch(backend, controller, informers))
        persister = start_usage_persister(backend, controller, history)
        if persister is not None:
            parts.append(persister)
        parts.append(start_topology_reporter(backend, controller))
        informers.registry.register(TopologyCollector(state))
        loop = None
        if options.reclaim is not None:
            loop = start_reclaim_loop(options.reclaim, conf, controller, backend)
            parts.append(loop)
        watcher = watch_configuration(
            options, configuration_user(backend, loop), informers.registry
        )
        if watcher is not None:
            parts.append(watcher)
    except BaseException:
        # Nothing half-started outlives a failed build.
        stop_all(parts)
        raise
    return Built(
        backend=backend,
        registry=informers.registry,
        assumptions=backend.assumption_counts,
        warnings=configuration_warnings(backend, watcher),
        evictions=partial(recent_evictions, loop) if loop is not None else None,
        resign=controller.resign,
        api_client=informers.api_client,
        parts=tuple(parts),
    )


def demo_cluster_text() -> str:
    return resources.files("app").joinpath("demo", DEMO_CLUSTER).read_text(encoding="utf-8")


def configuration_user(
    backend: EngineBackend, loop: ReclaimLoop | None
) -> Callable[[SchedulerConfiguration], None]:
    """What a new configuration is handed to: the reclaim loop first (the one that may refuse
    it, raising ``ValueError`` and changing nothing), then the backend; both under the
    state's lock, so no verb sees the accounting of one configuration and the tiers of
    another."""

    def use(conf: SchedulerConfiguration) -> None:
        with backend.state.locked():
            if loop is not None:
                loop.use_configuration(conf)
            backend.use_configuration(conf)

    return use


def configuration_warnings(
    backend: EngineBackend, watcher: ConfigurationWatcher | None
) -> Callable[[], list[str]]:
    """What the configuration made the engine skip, and a changed configuration file that
    was refused (the previous configuration still serving); shown by /readyz and a gauge."""

    def warnings() -> list[str]:
        found = list(backend.conf.warnings)
        failure = watcher.failure if watcher is not None else ""
        if failure:
            found.append(failure)
        found.extend(f"DRA devices not counted: {p}" for p in backend.state.device_problems())
        return found

    return warnings


def start_requeuer(backend: EngineBackend, informers: Any) -> Stoppable:
    """Parked pods go back to kube-scheduler once their queue would let them through."""
    from scheduler_core.controller.requeue import ParkedPodRequeuer

    return ParkedPodRequeuer(
        backend.accounting,
        informers.api_client,
        registry=informers.registry,
        ready=lambda: backend.readiness()[0],
    ).start()


def start_status_writer(backend: EngineBackend, controller: Controller) -> Stoppable | None:
    """The status write-back of a live backend, unless its controller writes no status."""
    from scheduler_core.cache.native import NATIVE_KIND
    from scheduler_core.controller.status_writer import StatusWriter
    from scheduler_core.extender.holds import hold_reason

    if not controller.options.write_status:
        return None
    accounting = backend.accounting
    state = backend.state

    # Its own sessions over the live objects: rebuilding the verbs' accounting session from
    # here would move their refresh clock and hand them a view older than they would build.
    writer = StatusWriter(
        controller,
        state.shared_snapshot,
        lambda: backend.conf,
        state.locked,
        lambda: state.version,
        lambda ssn, job, task: hold_reason(accounting, ssn, job, task),
        domain_of=accounting.domains.domain_name,
        managed_schedulers=backend.options.scheduler_names,
        namespaces=backend.options.namespaces,
        interval=max(1.0, backend.options.refresh_interval),
    )
    # Events on a native PodGroup name its served version, known once the informers watch it.
    when_watched = getattr(backend.informers, "when_watched", None)
    if when_watched is not None:
        when_watched(
            NATIVE_KIND, lambda spec: setattr(writer, "native_api_version", spec.api_version)
        )
    return writer.start()


def start_gang_preemption_watch(
    backend: EngineBackend, controller: Controller, informers: Any
) -> Stoppable:
    """The leader's watch on preemption kube-scheduler makes for a Kubernetes PodGroup
    without asking the extender; only where the cluster serves those PodGroups, started
    when the informers watch them (at start, or once discovery finds them served)."""
    from scheduler_core.cache.native import NATIVE_KIND
    from scheduler_core.controller.gang_preemption import GangPreemptionWatch

    grants = backend.accounting.grants

    def start(spec: Any) -> Stoppable:
        return GangPreemptionWatch(
            backend.state,
            lambda: backend.conf,
            grants.victims_handed_out,
            controller.recorder.record,
            controller.is_leader,
            native_api_version=str(spec.api_version),
            registry=informers.registry,
        ).start()

    return StartedWhenWatched(informers, NATIVE_KIND, start)


class StartedWhenWatched:
    """A part that starts once the informers watch ``kind`` (an optional kind discovery may
    find after start) and stops with the others; never started when it is stopped first."""

    def __init__(self, informers: Any, kind: str, start: Callable[[Any], Stoppable]) -> None:
        self._start = start
        self._lock = threading.Lock()
        self._stopped = False
        self.part: Stoppable | None = None
        informers.when_watched(kind, self._started)

    def _started(self, spec: Any) -> None:
        with self._lock:
            if not self._stopped and self.part is None:
                self.part = self._start(spec)

    def stop(self) -> None:
        with self._lock:
            self._stopped = True
            part = self.part
        if part is not None:
            part.stop()


class LoopCluster:
    """The live cluster as the reclaim loop reads it (``ReclaimCluster``): the informers'
    health, private snapshots copied under the state's lock, and the backend's readiness
    and queue accounting (where a preemptor's share is reserved)."""

    def __init__(self, backend: EngineBackend) -> None:
        self._backend = backend
        self._state = backend.state
        self._informers = backend.informers

    def ready(self) -> bool:
        return bool(self._backend.readiness()[0])

    def fresh(self) -> bool:
        return self._informers is None or not self._informers.stale()

    def heard_since(self, monotonic: float) -> bool:
        return self._informers is None or bool(self._informers.heard_since(monotonic))

    def snapshot(self) -> ClusterSnapshot:
        return loop_snapshot(self._state)

    def waiting(self) -> bool:
        return anything_unschedulable(self._state)

    def version(self) -> int:
        return self._state.version

    def task(self, key: str) -> TaskInfo | None:
        with self._state.locked():
            return self._state.task(key)

    def reserve(self, task: TaskInfo, job: JobInfo) -> None:
        self._backend.reserve(task, job)


def measure_usage(state: ClusterState, conf: SchedulerConfiguration) -> UsageHistory:
    """Every queue's usage over time, measured from the live cache's events whether or not
    the configuration uses it yet (a reload may turn the plugin on: it then finds the
    history measured since start). Decayed with the configured half-life, or a week until
    one is configured (the plugin sets its own as it opens)."""
    settings = configured_settings(conf)
    history = UsageHistory(settings.half_life if settings is not None else 7 * 86400.0)
    state.usage_history = history
    return history


def start_usage_persister(
    backend: EngineBackend, controller: Controller, history: UsageHistory
) -> Stoppable | None:
    """The leader writes each queue's usage to its Queue while the configuration uses the
    usage history plugin; with the status write-back (the leader's permission to write)."""
    from scheduler_core.controller.usage_persist import UsagePersister

    if not controller.options.write_status:
        return None
    state = backend.state

    def interval() -> float | None:
        settings = configured_settings(backend.conf)
        return settings.persist_interval if settings is not None else None

    def refusals() -> dict[str, str]:
        with state.locked():
            taken, state.usage_refusals = state.usage_refusals, {}
        return taken

    return UsagePersister(controller, history, state.queues, refusals, interval).start()


def start_topology_reporter(backend: EngineBackend, controller: Controller) -> Stoppable:
    """The leader reports each refused network topology as events on its HyperNodes."""
    from scheduler_core.controller.topology_report import TopologyReporter

    return TopologyReporter(controller, backend.state.take_topology_refusals).start()


def start_reclaim_loop(
    options: ReclaimOptions,
    conf: SchedulerConfiguration,
    controller: Controller,
    backend: EngineBackend,
) -> ReclaimLoop:
    """The started loop, reading the cluster through the backend (its readiness, its queue
    accounting, the state) and acting for the controller."""
    return ReclaimLoop(
        conf,
        options,
        cluster=LoopCluster(backend),
        leader=controller,
        registry=controller.registry,
    ).start()


def _follows_configuration(options: BuildOptions) -> bool:
    return bool(options.conf_path) and options.conf_reload_interval > 0


def watch_configuration(
    options: BuildOptions,
    use: Callable[[SchedulerConfiguration], None],
    registry: CollectorRegistry | None,
) -> ConfigurationWatcher | None:
    """The started watcher of the configuration file (the default configuration has none),
    or None when the reload interval is 0; its reload counter goes on ``registry``."""
    if not _follows_configuration(options):
        return None
    assert options.conf_path is not None
    return ConfigurationWatcher(
        options.conf_path,
        use,
        strict=options.strict_conf,
        interval=options.conf_reload_interval,
        registry=registry,
    ).start()


def _informers(
    state: ClusterState,
    kubeconfig: str | None,
    stall_timeout: float = 90.0,
    discovery_interval: float = 60.0,
) -> Any:
    """The informers over the kubeconfig's cluster, or the pod's own when `kubeconfig` is None.

    A file that cannot be read, or a client configuration that cannot be built, is a ValueError
    naming it: the kubernetes client's loaders raise whatever the file's shape provokes
    (ConfigException, YAML errors, TypeError, ...), and a user needs one line, not a traceback.
    """
    from scheduler_core.cache.informers import InformerSet
    from scheduler_core.cache.kinds import OPTIONAL_KINDS
    from scheduler_core.cache.native import NATIVE_PODGROUPS
    from scheduler_core.cache.reflector import ReflectorOptions

    if kubeconfig is not None:
        try:
            Path(kubeconfig).read_bytes()
        except OSError as exc:
            raise ValueError(f"cannot read kubeconfig {kubeconfig}: {exc.strerror or exc}") from exc
        where = f"kubeconfig {kubeconfig}"
    else:
        where = "in-cluster configuration (is this running in a pod with a service account?)"
    try:
        return InformerSet(
            state,
            kubeconfig=kubeconfig,
            in_cluster=True if kubeconfig is None else None,
            options=ReflectorOptions(watch_read_timeout=stall_timeout),
            optional_kinds=(*OPTIONAL_KINDS, NATIVE_PODGROUPS),
            discovery_interval=discovery_interval,
        )
    except Exception as exc:
        raise ValueError(f"cannot use the {where}: {exc}") from exc
