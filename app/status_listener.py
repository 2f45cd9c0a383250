"""``serve --status-address HOST:PORT``: the status page and the read-only API on a listener
of their own, so they can be shown to users without exposing the verbs, /metrics or /debug.
Same process, same engine; the same TLS, client-CA and token options as the main listener."""

from __future__ import annotations

import argparse
import asyncio
from typing import Any

import uvicorn
from fastapi import FastAPI

from app.insight_port import InsightBackend
from app.security import tls_options
from app.server import ServerSettings, create_status_app


def parse_address(value: str) -> tuple[str, int]:
    """``HOST:PORT`` (``[v6]:PORT`` for IPv6); raises ``argparse.ArgumentTypeError``."""
    host, sep, port = value.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise argparse.ArgumentTypeError(f"expected HOST:PORT, not {value!r}")
    return host.strip("[]"), int(port)


def build_status_server(
    args: argparse.Namespace, main_app: Any, settings: ServerSettings
) -> uvicorn.Server | None:
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
    config = uvicorn.Config(
        app,
        host=address[0],
        port=address[1],
        loop="uvloop",
        http="httptools",
        access_log=False,
        log_config=None,
        server_header=False,
        **tls,
    )
    return uvicorn.Server(config)


def run_servers(main: uvicorn.Server, status: uvicorn.Server | None) -> None:
    """Run the main listener (and the status one beside it) until the main one stops."""
    if status is None:
        main.run()
        return

    async def both() -> None:
        side = asyncio.create_task(status.serve())
        try:
            await main.serve()
        finally:
            status.should_exit = True
            await side

    asyncio.run(both())
