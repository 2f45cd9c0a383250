"""The initial sync and the informer path: wall time, peak RSS, event rate, bind-to-verdict.

The stand-in API server (``tests.fakeapi``) runs in this process on core 1, loaded with the
synthetic cluster (``probe=True``); a child process pinned to core 0 does what the service
does at start: ``InformerSet`` (production ``ReflectorOptions``) into a ``ClusterState``.
Peak RSS is the child's own ``VmHWM``: nothing but the sync has run in it by then.

Then, in the same child:

* apply rate: pod MODIFIED events, decoded from bytes as the reflector does and applied
  through the sink (``ClusterState.upsert``), without HTTP: the cache's own ceiling;
* bind-to-filter: this process binds the probe pod ``a`` on the API server; the child,
  calling ``EngineBackend.filter`` for probe pod ``b`` every half millisecond as a busy
  kube-scheduler would, stops the clock at the first answer that refuses ``b`` because
  ``a`` now fills the probe queue's 10-CPU capability. Both clocks are CLOCK_MONOTONIC,
  which Linux shares between processes.
"""

from __future__ import annotations

import argparse
import os
import select
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import IO, Any

import orjson

from bench import REPO_ROOT, Measurement, pinned, proc_status_kib, subprocess_env
from bench.synthetic import PROBE_NODE, ClusterSpec, SyntheticCluster

BENCHES: dict[str, str] = {
    "sync": "initial sync through InformerSet from the stand-in API server, then event "
    "apply rate and bind-to-filter latency",
}

SYNC_TIMEOUT = 600.0
APPLY_EVENTS = 5000
FLIP_TIMEOUT = 30.0
POLL_INTERVAL = 0.0005
PROBE_NAMES = 100


# --- child ----------------------------------------------------------------------------------


def _emit(tag: str, payload: Any = None) -> None:
    line = tag if payload is None else f"{tag} {orjson.dumps(payload).decode()}"
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def child(kubeconfig: str, scale: float, trials: int) -> int:
    from scheduler_core.cache.informers import InformerSet
    from scheduler_core.cache.state import ClusterState

    state = ClusterState()
    started = time.perf_counter()
    informers = InformerSet(state, kubeconfig=kubeconfig)
    informers.start()
    synced = informers.wait_for_sync(SYNC_TIMEOUT)
    wall = time.perf_counter() - started
    resource_kib = proc_status_kib("VmHWM")
    if resource_kib is None:
        import resource

        resource_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    _emit(
        "SYNCED",
        {
            "synced": synced and state.has_synced(),
            "seconds": wall,
            "peak_rss_kib": resource_kib,
            "rss_kib": proc_status_kib("VmRSS"),
            "counts": state.counts(),
            "rejected": dict(state.rejected),
        },
    )
    try:
        if not synced:
            return 1
        cluster = SyntheticCluster(ClusterSpec.at_scale(scale, probe=True))
        _emit("APPLY", _apply_rate(state, cluster))
        _emit("DONE", {"trials": len(_bind_trials(state, cluster, trials))})
    finally:
        informers.stop()
    return 0


def _apply_rate(state: Any, cluster: SyntheticCluster) -> dict[str, Any]:
    """Decode + upsert of pod updates (a label and a resourceVersion change), as the
    reflector hands each watch event to the sink."""
    running = [i for i, node in enumerate(cluster.placement) if node >= 0]
    events = []
    for k in range(min(APPLY_EVENTS, len(running))):
        pod = cluster.pod(running[(k * 7919) % len(running)])
        pod["metadata"]["resourceVersion"] = str(900_000_000 + k)
        pod["metadata"]["labels"]["bench/apply"] = str(k)
        events.append(orjson.dumps({"type": "MODIFIED", "object": pod}))
    before = state.version
    started = time.perf_counter()
    for raw in events:
        event = orjson.loads(raw)
        state.upsert("Pod", event["object"])
    elapsed = time.perf_counter() - started
    # The same pods again with only their resourceVersion and managedFields new: updates
    # that change nothing the engine reads, dropped before conversion.
    idle = []
    for k, raw in enumerate(events):
        pod = orjson.loads(raw)["object"]
        pod["metadata"]["resourceVersion"] = str(950_000_000 + k)
        pod["metadata"]["managedFields"] = [{"manager": "bench", "operation": "Update"}]
        idle.append(orjson.dumps({"type": "MODIFIED", "object": pod}))
    unchanged_before = state.version
    started = time.perf_counter()
    for raw in idle:
        event = orjson.loads(raw)
        state.upsert("Pod", event["object"])
    unchanged_elapsed = time.perf_counter() - started
    return {
        "events": len(events),
        "seconds": elapsed,
        "applied": state.version - before,
        "unchanged_per_s": round(len(idle) / unchanged_elapsed) if unchanged_elapsed else None,
        "unchanged_applied": state.version - unchanged_before,
    }


def _bind_trials(state: Any, cluster: SyntheticCluster, trials: int) -> list[float]:
    from app.backend.engine import BackendOptions, EngineBackend
    from scheduler_core.conf import default_configuration

    backend = EngineBackend(state, default_configuration(), BackendOptions())
    pod_b = cluster.probe_pod("b", bound=False)
    names = [*cluster.node_names[:PROBE_NAMES], PROBE_NODE]
    key_b = f"{pod_b['metadata']['namespace']}/{pod_b['metadata']['name']}"
    flips: list[float] = []

    def refused() -> bool:
        decision = backend.filter(pod_b, names)
        backend.accounting.release(key_b)
        return not decision.passed and any(
            s.reason_code == "queue-overused" for s in decision.failed.values()
        )

    for _ in range(trials):
        deadline = time.monotonic() + FLIP_TIMEOUT
        while refused():
            if time.monotonic() > deadline:
                raise RuntimeError("probe pod b never passed: is the probe queue set up?")
            time.sleep(POLL_INTERVAL)
        _emit("ARMED")
        deadline = time.monotonic() + FLIP_TIMEOUT
        while not refused():
            if time.monotonic() > deadline:
                raise RuntimeError("binding probe pod a never showed in a filter answer")
            time.sleep(POLL_INTERVAL)
        flipped = time.monotonic()
        flips.append(flipped)
        _emit("FLIPPED", flipped)
    return flips


# --- parent ---------------------------------------------------------------------------------


class _Lines:
    """Tagged lines from the child's stdout, with a deadline on each."""

    def __init__(self, stream: IO[bytes]) -> None:
        self._stream = stream
        self._buffer = b""

    def expect(self, tag: str, timeout: float) -> Any:
        deadline = time.monotonic() + timeout
        while True:
            while b"\n" in self._buffer:
                line, self._buffer = self._buffer.split(b"\n", 1)
                text = line.decode(errors="replace")
                head, _, rest = text.partition(" ")
                if head == tag:
                    return orjson.loads(rest) if rest else None
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError(f"no {tag} from the sync child within {timeout:.0f}s")
            ready, _, _ = select.select([self._stream], [], [], remaining)
            if ready:
                chunk = os.read(self._stream.fileno(), 65536)
                if not chunk:
                    raise RuntimeError(f"the sync child exited before {tag}")
                self._buffer += chunk


def run(scale: float, trials: int) -> list[Measurement]:
    from tests.fakeapi import FakeApiServer, write_kubeconfig

    cluster = SyntheticCluster(ClusterSpec.at_scale(scale, probe=True))
    summary = cluster.summary()
    counts = {k: summary[k] for k in ("pods", "nodes", "queues", "podgroups")}
    previous = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else None
    if previous is not None and len(previous) >= 2:
        os.sched_setaffinity(0, {sorted(previous)[1]})  # core 1; the child gets core 0
    try:
        with FakeApiServer(max_events=summary["pods"] * 2 + 100_000) as api:
            loaded = time.perf_counter()
            for kind, objs in cluster.objects_by_kind():
                api.load(kind, objs)
            load_seconds = time.perf_counter() - loaded
            with tempfile.TemporaryDirectory(prefix="bench-sync-") as tmp:
                kubeconfig = write_kubeconfig(Path(tmp) / "kubeconfig", api.url)
                return _drive(api, cluster, str(kubeconfig), scale, trials, counts, load_seconds)
    except Exception as exc:
        error = f"{type(exc).__name__}: {exc}"
        return [Measurement("sync-wall", BENCHES["sync"], unit="s", error=error)]
    finally:
        if previous is not None:
            os.sched_setaffinity(0, previous)


def _drive(
    api: Any,
    cluster: SyntheticCluster,
    kubeconfig: str,
    scale: float,
    trials: int,
    counts: dict[str, int],
    load_seconds: float,
) -> list[Measurement]:
    argv = [sys.executable, "-m", "bench.sync_bench", "child", "--kubeconfig", kubeconfig]
    argv += ["--scale", str(scale), "--trials", str(trials)]
    stderr_path = Path(kubeconfig).with_name("child.stderr")
    with stderr_path.open("wb") as stderr:
        proc = subprocess.Popen(
            pinned(0, argv),
            cwd=REPO_ROOT,
            env=subprocess_env(),
            stdout=subprocess.PIPE,
            stderr=stderr,  # a file, not a pipe: a chatty child must never block on it
        )
    assert proc.stdout is not None
    lines = _Lines(proc.stdout)
    out: list[Measurement] = []
    stage = "sync-wall"
    try:
        synced = lines.expect("SYNCED", SYNC_TIMEOUT + 30)
        out += _sync_rows(synced, counts, load_seconds)
        if not synced["synced"]:
            return out
        stage = "sync-apply-rate"
        applied = lines.expect("APPLY", 300)
        out.append(
            Measurement(
                "sync-apply-rate",
                "pod MODIFIED events decoded and applied through ClusterState.upsert",
                unit="events/s",
                value=applied["events"] / applied["seconds"],
                target_stat="value",
                extra=applied,
            )
        )
        stage = "sync-bind-to-filter"
        out.append(_bind_rows(api, cluster, lines, trials))
        lines.expect("DONE", 60)
        return out
    except Exception as exc:
        tail = stderr_path.read_text(errors="replace")[-2000:] if stderr_path.exists() else ""
        detail = f"{type(exc).__name__}: {exc} {tail}".strip()
        return [*out, Measurement(stage, BENCHES["sync"], unit="s", error=detail)]
    finally:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(5)


def _sync_rows(
    synced: dict[str, Any], counts: dict[str, int], load_seconds: float
) -> list[Measurement]:
    got = synced["counts"]
    complete = all(got.get(kind, 0) == want for kind, want in counts.items())
    error = None
    if not synced["synced"]:
        error = f"did not sync within {SYNC_TIMEOUT:.0f}s"
    elif not complete:
        error = f"synced {got}, expected {counts}"
    extra = {
        "objects": got,
        "rejected": synced["rejected"],
        "api_server_load_seconds": round(load_seconds, 1),
    }
    rss = synced["peak_rss_kib"] / 1024
    after = round((synced["rss_kib"] or 0) / 1024, 1)
    return [
        Measurement(
            "sync-wall",
            "InformerSet start to every informer synced (pods, nodes, queues, podgroups, ...)",
            unit="s",
            value=synced["seconds"],
            target=15.0,
            target_stat="value",
            extra=extra,
            error=error,
            rss_mib=after,
        ),
        Measurement(
            "sync-peak-rss",
            "peak RSS (VmHWM) of the process that did the sync",
            unit="MiB",
            value=rss,
            target=1024.0,
            target_stat="value",
            extra={"rss_after_sync_mib": after},
            error=error,
            rss_mib=after,
        ),
    ]


def _bind_rows(api: Any, cluster: SyntheticCluster, lines: _Lines, trials: int) -> Measurement:
    pod_a = cluster.probe_pod("a", bound=False)
    bound_a = cluster.probe_pod("a", bound=True)
    key_a = f"{pod_a['metadata']['namespace']}/{pod_a['metadata']['name']}"
    samples: list[float] = []
    for trial in range(trials):
        lines.expect("ARMED", 120)
        time.sleep(0.02)  # let the re-created pod a reach the child before it is bound
        emitted = time.monotonic()
        api.update("Pod", bound_a)
        flipped = lines.expect("FLIPPED", 120)
        samples.append((flipped - emitted) * 1e3)
        if trial + 1 < trials:
            api.delete("Pod", key_a)
            api.add("Pod", pod_a)
    return Measurement(
        "sync-bind-to-filter",
        "API server emits 'pod a bound' -> first filter answer of the syncing process that "
        "reflects it (accounting rebuild included)",
        samples=samples,
        extra={"filter_node_names": PROBE_NAMES + 1, "poll_interval_ms": POLL_INTERVAL * 1e3},
    )


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.sync_bench")
    sub = parser.add_subparsers(dest="role", required=True)
    c = sub.add_parser("child", help="sync from a kubeconfig and report (bench internal)")
    c.add_argument("--kubeconfig", required=True)
    c.add_argument("--scale", type=float, default=1.0)
    c.add_argument("--trials", type=int, default=20)
    args = parser.parse_args(argv)
    return child(args.kubeconfig, args.scale, args.trials)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
