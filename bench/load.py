"""Load: many concurrent kube-scheduler-like clients on filter, prioritize and preempt.

The service runs as ``queue-extender serve`` builds it, in its own process (``bench.http_bench
serve``) over the synthetic cluster; this process opens ``--clients`` keep-alive connections
on one event loop, each sending its next request as soon as its previous answer is in, for
``--seconds`` or ``--max-requests`` in all, whichever comes first. Loopback only.

Reported: requests and errors (a non-200 answer, an answer that is not the verb's JSON, a
filter ``Error``, a broken connection), p50/p99 per verb, and the server's resident memory
before and after. ``make load`` runs the reference scale for 60 s; the unit test a few
seconds at a small scale.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import socket
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from bench import percentile, rss_mib
from bench.http_bench import FILTER_PODS, RawHttp, ServerProcess, _bodies, _explain, _read_answer
from bench.synthetic import ClusterSpec, SyntheticCluster

# kube-scheduler calls filter and prioritize for every pod and preempt only for the few that
# fit nowhere: the mix the clients cycle through.
MIX = ("filter", "prioritize", "filter", "prioritize", "filter", "prioritize", "preempt")
ANSWER_TIMEOUT = 30.0  # seconds: a request not answered by then counts as a hung worker


@dataclass
class VerbResult:
    latencies_ms: list[float] = field(default_factory=list)
    errors: dict[str, int] = field(default_factory=dict)

    def error(self, kind: str) -> None:
        self.errors[kind] = self.errors.get(kind, 0) + 1

    def summary(self) -> dict[str, Any]:
        ordered = sorted(self.latencies_ms)
        return {
            "requests": len(ordered) + sum(self.errors.values()),
            "errors": dict(self.errors),
            "p50_ms": round(percentile(ordered, 50), 3) if ordered else None,
            "p99_ms": round(percentile(ordered, 99), 3) if ordered else None,
        }


def _check(verb: str, status: int, body: bytes) -> str:
    """'' for a well-formed answer, else the kind of error."""
    if status != 200:
        return f"http-{status}"
    try:
        doc = orjson.loads(body)
    except orjson.JSONDecodeError:
        return "not-json"
    if verb == "filter":
        if not isinstance(doc, dict):
            return "bad-answer"
        return "filter-error" if doc.get("Error") else ""
    if verb == "prioritize":
        return "" if isinstance(doc, list) else "bad-answer"
    return "" if isinstance(doc, dict) else "bad-answer"


async def _drive(
    port: int, requests: dict[str, list[bytes]], clients: int, seconds: float, max_requests: int
) -> dict[str, VerbResult]:
    results = {verb: VerbResult() for verb in set(MIX)}
    issued = itertools.count()
    deadline = time.monotonic() + seconds

    async def client(index: int) -> None:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.get_extra_info("socket").setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        step = index
        try:
            while time.monotonic() < deadline and next(issued) < max_requests:
                verb = MIX[step % len(MIX)]
                bodies = requests[verb]
                step += 1
                started = time.perf_counter()
                writer.write(bodies[step % len(bodies)])
                try:
                    status, body = await asyncio.wait_for(_read_answer(reader), ANSWER_TIMEOUT)
                except (TimeoutError, OSError, asyncio.IncompleteReadError) as exc:
                    results[verb].error(type(exc).__name__)
                    writer.close()
                    reader, writer = await asyncio.open_connection("127.0.0.1", port)
                    continue
                kind = _check(verb, status, body)
                if kind:
                    results[verb].error(kind)
                else:
                    results[verb].latencies_ms.append((time.perf_counter() - started) * 1e3)
        finally:
            writer.close()

    await asyncio.gather(*(client(i) for i in range(clients)))
    return results


def run_load(
    scale: float, clients: int, seconds: float, max_requests: int, workdir: Path
) -> dict[str, Any]:
    from bench.engine_bench import pick_filter_pods

    cluster = SyntheticCluster(ClusterSpec.at_scale(scale))
    with ServerProcess(scale, workdir) as server:
        assert server.proc is not None
        picks = pick_filter_pods(cluster, _explain(server.port), FILTER_PODS)
        bodies = _bodies(cluster, picks)
        requests = {
            "filter": [RawHttp.encode("POST", "/filter", b) for b in bodies["filter"]],
            "prioritize": [RawHttp.encode("POST", "/prioritize", b) for b in bodies["filter"]],
            "preempt": [RawHttp.encode("POST", "/preempt", b) for b in bodies["preempt"]],
        }
        rss_before = rss_mib(server.proc.pid)
        started = time.monotonic()
        results = asyncio.run(_drive(server.port, requests, clients, seconds, max_requests))
        wall = time.monotonic() - started
        rss_after = rss_mib(server.proc.pid)
        alive = server.proc.poll() is None
    verbs = {verb: result.summary() for verb, result in sorted(results.items())}
    total = sum(v["requests"] for v in verbs.values())
    return {
        "scale": scale,
        "nodes": len(cluster.node_names),
        "clients": clients,
        "seconds": round(wall, 1),
        "requests": total,
        "requests_per_second": round(total / wall, 1) if wall > 0 else 0.0,
        "errors": sum(sum(v["errors"].values()) for v in verbs.values()),
        "verbs": verbs,
        "rss_before_mib": rss_before,
        "rss_after_mib": rss_after,
        "server_alive": alive,
        "date": time.strftime("%Y-%m-%d"),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.load", description=__doc__)
    parser.add_argument("--scale", type=float, default=1.0, help="synthetic cluster scale")
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--max-requests", type=int, default=2_000_000)
    parser.add_argument("--json", action="store_true", help="print the result as JSON only")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-load-") as tmp:
        result = run_load(args.scale, args.clients, args.seconds, args.max_requests, Path(tmp))
    if args.json:
        sys.stdout.write(orjson.dumps(result, option=orjson.OPT_INDENT_2).decode() + "\n")
    else:
        print(
            f"{result['clients']} clients, {result['seconds']}s, scale {result['scale']} "
            f"({result['nodes']} nodes): {result['requests']} requests "
            f"({result['requests_per_second']}/s), {result['errors']} errors; server RSS "
            f"{result['rss_before_mib']} -> {result['rss_after_mib']} MiB"
        )
        for verb, v in result["verbs"].items():
            print(
                f"  {verb:<10} {v['requests']:>8} requests  p50 {v['p50_ms']} ms  "
                f"p99 {v['p99_ms']} ms  errors {v['errors'] or 0}"
            )
    return 0 if result["errors"] == 0 and result["server_alive"] else 1


if __name__ == "__main__":
    sys.exit(main())
