"""In-process rows for the service's own cost of a verb call: everything but the decision.

A request as kube-scheduler writes it (a pod of ``bench-e2e``'s, 100 node names; preempt
with 20 candidate nodes of 5 victims) is fed, as raw HTTP bytes, to the verbs
listener's own protocol (``GuardedHttpToolsProtocol`` over the service's application), on a
connection whose transport only keeps what is written. The backend answers at once (every
node passes, neutral scores, kube-scheduler's victims), so what is measured is what the
service adds to each call, whichever way the listener takes it (a plain verb call is
answered by the protocol itself, ``app.serving.guard``): httptools parsing, reading and
decoding the body, the handler, encoding and the coalesced write. One sample is the CPU time
(``process_time``) of a batch of calls divided by its size, in microseconds: CPU, not wall
time, because behind kube-scheduler every microsecond of ours is taken from it and the API
server on the same cores. No socket is involved, so the rows are steadier than the HTTP rows
on a shared machine; ``cProfile`` over the same loop (``python -m bench.verbs_bench
--profile VERB``) gives the call counts, steadier still.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import pstats
import sys
import time
from typing import Any

import orjson
import uvloop
from prometheus_client import CollectorRegistry
from uvicorn.server import ServerState

from app.serving.guard import VERB_LIMITS, GuardedHttpToolsProtocol, LimitedConfig
from app.serving.server import ServerSettings, create_app
from app.telemetry.metrics import QueueMetrics
from app.verbs.ports import ExtenderBackend
from bench import Budget, Measurement, rss_mib
from bench.synthetic import ClusterSpec, SyntheticCluster
from scheduler_core.extender.decisions import FilterResult, NodeVictims
from scheduler_core.extender.prioritize import HostScores

NODES = 100
CANDIDATES, VICTIMS = 20, 5
BATCH = 200

BENCHES: dict[str, str] = {
    "verbs-protocol-filter": "CPU per filter call through uvicorn's protocol and the app, "
    "backend answering at once (100 node names, ~4.6 KB pod)",
    "verbs-protocol-prioritize": "CPU per prioritize call through the protocol and the app, "
    "backend answering at once (100 node names)",
    "verbs-protocol-preempt": "CPU per preempt call through the protocol and the app, backend "
    "answering at once (20 candidate nodes of 5 victims)",
}

#: Microseconds of CPU per call: about twice what the rows measured when the protocol began
#: answering plain verb calls (26, 48 and 88 us on the shared 2-core machine), so that
#: losing that way, or the typed decoding, shows as a MISS.
TARGETS_US: dict[str, float] = {
    "verbs-protocol-filter": 60.0,
    "verbs-protocol-prioritize": 100.0,
    "verbs-protocol-preempt": 180.0,
}


class InstantBackend:
    """An ``ExtenderBackend`` that decides nothing: the rows measure the service around it."""

    def readiness(self) -> tuple[bool, str]:
        return True, "bench"

    def is_managed(self, pod: dict[str, Any]) -> bool:
        return True

    def decode_offered_names(self, data: bytes) -> tuple[str, ...] | None:
        return None

    def filter(self, pod: dict[str, Any], node_names: list[str]) -> FilterResult:
        return FilterResult(node_names)

    def prioritize(self, pod: dict[str, Any], node_names: list[str]) -> HostScores:
        return HostScores.neutral(node_names)

    def preempt(
        self, pod: dict[str, Any], candidates: dict[str, list[str]]
    ) -> dict[str, NodeVictims]:
        return {
            node: NodeVictims(uids=uids, num_pdb_violations=0)
            for node, uids in candidates.items()
            if uids
        }

    def queue_metrics(self) -> list[QueueMetrics]:
        return []

    def explain(self, pod: dict[str, Any]) -> dict[str, Any]:
        return {}

    def debug_state(self) -> dict[str, Any]:
        return {}


class KeepingTransport(asyncio.Transport):
    """A connection's transport that keeps what the protocol writes, and counts answers."""

    def __init__(self) -> None:
        super().__init__()
        self.written: list[bytes] = []
        self.closed = False

    def write(self, data: Any) -> None:
        self.written.append(bytes(data))

    def writelines(self, list_of_data: Any) -> None:
        self.written.append(b"".join(list_of_data))

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return {"peername": ("127.0.0.1", 40000), "sockname": ("127.0.0.1", 8888)}.get(
            name, default
        )

    def is_closing(self) -> bool:
        return self.closed

    def close(self) -> None:
        self.closed = True

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass

    def get_write_buffer_size(self) -> int:
        return 0


def request(path: str, body: bytes) -> bytes:
    """The request exactly as kube-scheduler's Go client writes it."""
    return (
        b"POST %s HTTP/1.1\r\nHost: 127.0.0.1:8888\r\nUser-Agent: kube-scheduler/v1.36.2\r\n"
        b"Content-Length: %d\r\nContent-Type: application/json\r\n"
        b"Accept-Encoding: gzip\r\n\r\n" % (path.encode(), len(body))
    ) + body


def bodies() -> dict[str, bytes]:
    """Each verb's request: the synthetic cluster's first waiting pod, 100 node names."""
    cluster = SyntheticCluster(ClusterSpec.at_scale(0.01))
    pod = cluster.pod(cluster.pending_pods()[0])
    names = [f"node-{i:05d}" for i in range(NODES)]
    args = {"Pod": pod, "Nodes": None, "NodeNames": names}
    victims = {
        f"node-{n:05d}": {
            "Pods": [{"UID": f"00000000-0000-4000-8000-{n:06d}{v:06d}"} for v in range(VICTIMS)],
            "NumPDBViolations": 0,
        }
        for n in range(CANDIDATES)
    }
    preempt = {"Pod": pod, "NodeNameToVictims": None, "NodeNameToMetaVictims": victims}
    return {
        "filter": orjson.dumps(args),
        "prioritize": orjson.dumps(args),
        "preempt": orjson.dumps(preempt),
    }


class Connection:
    """One keep-alive connection of the verbs listener, driven from this thread."""

    def __init__(
        self, loop: asyncio.AbstractEventLoop, backend: ExtenderBackend | None = None
    ) -> None:
        app = create_app(
            backend if backend is not None else InstantBackend(),
            ServerSettings(registry=CollectorRegistry()),
        )
        config = LimitedConfig(
            app,
            limits=VERB_LIMITS,
            name="verbs listener",
            loop="uvloop",
            access_log=False,
            log_config=None,
            lifespan="off",
            server_header=False,
        )
        config.load()
        self.loop = loop
        self.transport = KeepingTransport()
        self.protocol = GuardedHttpToolsProtocol(
            config=config, server_state=ServerState(), app_state={}, _loop=loop
        )
        self.protocol.connection_made(self.transport)

    async def call(self, raw: bytes) -> bytes:
        """Sends one request and waits for its whole answer."""
        before = len(self.transport.written)
        self.protocol.data_received(raw)
        while len(self.transport.written) == before:
            await asyncio.sleep(0)
        answer = self.transport.written[-1]
        if not answer.startswith(b"HTTP/1.1 200"):
            raise RuntimeError(f"unexpected answer: {answer[:200]!r}")
        return answer


def measure(verb: str, budget: Budget) -> list[float]:
    """Microseconds of CPU per call, one sample a batch of ``BATCH`` calls."""
    raw = request(f"/{verb}", bodies()[verb])

    async def run() -> list[float]:
        conn = Connection(asyncio.get_running_loop())
        for _ in range(budget.warmup * BATCH):
            await conn.call(raw)
        samples: list[float] = []
        deadline = time.monotonic() + budget.seconds
        while len(samples) < budget.n and (not samples or time.monotonic() < deadline):
            started = time.process_time()
            for _ in range(BATCH):
                await conn.call(raw)
            samples.append((time.process_time() - started) / BATCH * 1e6)
        return samples

    return uvloop.run(run())


def measure_app_alone(verb: str, budget: Budget) -> list[float]:
    """``measure`` with the application called directly, as the protocol would call it (the
    same scope, one body message) through the verbs' router: what is left of a call without
    the protocol's parsing and write."""
    body = bodies()[verb]
    app = create_app(InstantBackend(), ServerSettings(registry=CollectorRegistry()))
    scope: dict[str, Any] = {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.4"},
        "http_version": "1.1",
        "server": ("127.0.0.1", 8888),
        "client": ("127.0.0.1", 40000),
        "scheme": "http",
        "method": "POST",
        "root_path": "",
        "path": f"/{verb}",
        "raw_path": f"/{verb}".encode(),
        "query_string": b"",
        "headers": [
            (b"host", b"127.0.0.1:8888"),
            (b"user-agent", b"kube-scheduler/v1.36.2"),
            (b"content-length", b"%d" % len(body)),
            (b"content-type", b"application/json"),
            (b"accept-encoding", b"gzip"),
        ],
    }
    message = {"type": "http.request", "body": body, "more_body": False}

    async def receive() -> dict[str, Any]:
        return message

    async def send(_: Any) -> None:
        pass

    async def run() -> list[float]:
        for _ in range(budget.warmup * BATCH):
            await app(dict(scope), receive, send)
        samples: list[float] = []
        deadline = time.monotonic() + budget.seconds
        while len(samples) < budget.n and (not samples or time.monotonic() < deadline):
            started = time.process_time()
            for _ in range(BATCH):
                await app(dict(scope), receive, send)
            samples.append((time.process_time() - started) / BATCH * 1e6)
        return samples

    return uvloop.run(run())


def run(selected: set[str], budgets: dict[str, Budget]) -> list[Measurement]:
    results = []
    for name, what in BENCHES.items():
        if name not in selected:
            continue
        verb = name.rsplit("-", 1)[1]
        row = Measurement(
            name, what, unit="us", target=TARGETS_US[name], target_stat="p50", target_op="<="
        )
        try:
            row.samples = measure(verb, budgets[name])
            alone = sorted(measure_app_alone(verb, budgets[name]))
            row.extra["app_alone_p50_us"] = round(alone[len(alone) // 2], 1)
        except Exception as exc:
            row.error = f"{type(exc).__name__}: {exc}"
        row.rss_mib = rss_mib()
        results.append(row)
    return results


def profile(verb: str, calls: int = 2000) -> None:
    """cProfile over ``calls`` calls of ``verb``: the call counts say what a change removed."""
    raw = request(f"/{verb}", bodies()[verb])

    async def run() -> None:
        conn = Connection(asyncio.get_running_loop())
        for _ in range(100):
            await conn.call(raw)
        prof = cProfile.Profile()
        prof.enable()
        for _ in range(calls):
            await conn.call(raw)
        prof.disable()
        stats = pstats.Stats(prof)
        print(f"{stats.total_calls / calls:.0f} function calls per {verb} call")  # type: ignore[attr-defined]
        stats.sort_stats("tottime").print_stats(25)

    uvloop.run(run())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.verbs_bench",
        description="CPU per verb call through the protocol and the application alone.",
    )
    parser.add_argument(
        "--profile",
        choices=("filter", "prioritize", "preempt"),
        help="print cProfile's call counts for this verb instead",
    )
    args = parser.parse_args(argv)
    if args.profile:
        profile(args.profile)
        return 0
    for verb in ("filter", "prioritize", "preempt"):
        budget = Budget(n=25, seconds=30, warmup=2)
        whole = sorted(measure(verb, budget))
        alone = sorted(measure_app_alone(verb, budget))
        print(
            f"{verb}: p50 {whole[len(whole) // 2]:.1f} us CPU a call, "
            f"the application alone {alone[len(alone) // 2]:.1f} us"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
