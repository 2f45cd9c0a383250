"""The composition root: one ``EngineBackend`` and everything that runs beside it.

``build_backend`` takes plain option dataclasses (the command line turns flags into them in
``app.cli``) and assembles the cluster source (a file, the demo cluster, or live informers),
the controller with its leader election, the status writer, the parked-pod requeuer, the
reclaim loop and the configuration watcher. It is the one place that starts threads; every
piece it starts is stopped by ``EngineBackend.close()`` or at exit. Only the entry points
import it.
"""

from __future__ import annotations

import atexit
import logging
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from prometheus_client import CollectorRegistry

from app.backend.conf_reload import ConfigurationWatcher
from app.backend.engine import DEMO_CLUSTER, BackendOptions, EngineBackend, recent_evictions
from scheduler_core.api.usage_history import UsageHistory
from scheduler_core.cache.state import ClusterState
from scheduler_core.cache.yaml_source import load_cluster_file, load_cluster_text
from scheduler_core.conf import (
    SchedulerConfiguration,
    default_configuration,
    load_configuration_file,
)
from scheduler_core.controller.decision import live_configuration
from scheduler_core.controller.reclaim import ReclaimLoop, ReclaimOptions
from scheduler_core.controller.runtime import Controller, ControllerOptions
from scheduler_core.controller.snapshot import anything_waiting, loop_snapshot
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


def build_backend(options: BuildOptions) -> EngineBackend:
    """The backend ``serve`` runs: a static file, the demo cluster, or live informers.
    Raises ValueError with a one-line reason on a bad file or option."""
    conf = load_checked_configuration(options)
    state = ClusterState()
    if options.reclaim is not None:  # bad reclaim arguments in the configuration: fail now
        live_configuration(conf, max_evictions=options.reclaim.max_evictions)
    source = options.source
    if source.live:
        history = measure_usage(state, conf)  # before the first event
        informers = _informers(state, source.kubeconfig, source.watch_stall_timeout)
        informers.start()
        where = "the API server (" + (source.kubeconfig or "in-cluster") + ")"
        controller = start_controller(
            informers.api_client,
            options.controller or ControllerOptions(),
            informers.registry,
        )
        history.server_now = controller.rest.clock.now
        backend = EngineBackend(
            state,
            conf,
            options.backend,
            informers=informers,
            source=where,
            controller=controller,
        )
        start_requeuer(backend, informers)
        start_status_writer(backend)
        start_usage_persister(backend, history)
        if options.reclaim is not None:
            backend.reclaim_loop = start_reclaim_loop(
                options.reclaim, conf, state, controller, backend
            )
        watch_configuration(backend, options)
        # Registered last, so it runs first at exit: no writer writes while the others stop,
        # and the controller's own stop (registered first, run last) gives the lease back.
        atexit.register(backend.resign)
        return backend
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
    state.apply_objects(loaded.objects)
    backend = EngineBackend(state, conf, options.backend, source=where)
    backend.readiness()  # a file is synced at once: freeze it now
    watch_configuration(backend, options)
    return backend


def demo_cluster_text() -> str:
    return resources.files("app").joinpath("demo", DEMO_CLUSTER).read_text(encoding="utf-8")


def start_controller(
    api_client: Any, options: ControllerOptions, registry: CollectorRegistry | None
) -> Controller:
    """The started controller of a live cluster; it leaves the election at exit."""
    controller = Controller(api_client, options, registry=registry)
    controller.start()
    atexit.register(controller.stop)
    return controller


def start_requeuer(backend: EngineBackend, informers: Any) -> None:
    """Parked pods go back to kube-scheduler once their queue would let them through."""
    from scheduler_core.controller.requeue import ParkedPodRequeuer

    backend.requeuer = ParkedPodRequeuer(
        backend.accounting,
        informers.api_client,
        registry=informers.registry,
        ready=lambda: backend.readiness()[0],
    ).start()


def start_status_writer(backend: EngineBackend) -> None:
    """The status write-back of a live backend, unless its controller writes no status."""
    from scheduler_core.controller.status_writer import StatusWriter
    from scheduler_core.extender.holds import hold_reason

    controller = backend.controller
    if controller is None or not controller.options.write_status:
        return
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
        managed_schedulers=backend.options.scheduler_names,
        namespaces=backend.options.namespaces,
        interval=max(1.0, backend.options.refresh_interval),
    )
    writer.start()
    atexit.register(writer.stop)
    backend.status_writer = writer


def measure_usage(state: ClusterState, conf: SchedulerConfiguration) -> UsageHistory:
    """Every queue's usage over time, measured from the live cache's events whether or not
    the configuration uses it yet (a reload may turn the plugin on: it then finds the
    history measured since start). Decayed with the configured half-life, or a week until
    one is configured (the plugin sets its own as it opens)."""
    settings = configured_settings(conf)
    history = UsageHistory(settings.half_life if settings is not None else 7 * 86400.0)
    state.usage_history = history
    return history


def start_usage_persister(backend: EngineBackend, history: UsageHistory) -> None:
    """The leader writes each queue's usage to its Queue while the configuration uses the
    usage history plugin; with the status write-back (the leader's permission to write)."""
    from scheduler_core.controller.usage_persist import UsagePersister

    controller = backend.controller
    if controller is None or not controller.options.write_status:
        return
    state = backend.state

    def interval() -> float | None:
        settings = configured_settings(backend.conf)
        return settings.persist_interval if settings is not None else None

    def refusals() -> dict[str, str]:
        with state.locked():
            taken, state.usage_refusals = state.usage_refusals, {}
        return taken

    persister = UsagePersister(controller, history, state.queues, refusals, interval).start()
    atexit.register(persister.stop)
    backend.usage_persister = persister


def start_reclaim_loop(
    options: ReclaimOptions,
    conf: SchedulerConfiguration,
    state: ClusterState,
    controller: Controller,
    backend: EngineBackend,
) -> ReclaimLoop:
    """The started loop, wired to the backend: its readiness, its queue accounting (the
    preemptor's reservation) and the state (a private snapshot, copied under the lock)."""

    informers = backend.informers

    def task(key: str) -> Any:
        with state.locked():
            return state.task(key)

    loop = ReclaimLoop(
        conf,
        options,
        rest=controller.rest,
        recorder=controller.recorder,
        is_leader=controller.is_leader,
        valid_for=controller.leadership_valid_for,
        server_now=controller.rest.clock.now,
        fresh=(lambda: not informers.stale()) if informers is not None else None,
        heard_since=informers.heard_since if informers is not None else None,
        ready=lambda: bool(backend.readiness()[0]),
        snapshot=lambda: loop_snapshot(state),
        waiting=lambda: anything_waiting(state),
        version=lambda: state.version,
        task=task,
        reserve=backend.reserve,
        registry=controller.registry,
    )
    loop.start()
    atexit.register(loop.stop)
    backend.eviction_history = lambda: recent_evictions(loop)
    return loop


def watch_configuration(backend: EngineBackend, options: BuildOptions) -> None:
    """Follow the configuration file (the default configuration has none) unless the reload
    interval is 0; the reload counter goes on the backend's registry, which /metrics shows
    (one is made for a backend without informers)."""
    if not options.conf_path or options.conf_reload_interval <= 0:
        return
    if backend.registry is None:
        backend.registry = CollectorRegistry()
    backend.conf_watcher = ConfigurationWatcher(
        options.conf_path,
        backend.use_configuration,
        strict=options.strict_conf,
        interval=options.conf_reload_interval,
        registry=backend.registry,
    ).start()
    atexit.register(backend.conf_watcher.stop)


def _informers(state: ClusterState, kubeconfig: str | None, stall_timeout: float = 90.0) -> Any:
    """The informers over the kubeconfig's cluster, or the pod's own when `kubeconfig` is None.

    A file that cannot be read, or a client configuration that cannot be built, is a ValueError
    naming it: the kubernetes client's loaders raise whatever the file's shape provokes
    (ConfigException, YAML errors, TypeError, ...), and a user needs one line, not a traceback.
    """
    from scheduler_core.cache.informers import InformerSet
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
        )
    except Exception as exc:
        raise ValueError(f"cannot use the {where}: {exc}") from exc
