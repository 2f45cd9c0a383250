"""Run an ASGI app under a real uvicorn (uvloop + httptools) on a free loopback port."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import urlsplit

import uvicorn

from app.serving.guard import LimitedConfig, ListenerLimits

START_TIMEOUT = 10.0


@contextmanager
def serve(
    app: Any, *, wait_stop: bool = True, limits: ListenerLimits | None = None, **config: Any
) -> Iterator[str]:
    """Yields the base URL (http or https) while the app is served from a thread; with
    ``limits``, under the guarded protocol ``serve`` runs (``app.serving.guard``).

    On exit the server is stopped; with `wait_stop=False` the stop (~0.2 s of uvicorn's fixed
    sleeps) overlaps the next test and `join_stopped_servers` waits for it later.
    """
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    settings: dict[str, Any] = {
        "loop": "uvloop",
        "http": "httptools",
        "log_config": None,
        "access_log": False,
        "lifespan": "off",
    }
    if limits is not None:
        settings.pop("http")
        cfg: uvicorn.Config = LimitedConfig(app, limits=limits, **(settings | config))
    else:
        cfg = uvicorn.Config(app, **(settings | config))
    server = uvicorn.Server(cfg)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + START_TIMEOUT
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.01)
    scheme = "https" if cfg.is_ssl else "http"
    try:
        yield f"{scheme}://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        server.force_exit = True
        _stopping.append(thread)
        if wait_stop:
            join_stopped_servers()


@contextmanager
def serve_address(app: Any, limits: ListenerLimits) -> Iterator[tuple[str, int]]:
    """``serve`` under the guarded protocol, yielding the listener's (host, port) for raw
    sockets."""
    with serve(app, limits=limits) as url:
        parts = urlsplit(url)
        assert parts.hostname is not None and parts.port is not None
        yield parts.hostname, parts.port


_stopping: list[threading.Thread] = []


def join_stopped_servers() -> None:
    """Waits for every server started by `serve` to have shut down (and closed its socket)."""
    while _stopping:
        thread = _stopping.pop()
        thread.join(START_TIMEOUT)
        if thread.is_alive():
            raise RuntimeError("a test server did not stop")
