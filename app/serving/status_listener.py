"""``serve --status-address HOST:PORT``: the status page and the read-only API on a listener
of their own, so they can be shown to users without exposing the verbs, /metrics or /debug.
Same process, same engine; the same TLS, client-CA and token options as the main listener."""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI

from app.api.port import InsightBackend
from app.serving.guard import STATUS_LIMITS, ListenerLimits
from app.serving.listeners import PLAIN, Address, ListenerTls, SideServer, uvicorn_config
from app.serving.server import ServerSettings, create_status_app


def build_status_server(
    address: Address,
    main_app: Any,
    settings: ServerSettings,
    tls: ListenerTls = PLAIN,
    limits: ListenerLimits = STATUS_LIMITS,
) -> SideServer:
    """The status listener on ``address`` over the main application's backend. Raises
    ValueError when the backend cannot answer the read-only API."""
    backend = main_app.state.backend if isinstance(main_app, FastAPI) else None
    if not isinstance(backend, InsightBackend):
        raise ValueError("--status-address needs the engine backend")
    app = create_status_app(backend, settings)
    return SideServer(uvicorn_config(app, address, tls, limits, name="status listener"))
