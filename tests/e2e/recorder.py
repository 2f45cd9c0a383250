"""A recording scheduler extender: reads exactly which nodes kube-scheduler found feasible.

kube-scheduler calls an extender's ``filter`` only with the nodes that passed its own filter
plugins (every node when ``percentageOfNodesToScore`` is 100), and not at all when none did.
The recorder keeps the last node list per pod UID and answers every node
*FailedAndUnresolvable*: nothing binds, and since such nodes are no preemption candidates,
nothing is preempted either, so the cluster stays as the test built it while it records.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

REASON = "recorded by the fit differential test"


class Recorder:
    """The extender's HTTP server on a free loopback port, in a daemon thread."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._seen: dict[str, frozenset[str]] = {}
        self.calls = 0
        recorder = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                args = json.loads(self.rfile.read(length) or b"{}")
                names = recorder.record(args)
                answer = {
                    "NodeNames": [],
                    "FailedNodes": {},
                    "FailedAndUnresolvableNodes": dict.fromkeys(names, REASON),
                    "Error": "",
                }
                data = json.dumps(answer).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:
                return  # one line per call would drown the test's output

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="fit-recorder", daemon=True
        )

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}/"

    def start(self) -> Recorder:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def record(self, args: dict[str, Any]) -> list[str]:
        """Keeps the node names of one filter call (``NodeNames`` when node-cache-capable,
        else the names in ``Nodes``) under the pod's UID; returns them."""
        pod = args.get("Pod") or {}
        uid = str((pod.get("metadata") or {}).get("uid") or "")
        names = args.get("NodeNames")
        if names is None:
            names = [n["metadata"]["name"] for n in (args.get("Nodes") or {}).get("items", [])]
        with self._lock:
            self.calls += 1
            self._seen[uid] = frozenset(names)
        return list(names)

    def feasible(self, uid: str) -> frozenset[str] | None:
        """The nodes kube-scheduler last offered for the pod; None if it never called (its
        own filters left no node)."""
        with self._lock:
            return self._seen.get(uid)
