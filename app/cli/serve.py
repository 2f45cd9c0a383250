"""`queue-extender serve`: the banner, the listeners and the uvicorn run loop.

The start-up goes down and back once: the flags (``serve_flags.py``) become options, the
caller's ``backend_factory(args)`` builds everything that runs (``app.backend.build.Built``:
the backend, its metrics, its threads), and this module puts the HTTP service
(``app.serving``) on the record's parts, runs it, and closes the record on the way out. One
uvicorn worker only: every worker would hold its own informer caches and its own assumed-pod
state, and two such views would hand out the same queue share twice.
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
import shlex
import signal
import socket
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import uvicorn

from app.cli.serve_flags import (
    build_options_from_args,
    listener_limits,
    listening_from_args,
    settings_from_args,
)
from app.http.errors import one_line
from app.serving.delegated_auth import KubernetesReviews
from app.serving.guard import LimitedConfig, raise_open_files_limit
from app.serving.listeners import Address, Listening, SideServer, serve_all, uvicorn_config
from app.serving.server import ServerSettings, create_app, create_metrics_app, verb_path
from app.serving.status_listener import build_status_server
from app.telemetry.logs import setup_logging
from app.telemetry.metrics import ListenerCollector
from app.verbs.ports import ExtenderBackend

if TYPE_CHECKING:
    from app.backend.build import Built
    from app.backend.engine import EngineBackend

log = logging.getLogger(__name__)

#: The GIL switch interval while serving (see ``run_serve``).
SWITCH_INTERVAL_SECONDS = 0.0005

BackendFactory = Callable[[argparse.Namespace], "Built[ExtenderBackend]"]


def base_url(address: Address, https: bool) -> str:
    """The URL a person on this machine reaches ``address`` at (a wildcard host as loopback,
    an IPv6 host in brackets)."""
    host, port = address
    if host in ("0.0.0.0", "::", ""):
        host = "127.0.0.1"
    if ":" in host:
        host = f"[{host}]"
    return f"{'https' if https else 'http'}://{host}:{port}"


#: A pending pod of the bundled demo cluster (production/report-export) and its nodes: the
#: banner's curl gets a real answer from the engine, not an error.
DEMO_FILTER_BODY = (
    '{"Pod":{"metadata":{"name":"report-export","namespace":"production",'
    '"uid":"production-report-export","annotations":{"scheduling.volcano.sh/queue-name":'
    '"production"}},"spec":{"schedulerName":"queue-scheduler","containers":[{"name":"main",'
    '"resources":{"requests":{"cpu":"2","memory":"4Gi"}}}]}},'
    '"NodeNames":["cpu-node-1","cpu-node-2","cpu-node-3","gpu-node-1"]}'
)


def banner(args: argparse.Namespace, listening: Listening) -> str:
    """What `serve` prints on start: where it listens and a request to try."""
    https = bool(listening.tls_cert)
    url = base_url(listening.main, https)
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
    # /metrics and the status page are on the main listener, and on their own when asked.
    metrics_url = base_url(listening.metrics or listening.main, https) + "/metrics"
    status_url = base_url(listening.status or listening.main, https) + "/"
    return (
        f"queue-extender serving on {url} (filter {filter_url}, metrics {metrics_url})\n"
        f"status page: {status_url}\n"
        f"try: {command}"
    )


def build_servers(
    args: argparse.Namespace, listening: Listening, backend_factory: BackendFactory
) -> tuple[uvicorn.Server, list[SideServer], Built[ExtenderBackend]]:
    """The configured (not yet started) listeners of ``listening`` over the record
    ``backend_factory`` builds: the main one, --metrics-bind-address (/metrics and probes)
    and --status-address (the page and the read-only API). Raises ValueError on bad flags;
    the record is closed again when the listeners cannot be configured."""
    listening.check()
    tls = listening.tls()
    delegated = bool(args.delegated_auth)
    if delegated and args.token_file:
        raise ValueError("--delegated-auth and --token-file are alternatives: choose one")
    if delegated and not (args.kubeconfig or args.in_cluster):
        raise ValueError("--delegated-auth needs an API server: --kubeconfig or --in-cluster")
    built = backend_factory(args)
    try:
        settings = settings_for(built, settings_from_args(args), delegated=delegated)
        app = create_app(built.backend, settings)
        limits = listener_limits(args)
        server = ResigningServer(
            uvicorn_config(app, listening.main, tls, limits["verbs"]), built.resign
        )
        sides: list[SideServer] = []
        if listening.metrics is not None:
            metrics_app = create_metrics_app(app)
            config = uvicorn_config(
                metrics_app, listening.metrics, tls, limits["metrics"], name="metrics listener"
            )
            sides.append(SideServer(config))
        if listening.status is not None:
            sides.append(
                build_status_server(listening.status, app, settings, tls, limits["status"])
            )
        configs = [s.config for s in (server, *sides) if isinstance(s.config, LimitedConfig)]
        app.state.registry.register(ListenerCollector(lambda: [c.counts() for c in configs]))
    except BaseException:
        built.close()
        raise
    return server, sides, built


def settings_for(
    built: Built[ExtenderBackend], settings: ServerSettings, *, delegated: bool
) -> ServerSettings:
    """The flags' settings with what the record adds: its registry on /metrics, its
    configuration warnings on /readyz, its assumptions' gauge, its reclaim loop's evictions
    on the status page, and, with --delegated-auth, its API client for the reviews."""
    reviews = None
    if delegated:
        if built.api_client is None:
            raise ValueError("--delegated-auth: the backend has no API server client")
        reviews = KubernetesReviews(built.api_client)
    extra = (*settings.extra_registries, built.registry) if built.registry is not None else ()
    return dataclasses.replace(
        settings,
        extra_registries=extra or settings.extra_registries,
        config_warnings=built.warnings,
        assumptions=built.assumptions,
        recent_evictions=built.evictions,
        delegated_auth=reviews,
    )


def run_serve(args: argparse.Namespace, backend_factory: BackendFactory) -> int:
    """Runs the service until SIGINT/SIGTERM; returns the process exit code. Whatever was
    built is closed on the way out: leadership resigned, writers stopped, the lease given
    back."""
    setup_logging(args.verbosity, args.log_format)
    # The informer threads decode watch events while the event loop answers kube-scheduler.
    # Each time the loop gives up the GIL for a socket call, it waits for the switch interval
    # (5 ms by default) to get it back from a busy informer thread: a few such waits per
    # request cost more than the request. A short interval hands the GIL back sooner.
    sys.setswitchinterval(SWITCH_INTERVAL_SECONDS)
    before, after = raise_open_files_limit()
    if after != before:
        log.info("open files limit raised from %d to %d", before, after)
    listening = listening_from_args(args)
    try:
        server, sides, built = build_servers(args, listening, backend_factory)
    except (ValueError, OSError) as exc:
        log.error("cannot start: %s", one_line(str(exc)))
        return 2
    try:
        print(banner(args, listening), flush=True)
        return_from_serving_on_sigterm()
        if not sides:
            server.run()
        else:
            return serve_all(server, sides)
    except (OSError, socket.gaierror) as exc:
        log.error("serving failed: %s", exc)
        return 1
    finally:
        built.close()
    return 0


class ResigningServer(uvicorn.Server):
    """The main listener. On SIGINT/SIGTERM it first tells the backend to stop leading, then
    shuts down as uvicorn does: the replica stops writing the moment its stop begins, not
    once the listeners have drained, and gives its lease back when ``run_serve`` closes
    what it built."""

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


def return_from_serving_on_sigterm() -> None:
    """uvicorn catches SIGTERM, shuts the listeners down, then raises the signal again for
    whatever handler was there before. With the default handler that kills the process
    before ``run_serve`` closes what it built, so a leader never stopped its loop nor gave
    its Lease back, and its successor waited the whole lease out. With this (empty) handler
    in place the process returns from serving and closes the record: writers stop, the
    lease is released. Installed only once serving starts: a SIGTERM while the caches sync
    still ends it."""
    signal.signal(signal.SIGTERM, _terminated)


def backend_from_args(args: argparse.Namespace) -> Built[EngineBackend]:
    """Everything ``serve`` runs, built from its flags (the engine is imported only here, so
    commands that never serve do not pay for it)."""
    from app.backend.build import build_backend

    return build_backend(build_options_from_args(args))
