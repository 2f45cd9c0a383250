"""In-process row: kube-scheduler's filter calls while the reclaim loop decides a backlog.

The loop decides on a snapshot, in the serving process: on its thread, a cycle over ten
thousand waiting pods held the interpreter's lock the verbs' event loop needs, for a second
or more each time. This row measures what that costs the calls kube-scheduler waits on:
``bench-e2e``'s 1,000-node pods filtered one after another through the verbs' protocol and
the real engine (``verbs_engine_bench``), 2 ms apart (kube-scheduler's own time a pod there),
once with no cycle running, once with the loop's cycles running back to back on the
``reclaim-backlog-5000`` cluster (5,000 full nodes, 10,000 waiting pods) on a thread, and once
with them decided in a forked child as the loop does by default
(``scheduler_core.controller.forked_decision``). One sample is the mean wall time of a
batch of filter calls, in milliseconds; the row is the forked run, judged against the quiet
run's own p50 (at most a quarter more), so that a cycle brought back onto the verbs'
interpreter shows as a MISS. The thread's figures are beside it, for the size of what the
child saves.
"""

from __future__ import annotations

import asyncio
import gc
import sys
import threading
import time
from collections.abc import Callable
from functools import partial

import uvloop

from app.cli.serve import SWITCH_INTERVAL_SECONDS
from bench import (
    Budget,
    Measurement,
    backlog_bench,
    measured_or_failed,
    percentile,
    rss_mib,
    verbs_engine_bench,
)
from bench.verbs_bench import Connection
from scheduler_core.api.snapshot import ClusterSnapshot
from scheduler_core.cache.list_pager import GC_PAUSE
from scheduler_core.cache.state import ClusterState
from scheduler_core.conf import SchedulerConfiguration, default_configuration
from scheduler_core.controller.decision import CycleDecision, decide, live_configuration
from scheduler_core.controller.forked_decision import decide_forked
from scheduler_core.controller.snapshot import loop_snapshot
from scheduler_core.framework.memo import SessionMemos

NAME = "filter-beside-reclaim"
BENCHES: dict[str, str] = {
    NAME: "mean filter call (bench-e2e's 1,000 nodes, 2 ms apart) while reclaim cycles over "
    "10,000 waiting pods at 5,000 nodes are decided in a forked child, against none"
}

#: The verbs' fixture and the loop's backlog.
VERBS_ROW = "verbs-engine-1000"
BACKLOG_ROW = "reclaim-backlog-5000"
#: Filter calls in one sample, and kube-scheduler's own time between two of them.
CALLS_PER_SAMPLE = 100
GAP_SECONDS = 0.002
#: How much longer a call may take beside a forked cycle than with none.
ALLOWED_SLOWDOWN = 1.25

Decide = Callable[..., CycleDecision]


class Cycles:
    """Reclaim cycles back to back on a thread, each as ``ReclaimLoop.run_once`` takes it."""

    def __init__(self, state: ClusterState, conf: SchedulerConfiguration, how: Decide) -> None:
        self._state, self._conf, self._how = state, conf, how
        self._memos = SessionMemos()
        self._stop = threading.Event()
        self._started = threading.Event()
        self.seconds: list[float] = []
        self._thread = threading.Thread(target=self._run, name="bench-reclaim", daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            self._started.set()
            started = time.perf_counter()
            with GC_PAUSE.paused():
                snapshot: ClusterSnapshot = loop_snapshot(self._state)
                self._how(snapshot, self._conf, memos=self._memos)
                del snapshot
            self.seconds.append(time.perf_counter() - started)

    def __enter__(self) -> Cycles:
        """Returns once the first cycle has begun: every call measured has one beside it."""
        self._thread.start()
        self._started.wait()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def bench_beside(
    budget: Budget,
    verbs_row: str = VERBS_ROW,
    backlog: tuple[int, int] | None = None,
) -> Measurement:
    """The row; ``verbs_row`` (a ``verbs_engine_bench`` row: its pods and nodes) and
    ``backlog`` (nodes, waiting pods) smaller in the tests."""
    fixture = verbs_engine_bench.build(verbs_engine_bench.SCALES[verbs_row])
    if backlog is None:
        scale = backlog_bench.SCALES[BACKLOG_ROW]
        backlog = (scale.nodes, scale.waiting)
    state = backlog_bench.build(*backlog)
    conf = live_configuration(default_configuration())
    # As the service does once its cache is loaded: the clusters move to the collector's
    # permanent generation.
    gc.collect()
    gc.freeze()
    per_run = (budget.warmup + budget.n) * CALLS_PER_SAMPLE
    if 3 * per_run > len(fixture.requests):
        raise ValueError(f"the fixture has {len(fixture.requests)} pods, {3 * per_run} needed")
    runs: dict[str, tuple[list[float], list[float]]] = {}

    async def calls(first: int) -> list[float]:
        conn = Connection(asyncio.get_running_loop(), fixture.backend)
        one = verbs_engine_bench.driver(fixture, conn, *verbs_engine_bench.BIND_MODEL[verbs_row])
        samples: list[float] = []
        deadline = time.monotonic() + budget.seconds
        for index in range(budget.warmup + budget.n):
            took = 0.0
            start = first + index * CALLS_PER_SAMPLE
            for pod in range(start, start + CALLS_PER_SAMPLE):
                started = time.perf_counter()
                await one(pod)
                took += time.perf_counter() - started
                await asyncio.sleep(GAP_SECONDS)
            if index >= budget.warmup:
                samples.append(took / CALLS_PER_SAMPLE * 1e3)
            if samples and time.monotonic() > deadline:
                break
        return samples

    # As ``serve`` runs: a thread waiting for the interpreter gets it within this interval.
    switch = sys.getswitchinterval()
    sys.setswitchinterval(SWITCH_INTERVAL_SECONDS)
    try:
        for position, (how, decider) in enumerate(
            (("quiet", None), ("forked", decide_forked), ("thread", decide))
        ):
            first = position * per_run
            if decider is None:
                runs[how] = (uvloop.run(calls(first)), [])
                continue
            with Cycles(state, conf, decider) as cycles:
                samples = uvloop.run(calls(first))
            runs[how] = (samples, cycles.seconds)
    finally:
        sys.setswitchinterval(switch)
        gc.unfreeze()
    quiet = sorted(runs["quiet"][0])
    quiet_p50 = round(percentile(quiet, 50), 3)
    extra: dict[str, object] = {"quiet_p50_ms": quiet_p50}
    for how in ("forked", "thread"):
        samples, cycles = runs[how]
        extra[f"{how}_p50_ms"] = round(percentile(sorted(samples), 50), 3)
        extra[f"{how}_cycles"] = len(cycles)
        extra[f"{how}_cycle_s"] = round(sum(cycles) / len(cycles), 2) if cycles else None
    return Measurement(
        NAME,
        BENCHES[NAME],
        samples=runs["forked"][0],
        target=round(quiet_p50 * ALLOWED_SLOWDOWN, 3),
        target_stat="p50",
        extra=extra,
        rss_mib=rss_mib(),
    )


def run(selected: set[str], budgets: dict[str, Budget]) -> list[Measurement]:
    if NAME not in selected:
        return []
    return [measured_or_failed(NAME, BENCHES[NAME], partial(bench_beside, budgets[NAME]))]
