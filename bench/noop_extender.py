"""A scheduler extender that decides nothing, as cheaply as the Python standard library allows.

It is the yardstick of ``make bench-e2e``: kube-scheduler pays one HTTP exchange per verb per
pod whatever the extender does, so the no-op's throughput is what any Python extender could
reach, and ours is compared with it. Filter passes every offered node, prioritize scores every
node 0, preempt hands the candidates back unchanged.

``TCP_NODELAY`` is set on every accepted socket: the answer goes out as a header write and a
body write, and with Nagle's algorithm the second waits for the client's delayed ACK (~40 ms
on Linux), which would make the yardstick measure the kernel instead of the exchange.

Run: ``python -m bench.noop_extender --port 8899``.
"""

from __future__ import annotations

import argparse
import json
import socket
import sys
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.noop_extender", description=__doc__)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--host", default="127.0.0.1")
    args = parser.parse_args(argv)
    with NoopServer((args.host, args.port), NoopHandler) as server:
        print(f"no-op extender on http://{args.host}:{args.port}", flush=True)
        server.serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main())
