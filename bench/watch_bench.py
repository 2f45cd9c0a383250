"""In-process rows for the pod informer's CPU per pod as ``bench-e2e``'s ``ours`` spends it.

Behind the real kube-scheduler, each pod reaches the extender's pod informer twice: its
creation (``ADDED``) and its bind (``MODIFIED``: ``spec.nodeName`` and the ``PodScheduled``
condition). Measured per thread in ``bench-e2e`` (``/proc/<pid>/task/*/stat``), the pod
reflector's thread is about two fifths of the extender's CPU per pod; these rows replay its
work in one thread, with no socket, on ``bench-e2e``'s 200-node cluster:

- ``watch-decode-200``: the reflector's own part. Both events of each pod, as the API server
  writes them (the pod as served, with the managed-fields record of the client that made
  it; one event a line, one line a chunk), through ``SinkFeed.follow``: the split into
  lines, the decoding, the key and version bookkeeping, into a sink that keeps nothing.
- ``watch-apply-200``: the same stream into the cache (``ClusterState``) as the informer
  applies it: the creation converted, the bind recognised as a placement and applied, the
  queue's usage history told of each change as ``serve`` wires it.

One sample is the CPU time (``process_time``) of a batch of pods divided by its size, in
microseconds. What they leave out, and ``bench-e2e`` includes: reading the TLS stream
(urllib3's chunked reads, about 9 µs an event on loopback alone), switching between the
threads, and a machine whose caches the API server, etcd and kube-scheduler share.
"""

from __future__ import annotations

import copy
import sys
import time
from collections.abc import Iterator
from typing import Any

import orjson

from bench import Budget, Measurement, cycle_bench, rss_mib
from bench.cycle_bench import SCALES as CYCLE_SCALES
from bench.cycle_bench import CycleScale
from bench.verbs_engine_bench import bound_event, served_pod
from scheduler_core.api.usage_history import UsageHistory
from scheduler_core.cache.sink_feed import EventSink, SinkFeed
from scheduler_core.cache.watch_protocol import ReflectorStats

SCALE: CycleScale = CYCLE_SCALES["cycle-200"]

BENCHES: dict[str, str] = {
    "watch-decode-200": "the pod reflector's own part of each pod's two watch events "
    "(creation, bind): lines split, decoded, versions kept; into a sink that keeps nothing",
    "watch-apply-200": "each pod's two watch events read and applied to the cache "
    f"({SCALE.nodes} nodes, {SCALE.pods:,} pods): the pod informer's thread per pod",
}

#: Microseconds of CPU per pod, about 1.5 times what the rows measured on the shared
#: 2-core machine, so that a slower decode or apply shows as a MISS.
TARGETS_US: dict[str, float] = {"watch-decode-200": 20.0, "watch-apply-200": 150.0}

#: The usage history's half-life ``serve`` measures with until a configuration sets one.
USAGE_HALF_LIFE = 7 * 86400.0

#: Pods per sample: each pod is created and bound once, so a sample is a batch of them.
PODS_PER_SAMPLE = 50

#: What the API server records of the client that created a ``bench-e2e`` pod.
CREATOR_FIELDS: dict[str, Any] = {
    "manager": "OpenAPI-Generator",
    "operation": "Update",
    "apiVersion": "v1",
    "time": "2026-11-28T00:00:00Z",
    "fieldsType": "FieldsV1",
    "fieldsV1": {
        "f:spec": {
            "f:containers": {
                'k:{"name":"main"}': {
                    ".": {},
                    "f:image": {},
                    "f:name": {},
                    "f:resources": {".": {}, "f:requests": {".": {}, "f:cpu": {}, "f:memory": {}}},
                }
            },
            "f:schedulerName": {},
            "f:terminationGracePeriodSeconds": {},
        }
    },
}


def watched_pod(index: int) -> dict[str, Any]:
    """A ``bench-e2e`` pod as the API server serves it to a watch."""
    pod = served_pod(index)
    pod["metadata"]["managedFields"] = [copy.deepcopy(CREATOR_FIELDS)]
    return pod


def pod_events(index: int, nodes: int) -> tuple[bytes, bytes]:
    """One pod's two watch events, each a line as the API server writes it."""
    pod = watched_pod(index)
    created = orjson.dumps({"type": "ADDED", "object": pod}) + b"\n"
    bound = bound_event(pod, f"n{index % nodes:04d}", 10_000_000 + index) + b"\n"
    return created, bound


class StreamedResponse:
    """What ``SinkFeed.follow`` reads: urllib3's ``stream``, one chunk an event."""

    def __init__(self, chunks: list[bytes]) -> None:
        self._chunks = chunks

    def stream(self, amt: int, decode_content: bool = True) -> Iterator[bytes]:
        return iter(self._chunks)


class DiscardingSink:
    """A sink that keeps nothing: the reflector's part alone."""

    def upsert(self, kind: str, obj: dict[str, Any]) -> None:
        pass

    def delete(self, kind: str, key: str) -> None:
        pass

    def synced(self, kind: str) -> None:
        pass


def batches(scale: CycleScale) -> list[list[bytes]]:
    """The stream in batches of ``PODS_PER_SAMPLE`` pods: their creations, then their binds
    (kube-scheduler binds a backlog created before it ran)."""
    out = []
    for start in range(0, scale.pods - PODS_PER_SAMPLE + 1, PODS_PER_SAMPLE):
        events = [pod_events(i, scale.nodes) for i in range(start, start + PODS_PER_SAMPLE)]
        out.append([created for created, _ in events] + [bound for _, bound in events])
    return out


def measure(name: str, scale: CycleScale, budget: Budget) -> tuple[list[float], SinkFeed]:
    """Microseconds of CPU per pod, one sample a batch; and the feed, for its counts."""
    sink: EventSink = DiscardingSink()
    if name == "watch-apply-200":
        state = cycle_bench.build(scale.nodes, 0).state
        # As ``serve`` wires it (``measure_usage``): every change of what a queue holds is
        # told to its usage history, whether or not the configuration reads it.
        state.usage_history = UsageHistory(USAGE_HALF_LIFE)
        sink = state
    feed = SinkFeed("Pod", "pods", sink, ReflectorStats())
    samples: list[float] = []
    deadline = time.monotonic() + budget.seconds
    for index, chunks in enumerate(batches(scale)):
        if len(samples) >= budget.n or (samples and time.monotonic() > deadline):
            break
        response = StreamedResponse(chunks)
        started = time.process_time()
        ended, _ = feed.follow(response)
        elapsed = time.process_time() - started
        if ended is not None:
            raise RuntimeError(f"the watch ended: {ended}")
        if index >= budget.warmup:
            samples.append(elapsed / PODS_PER_SAMPLE * 1e6)
    return samples, feed


def run(selected: set[str], budgets: dict[str, Budget]) -> list[Measurement]:
    results = []
    for name, what in BENCHES.items():
        if name not in selected:
            continue
        target = TARGETS_US[name]
        row = Measurement(name, what, unit="us", target=target, target_stat="p50")
        try:
            row.samples, feed = measure(name, SCALE, budgets[name])
            row.extra["events"] = {k: v for k, v in feed.stats.events.items() if v}
        except Exception as exc:  # a broken cache is a result too, not the end of the run
            row.error = f"{type(exc).__name__}: {exc}"
        row.rss_mib = rss_mib()
        results.append(row)
    return results


def main() -> int:
    for name in BENCHES:
        samples, _ = measure(name, SCALE, Budget(n=18, seconds=30, warmup=2))
        samples.sort()
        print(f"{name}: p50 {samples[len(samples) // 2]:.1f} us CPU a pod")
    return 0


if __name__ == "__main__":
    sys.exit(main())
