"""``serve --status-address HOST:PORT``: the status page and the read-only API on a listener
of their own, so they can be shown to users without exposing the verbs, /metrics or /debug.
Same process, same engine; the same TLS, client-CA and token options as the main listener."""

from __future__ import annotations

import argparse
from typing import Any

from fastapi import FastAPI

from app.api.port import InsightBackend
from app.serving.guard import STATUS_LIMITS, ListenerLimits
from app.serving.listeners import SideServer, uvicorn_config
from app.serving.security import tls_options
from app.serving.server import ServerSettings, create_status_app
from app.serving.tls_reload import ReloadingServerContext


def parse_address(value: str) -> tuple[str, int]:
    """``HOST:PORT`` (``[v6]:PORT`` for IPv6); raises ``argparse.ArgumentTypeError``."""
    host, sep, port = value.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise argparse.ArgumentTypeError(f"expected HOST:PORT, not {value!r}")
    return host.strip("[]"), int(port)


def build_status_server(
    args: argparse.Namespace,
    main_app: Any,
    settings: ServerSettings,
    reloading: ReloadingServerContext | None = None,
    limits: ListenerLimits = STATUS_LIMITS,
) -> SideServer | None:
    """The status listener, or None without ``--status-address``. Raises ValueError when
    the backend cannot answer the read-only API."""
    address: tuple[str, int] | None = getattr(args, "status_address", None)
    if address is None:
        return None
    backend = main_app.state.backend if isinstance(main_app, FastAPI) else None
    if not isinstance(backend, InsightBackend):
        raise ValueError("--status-address needs the engine backend")
    app = create_status_app(backend, settings)
    tls: dict[str, Any] = tls_options(args.tls_cert, args.tls_key, args.client_ca)
    config = uvicorn_config(
        app, address[0], address[1], tls, reloading, limits=limits, name="status listener"
    )
    return SideServer(config)
