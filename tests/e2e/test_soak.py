"""Churn on the real control plane: pods created and deleted continuously, queues reweighted.

``SOAK_SECONDS`` sets the churn's length: 120 s in ``make test``, 1800 s in ``make soak``.
The extender's resident memory is sampled throughout; after a warm-up (a fifth of the run,
at least 30 s) it may not grow by more than 10 %. At the end no pod stays assumed and the
extender's cache equals a fresh list. The figures are printed on one ``FIGURES`` line.
"""

from __future__ import annotations

import os
import random
import statistics
import time
from collections import deque

from tests.e2e.churn import rss_bytes, scrape, views_agree
from tests.e2e.conftest import Stack
from tests.e2e.controlplane import wait_for
from tests.e2e.kube import Kube

SOAK_SECONDS = float(os.environ.get("SOAK_SECONDS", "120"))
LIVE_PODS = 60  # pods alive at any time: older ones are deleted as new ones come
QUEUES = ("soak-a", "soak-b", "soak-capped")
MAX_RSS_GROWTH = 0.10


def test_churn_leaves_no_assumed_pods_and_no_memory_growth(kube: Kube, stack: Stack) -> None:
    ns = kube.namespace("soak")
    for i in range(2):
        kube.node(f"soak-n{i}", cpu="32", memory="128Gi", pods=200)
    kube.queue("soak-a", weight=1)
    kube.queue("soak-b", weight=2)
    kube.queue("soak-capped", capability={"cpu": "2"})
    extender = stack.extender
    pid = extender.process.pid
    rng = random.Random(10)
    live: deque[str] = deque()
    created = deleted = reweighted = 0
    samples: list[tuple[float, int]] = []
    started = time.monotonic()
    next_sample = next_reweight = started
    while (now := time.monotonic()) - started < SOAK_SECONDS:
        for _ in range(3):
            name = f"c{created}"
            kube.pod(ns, name, cpu="100m", memory="64Mi", queue=rng.choice(QUEUES))
            live.append(name)
            created += 1
        while len(live) > LIVE_PODS:
            kube.delete_pod(ns, live.popleft())
            deleted += 1
        if now >= next_reweight:
            kube.patch_queue(rng.choice(QUEUES[:2]), {"weight": rng.randint(1, 5)})
            reweighted += 1
            next_reweight = now + 5
        if now >= next_sample:
            samples.append((now - started, rss_bytes(pid)))
            next_sample = now + 2
        time.sleep(0.25)

    warm = max(30.0, SOAK_SECONDS / 5)
    after_warmup = [rss for t, rss in samples if t >= warm]
    baseline = statistics.median(after_warmup[:5])
    final = statistics.median(after_warmup[-5:])
    growth = final / baseline - 1

    # The churn stops: whatever is left binds (or stays parked over the cap), and nothing
    # stays assumed: every assumption is confirmed by a binding or expires.
    def settled() -> dict[str, float] | None:
        metrics = scrape(extender)
        return metrics if metrics["queue_extender_assumed_pods"] == 0 else None

    metrics = wait_for(settled, 60, "no assumed pods", 1.0)
    wait_for(lambda: views_agree(extender, kube, QUEUES), 30, "the caches to agree", 1.0)
    bound = kube.bound(ns)
    capped = [n for n, p in kube.pods(ns).items() if n in bound and _queue(p) == "soak-capped"]
    assert len(capped) <= 20, "the capped queue stays within its capability"
    print(
        f"\nFIGURES soak: seconds={SOAK_SECONDS:.0f} created={created} deleted={deleted} "
        f"reweights={reweighted} rss-after-warmup={baseline / 2**20:.1f}MiB "
        f"rss-final={final / 2**20:.1f}MiB growth={growth * 100:+.1f}% "
        f"rss-samples={len(samples)} assumed-at-end={metrics['queue_extender_assumed_pods']:.0f} "
        f"expired-assumptions={metrics['queue_extender_assumptions_expired_total']:.0f}"
    )
    assert growth <= MAX_RSS_GROWTH, [(round(t), rss // 2**20) for t, rss in samples]


def _queue(pod: object) -> str:
    annotations = getattr(getattr(pod, "metadata", None), "annotations", None) or {}
    return str(annotations.get("scheduling.volcano.sh/queue-name", ""))
