"""Load: many concurrent kube-scheduler-like clients on filter, prioritize and preempt.

The service runs as ``queue-extender serve`` builds it, in its own process (``bench.http_bench
serve``) over the synthetic cluster; this process opens ``--clients`` keep-alive connections
on one event loop, each sending its next request as soon as its previous answer is in, for
``--seconds`` or ``--max-requests`` in all, whichever comes first. Loopback only.

Reported: requests and errors (a non-200 answer, an answer that is not the verb's JSON, a
filter ``Error``, a broken connection), p50/p99 per verb, and the server's resident memory
before and after. ``make load`` runs the reference scale for 60 s; the unit test a few
seconds at a small scale.

With ``--idle N --slow M`` the server also runs its metrics and status listeners, and while
the verbs' clients run, this process holds N idle connections (connected, never a byte) and
M slow ones (a request head trickled a byte a second) to those two listeners, reconnecting
each one the server closes: the verbs must not notice (no error, p99 and RSS reported as
before). The attack stops with the clients.

With ``--whatif``, one more client posts the largest what-if the API accepts (``MAX_OBJECTS``
pods, each asking for a little CPU in a leaf queue, scope "all") back to back on the main
listener while the verbs' clients run: the verbs' p99 against a run without it is what a
what-if costs kube-scheduler.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import multiprocessing
import socket
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from app.serving.guard import raise_open_files_limit
from bench import percentile, rss_mib
from bench.http_bench import FILTER_PODS, RawHttp, ServerProcess, _bodies, _explain, _read_answer
from bench.synthetic import ClusterSpec, SyntheticCluster

# kube-scheduler calls filter and prioritize for every pod and preempt only for the few that
# fit nowhere: the mix the clients cycle through.
MIX = ("filter", "prioritize", "filter", "prioritize", "filter", "prioritize", "preempt")
ANSWER_TIMEOUT = 30.0  # seconds: a request not answered by then counts as a hung worker
ATTACK_HEAD_START = 1.0  # seconds the side listeners are held before the verbs' clients start
ATTACK_GRACE = 30.0  # seconds the attacking process has to report once its time is up
RECONNECT_PAUSE = 0.2  # seconds an attacking connection waits before it connects again


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


@dataclass
class Attack:
    """Idle and slow connections held against the side listeners during a load run, from a
    process of its own: thousands of connections on the clients' event loop would delay the
    clients' own reads and pass for server latency."""

    ports: tuple[int, ...] = ()
    idle: int = 0
    slow: int = 0
    opened: int = 0
    closed_by_server: int = 0
    refused: int = 0

    def summary(self) -> dict[str, int]:
        return {
            "idle": self.idle,
            "slow": self.slow,
            "opened": self.opened,
            "closed_by_server": self.closed_by_server,
            "refused": self.refused,
        }

    def start(self, seconds: float) -> tuple[multiprocessing.Process, Any]:
        """The attacking process, stopping by itself after ``seconds``; ``finish`` reads its
        counts."""
        results: Any = multiprocessing.get_context("spawn").Queue()
        proc = multiprocessing.get_context("spawn").Process(
            target=_attack_process, args=(self.ports, self.idle, self.slow, seconds, results)
        )
        proc.start()
        return proc, results

    def finish(self, proc: multiprocessing.Process, results: Any) -> None:
        counts = results.get(timeout=ATTACK_GRACE)
        proc.join(ATTACK_GRACE)
        self.opened, self.closed_by_server, self.refused = counts

    async def run(self, seconds: float) -> None:
        stop = asyncio.Event()
        tasks = [
            asyncio.create_task(self._hold(self.ports[i % len(self.ports)], stop, slow=False))
            for i in range(self.idle)
        ]
        tasks += [
            asyncio.create_task(self._hold(self.ports[i % len(self.ports)], stop, slow=True))
            for i in range(self.slow)
        ]
        await asyncio.sleep(seconds)
        stop.set()
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    async def _hold(self, port: int, stop: asyncio.Event, *, slow: bool) -> None:
        head = b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 4096
        while not stop.is_set():
            try:
                reader, writer = await asyncio.open_connection("127.0.0.1", port)
            except OSError:
                self.refused += 1
                await asyncio.sleep(RECONNECT_PAUSE)
                continue
            self.opened += 1
            try:
                if slow:
                    for i in itertools.count():
                        writer.write(head[i % len(head) : i % len(head) + 1])
                        # A closed connection reads EOF at once; an open one times out.
                        with contextlib.suppress(TimeoutError):
                            if not await asyncio.wait_for(reader.read(4096), 1.0):
                                break
                else:
                    while await reader.read(4096):
                        pass
                self.closed_by_server += 1
            except OSError:
                self.closed_by_server += 1
            finally:
                writer.close()
            await asyncio.sleep(RECONNECT_PAUSE)


def _attack_process(
    ports: tuple[int, ...], idle: int, slow: int, seconds: float, results: Any
) -> None:
    raise_open_files_limit()
    attack = Attack(ports, idle, slow)
    asyncio.run(attack.run(seconds))
    results.put((attack.opened, attack.closed_by_server, attack.refused))


def whatif_body(cluster: SyntheticCluster) -> bytes:
    """The largest what-if the API takes: MAX_OBJECTS pods over the leaf queues."""
    from scheduler_core.insight.whatif import MAX_OBJECTS

    pods = []
    for i in range(MAX_OBJECTS):
        leaf = cluster.leaves[i % len(cluster.leaves)]
        pods.append(
            {
                "kind": "Pod",
                "metadata": {
                    "name": f"whatif-{i}",
                    "namespace": "whatif",
                    "uid": f"whatif-{i}",
                    "annotations": {"scheduling.volcano.sh/queue-name": leaf},
                },
                "spec": {
                    "schedulerName": "queue-scheduler",
                    "containers": [{"name": "c", "resources": {"requests": {"cpu": "100m"}}}],
                },
            }
        )
    return orjson.dumps({"add": pods, "scope": "all"})


async def _whatif_loop(port: int, body: bytes, stop: asyncio.Event, done: list[int]) -> None:
    """What-ifs back to back until ``stop``; ``done`` gets each answer's status."""
    request = RawHttp.encode("POST", "/api/v1/whatif", body)
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        while not stop.is_set():
            writer.write(request)
            status, _ = await asyncio.wait_for(_read_answer(reader), ANSWER_TIMEOUT * 4)
            done.append(status)
    finally:
        writer.close()


async def _drive(
    port: int,
    requests: dict[str, list[bytes]],
    clients: int,
    seconds: float,
    max_requests: int,
    attack: Attack | None = None,
    whatif: bytes = b"",
    whatifs: list[int] | None = None,
) -> dict[str, VerbResult]:
    results = {verb: VerbResult() for verb in set(MIX)}
    stop_whatif = asyncio.Event()
    whatif_task = None
    if whatif:
        whatif_task = asyncio.create_task(
            _whatif_loop(port, whatif, stop_whatif, whatifs if whatifs is not None else [])
        )
    issued = itertools.count()
    attacker = None
    if attack is not None:
        attacker = attack.start(seconds + ATTACK_HEAD_START)
        await asyncio.sleep(ATTACK_HEAD_START)
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

    try:
        await asyncio.gather(*(client(i) for i in range(clients)))
    finally:
        stop_whatif.set()
        if whatif_task is not None:
            await asyncio.gather(whatif_task, return_exceptions=True)
        if attack is not None and attacker is not None:
            attack.finish(*attacker)
    return results


def run_load(
    scale: float,
    clients: int,
    seconds: float,
    max_requests: int,
    workdir: Path,
    idle: int = 0,
    slow: int = 0,
    whatif: bool = False,
) -> dict[str, Any]:
    from bench.engine_bench import pick_filter_pods

    cluster = SyntheticCluster(ClusterSpec.at_scale(scale))
    attacking = idle > 0 or slow > 0
    if attacking:
        raise_open_files_limit()
    with ServerProcess(scale, workdir, side_listeners=attacking) as server:
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
        attack = None
        if attacking:
            attack = Attack((server.metrics_port, server.status_port), idle, slow)
        whatifs: list[int] = []
        body = whatif_body(cluster) if whatif else b""
        results = asyncio.run(
            _drive(server.port, requests, clients, seconds, max_requests, attack, body, whatifs)
        )
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
        "attack": attack.summary() if attack is not None else None,
        "whatifs": {str(s): whatifs.count(s) for s in sorted(set(whatifs))} if whatif else None,
        "date": time.strftime("%Y-%m-%d"),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.load", description=__doc__)
    parser.add_argument("--scale", type=float, default=1.0, help="synthetic cluster scale")
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--max-requests", type=int, default=2_000_000)
    parser.add_argument(
        "--idle", type=int, default=0, help="idle connections to the metrics/status listeners"
    )
    parser.add_argument(
        "--slow", type=int, default=0, help="slow (trickling) connections to the same"
    )
    parser.add_argument(
        "--whatif", action="store_true", help="maximal what-ifs back to back meanwhile"
    )
    parser.add_argument("--json", action="store_true", help="print the result as JSON only")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-load-") as tmp:
        result = run_load(
            args.scale,
            args.clients,
            args.seconds,
            args.max_requests,
            Path(tmp),
            idle=args.idle,
            slow=args.slow,
            whatif=args.whatif,
        )
    if args.json:
        sys.stdout.write(orjson.dumps(result, option=orjson.OPT_INDENT_2).decode() + "\n")
    else:
        print(
            f"{result['clients']} clients, {result['seconds']}s, scale {result['scale']} "
            f"({result['nodes']} nodes): {result['requests']} requests "
            f"({result['requests_per_second']}/s), {result['errors']} errors; server RSS "
            f"{result['rss_before_mib']} -> {result['rss_after_mib']} MiB"
        )
        if result["whatifs"] is not None:
            print(f"  what-ifs answered meanwhile, by status: {result['whatifs']}")
        if result["attack"] is not None:
            print(f"  side listeners held against: {result['attack']}")
        for verb, v in result["verbs"].items():
            print(
                f"  {verb:<10} {v['requests']:>8} requests  p50 {v['p50_ms']} ms  "
                f"p99 {v['p99_ms']} ms  errors {v['errors'] or 0}"
            )
    return 0 if result["errors"] == 0 and result["server_alive"] else 1


if __name__ == "__main__":
    sys.exit(main())
