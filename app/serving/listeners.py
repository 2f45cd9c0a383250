"""Several uvicorn listeners in one process, on one event loop, over one engine.

The main listener serves the verbs; side listeners (``--metrics-bind-address``,
``--status-address``) serve a subset of routes on other addresses. Every worker or process
would hold its own caches and assumptions, so they share one loop instead.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Generator, Sequence
from dataclasses import dataclass, field
from typing import Any

import uvicorn

from app.serving.guard import VERB_LIMITS, LimitedConfig, ListenerLimits
from app.serving.security import tls_options
from app.serving.tls_reload import ReloadingServerContext

#: A listener's address: host (an IPv6 one without brackets; "0.0.0.0" for every interface)
#: and port.
Address = tuple[str, int]


@dataclass(frozen=True, slots=True)
class ListenerTls:
    """How every listener speaks TLS: uvicorn's options (none: plain HTTP) and the one
    context they all share, which follows the certificate files as cert-manager rotates
    them (None for plain HTTP)."""

    options: dict[str, Any] = field(default_factory=dict)
    context: ReloadingServerContext | None = None


#: Plain HTTP.
PLAIN = ListenerTls()


@dataclass(frozen=True, slots=True)
class Listening:
    """Where the listeners bind and how they speak TLS: the main (verbs) listener, the
    optional metrics and status listeners, and the certificate files all of them share
    (none: plain HTTP; a client CA: mutual TLS)."""

    main: Address = ("127.0.0.1", 8888)
    metrics: Address | None = None
    status: Address | None = None
    tls_cert: str | None = None
    tls_key: str | None = None
    client_ca: str | None = None

    def tls(self) -> ListenerTls:
        """The listeners' TLS, made once for all of them (each call loads the files anew).
        Raises ValueError on a half-configured set-up or a missing file."""
        options = tls_options(self.tls_cert, self.tls_key, self.client_ca)
        if not options or self.tls_cert is None or self.tls_key is None:
            return ListenerTls(options)
        return ListenerTls(
            options, ReloadingServerContext(self.tls_cert, self.tls_key, self.client_ca)
        )

    def check(self) -> None:
        """Raises ValueError when two listeners would share an address."""
        if self.metrics == self.main:
            raise ValueError("--metrics-bind-address must differ from --host:--port")


class _Config(LimitedConfig):
    """uvicorn's configuration with a reloading TLS context in place of the one uvicorn loads
    once from the same files (which still tell uvicorn it serves https), and the listener's
    limits (``app.serving.guard``)."""

    def __init__(self, *args: Any, tls_context: ReloadingServerContext | None, **kw: Any):
        super().__init__(*args, **kw)
        self.tls_context = tls_context

    def load(self) -> None:
        super().load()
        if self.tls_context is not None:
            self.ssl = self.tls_context.context


def uvicorn_config(
    app: Any,
    address: Address,
    tls: ListenerTls = PLAIN,
    limits: ListenerLimits = VERB_LIMITS,
    name: str = "verbs listener",
) -> uvicorn.Config:
    """One listener's configuration on ``address``; every listener given the same ``tls``
    shares its one context. ``limits`` are this listener's own: no other listener's
    connections count against them."""
    return _Config(
        app,
        tls_context=tls.context,
        limits=limits,
        name=name,
        host=address[0],
        port=address[1],
        loop="uvloop",
        workers=1,
        access_log=False,
        log_config=None,
        lifespan="auto",
        server_header=False,
        **tls.options,
    )


class SideServer(uvicorn.Server):
    """A side listener. It leaves SIGINT/SIGTERM to the main server, which stops it: two
    servers capturing the same signals would each restore the other's handler."""

    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None, None, None]:
        yield


def serve_all(main: uvicorn.Server, sides: Sequence[uvicorn.Server]) -> int:
    """Runs every listener on one event loop until any stops; returns the exit code.
    SIGINT/SIGTERM reach the main listener and the side ones follow it; a listener that
    cannot start (e.g. its port is taken) stops the others, so a pod never runs without an
    endpoint it was configured with."""
    servers = [main, *sides]

    def stop_all() -> None:
        for server in servers:
            server.should_exit = True

    async def run(server: uvicorn.Server) -> int:
        try:
            await server.serve()
        except SystemExit as exc:  # uvicorn's exit on a start-up failure, already logged
            return exc.code if isinstance(exc.code, int) else 1
        finally:
            stop_all()
        return 0

    async def follow() -> None:
        # uvicorn's own main loop polls should_exit at this pace: all shut down together.
        while not any(server.should_exit for server in servers):
            await asyncio.sleep(0.1)
        stop_all()

    async def together() -> int:
        watcher = asyncio.create_task(follow())
        codes = await asyncio.gather(*(run(server) for server in servers))
        watcher.cancel()
        return max(codes)

    with asyncio.Runner(loop_factory=main.config.get_loop_factory()) as runner:
        return runner.run(together())
