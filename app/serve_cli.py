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
from collections.abc import Callable
from typing import Any

import uvicorn

from app.controller_args import add_controller_group
from app.logs import setup_logging
from app.ports import ExtenderBackend
from app.reclaim_args import add_reclaim_group
from app.security import tls_options
from app.server import DEFAULT_MAX_BODY_BYTES, ServerSettings, create_app, verb_path

log = logging.getLogger(__name__)

BackendFactory = Callable[[argparse.Namespace], ExtenderBackend]

_Subparsers = Any  # argparse's _SubParsersAction is private; typed loosely on purpose.


def _names(value: str) -> list[str]:
    return [n.strip() for n in value.split(",") if n.strip()]


def _verbosity(value: str) -> int:
    n = int(value)
    if not 0 <= n <= 10:
        raise argparse.ArgumentTypeError("verbosity must be between 0 and 10")
    return n


def _positive(value: str) -> int:
    n = int(value)
    if n <= 0:
        raise argparse.ArgumentTypeError("must be a positive integer")
    return n


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
    net.add_argument("--port", type=int, default=8888, help="port to bind (default 8888)")
    net.add_argument("--url-prefix", default="/", help="urlPrefix path part (default /)")
    net.add_argument("--filter-verb", default="filter")
    net.add_argument("--prioritize-verb", default="prioritize")
    net.add_argument("--preempt-verb", default="preempt")
    net.add_argument(
        "--max-body-bytes",
        type=_positive,
        default=DEFAULT_MAX_BODY_BYTES,
        help="largest accepted request body (default 8 MiB)",
    )

    eng = p.add_argument_group("engine")
    eng.add_argument("--conf", metavar="FILE", help="Volcano scheduler configuration file")
    src = eng.add_mutually_exclusive_group()
    src.add_argument("--cluster", metavar="FILE", help="read a static cluster from FILE")
    src.add_argument("--kubeconfig", metavar="FILE", help="watch the cluster of a kubeconfig")
    src.add_argument("--in-cluster", action="store_true", help="watch the pod's own cluster")
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
        type=float,
        default=1.0,
        help="seconds between recomputations of queue shares after cluster changes "
        "(default 1.0; the extender's own decisions count at once as assumed pods)",
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
        type=float,
        default=30.0,
        help="seconds a filtered pod stays assumed before the informer shows it (default 30)",
    )
    eng.add_argument(
        "--on-error",
        choices=("pass", "fail"),
        default="pass",
        help="on a backend failure: let every node pass (pass) or report an error (fail)",
    )

    sec = p.add_argument_group("security")
    sec.add_argument("--tls-cert", metavar="FILE", help="serve HTTPS with this certificate")
    sec.add_argument("--tls-key", metavar="FILE", help="private key of --tls-cert")
    sec.add_argument("--client-ca", metavar="FILE", help="require client certificates from CA")
    sec.add_argument("--token-file", metavar="FILE", help="require this bearer token")
    sec.add_argument(
        "--metrics-auth", action="store_true", help="require the bearer token on /metrics too"
    )

    logs = p.add_argument_group("logging")
    logs.add_argument(
        "-v", "--v", dest="verbosity", type=_verbosity, default=0, help="klog verbosity 0..10"
    )
    logs.add_argument("--log-format", choices=("text", "json"), default="text")

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
        if not (args.cluster or args.kubeconfig or args.in_cluster)
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
    return (
        f"queue-extender serving on {url} (filter {filter_url}, metrics {url}/metrics)\n"
        f"try: {command}"
    )


def build_server(
    args: argparse.Namespace, backend_factory: BackendFactory
) -> tuple[uvicorn.Server, ServerSettings]:
    """The configured (not yet started) uvicorn server; raises ValueError on bad flags."""
    tls = tls_options(args.tls_cert, args.tls_key, args.client_ca)
    settings = settings_from_args(args)
    backend = backend_factory(args)
    # A backend with its own registry (the informers' metrics) is shown on /metrics too.
    extra = getattr(backend, "registry", None)
    if extra is not None:
        settings.extra_registries = (*settings.extra_registries, extra)
    app = create_app(backend, settings)
    config = uvicorn.Config(
        app,
        host=args.host,
        port=args.port,
        loop="uvloop",
        http="httptools",
        workers=1,
        access_log=False,
        log_config=None,
        lifespan="auto",
        server_header=False,
        **tls,
    )
    return uvicorn.Server(config), settings


def run_serve(args: argparse.Namespace, backend_factory: BackendFactory) -> int:
    """Runs the service until SIGINT/SIGTERM; returns the process exit code."""
    setup_logging(args.verbosity, args.log_format)
    try:
        server, _ = build_server(args, backend_factory)
    except (ValueError, OSError) as exc:
        log.error("cannot start: %s", exc)
        return 2
    print(banner(args), flush=True)
    try:
        server.run()
    except (OSError, socket.gaierror) as exc:
        log.error("serving failed: %s", exc)
        return 1
    return 0
