"""An HTTP proxy on loopback between the extender and the real kube-apiserver that the test
steers request by request: the network faults a real API server will not produce on demand.

The extender talks plain HTTP to it (a kubeconfig with ``server: http://127.0.0.1:<port>`` and
the usual token); it forwards every request over TLS to kube-apiserver, one upstream
connection a request, and copies the answer back (a watch streamed as it comes). Because it
sees each request whole, a fault can pick one: ``slow`` holds matching requests before they
go upstream, ``drop`` forwards a matching request, lets the API server apply it, and closes
the client's connection without a byte of the answer, ``lag`` delivers every chunk of a
matching stream some seconds late (in order), and ``stall`` keeps a matching stream's
connection open while forwarding nothing.

A request held by ``slow`` whose client gave up meanwhile is not forwarded: what a TCP
connection that was torn down does to the bytes still in it.
"""

from __future__ import annotations

import contextlib
import http.client
import queue
import select
import socket
import ssl
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import yaml

from tests.e2e.controlplane import ADMIN_TOKEN, ControlPlane

Match = Callable[[str, str], bool]  # (method, path with query) -> applies

_HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "content-length", "host"}


def eviction(method: str, path: str) -> bool:
    return method == "POST" and path.split("?", 1)[0].endswith("/eviction")


def pod_watch(method: str, path: str) -> bool:
    return method == "GET" and path.startswith("/api/v1/pods?") and "watch=true" in path


def lease(method: str, path: str) -> bool:
    return "/apis/coordination.k8s.io/" in path


def anything(method: str, path: str) -> bool:
    return True


@dataclass
class Forwarded:
    """One request the API server received through the proxy."""

    method: str
    path: str
    at: float  # time.time() when it went upstream
    status: int = 0
    dropped: bool = False


@dataclass
class Faults:
    slow: list[tuple[Match, float]] = field(default_factory=list)
    drop: list[Match] = field(default_factory=list)
    lag: list[tuple[Match, float]] = field(default_factory=list)
    stall: list[Match] = field(default_factory=list)


class ApiProxy:
    def __init__(self, cp: ControlPlane) -> None:
        self.cp = cp
        self.faults = Faults()
        self.log: list[Forwarded] = []
        self._lock = threading.Lock()
        self._context = ssl.create_default_context(cafile=str(cp.pki.ca_cert))
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                return

            def do_GET(self) -> None:
                proxy._handle(self)

            do_POST = do_PUT = do_PATCH = do_DELETE = do_GET

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def start(self) -> ApiProxy:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def kubeconfig(self, path: Path) -> Path:
        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "p", "cluster": {"server": f"http://127.0.0.1:{self.port}"}}],
            "users": [{"name": "admin", "user": {"token": ADMIN_TOKEN}}],
            "contexts": [{"name": "p", "context": {"cluster": "p", "user": "admin"}}],
            "current-context": "p",
        }
        path.write_text(yaml.safe_dump(config))
        return path

    def clear(self) -> None:
        self.faults = Faults()

    def forwarded(self, match: Match) -> list[Forwarded]:
        with self._lock:
            return [f for f in self.log if match(f.method, f.path)]

    # --- one request ----------------------------------------------------------------------

    def _handle(self, h: BaseHTTPRequestHandler) -> None:
        method, path = h.command, h.path
        length = int(h.headers.get("Content-Length") or 0)
        body = h.rfile.read(length) if length else None
        faults = self.faults
        delay = max((d for m, d in faults.slow if m(method, path)), default=0.0)
        if delay and not _wait_while_connected(h.connection, delay):
            h.close_connection = True
            return  # the client gave up: the request never reaches the API server
        headers = {k: v for k, v in h.headers.items() if k.lower() not in _HOP_BY_HOP}
        upstream = http.client.HTTPSConnection(
            "127.0.0.1", self.cp.api_port, context=self._context, timeout=600
        )
        record = Forwarded(method, path, time.time())
        with self._lock:
            self.log.append(record)
        try:
            upstream.request(method, path, body=body, headers=headers)
            response = upstream.getresponse()
            record.status = response.status
            if any(m(method, path) for m in faults.drop):
                response.read()
                record.dropped = True
                h.close_connection = True
                with contextlib.suppress(OSError):
                    h.connection.shutdown(socket.SHUT_RDWR)
                return
            stream = "watch=true" in path
            h.send_response_only(response.status, response.reason)
            for key, value in response.getheaders():
                if key.lower() not in _HOP_BY_HOP:
                    h.send_header(key, value)
            if not stream:
                data = response.read()
                h.send_header("Content-Length", str(len(data)))
                h.end_headers()
                h.wfile.write(data)
                return
            h.send_header("Transfer-Encoding", "chunked")
            h.send_header("Connection", "close")  # one stream a connection: never reused
            h.end_headers()
            h.wfile.flush()
            self._stream(h, response, method, path)
        except OSError:
            h.close_connection = True
        finally:
            upstream.close()

    def _stream(
        self, h: BaseHTTPRequestHandler, response: http.client.HTTPResponse, method: str, path: str
    ) -> None:
        """Copy a watch chunk by chunk, late by the lag in force when each chunk came, or
        not at all while a stall is in force (the chunks are dropped: a stalled stream)."""
        h.close_connection = True
        out: queue.Queue[tuple[float, bytes] | None] = queue.Queue()

        def write() -> None:
            while True:
                item = out.get()
                if item is None:
                    return
                at, chunk = item
                time.sleep(max(0.0, at - time.monotonic()))
                try:
                    h.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                    h.wfile.flush()
                except OSError:
                    return

        writer = threading.Thread(target=write, daemon=True)
        writer.start()
        try:
            while True:
                chunk = response.read1(65536)
                if not chunk:
                    break
                faults = self.faults
                if any(m(method, path) for m in faults.stall):
                    continue
                lag = max((d for m, d in faults.lag if m(method, path)), default=0.0)
                out.put((time.monotonic() + lag, chunk))
            if any(m(method, path) for m in self.faults.stall):
                # A stalled stream does not end either: the client hears nothing at all
                # until it gives up on the connection.
                _wait_while_connected(h.connection, 600.0)
                return
            out.put((time.monotonic(), b""))  # the closing zero-length chunk
        finally:
            out.put(None)
            writer.join(timeout=120)


def _wait_while_connected(sock: socket.socket, seconds: float) -> bool:
    """Wait ``seconds``; False as soon as the client closes its end (it gave up)."""
    deadline = time.monotonic() + seconds
    while (left := deadline - time.monotonic()) > 0:
        readable, _, _ = select.select([sock], [], [], min(left, 0.1))
        if readable:
            try:
                if sock.recv(1, socket.MSG_PEEK) == b"":
                    return False
            except OSError:
                return False
    return True
