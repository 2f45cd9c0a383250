"""A scheduler extender that decides nothing, as cheaply as the Python standard library allows.

It is the yardstick of ``make bench-e2e``: kube-scheduler pays one HTTP exchange per verb per
pod whatever the extender does, so the no-op's throughput is what any Python extender could
reach, and ours is compared with it. Filter passes every offered node, prioritize scores every
node 0, preempt hands the candidates back unchanged.

``TCP_NODELAY`` is set on every accepted socket: the answer goes out as a header write and a
body write, and with Nagle's algorithm the second waits for the client's delayed ACK (~40 ms
on Linux), which would make the yardstick measure the kernel instead of the exchange.

With ``--kubeconfig``, it also keeps the extender's own cache of the cluster (the same
informers and ``ClusterState`` as ``queue-extender serve``) while still deciding nothing, and
``/readyz`` answers 503 until that cache has synced: ``make bench-e2e``'s ``watch``
configuration, which measures what watching the cluster alone costs kube-scheduler's
throughput on the same machine, apart from any decision.

Run: ``python -m bench.noop_extender --port 8899 [--kubeconfig FILE]``.
"""

from __future__ import annotations

import argparse
import json
import socket
import sys
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


def filter_answer(args: dict[str, Any]) -> dict[str, Any]:
    """Every offered node passes, in the form it was offered (names or full Node objects)."""
    return {
        "Nodes": args.get("Nodes"),
        "NodeNames": args.get("NodeNames"),
        "FailedNodes": {},
        "FailedAndUnresolvableNodes": {},
        "Error": "",
    }


def prioritize_answer(args: dict[str, Any]) -> list[dict[str, Any]]:
    names = args.get("NodeNames")
    if names is None:
        names = [n["metadata"]["name"] for n in (args.get("Nodes") or {}).get("items") or []]
    return [{"Host": name, "Score": 0} for name in names]


def preempt_answer(args: dict[str, Any]) -> dict[str, Any]:
    """The candidates unchanged; full victims (non-node-cache-capable) reduced to their UIDs."""
    meta = args.get("NodeNameToMetaVictims")
    if meta is None:
        meta = {
            node: {
                "Pods": [{"UID": pod["metadata"]["uid"]} for pod in victims.get("Pods") or []],
                "NumPDBViolations": victims.get("NumPDBViolations", 0),
            }
            for node, victims in (args.get("NodeNameToVictims") or {}).items()
        }
    return {"NodeNameToMetaVictims": meta}


VERBS = {"/filter": filter_answer, "/prioritize": prioritize_answer, "/preempt": preempt_answer}


class NoopHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive: kube-scheduler reuses its connections
    #: Whether the cache (if any) has synced; ``/readyz`` answers 503 until it is true.
    ready: Callable[[], bool] = staticmethod(lambda: True)

    def do_POST(self) -> None:
        verb = VERBS.get(self.path.rstrip("/") or "/")
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if verb is None:
            self._answer(404, {"error": f"no verb at {self.path}"})
            return
        try:
            args = json.loads(body)
        except ValueError as exc:
            self._answer(400, {"error": f"request body is not JSON: {exc}"})
            return
        self._answer(200, verb(args))

    def do_GET(self) -> None:
        if self.path.startswith("/readyz") and not self.ready():
            self._answer(503, {"status": "cache not synced"})
            return
        self._answer(200, {"status": "ok"})

    def _answer(self, status: int, payload: Any) -> None:
        data = json.dumps(payload, separators=(",", ":")).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        """Silent: a log line per request would be the most expensive thing it does."""


class NoopServer(ThreadingHTTPServer):
    daemon_threads = True

    def get_request(self) -> tuple[socket.socket, Any]:
        conn, address = super().get_request()
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return conn, address


def handler_ready_when(ready: Callable[[], bool]) -> type[NoopHandler]:
    """A handler class whose ``/readyz`` follows ``ready`` (the base class stays always ready)."""
    return type("WatchingNoopHandler", (NoopHandler,), {"ready": staticmethod(ready)})


def watch_cluster(kubeconfig: str) -> Callable[[], bool]:
    """Starts the extender's informers into a ``ClusterState`` that nothing reads; returns
    whether they have synced."""
    from scheduler_core.cache.informers import InformerSet
    from scheduler_core.cache.state import ClusterState

    informers = InformerSet(ClusterState(), kubeconfig=kubeconfig)
    informers.start()
    return lambda: bool(informers.has_synced())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.noop_extender", description=__doc__)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument(
        "--kubeconfig", help="also keep the extender's cache of this cluster (decide nothing)"
    )
    args = parser.parse_args(argv)
    handler = NoopHandler
    if args.kubeconfig:
        handler = handler_ready_when(watch_cluster(args.kubeconfig))
    with NoopServer((args.host, args.port), handler) as server:
        print(f"no-op extender on http://{args.host}:{args.port}", flush=True)
        server.serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main())
