"""In-process benches of the read-only API's answers on the engine fixture: the queue list,
one queue with its derivation, a queue's pending order, an explanation and a what-if."""

from __future__ import annotations

import time
from typing import Any

from bench import Budget, Measurement, rss_mib, sample
from bench.engine_bench import EngineFixture
from scheduler_core.insight.whatif import WhatIfRequest

BENCHES: dict[str, str] = {
    "api-queues": "GET /api/v1/queues: every queue with its figures",
    "api-queue": "GET /api/v1/queues/{name}: one queue with its deserved derivation",
    "api-pending": "GET /api/v1/queues/{name}/pending: 100 jobs in order, each with its verdict",
    "api-explain": "GET /api/v1/pods/{ns}/{name}/explain: every step, nodes and victims",
    "api-whatif": "POST /api/v1/whatif: a 4-pod gang added, its dry run on a state copy",
}

ANSWER_TARGET_MS = 50.0
WHATIF_TARGET_MS = 1000.0


def _busiest_queue(fixture: EngineFixture) -> str:
    views = fixture.backend.queues()
    return max(views, key=lambda v: (v.pending_jobs, v.name)).name


def _new_gang(queue: str, members: int = 4) -> list[dict[str, Any]]:
    objects: list[dict[str, Any]] = [
        {
            "kind": "PodGroup",
            "metadata": {"name": "whatif-bench", "namespace": "bench"},
            "spec": {"minMember": members, "queue": queue},
        }
    ]
    for i in range(members):
        objects.append(
            {
                "kind": "Pod",
                "metadata": {
                    "name": f"whatif-bench-{i}",
                    "namespace": "bench",
                    "annotations": {"scheduling.k8s.io/group-name": "whatif-bench"},
                },
                "spec": {
                    "schedulerName": "queue-scheduler",
                    "containers": [
                        {"name": "c", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}
                    ],
                },
            }
        )
    return objects


def run(
    fixture: EngineFixture, selected: set[str], budgets: dict[str, Budget]
) -> list[Measurement]:
    backend = fixture.backend
    queue = _busiest_queue(fixture)
    pending = fixture.cluster.pending_pods()
    namespace, name = fixture.cluster.pod_key(pending[0]).split("/", 1)
    calls = {
        "api-queues": lambda _: backend.queues(),
        "api-queue": lambda _: backend.queue(queue),
        "api-pending": lambda _: backend.pending(queue, 100),
        "api-explain": lambda _: backend.explain_pod(namespace, name),
        "api-whatif": lambda _: backend.whatif(WhatIfRequest(add=_new_gang(queue)))(),
    }
    out = []
    for bench, call in calls.items():
        if bench not in selected:
            continue
        cpu, wall = time.process_time(), time.perf_counter()
        try:
            samples = sample(call, budgets[bench])
            target = WHATIF_TARGET_MS if bench == "api-whatif" else ANSWER_TARGET_MS
            measurement = Measurement(
                bench,
                BENCHES[bench],
                samples=samples,
                target=target,
                target_stat="p50" if bench == "api-whatif" else "p99",
                extra={"queue": queue, "pod": f"{namespace}/{name}"},
            )
        except Exception as exc:  # a broken answer is a result too
            measurement = Measurement(bench, BENCHES[bench], error=f"{type(exc).__name__}: {exc}")
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
        measurement.extra["cpu_share"] = round(cpu / wall, 2) if wall > 0 else None
        measurement.rss_mib = rss_mib()
        out.append(measurement)
    return out
