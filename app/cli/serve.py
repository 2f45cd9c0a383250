"""`queue-extender serve`: flags, settings and the uvicorn run loop.

The engine is reached only through `backend_factory(args)`, supplied by the caller, so this
module knows nothing about clusters, informers or configuration files beyond passing their
flags along. One uvicorn worker only: every worker would hold its own informer caches and
its own assumed-pod state, and two such views would hand out the same queue share twice.
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
import math
import shlex
import signal
import socket
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import uvicorn

from app.backend.conf_reload import DEFAULT_INTERVAL as DEFAULT_RELOAD_INTERVAL
from app.cli.controller_flags import add_controller_group, controller_options_from_args
from app.cli.flag_types import integer, non_negative_seconds, positive_seconds
from app.cli.reclaim_flags import add_reclaim_group, reclaim_options_from_args
from app.serving.delegated_auth import (
    DEFAULT_CACHE_TTL,
    DEFAULT_REVIEW_RATE,
    KubernetesReviews,
)
from app.serving.guard import (
    METRICS_LIMITS,
    STATUS_LIMITS,
    VERB_LIMITS,
    LimitedConfig,
    ListenerLimits,
    raise_open_files_limit,
)
from app.serving.listeners import SideServer, serve_all, uvicorn_config
from app.serving.security import tls_options
from app.serving.server import (
    DEFAULT_MAX_BODY_BYTES,
    ServerSettings,
    create_app,
    create_metrics_app,
    verb_path,
)
from app.serving.status_listener import build_status_server, parse_address
from app.serving.tls_reload import ReloadingServerContext
from app.telemetry.logs import setup_logging
from app.telemetry.metrics import ListenerCollector
from app.verbs.ports import ExtenderBackend
from app.verbs.wire import one_line

if TYPE_CHECKING:
    from app.backend.build import BuildOptions
    from app.backend.engine import EngineBackend

log = logging.getLogger(__name__)

#: The GIL switch interval while serving (see ``run_serve``).
SWITCH_INTERVAL_SECONDS = 0.0005

BackendFactory = Callable[[argparse.Namespace], ExtenderBackend]

_Subparsers = Any  # argparse's _SubParsersAction is private; typed loosely on purpose.


def _names(value: str) -> list[str]:
    return [n.strip() for n in value.split(",") if n.strip()]


def _scheduler_names(value: str) -> list[str]:
    """At least one name: an empty list would manage no pod at all, and every verb would
    pass every pod through unchecked while the extender looked healthy."""
    names = _names(value)
    if not names:
        raise argparse.ArgumentTypeError("at least one scheduler name is required")
    return names


# argparse turns an ArgumentTypeError into `argument --flag: <message>` and exit 2; every
# numeric flag is checked (here and in app/cli/flag_types.py) so a bad value never reaches uvicorn
# or the engine (a port of 70000 would otherwise wrap round to 4464).


def _verbosity(value: str) -> int:
    n = integer(value)
    if not 0 <= n <= 10:
        raise argparse.ArgumentTypeError(f"verbosity must be between 0 and 10, not {n}")
    return n


def _positive(value: str) -> int:
    n = integer(value)
    if n <= 0:
        raise argparse.ArgumentTypeError(f"must be a positive integer, not {n}")
    return n


def _positive_rate(value: str) -> float:
    try:
        n = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a number") from None
    if not math.isfinite(n) or n <= 0:
        raise argparse.ArgumentTypeError(f"must be a positive rate, not {value}")
    return n


def _port(value: str) -> int:
    n = integer(value)
    if not 1 <= n <= 65535:
        raise argparse.ArgumentTypeError(f"port must be between 1 and 65535, not {n}")
    return n


def _host_port(value: str) -> tuple[str, int]:
    """`HOST:PORT`, `[IPv6]:PORT` or `:PORT` (every interface), as controller-runtime reads
    its --metrics-bind-address."""
    host, sep, port = value.rpartition(":")
    if not sep:
        raise argparse.ArgumentTypeError(f"{value!r} is not HOST:PORT (e.g. 0.0.0.0:9090)")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    return host or "0.0.0.0", _port(port)


def add_serve_parser(subparsers: _Subparsers) -> argparse.ArgumentParser:
    """Adds the `serve` sub-command to the caller's sub-parsers and returns its parser."""
    p: argparse.ArgumentParser = subparsers.add_parser(
        "serve",
        help="serve the kube-scheduler extender over HTTP(S)",
        description="Serve the filter/prioritize/preempt extender verbs, /metrics, "
        "/healthz, /readyz and /debug for kube-scheduler.",
    )
    net = p.add_argument_group("listening")
    net.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    net.add_argument(
        "--port", type=_port, default=8888, help="port to bind, 1..65535 (default 8888)"
    )
    net.add_argument("--url-prefix", default="/", help="urlPrefix path part (default /)")
    net.add_argument(
        "--filter-verb",
        default="filter",
        help="path of the filter verb under --url-prefix, kube-scheduler's filterVerb "
        "(default filter)",
    )
    net.add_argument(
        "--prioritize-verb",
        default="prioritize",
        help="path of the prioritize verb, kube-scheduler's prioritizeVerb (default prioritize)",
    )
    net.add_argument(
        "--preempt-verb",
        default="preempt",
        help="path of the preempt verb, kube-scheduler's preemptVerb (default preempt)",
    )
    net.add_argument(
        "--metrics-bind-address",
        type=_host_port,
        metavar="HOST:PORT",
        help="also serve /metrics, /healthz and /readyz (never the verbs or /debug) on this "
        "address, e.g. 0.0.0.0:9090, so Prometheus can scrape while the verbs stay on "
        "loopback; same TLS and --metrics-auth as the main listener (default: none)",
    )
    net.add_argument(
        "--status-address",
        type=parse_address,
        metavar="HOST:PORT",
        help="also serve the status page and the read-only API (no verbs) on this address",
    )
    net.add_argument(
        "--max-body-bytes",
        type=_positive,
        default=DEFAULT_MAX_BODY_BYTES,
        help="largest accepted request body on every endpoint; larger ones are answered 413 "
        "(default 8 MiB)",
    )
    net.add_argument(
        "--max-connections",
        type=_positive,
        default=VERB_LIMITS.max_connections,
        metavar="N",
        help="open connections the main (verbs) listener accepts at once; more are closed as "
        f"they arrive (default {VERB_LIMITS.max_connections})",
    )
    net.add_argument(
        "--metrics-max-connections",
        type=_positive,
        default=METRICS_LIMITS.max_connections,
        metavar="N",
        help="the same for --metrics-bind-address, counted apart from the verbs' "
        f"(default {METRICS_LIMITS.max_connections})",
    )
    net.add_argument(
        "--status-max-connections",
        type=_positive,
        default=STATUS_LIMITS.max_connections,
        metavar="N",
        help="the same for --status-address, counted apart from the verbs' "
        f"(default {STATUS_LIMITS.max_connections})",
    )
    net.add_argument(
        "--request-read-timeout",
        type=positive_seconds,
        default=VERB_LIMITS.read_timeout,
        metavar="SECONDS",
        help="every listener closes a connection that has not sent a whole request this long "
        "after it opened or after the request began (slow or idle clients; default "
        f"{VERB_LIMITS.read_timeout:g})",
    )
    net.add_argument(
        "--noop",
        action="store_true",
        help="also serve POST /noop (reads the body, answers {}): the floor benchmarks "
        "subtract; off by default",
    )

    eng = p.add_argument_group("engine")
    eng.add_argument("--conf", metavar="FILE", help="Volcano scheduler configuration file")
    eng.add_argument(
        "--strict-conf",
        action="store_true",
        help="refuse to start on a configuration warning (e.g. a plugin that is not "
        "available), which otherwise is skipped as Volcano does and shown by /readyz",
    )
    eng.add_argument(
        "--conf-reload-interval",
        type=non_negative_seconds,
        default=DEFAULT_RELOAD_INTERVAL,
        metavar="SECONDS",
        help="seconds between two checks of the --conf file for a new version (a ConfigMap's "
        "symlink swap included); a new file that does not load leaves the running "
        "configuration in place, logged and named by /readyz (default 2; 0: never reload)",
    )
    src = eng.add_mutually_exclusive_group()
    src.add_argument("--cluster", metavar="FILE", help="read a static cluster from FILE")
    src.add_argument("--kubeconfig", metavar="FILE", help="watch the cluster of a kubeconfig")
    src.add_argument("--in-cluster", action="store_true", help="watch the pod's own cluster")
    src.add_argument(
        "--demo",
        action="store_true",
        help="serve the bundled demo cluster (one of the four sources is required)",
    )
    eng.add_argument(
        "--watch-stall-timeout",
        type=positive_seconds,
        default=90.0,
        metavar="SECONDS",
        help="a live watch that delivers no event and no bookmark for this long is stalled: "
        "it is relisted, /readyz says so and nothing is decided until the cache is current "
        "again (default 90; the API server sends a bookmark before it ends each watch, and "
        "each watch is asked to end within two thirds of this)",
    )
    eng.add_argument(
        "--scheduler-names",
        type=_scheduler_names,
        default=["queue-scheduler"],
        help="comma-separated spec.schedulerName values to manage (default queue-scheduler)",
    )
    eng.add_argument(
        "--manage-annotated",
        action="store_true",
        help="also manage pods that name a Volcano queue or pod group by annotation",
    )
    eng.add_argument(
        "--refresh-interval",
        type=non_negative_seconds,
        default=0.0,
        help="least seconds between two updates of the queue accounting (default 0: every "
        "verb decides on the latest event, the accounting being brought up to date whenever a "
        "change matters to decisions); a positive value caps updates under churn at the cost "
        "of deciding on shares up to that old (the extender's own decisions still count at "
        "once)",
    )
    eng.add_argument(
        "--namespaces",
        type=_names,
        default=[],
        help="comma-separated namespaces whose pending pods the extender decides for (default: "
        "all); pods elsewhere pass through but still count in node and queue usage",
    )
    eng.add_argument(
        "--assume-ttl",
        type=positive_seconds,
        default=30.0,
        help="seconds a filtered pod stays assumed before the informer shows it (default 30)",
    )
    eng.add_argument(
        "--on-error",
        choices=("pass", "fail"),
        default="fail",
        help="on an internal error: answer the verb's Error so kube-scheduler retries the pod "
        "(fail, the default: with ignorable: false no pod is placed that the queue rules would "
        "refuse), or let every node pass and score neutrally (pass: fails open)",
    )

    sec = p.add_argument_group("security")
    sec.add_argument("--tls-cert", metavar="FILE", help="serve HTTPS with this certificate")
    sec.add_argument("--tls-key", metavar="FILE", help="private key of --tls-cert")
    sec.add_argument("--client-ca", metavar="FILE", help="require client certificates from CA")
    sec.add_argument("--token-file", metavar="FILE", help="require this bearer token")
    sec.add_argument(
        "--metrics-auth", action="store_true", help="require the bearer token on /metrics too"
    )

    auth = p.add_argument_group("authentication")
    auth.add_argument(
        "--delegated-auth",
        action="store_true",
        help="check the bearer token of every request but the verbs and probes with the API "
        "server (TokenReview, then a SubjectAccessReview on the path: grant it with RBAC "
        "nonResourceURLs); needs --kubeconfig or --in-cluster, excludes --token-file. The "
        "verbs stay open: kube-scheduler sends no token (use mTLS and loopback for them)",
    )
    auth.add_argument(
        "--delegated-auth-cache-ttl",
        type=non_negative_seconds,
        default=DEFAULT_CACHE_TTL,
        metavar="SECONDS",
        help="how long a review's answer is reused (default 10; 0 asks the API server on "
        "every request)",
    )
    auth.add_argument(
        "--delegated-auth-review-rate",
        type=_positive_rate,
        default=DEFAULT_REVIEW_RATE,
        metavar="PER_SECOND",
        help="TokenReviews and SubjectAccessReviews sent to the API server a second, at most "
        "(bursts of twice that); a request beyond it is answered 429 without a review "
        f"(default {DEFAULT_REVIEW_RATE:g})",
    )

    logs = p.add_argument_group("logging")
    logs.add_argument(
        "-v", "--v", dest="verbosity", type=_verbosity, default=0, help="klog verbosity 0..10"
    )
    logs.add_argument(
        "--log-format",
        choices=("text", "json"),
        default="text",
        help="klog-style text lines or one JSON object per line (default text)",
    )

    add_controller_group(p)
    add_reclaim_group(p)
    return p


def settings_from_args(args: argparse.Namespace) -> ServerSettings:
    return ServerSettings(
        url_prefix=args.url_prefix,
        filter_verb=args.filter_verb,
        prioritize_verb=args.prioritize_verb,
        preempt_verb=args.preempt_verb,
        on_error=args.on_error,
        max_body_bytes=args.max_body_bytes,
        token_file=args.token_file,
        metrics_auth=args.metrics_auth,
        auth_cache_ttl=getattr(args, "delegated_auth_cache_ttl", DEFAULT_CACHE_TTL),
        auth_review_rate=getattr(args, "delegated_auth_review_rate", DEFAULT_REVIEW_RATE),
        noop=bool(getattr(args, "noop", False)),
    )


def listener_limits(args: argparse.Namespace) -> dict[str, ListenerLimits]:
    """Each listener's limits from the flags: "verbs", "metrics", "status"."""
    timeout = float(getattr(args, "request_read_timeout", VERB_LIMITS.read_timeout))

    def one(base: ListenerLimits, flag: str) -> ListenerLimits:
        cap = int(getattr(args, flag, base.max_connections))
        return dataclasses.replace(base, max_connections=cap, read_timeout=timeout)

    return {
        "verbs": one(VERB_LIMITS, "max_connections"),
        "metrics": one(METRICS_LIMITS, "metrics_max_connections"),
        "status": one(STATUS_LIMITS, "status_max_connections"),
    }


def base_url(args: argparse.Namespace) -> str:
    scheme = "https" if args.tls_cert else "http"
    host = args.host
    if host in ("0.0.0.0", "::", ""):
        host = "127.0.0.1"
    if ":" in host:
        host = f"[{host}]"
    return f"{scheme}://{host}:{args.port}"


#: A pending pod of the bundled demo cluster (production/report-export) and its nodes: the
#: banner's curl gets a real answer from the engine, not an error.
DEMO_FILTER_BODY = (
    '{"Pod":{"metadata":{"name":"report-export","namespace":"production",'
    '"uid":"production-report-export","annotations":{"scheduling.volcano.sh/queue-name":'
    '"production"}},"spec":{"schedulerName":"queue-scheduler","containers":[{"name":"main",'
    '"resources":{"requests":{"cpu":"2","memory":"4Gi"}}}]}},'
    '"NodeNames":["cpu-node-1","cpu-node-2","cpu-node-3","gpu-node-1"]}'
)


def banner(args: argparse.Namespace) -> str:
    """What `serve` prints on start: where it listens and a request to try."""
    url = base_url(args)
    filter_url = url + verb_path(args.url_prefix, args.filter_verb)
    body = (
        DEMO_FILTER_BODY
        if args.demo
        else (
            '{"Pod":{"metadata":{"name":"POD","namespace":"NAMESPACE"},"spec":{"schedulerName":'
            '"queue-scheduler","containers":[]}},"NodeNames":["NODE-1","NODE-2"]}'
        )
    )
    curl = ["curl", "-sS", "-X", "POST", filter_url, "-H", "Content-Type: application/json"]
    if args.tls_cert:
        curl[1:1] = ["--cacert", "<CA-of-tls-cert>"]
        if args.client_ca:
            curl[1:1] = ["--cert", "<client-cert>", "--key", "<client-key>"]
    if args.token_file:
        curl += ["-H", 'Authorization: Bearer "$(cat ' + args.token_file + ')"']
    command = " ".join(shlex.quote(part) for part in curl) + " -d " + shlex.quote(body)
    metrics_url = url + "/metrics"
    if args.metrics_bind_address is not None:
        host, port = args.metrics_bind_address
        metrics_url = base_url(argparse.Namespace(**{**vars(args), "host": host, "port": port}))
        metrics_url += "/metrics"
    # The status page is served by the main listener, and by --status-address when given.
    status_url = url + "/"
    status_address: tuple[str, int] | None = getattr(args, "status_address", None)
    if status_address is not None:
        host, port = status_address
        status_url = base_url(argparse.Namespace(**{**vars(args), "host": host, "port": port}))
        status_url += "/"
    return (
        f"queue-extender serving on {url} (filter {filter_url}, metrics {metrics_url})\n"
        f"status page: {status_url}\n"
        f"try: {command}"
    )


def build_server(
    args: argparse.Namespace, backend_factory: BackendFactory
) -> tuple[uvicorn.Server, ServerSettings]:
    """The main listener alone (for callers that never ask for a metrics listener)."""
    server, _, settings = build_servers(args, backend_factory)
    return server, settings


def build_servers(
    args: argparse.Namespace, backend_factory: BackendFactory
) -> tuple[uvicorn.Server, list[SideServer], ServerSettings]:
    """The configured (not yet started) main listener and the side listeners over the same
    engine: --metrics-bind-address (/metrics and probes) and --status-address (the page and
    the read-only API); raises ValueError on bad flags."""
    tls = tls_options(args.tls_cert, args.tls_key, args.client_ca)
    # One context for both listeners, following the files as cert-manager rotates them.
    reloading = ReloadingServerContext(args.tls_cert, args.tls_key, args.client_ca) if tls else None
    metrics_address: tuple[str, int] | None = getattr(args, "metrics_bind_address", None)
    if metrics_address == (args.host, args.port):
        raise ValueError("--metrics-bind-address must differ from --host:--port")
    delegated = bool(getattr(args, "delegated_auth", False))
    if delegated and args.token_file:
        raise ValueError("--delegated-auth and --token-file are alternatives: choose one")
    if delegated and not (args.kubeconfig or args.in_cluster):
        raise ValueError("--delegated-auth needs an API server: --kubeconfig or --in-cluster")
    settings = settings_from_args(args)
    backend = backend_factory(args)
    if delegated:
        # The informers' client: same kubeconfig or ServiceAccount, same connection pool.
        api_client = getattr(backend, "api_client", None)
        if api_client is None:
            raise ValueError("--delegated-auth: the backend has no API server client")
        settings.delegated_auth = KubernetesReviews(api_client)
    # A backend with its own registry (the informers' metrics) is shown on /metrics too.
    extra = getattr(backend, "registry", None)
    if extra is not None:
        settings.extra_registries = (*settings.extra_registries, extra)
    # A backend that knows its configuration's warnings has them shown on /readyz and counted.
    warnings = getattr(backend, "config_warnings", None)
    if callable(warnings):
        settings.config_warnings = warnings
    assumptions = getattr(backend, "assumption_counts", None)
    if callable(assumptions):
        settings.assumptions = assumptions
    app = create_app(backend, settings)
    resign = getattr(backend, "resign", None)
    limits = listener_limits(args)
    server = ResigningServer(
        uvicorn_config(app, args.host, args.port, tls, reloading, limits=limits["verbs"]),
        resign if callable(resign) else None,
    )
    sides: list[SideServer] = []
    if metrics_address is not None:
        host, port = metrics_address
        metrics = create_metrics_app(app)
        config = uvicorn_config(
            metrics, host, port, tls, reloading, limits=limits["metrics"], name="metrics listener"
        )
        sides.append(SideServer(config))
    status = build_status_server(args, app, settings, reloading, limits["status"])
    if status is not None:
        sides.append(status)
    configs = [s.config for s in (server, *sides) if isinstance(s.config, LimitedConfig)]
    app.state.registry.register(ListenerCollector(lambda: [c.counts() for c in configs]))
    return server, sides, settings


def run_serve(args: argparse.Namespace, backend_factory: BackendFactory) -> int:
    """Runs the service until SIGINT/SIGTERM; returns the process exit code."""
    setup_logging(args.verbosity, args.log_format)
    # The informer threads decode watch events while the event loop answers kube-scheduler.
    # Each time the loop gives up the GIL for a socket call, it waits for the switch interval
    # (5 ms by default) to get it back from a busy informer thread: a few such waits per
    # request cost more than the request. A short interval hands the GIL back sooner.
    sys.setswitchinterval(SWITCH_INTERVAL_SECONDS)
    before, after = raise_open_files_limit()
    if after != before:
        log.info("open files limit raised from %d to %d", before, after)
    try:
        server, sides, _ = build_servers(args, backend_factory)
    except (ValueError, OSError) as exc:
        log.error("cannot start: %s", one_line(str(exc)))
        return 2
    print(banner(args), flush=True)
    leave_through_atexit_on_sigterm()
    try:
        if not sides:
            server.run()
        else:
            return serve_all(server, sides)
    except (OSError, socket.gaierror) as exc:
        log.error("serving failed: %s", exc)
        return 1
    return 0


class ResigningServer(uvicorn.Server):
    """The main listener. On SIGINT/SIGTERM it first tells the backend to stop leading, then
    shuts down as uvicorn does: the replica stops writing the moment its stop begins, not
    once the listeners have drained, and gives its lease back at exit."""

    def __init__(self, config: uvicorn.Config, resign: Callable[[], None] | None) -> None:
        super().__init__(config)
        self._resign = resign

    def handle_exit(self, sig: int, frame: Any) -> None:
        if self._resign is not None:
            try:
                self._resign()
            except Exception:  # stopping must go on whatever the backend does
                log.exception("resigning leadership on signal %d failed", sig)
        super().handle_exit(sig, frame)


def _terminated(signum: int, frame: Any) -> None:
    """SIGTERM once uvicorn has shut down: nothing left to do but return normally."""


def leave_through_atexit_on_sigterm() -> None:
    """uvicorn catches SIGTERM, shuts the listeners down, then raises the signal again for
    whatever handler was there before. With the default handler that kills the process
    before ``atexit`` runs, so a leader never stopped its loop nor gave its Lease back, and its
    successor waited the whole lease out. With this (empty) handler in place the process
    returns from serving and leaves through ``atexit``: writers stop, the lease is released.
    Installed only once serving starts: a SIGTERM while the caches sync still ends it."""
    signal.signal(signal.SIGTERM, _terminated)


def build_options_from_args(args: argparse.Namespace) -> BuildOptions:
    """``serve``'s flags as the composition root's options; raises ValueError with a
    one-line reason on inconsistent flags, before anything starts."""
    from app.backend.build import BuildOptions, ClusterSource
    from app.backend.engine import BackendOptions

    return BuildOptions(
        source=ClusterSource(
            kubeconfig=args.kubeconfig,
            in_cluster=bool(args.in_cluster),
            cluster_file=args.cluster,
            demo=bool(args.demo),
            watch_stall_timeout=float(args.watch_stall_timeout),
        ),
        backend=BackendOptions(
            scheduler_names=tuple(args.scheduler_names),
            manage_annotated=args.manage_annotated,
            assume_ttl=float(args.assume_ttl),
            refresh_interval=float(args.refresh_interval),
            namespaces=tuple(args.namespaces),
        ),
        conf_path=args.conf,
        strict_conf=bool(args.strict_conf),
        conf_reload_interval=float(getattr(args, "conf_reload_interval", 0.0)),
        controller=controller_options_from_args(args),
        reclaim=reclaim_options_from_args(args),
    )


def backend_from_args(args: argparse.Namespace) -> EngineBackend:
    """The backend ``serve`` runs, built from its flags (the engine is imported only here, so
    commands that never serve do not pay for it)."""
    from app.backend.build import build_backend

    return build_backend(build_options_from_args(args))
