"""The flags of ``queue-extender serve`` and what they become: the composition root's
``BuildOptions``, the HTTP service's ``ServerSettings``, the listeners' addresses and TLS
files (``Listening``) and limits. Parsing lives here; running lives in ``serve.py``.

argparse turns an ``ArgumentTypeError`` into ``argument --flag: <message>`` and exit 2; every
numeric flag is checked (here and in ``flag_types.py``) so a bad value never reaches uvicorn
or the engine (a port of 70000 would otherwise wrap round to 4464).
"""

from __future__ import annotations

import argparse
import dataclasses
from typing import TYPE_CHECKING, Any

from app.backend.conf_reload import DEFAULT_INTERVAL as DEFAULT_RELOAD_INTERVAL
from app.cli.controller_flags import add_controller_group, controller_options_from_args
from app.cli.flag_types import (
    checked,
    host_port,
    integer,
    non_negative_seconds,
    port,
    positive_rate,
    positive_seconds,
)
from app.cli.reclaim_flags import add_reclaim_group, reclaim_options_from_args
from app.serving.delegated_auth import DEFAULT_CACHE_TTL, DEFAULT_REVIEW_RATE
from app.serving.guard import METRICS_LIMITS, STATUS_LIMITS, VERB_LIMITS, ListenerLimits
from app.serving.listeners import Listening
from app.serving.server import DEFAULT_MAX_BODY_BYTES, ServerSettings

if TYPE_CHECKING:
    from app.backend.build import BuildOptions

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


_verbosity = checked(integer, lambda n: 0 <= n <= 10, "verbosity must be between 0 and 10, not {n}")
_positive = checked(integer, lambda n: n > 0, "must be a positive integer, not {n}")


def add_serve_parser(subparsers: _Subparsers) -> argparse.ArgumentParser:
    """Adds the `serve` sub-command to the caller's sub-parsers and returns its parser."""
    p: argparse.ArgumentParser = subparsers.add_parser(
        "serve",
        help="serve the kube-scheduler extender over HTTP(S)",
        description="Serve the filter/prioritize/preempt extender verbs, /metrics, "
        "/healthz, /readyz and /debug for kube-scheduler.",
    )
    _add_listening_group(p)
    _add_engine_group(p)
    _add_security_group(p)
    _add_authentication_group(p)
    _add_logging_group(p)
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
        auth_cache_ttl=args.delegated_auth_cache_ttl,
        auth_review_rate=args.delegated_auth_review_rate,
        noop=bool(args.noop),
    )


def listener_limits(args: argparse.Namespace) -> dict[str, ListenerLimits]:
    """Each listener's limits from the flags: "verbs", "metrics", "status"."""
    timeout = float(args.request_read_timeout)

    def one(base: ListenerLimits, flag: str) -> ListenerLimits:
        cap = int(vars(args)[flag])
        return dataclasses.replace(base, max_connections=cap, read_timeout=timeout)

    return {
        "verbs": one(VERB_LIMITS, "max_connections"),
        "metrics": one(METRICS_LIMITS, "metrics_max_connections"),
        "status": one(STATUS_LIMITS, "status_max_connections"),
    }


def listening_from_args(args: argparse.Namespace) -> Listening:
    """Where the listeners bind, and the TLS files they share."""
    return Listening(
        main=(args.host, args.port),
        metrics=args.metrics_bind_address,
        status=args.status_address,
        tls_cert=args.tls_cert,
        tls_key=args.tls_key,
        client_ca=args.client_ca,
    )


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
            discovery_interval=float(args.discovery_interval),
        ),
        backend=BackendOptions(
            scheduler_names=tuple(args.scheduler_names),
            manage_annotated=args.manage_annotated,
            assume_ttl=float(args.assume_ttl),
            group_window=float(args.group_window),
            refresh_interval=float(args.refresh_interval),
            namespaces=tuple(args.namespaces),
        ),
        conf_path=args.conf,
        strict_conf=bool(args.strict_conf),
        conf_reload_interval=float(args.conf_reload_interval),
        controller=controller_options_from_args(args),
        reclaim=reclaim_options_from_args(args),
    )


def _add_listening_group(p: argparse.ArgumentParser) -> None:
    """The listeners: addresses, verb paths, caps and deadlines."""
    net = p.add_argument_group("listening")
    net.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    net.add_argument(
        "--port", type=port, default=8888, help="port to bind, 1..65535 (default 8888)"
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
        type=host_port,
        metavar="HOST:PORT",
        help="also serve /metrics, /healthz and /readyz (never the verbs or /debug) on this "
        "address, e.g. 0.0.0.0:9090, so Prometheus can scrape while the verbs stay on "
        "loopback; same TLS and --metrics-auth as the main listener (default: none)",
    )
    net.add_argument(
        "--status-address",
        type=host_port,
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


def _add_engine_group(p: argparse.ArgumentParser) -> None:
    """The engine: configuration, cluster source and what the extender manages."""
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
        "--discovery-interval",
        type=positive_seconds,
        default=60.0,
        metavar="SECONDS",
        help="how often the API server is asked again for the optional kinds it does not "
        "serve yet (Volcano's HyperNodes, Kubernetes' own PodGroups), so one installed or "
        "enabled later is watched without a restart (default 60)",
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
        "--group-window",
        type=positive_seconds,
        default=10.0,
        help="seconds the members of a Kubernetes PodGroup gang stay assumed after the "
        "group's last filter without any of them being bound; then all are released at "
        "once (default 10, at most --assume-ttl)",
    )
    eng.add_argument(
        "--on-error",
        choices=("pass", "fail"),
        default="fail",
        help="on an internal error: answer the verb's Error so kube-scheduler retries the pod "
        "(fail, the default: with ignorable: false no pod is placed that the queue rules would "
        "refuse), or let every node pass and score neutrally (pass: fails open)",
    )


def _add_security_group(p: argparse.ArgumentParser) -> None:
    """TLS, client certificates and the static bearer token."""
    sec = p.add_argument_group("security")
    sec.add_argument("--tls-cert", metavar="FILE", help="serve HTTPS with this certificate")
    sec.add_argument("--tls-key", metavar="FILE", help="private key of --tls-cert")
    sec.add_argument("--client-ca", metavar="FILE", help="require client certificates from CA")
    sec.add_argument("--token-file", metavar="FILE", help="require this bearer token")
    sec.add_argument(
        "--metrics-auth", action="store_true", help="require the bearer token on /metrics too"
    )


def _add_authentication_group(p: argparse.ArgumentParser) -> None:
    """Delegated authentication through the API server."""
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
        type=positive_rate,
        default=DEFAULT_REVIEW_RATE,
        metavar="PER_SECOND",
        help="TokenReviews and SubjectAccessReviews sent to the API server a second, at most "
        "(bursts of twice that); a request beyond it is answered 429 without a review "
        f"(default {DEFAULT_REVIEW_RATE:g})",
    )


def _add_logging_group(p: argparse.ArgumentParser) -> None:
    """klog verbosity and the log format."""
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
