"""`queue-extender serve`: flags, settings and the uvicorn run loop.

The engine is reached only through `backend_factory(args)`, supplied by the caller, so this
module knows nothing about clusters, informers or configuration files beyond passing their
flags along. One uvicorn worker only: every worker would hold its own informer caches and
its own assumed-pod state, and two such views would hand out the same queue share twice.
"""

from __future__ import annotations

import argparse
import logging
import shlex
import socket
import sys
from collections.abc import Callable
from typing import Any

import uvicorn

from app.conf_reload import DEFAULT_INTERVAL as DEFAULT_RELOAD_INTERVAL
from app.controller_args import add_controller_group
from app.delegated_auth import DEFAULT_CACHE_TTL, KubernetesReviews
from app.flag_types import integer, non_negative_seconds, positive_seconds
from app.listeners import SideServer, serve_all, uvicorn_config
from app.logs import setup_logging
from app.ports import ExtenderBackend
from app.reclaim_args import add_reclaim_group
from app.security import tls_options
from app.server import (
    DEFAULT_MAX_BODY_BYTES,
    ServerSettings,
    create_app,
    create_metrics_app,
    verb_path,
)
from app.status_listener import build_status_server, parse_address
from app.tls_reload import ReloadingServerContext
from app.wire import one_line

log = logging.getLogger(__name__)

#: The GIL switch interval while serving (see ``run_serve``).
SWITCH_INTERVAL_SECONDS = 0.0005

BackendFactory = Callable[[argparse.Namespace], ExtenderBackend]

_Subparsers = Any  # argparse's _SubParsersAction is private; typed loosely on purpose.


def _names(value: str) -> list[str]:
    return [n.strip() for n in value.split(",") if n.strip()]


# argparse turns an ArgumentTypeError into `argument --flag: <message>` and exit 2; every
# numeric flag is checked (here and in app/flag_types.py) so a bad value never reaches uvicorn
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
        help="largest accepted request body (default 8 MiB)",
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
        "--scheduler-names",
        type=_names,
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
    )


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
    server = uvicorn.Server(uvicorn_config(app, args.host, args.port, tls, reloading))
    sides: list[SideServer] = []
    if metrics_address is not None:
        host, port = metrics_address
        sides.append(
            SideServer(uvicorn_config(create_metrics_app(app), host, port, tls, reloading))
        )
    status = build_status_server(args, app, settings, reloading)
    if status is not None:
        sides.append(status)
    return server, sides, settings


def run_serve(args: argparse.Namespace, backend_factory: BackendFactory) -> int:
    """Runs the service until SIGINT/SIGTERM; returns the process exit code."""
    setup_logging(args.verbosity, args.log_format)
    # The informer threads decode watch events while the event loop answers kube-scheduler.
    # Each time the loop gives up the GIL for a socket call, it waits for the switch interval
    # (5 ms by default) to get it back from a busy informer thread: a few such waits per
    # request cost more than the request. A short interval hands the GIL back sooner.
    sys.setswitchinterval(SWITCH_INTERVAL_SECONDS)
    try:
        server, sides, _ = build_servers(args, backend_factory)
    except (ValueError, OSError) as exc:
        log.error("cannot start: %s", one_line(str(exc)))
        return 2
    print(banner(args), flush=True)
    try:
        if not sides:
            server.run()
        else:
            return serve_all(server, sides)
    except (OSError, socket.gaierror) as exc:
        log.error("serving failed: %s", exc)
        return 1
    return 0
