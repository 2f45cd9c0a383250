"""Over-HTTP benches: the real service in its own process, a load generator in another.

Three processes, so that on two cores the load generator never steals the service's core:

* ``serve``: the service exactly as ``queue-extender serve`` builds it (``build_servers``:
  uvicorn, one worker, uvloop + httptools, FastAPI app from ``create_app``, the listeners'
  limits, ``--noop`` for the floor), but fed the synthetic cluster instead of a file or a
  kubeconfig; pinned to core 0. ``--metrics-port`` / ``--status-port`` add the side
  listeners.
* ``client``: a minimal keep-alive HTTP/1.1 client on raw sockets, one connection for the
  c=1 latencies and four on an event loop for the c=4 throughput, so the client's own cost
  stays out of the server's numbers; pinned to core 1.
* the orchestrator (this bench's ``run``): starts both, picks the pods through
  ``/debug/explain``, writes the request bodies to files and collects the results.

Run by hand: ``python -m bench.http_bench serve --scale 0.1 --port 8899`` serves the
synthetic cluster for a manual look (curl, wrk).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import IO, Any

import orjson

from bench import REPO_ROOT, Budget, Measurement, format_number, pinned, rss_mib, subprocess_env
from bench.synthetic import PREEMPT_VICTIMS, ClusterSpec, SyntheticCluster

BENCHES: dict[str, str] = {
    "noop-http": "POST /noop with the filter body (Pod ~4 KB + all NodeNames), c=1",
    "filter-http": "POST /filter, node-cache-capable body (Pod + all NodeNames), c=1",
    "filter-noop-ratio": "filter-http p50 / noop-http p50 on the same server",
    "prioritize-http": "POST /prioritize with all NodeNames, c=1",
    "preempt-http": f"POST /preempt, candidate nodes x {PREEMPT_VICTIMS} meta victims, c=1, "
    "each call a first one",
    "noop-http-rps": "POST /noop throughput, 4 keep-alive connections: the client's ceiling",
    "filter-http-rps": "POST /filter throughput, 4 keep-alive connections, one worker",
    "verb-rss-growth": "server RSS change over 10,000 more filter + prioritize calls, c=1",
}

#: The fit variant's rows (``ClusterSpec.fit``): plain row name and what the row is.
FIT_BENCHES: dict[str, tuple[str, str]] = {
    "filter-http-fit": ("filter-http", "filter-http on the fit variant"),
    "prioritize-http-fit": ("prioritize-http", "prioritize-http on the fit variant"),
}

#: A leak of half a kilobyte a call shows as 5 MiB over the 10,000 calls of verb-rss-growth;
#: below that, the allocator's own rounding (arenas, free lists) is indistinguishable.
RSS_GROWTH_TARGET_MIB = 5.0

FILTER_PODS = 4
READY_TIMEOUT = 600.0  # the server builds the cluster first: seconds at reference scale


# --- a lean HTTP/1.1 client -----------------------------------------------------------------


class RawHttp:
    """One keep-alive connection; requests are pre-encoded bytes. It does only what the
    bench needs (Content-Length or chunked answers), to cost the client a few microseconds."""

    def __init__(self, port: int, timeout: float = 120.0) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._buf = b""

    @staticmethod
    def encode(method: str, path: str, body: bytes = b"") -> bytes:
        head = (
            f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            f"User-Agent: Go-http-client/1.1\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\n\r\n"
        )
        return head.encode("ascii") + body

    def send(self, raw: bytes) -> tuple[int, bytes]:
        self.sock.sendall(raw)
        return self._response()

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.close()

    def _fill(self) -> None:
        chunk = self.sock.recv(1 << 18)
        if not chunk:
            raise ConnectionError("server closed the connection")
        self._buf += chunk

    def _response(self) -> tuple[int, bytes]:
        while (end := self._buf.find(b"\r\n\r\n")) < 0:
            self._fill()
        lines = self._buf[:end].decode("latin-1").split("\r\n")
        self._buf = self._buf[end + 4 :]
        status = int(lines[0].split()[1])
        length, chunked = -1, False
        for line in lines[1:]:
            key, _, value = line.partition(":")
            key = key.strip().lower()
            if key == "content-length":
                length = int(value)
            elif key == "transfer-encoding" and "chunked" in value.lower():
                chunked = True
        if chunked:
            return status, self._chunked()
        if length < 0:
            raise ConnectionError("answer without Content-Length")
        while len(self._buf) < length:
            self._fill()
        body, self._buf = self._buf[:length], self._buf[length:]
        return status, body

    def _chunked(self) -> bytes:
        parts: list[bytes] = []
        while True:
            while (end := self._buf.find(b"\r\n")) < 0:
                self._fill()
            size = int(self._buf[:end].split(b";")[0], 16)
            self._buf = self._buf[end + 2 :]
            while len(self._buf) < size + 2:
                self._fill()
            parts.append(self._buf[:size])
            self._buf = self._buf[size + 2 :]
            if size == 0:
                return b"".join(parts)


def post(port: int, path: str, body: bytes) -> tuple[int, bytes]:
    conn = RawHttp(port)
    try:
        return conn.send(RawHttp.encode("POST", path, body))
    finally:
        conn.close()


def get(port: int, path: str) -> tuple[int, bytes]:
    conn = RawHttp(port, timeout=5.0)
    try:
        return conn.send(RawHttp.encode("GET", path))
    finally:
        conn.close()


# --- the server process ---------------------------------------------------------------------


def serve(
    scale: float, port: int, metrics_port: int = 0, status_port: int = 0, fit: bool = False
) -> int:
    """The service under test, built by the production code path around the synthetic cluster
    (its fit variant when ``fit``); with ``metrics_port`` / ``status_port``, the side
    listeners too (``bench.load``'s exhaustion run aims at them)."""
    from app.backend.build import Built
    from app.cli.serve import build_servers
    from app.cli.serve_flags import add_serve_parser, listening_from_args
    from app.serving.guard import raise_open_files_limit
    from app.serving.listeners import serve_all
    from app.telemetry.logs import setup_logging
    from bench.engine_bench import build_fixture

    fixture = build_fixture(SyntheticCluster(ClusterSpec.at_scale(scale, fit=fit)))
    parser = argparse.ArgumentParser(prog="bench-serve")
    add_serve_parser(parser.add_subparsers())
    argv = ["serve", "--host", "127.0.0.1", "--port", str(port), "--noop"]
    if metrics_port:
        argv += ["--metrics-bind-address", f"127.0.0.1:{metrics_port}"]
    if status_port:
        argv += ["--status-address", f"127.0.0.1:{status_port}"]
    args = parser.parse_args(argv)
    setup_logging(args.verbosity, args.log_format)
    raise_open_files_limit()
    backend = fixture.backend
    # preempt-http sends one preemptor again and again: a preemptor that asks again while it
    # holds a grant is answered from the grant (a lookup), so grants end at once here and
    # every call is judged as a preemptor's first (what the row measures).
    backend.accounting.grants.ttl = 0.0
    built = Built(
        backend,
        assumptions=backend.assumption_counts,
        warnings=lambda: list(backend.conf.warnings),
    )
    server, sides, _ = build_servers(args, listening_from_args(args), lambda _args: built)
    print(f"bench server: cluster built in {fixture.build_seconds:.1f}s", flush=True)
    if sides:
        return serve_all(server, sides)
    server.run()
    return 0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


class ServerProcess:
    """The ``serve`` child, pinned to core 0; its output goes to a log file kept for errors."""

    def __init__(
        self, scale: float, workdir: Path, side_listeners: bool = False, *, fit: bool = False
    ) -> None:
        self.scale = scale
        self.fit = fit
        self.port = free_port()
        self.metrics_port = free_port() if side_listeners else 0
        self.status_port = free_port() if side_listeners else 0
        self.log_path = workdir / "server.log"
        self._log: IO[bytes] | None = None
        self.proc: subprocess.Popen[bytes] | None = None
        self.ready_seconds = 0.0

    def __enter__(self) -> ServerProcess:
        self._log = self.log_path.open("wb")
        argv = [sys.executable, "-m", "bench.http_bench", "serve"]
        argv += ["--scale", str(self.scale), "--port", str(self.port)]
        if self.metrics_port:
            argv += ["--metrics-port", str(self.metrics_port)]
            argv += ["--status-port", str(self.status_port)]
        if self.fit:
            argv.append("--fit")
        self.proc = subprocess.Popen(
            pinned(0, argv),
            cwd=REPO_ROOT,
            env=subprocess_env(),
            stdout=self._log,
            stderr=subprocess.STDOUT,
        )
        started = time.monotonic()
        self._wait_ready(started + READY_TIMEOUT)
        self.ready_seconds = time.monotonic() - started
        return self

    def _wait_ready(self, deadline: float) -> None:
        assert self.proc is not None
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"bench server exited ({self.proc.returncode}): {self.tail()}")
            with contextlib.suppress(OSError):
                status, _ = get(self.port, "/readyz")
                if status == 200:
                    return
            time.sleep(0.2)
        raise RuntimeError(f"bench server not ready after {READY_TIMEOUT:.0f}s: {self.tail()}")

    def cpu_seconds(self) -> float:
        """User + system CPU time of the server so far (``taskset`` execs it: same pid);
        -1 where /proc is not there."""
        if self.proc is None:
            return -1.0
        try:
            fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            return -1.0
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def rss_mib(self) -> float | None:
        return rss_mib(self.proc.pid) if self.proc is not None else None

    def tail(self, limit: int = 2000) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-limit:]
        except OSError:
            return ""

    def __exit__(self, *exc: object) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        if self._log is not None:
            self._log.close()


# --- the client process ---------------------------------------------------------------------


def _outcome(name: str, status: int, body: bytes) -> str:
    if status != 200:
        return f"http-{status}"
    if name.startswith("noop") or name == "verb-rss-growth":
        return "ok"
    doc = orjson.loads(body)
    if name.startswith("filter"):
        if doc.get("Error"):
            return "error"
        return "pass" if doc.get("NodeNames") else "reject"
    if name.startswith("prioritize"):
        return f"scored-{sum(1 for h in doc if h.get('Score', 0) > 0)}-of-{len(doc)}"
    victims = doc.get("NodeNameToMetaVictims") or {}
    sizes = sorted({len(v.get("Pods") or []) for v in victims.values()})
    return f"nodes-{len(victims)}-victims-{'/'.join(map(str, sizes)) or 0}"


def _serial(port: int, scenario: dict[str, Any], bodies: list[bytes]) -> dict[str, Any]:
    name = scenario["name"]
    paths = scenario.get("paths") or [scenario["path"]]
    requests = [RawHttp.encode("POST", path, body) for path in paths for body in bodies]
    budget = Budget(scenario["n"], scenario["seconds"], scenario["warmup"])
    conn = RawHttp(port)
    samples: list[float] = []
    outcomes: dict[str, int] = {}
    deadline = time.monotonic() + budget.seconds
    loop_started = time.perf_counter()
    try:
        for i in range(budget.warmup + budget.n):
            started = time.perf_counter()
            status, body = conn.send(requests[i % len(requests)])
            elapsed = (time.perf_counter() - started) * 1e3
            if i >= budget.warmup:
                samples.append(elapsed)
                outcome = _outcome(name, status, body)
                outcomes[outcome] = outcomes.get(outcome, 0) + 1
            if time.monotonic() > deadline and samples:
                break
    finally:
        conn.close()
    return {
        "samples": samples,
        "outcomes": outcomes,
        "response_bytes": len(body),
        "loop_seconds": time.perf_counter() - loop_started,
    }


async def _read_answer(reader: asyncio.StreamReader) -> tuple[int, bytes]:
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    length = 0
    for line in lines[1:]:
        key, _, value = line.partition(":")
        if key.strip().lower() == "content-length":
            length = int(value)
    return int(lines[0].split()[1]), await reader.readexactly(length)


def _concurrent(port: int, scenario: dict[str, Any], bodies: list[bytes]) -> dict[str, Any]:
    """``concurrency`` keep-alive connections on one event loop, each sending its next
    request as soon as the previous answer is in (a closed loop, like wrk).

    Not httpx: on this machine its client cost capped a no-op endpoint at ~400 requests/s,
    so it would have measured itself rather than the server.
    """
    n, warmup, concurrency = scenario["n"], scenario["warmup"], scenario["concurrency"]
    requests = [RawHttp.encode("POST", scenario["path"], body) for body in bodies]

    async def main() -> dict[str, Any]:
        loop_started = time.perf_counter()
        connections = []
        for _ in range(concurrency):
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            sock = writer.get_extra_info("socket")
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            connections.append((reader, writer))
        for i in range(warmup):
            reader, writer = connections[i % concurrency]
            writer.write(requests[i % len(requests)])
            await _read_answer(reader)
        issued = 0
        samples: list[float] = []
        statuses: dict[str, int] = {}
        deadline = time.monotonic() + scenario["seconds"]

        async def worker(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            nonlocal issued
            while issued < n and time.monotonic() < deadline:
                request = requests[issued % len(requests)]
                issued += 1
                started = time.perf_counter()
                writer.write(request)
                status, _ = await _read_answer(reader)
                samples.append((time.perf_counter() - started) * 1e3)
                statuses[str(status)] = statuses.get(str(status), 0) + 1

        started = time.perf_counter()
        await asyncio.gather(*(worker(r, w) for r, w in connections))
        wall = time.perf_counter() - started
        for _, writer in connections:
            writer.close()
        return {
            "samples": samples,
            "wall_seconds": wall,
            "outcomes": statuses,
            "loop_seconds": time.perf_counter() - loop_started,
        }

    try:
        import uvloop

        return uvloop.run(main())
    except ImportError:  # pragma: no cover - uvloop comes with uvicorn[standard]
        return asyncio.run(main())


def client(plan_path: str) -> int:
    plan = orjson.loads(Path(plan_path).read_bytes())
    gc.disable()  # the client's pauses would be charged to the server
    results: dict[str, Any] = {}
    for scenario in plan["scenarios"]:
        bodies = Path(scenario["bodies"]).read_bytes().split(b"\n")
        try:
            if scenario["concurrency"] > 1:
                results[scenario["name"]] = _concurrent(plan["port"], scenario, bodies)
            else:
                results[scenario["name"]] = _serial(plan["port"], scenario, bodies)
        except Exception as exc:
            results[scenario["name"]] = {"error": f"{type(exc).__name__}: {exc}"}
        gc.collect()
    sys.stdout.buffer.write(orjson.dumps(results))
    return 0


# --- orchestration --------------------------------------------------------------------------


def _explain(port: int) -> Any:
    def explain(pod: dict[str, Any]) -> dict[str, Any]:
        status, body = post(port, "/debug/explain", orjson.dumps(pod))
        answer: dict[str, Any] = orjson.loads(body) if status == 200 else {}
        return answer

    return explain


def _bodies(cluster: SyntheticCluster, picks: list[int]) -> dict[str, list[bytes]]:
    names = cluster.node_names
    filter_bodies = [
        orjson.dumps({"Pod": cluster.pod(i), "Nodes": None, "NodeNames": names}) for i in picks
    ]
    candidates = cluster.preempt_candidates()
    meta = {
        node: {"Pods": [{"UID": uid} for uid in uids], "NumPDBViolations": 0}
        for node, uids in candidates.items()
    }
    preempt = orjson.dumps(
        {
            "Pod": cluster.pod(cluster.preemptor_pod()),
            "NodeNameToVictims": None,
            "NodeNameToMetaVictims": meta,
        }
    )
    return {"filter": filter_bodies, "preempt": [preempt]}


def run(
    scale: float,
    selected: set[str],
    budgets: dict[str, Budget],
    cluster: SyntheticCluster,
    *,
    fit: bool = False,
) -> list[Measurement]:
    wanted = set(selected)
    if "filter-noop-ratio" in wanted:
        wanted |= {"noop-http", "filter-http"}
    with tempfile.TemporaryDirectory(prefix="bench-http-") as tmp:
        workdir = Path(tmp)
        try:
            with ServerProcess(scale, workdir, fit=fit) as server:
                return _run_with_server(server, cluster, wanted, selected, budgets, workdir)
        except Exception as exc:
            error = f"{type(exc).__name__}: {exc}"
            return [Measurement(name, BENCHES[name], error=error) for name in sorted(selected)]


def _run_with_server(
    server: ServerProcess,
    cluster: SyntheticCluster,
    wanted: set[str],
    selected: set[str],
    budgets: dict[str, Budget],
    workdir: Path,
) -> list[Measurement]:
    from bench.engine_bench import pick_filter_pods

    picks = pick_filter_pods(cluster, _explain(server.port), FILTER_PODS)
    bodies = _bodies(cluster, picks)
    files = {}
    for kind, items in bodies.items():
        files[kind] = workdir / f"{kind}.bodies"
        files[kind].write_bytes(b"\n".join(items))
    routes = {
        "noop-http": ("/noop", "filter", 1),
        "filter-http": ("/filter", "filter", 1),
        "prioritize-http": ("/prioritize", "filter", 1),
        "preempt-http": ("/preempt", "preempt", 1),
        "noop-http-rps": ("/noop", "filter", 4),
        "filter-http-rps": ("/filter", "filter", 4),
        "verb-rss-growth": ("/filter", "filter", 1),  # and /prioritize: see below
    }
    scenarios: list[dict[str, Any]] = []
    for name, (path, kind, concurrency) in routes.items():
        if name in wanted:
            budget = budgets[name]
            scenarios.append(
                {
                    "name": name,
                    "path": path,
                    "bodies": str(files[kind]),
                    "n": budget.n,
                    "warmup": budget.warmup,
                    "seconds": budget.seconds,
                    "concurrency": concurrency,
                }
            )
            if name == "verb-rss-growth":
                scenarios[-1]["paths"] = ["/filter", "/prioritize"]
    results: dict[str, Any] = {}
    for scenario in scenarios:
        # One client process per scenario, so the server's CPU time can be read in between:
        # a server that got less than its core was competing with other work.
        cpu_before, rss_before = server.cpu_seconds(), server.rss_mib()
        results.update(_client_run(server.port, [scenario], workdir))
        cpu = server.cpu_seconds() - cpu_before
        result = results.get(scenario["name"], {})
        result["server_rss_mib"] = server.rss_mib()
        result["server_rss_before_mib"] = rss_before
        requests = len(result.get("samples", [])) + scenario["warmup"]
        loop = result.get("loop_seconds") or 0.0
        if cpu_before >= 0 and requests and loop > 0:
            # CPU the server spent per request, and the share of the client's loop during
            # which it was on a core (near 1 at c=1 means nothing else competed for core 0).
            result["server_cpu_ms_per_request"] = round(cpu * 1e3 / requests, 3)
            result["server_cpu_share"] = round(cpu / loop, 2)
    common = {
        "pods": [cluster.pod_key(i) for i in picks],
        "node_names": len(cluster.node_names),
        "filter_body_bytes": len(bodies["filter"][0]),
        "server_ready_seconds": round(server.ready_seconds, 1),
    }
    return _measurements(results, selected, common, len(cluster.preempt_candidates()))


def _client_run(port: int, scenarios: list[dict[str, Any]], workdir: Path) -> dict[str, Any]:
    plan_path = workdir / "plan.json"
    plan_path.write_bytes(orjson.dumps({"port": port, "scenarios": scenarios}))
    timeout = 120 + sum(s["seconds"] * 2 for s in scenarios)
    argv = [sys.executable, "-m", "bench.http_bench", "client", str(plan_path)]
    done = subprocess.run(
        pinned(1, argv),
        cwd=REPO_ROOT,
        env=subprocess_env(),
        capture_output=True,
        timeout=timeout,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"bench client failed: {done.stderr.decode(errors='replace')[-2000:]}")
    results: dict[str, Any] = orjson.loads(done.stdout)
    return results


def _server_facts(result: dict[str, Any]) -> dict[str, Any]:
    keys = ("server_cpu_ms_per_request", "server_cpu_share")
    return {k: result[k] for k in keys if k in result}


def _measurements(
    results: dict[str, Any], selected: set[str], common: dict[str, Any], candidates: int
) -> list[Measurement]:
    targets = {"filter-http": 5.0, "prioritize-http": 5.0, "preempt-http": 20.0}
    out: list[Measurement] = []
    for name in ("noop-http", "filter-http", "prioritize-http", "preempt-http"):
        if name not in selected:
            continue
        result = results.get(name, {"error": "not run"})
        extra = {**common, "outcomes": result.get("outcomes"), **_server_facts(result)}
        if name == "preempt-http":
            extra = {
                "candidate_nodes": candidates,
                "outcomes": result.get("outcomes"),
                **_server_facts(result),
            }
        out.append(
            Measurement(
                name,
                BENCHES[name],
                samples=result.get("samples", []),
                target=targets.get(name),
                extra=extra,
                error=result.get("error"),
                rss_mib=result.get("server_rss_mib"),
            )
        )
    if "filter-noop-ratio" in selected:
        out.append(_ratio(results))
    for name in ("noop-http-rps", "filter-http-rps"):
        if name in selected:
            rps = _throughput(name, results.get(name, {"error": "not run"}))
            rps.rss_mib = results.get(name, {}).get("server_rss_mib")
            out.append(rps)
    if "verb-rss-growth" in selected:
        out.append(_rss_growth(results.get("verb-rss-growth", {"error": "not run"})))
    return out


def _rss_growth(result: dict[str, Any]) -> Measurement:
    """The server's resident memory before and after 10,000 more verb calls on a cluster at
    rest: anything a call leaves behind (a cache without bound, an assumption never let go)
    would show up here."""
    growth = Measurement(
        "verb-rss-growth",
        BENCHES["verb-rss-growth"],
        unit="MiB",
        target=RSS_GROWTH_TARGET_MIB,
        target_stat="value",
        error=result.get("error"),
        rss_mib=result.get("server_rss_mib"),
    )
    before, after = result.get("server_rss_before_mib"), result.get("server_rss_mib")
    calls = len(result.get("samples", []))
    if growth.error is None and (before is None or after is None or not calls):
        growth.error = "no RSS reading (needs /proc) or no call answered"
    if growth.error is None:
        growth.value = after - before
        growth.extra = {
            "calls": calls,
            "rss_before_mib": before,
            "rss_after_mib": after,
            "outcomes": result.get("outcomes"),
        }
    return growth


def _throughput(name: str, result: dict[str, Any]) -> Measurement:
    rps = Measurement(name, BENCHES[name], unit="req/s", target_stat="value")
    rps.error = result.get("error")
    if result.get("samples") and result.get("wall_seconds"):
        latency = Measurement("latency", "", samples=result["samples"]).stats()
        rps.value = len(result["samples"]) / result["wall_seconds"]
        rps.extra = {
            "client": "asyncio raw HTTP/1.1, 4 connections, separate process on core 1",
            "requests": len(result["samples"]),
            "latency_p50_ms": round(latency["p50"], 2),
            "latency_p99_ms": round(latency["p99"], 2),
            "outcomes": result.get("outcomes"),
            **_server_facts(result),
        }
    return rps


def _ratio(results: dict[str, Any]) -> Measurement:
    ratio = Measurement(
        "filter-noop-ratio",
        BENCHES["filter-noop-ratio"],
        unit="×",
        target=3.0,
        target_stat="value",
    )
    noop = Measurement("noop", "", samples=results.get("noop-http", {}).get("samples", []))
    filt = Measurement("filter", "", samples=results.get("filter-http", {}).get("samples", []))
    if not noop.samples or not filt.samples:
        ratio.error = "needs both noop-http and filter-http"
        return ratio
    n, f = noop.stats(), filt.stats()
    ratio.value = f["p50"] / n["p50"]
    ratio.extra = {
        "p50": f"{format_number(f['p50'])} ms / {format_number(n['p50'])} ms",
        "p99_ratio": round(f["p99"] / n["p99"], 2),
    }
    return ratio


def run_fit(
    scale: float, selected: set[str], budgets: dict[str, Budget], cluster: SyntheticCluster
) -> list[Measurement]:
    """The fit variant's HTTP rows: the plain rows' scenarios against a server holding the
    fit variant of the cluster (``cluster`` must be it), renamed."""
    plain = {FIT_BENCHES[name][0]: name for name in selected}
    out = run(scale, set(plain), budgets, cluster, fit=True)
    for measurement in out:
        name = plain[measurement.name]
        measurement.name, measurement.what = name, FIT_BENCHES[name][1]
    return out


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.http_bench")
    sub = parser.add_subparsers(dest="role", required=True)
    s = sub.add_parser("serve", help="serve the synthetic cluster (the process under test)")
    s.add_argument("--scale", type=float, default=1.0)
    s.add_argument("--port", type=int, default=8899)
    s.add_argument("--metrics-port", type=int, default=0)
    s.add_argument("--status-port", type=int, default=0)
    s.add_argument("--fit", action="store_true", help="the fit variant of the cluster")
    c = sub.add_parser("client", help="run a load plan against a server (bench internal)")
    c.add_argument("plan")
    args = parser.parse_args(argv)
    if args.role == "serve":
        return serve(args.scale, args.port, args.metrics_port, args.status_port, args.fit)
    return client(args.plan)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
