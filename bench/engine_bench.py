"""In-process benches: the filter verb, the queue accounting and a full reclaim session.

Everything runs in this process on one ``ClusterState`` fed with the synthetic cluster the
way the informers feed it (``upsert`` per object), so the numbers are the engine's alone:
no HTTP, no JSON decoding of the request.
"""

from __future__ import annotations

import copy
import gc
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Any

from app.backend.engine import BackendOptions, EngineBackend
from bench import Budget, Measurement, rss_mib, sample
from bench.synthetic import SyntheticCluster
from scheduler_core.api.resource import Resource
from scheduler_core.api.usage_history import MAX_REFRESH, UsageHistory
from scheduler_core.cache.state import ClusterState
from scheduler_core.conf import (
    PluginOption,
    SchedulerConfiguration,
    Tier,
    default_configuration,
    load_configuration,
)
from scheduler_core.controller.decision import decide, live_configuration
from scheduler_core.controller.snapshot import loop_snapshot
from scheduler_core.engine import close_session, open_session, run_session
from scheduler_core.extender.decisions import FilterResult
from scheduler_core.framework.memo import SessionMemos
from scheduler_core.plugins.proportion import ProportionPlugin, water_fill

BENCHES: dict[str, str] = {
    "filter-inprocess": "EngineBackend.filter, a waiting pod x all node names, cluster at rest",
    "filter-inprocess-churn": "the same with one pod event applied before each call",
    "filter-inprocess-unseen": "EngineBackend.filter of a new pod the cache has not seen yet",
    "filter-inprocess-bind-churn": "the same with one waiting pod bound before each call",
    "deserved": "a session with only proportion: job usage + the deserved loop",
    "deserved-waterfill": "the deserved loop alone over the leaf queues with jobs",
    "accounting-rebuild": "the extender's accounting session (every plugin) on the live state",
    "reclaim-session": "run_session(snapshot, conf, ['reclaim']) over the whole cluster",
    "reclaim-cycle": "the reclaim loop's cycle: its snapshot + decide() with the live rules",
    "deserved-usage": "deserved with usagehistory before proportion, sessions a second apart",
    "reclaim-cycle-usage": "reclaim-cycle with usagehistory on, cycles a second apart",
}

#: The fit variant's rows (``ClusterSpec.fit``): the same measurement on a cluster where 10 %
#: of the pods carry pod anti-affinity and 10 % a hard zone spread, with the plain row's
#: budget; the reclaim cycle's row reports its growth over the plain one's when both ran.
FIT_BENCHES: dict[str, tuple[str, str]] = {
    "filter-inprocess-fit": ("filter-inprocess", "filter-inprocess on the fit variant"),
    "reclaim-cycle-fit": ("reclaim-cycle", "reclaim-cycle on the fit variant"),
}

PROPORTION_ONLY = """\
actions: "reclaim"
tiers:
- plugins:
  - name: proportion
"""

#: ``usagehistory`` before proportion, with a half-life of a week.
USAGE_PLUGIN = "  - name: usagehistory\n    arguments:\n      usage.halfLife: 168h\n"
WEEK = 7 * 86400.0

FILTER_PODS = 4


@dataclass
class EngineFixture:
    cluster: SyntheticCluster
    state: ClusterState
    backend: EngineBackend
    conf: SchedulerConfiguration
    build_seconds: float


@contextmanager
def gc_paused() -> Iterator[None]:
    """No collections while the cluster is loaded (the informers do the same)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def build_fixture(cluster: SyntheticCluster) -> EngineFixture:
    started = time.perf_counter()
    state = ClusterState()
    with gc_paused():
        cluster.feed(state)
    conf = default_configuration()
    backend = EngineBackend(state, conf, BackendOptions())
    backend.readiness()  # as in production: the synced cluster is frozen out of the GC
    return EngineFixture(cluster, state, backend, conf, time.perf_counter() - started)


def pick_filter_pods(
    cluster: SyntheticCluster, explain: Callable[[dict[str, Any]], dict[str, Any]], k: int
) -> list[int]:
    """The first ``k`` waiting pods that filter would pass, one per queue (so that one's
    assumption never decides another's verdict); waiting pods of any verdict if none pass."""
    picked: list[int] = []
    queues: set[str] = set()
    candidates = cluster.pending_pods()
    for index in candidates:
        answer = explain(cluster.pod(index))
        queue = str(answer.get("queue"))
        if answer.get("verdict") == "pass" and queue not in queues:
            picked.append(index)
            queues.add(queue)
            if len(picked) == k:
                break
    return picked or candidates[:k]


def run(
    fixture: EngineFixture, selected: set[str], budgets: dict[str, Budget]
) -> list[Measurement]:
    out: list[Measurement] = []
    for name, bench in (
        ("filter-inprocess", bench_filter),
        ("filter-inprocess-churn", bench_filter_churn),
        ("filter-inprocess-unseen", bench_filter_unseen),
        ("filter-inprocess-bind-churn", bench_filter_bind_churn),
        ("deserved", bench_deserved),
        ("deserved-waterfill", bench_waterfill),
        ("accounting-rebuild", bench_accounting),
        ("reclaim-session", bench_reclaim),
        ("reclaim-cycle", bench_reclaim_cycle),
        ("deserved-usage", bench_deserved_usage),
        ("reclaim-cycle-usage", bench_reclaim_cycle_usage),
    ):
        if name not in selected:
            continue
        out.append(_timed(name, BENCHES[name], lambda b=bench, n=name: b(fixture, budgets[n])))
    return out


def run_fit(
    fixture: EngineFixture, selected: set[str], budgets: dict[str, Budget]
) -> list[Measurement]:
    """The fit variant's in-process rows, on a fixture built from a ``fit`` cluster."""
    benches = {"filter-inprocess": bench_filter, "reclaim-cycle": bench_reclaim_cycle}
    out: list[Measurement] = []
    for name, (plain, what) in FIT_BENCHES.items():
        if name not in selected:
            continue
        bench = benches[plain]
        measurement = _timed(name, what, lambda b=bench, p=plain: b(fixture, budgets[p]))
        measurement.name, measurement.what = name, what
        out.append(measurement)
    return out


def fit_growth(results: list[Measurement]) -> None:
    """Sets ``growth_vs_plain`` (p50 over p50) on each fit row whose plain row ran too."""
    by_name = {m.name: m for m in results}
    for name, (plain, _) in FIT_BENCHES.items():
        fit, base = by_name.get(name), by_name.get(plain)
        if fit is None or base is None or fit.error or base.error:
            continue
        fit_p50, base_p50 = fit.stats().get("p50"), base.stats().get("p50")
        if fit_p50 and base_p50:
            fit.extra["growth_vs_plain"] = round(fit_p50 / base_p50, 2)


def _timed(name: str, what: str, bench: Callable[[], Measurement]) -> Measurement:
    cpu, wall = time.process_time(), time.perf_counter()
    try:
        measurement = bench()
    except Exception as exc:  # a broken engine is a result too, not the end of the run
        measurement = Measurement(name, what, error=f"{type(exc).__name__}: {exc}")
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    # Below ~0.95 this process was waiting for a core: other work was running.
    measurement.extra["cpu_share"] = round(cpu / wall, 2) if wall > 0 else None
    measurement.rss_mib = rss_mib()
    return measurement


# --- filter ---------------------------------------------------------------------------------


def _filter_targets(fixture: EngineFixture) -> tuple[list[dict[str, Any]], list[str]]:
    picks = pick_filter_pods(fixture.cluster, fixture.backend.explain, FILTER_PODS)
    pods = [fixture.cluster.pod(i) for i in picks]
    keys = [fixture.cluster.pod_key(i) for i in picks]
    return pods, keys


def _filter_measurement(
    name: str,
    fixture: EngineFixture,
    budget: Budget,
    before: Callable[[int], None] | None = None,
) -> Measurement:
    backend = fixture.backend
    pods, keys = _filter_targets(fixture)
    names = list(fixture.cluster.node_names)
    outcomes: dict[str, int] = {}

    def call(i: int) -> None:
        decision = backend.filter(pods[i % len(pods)], names)
        if i >= budget.warmup:  # count the timed calls only
            _count_verdict(outcomes, decision)

    def after(i: int) -> None:
        # The pod passed and was assumed; a real bind would confirm it. Release it so the
        # queue's allocation does not drift from call to call.
        backend.accounting.release(keys[i % len(keys)])
        if before is not None:
            before(i + 1)

    if before is not None:
        before(0)
    samples = sample(call, budget, after=after)
    return Measurement(
        name,
        BENCHES[name],
        samples=samples,
        target=2.0,
        extra={
            "pods": keys,
            "node_names": len(names),
            "outcomes": outcomes,
            "accounting_refreshes": backend.accounting.refreshes,
            "accounting_follows": backend.accounting.follows,
        },
    )


def _count_verdict(outcomes: dict[str, int], decision: FilterResult) -> None:
    verdict = "error" if decision.error else "pass" if decision.passed else "reject"
    outcomes[verdict] = outcomes.get(verdict, 0) + 1


def bench_filter(fixture: EngineFixture, budget: Budget) -> Measurement:
    return _filter_measurement("filter-inprocess", fixture, budget)


def bench_filter_churn(fixture: EngineFixture, budget: Budget) -> Measurement:
    """Informers apply events between scheduler calls in a live cluster: here a running
    pod's label, which changes nothing a session derives, so the accounting session is kept
    as it is (``filter-inprocess-bind-churn`` is the event that changes queue sums)."""
    cluster, state = fixture.cluster, fixture.state
    running = [i for i, node in enumerate(cluster.placement) if node >= 0]

    def churn(i: int) -> None:
        pod = cluster.pod(running[(i * 7919) % len(running)])
        pod["metadata"]["labels"]["bench/churn"] = str(i)
        pod["metadata"]["resourceVersion"] = str(10_000 + i)
        state.upsert("Pod", pod)

    return _filter_measurement("filter-inprocess-churn", fixture, budget, before=churn)


def bench_filter_unseen(fixture: EngineFixture, budget: Budget) -> Measurement:
    """kube-scheduler asks about a pod as soon as it is created, usually before the watch has
    delivered it: a new member of one of the 4 pods' groups, judged in a one-off session.
    After each call the watch delivers it (untimed; it stays, waiting, as a new pod does), so
    the next call also pays the accounting rebuild that event causes, as the next verb
    would."""
    backend, state = fixture.backend, fixture.state
    pods, _ = _filter_targets(fixture)
    names = list(fixture.cluster.node_names)
    outcomes: dict[str, int] = {}
    made: list[dict[str, Any]] = []

    def call(i: int) -> None:
        pod = copy.deepcopy(pods[i % len(pods)])
        meta = pod["metadata"]
        meta["name"] = f"{meta['name']}-new-{i}"
        meta["uid"] = f"{meta['uid']}-new-{i}"
        made.append(pod)
        decision = backend.filter(pod, names)
        if i >= budget.warmup:
            _count_verdict(outcomes, decision)

    def after(_: int) -> None:
        pod = made.pop()
        meta = pod["metadata"]
        state.upsert("Pod", pod)  # the watch catches up
        # kube-scheduler would bind it now; here it stays waiting, so its queue's allocation
        # does not drift from call to call.
        backend.accounting.release(f"{meta['namespace']}/{meta['name']}")

    samples = sample(call, budget, after=after)
    return Measurement(
        "filter-inprocess-unseen",
        BENCHES["filter-inprocess-unseen"],
        samples=samples,
        target=2.0,
        extra={"outcomes": outcomes, "accounting_refreshes": backend.accounting.refreshes},
    )


def bench_filter_bind_churn(fixture: EngineFixture, budget: Budget) -> Measurement:
    """The commonest event that changes queue sums: a waiting pod bound. The label churn
    above changes nothing a decision derives, so it no longer costs the accounting
    anything; this row is what a change of sums costs before the next answer reflects it.
    The pods are put back to waiting afterwards, so later rows see the cluster as built."""
    cluster, state = fixture.cluster, fixture.state
    targets = set(cluster.pending_pods())
    waiting = [i for i, node in enumerate(cluster.placement) if node < 0 and i not in targets]
    names = cluster.node_names
    bound: list[int] = []

    def bind(i: int) -> None:
        index = waiting[(i * 7919) % len(waiting)]
        pod = cluster.pod(index)
        pod["spec"]["nodeName"] = names[(i * 104729) % len(names)]
        pod["status"] = {"phase": "Running"}
        state.upsert("Pod", pod)
        bound.append(index)

    try:
        return _filter_measurement("filter-inprocess-bind-churn", fixture, budget, before=bind)
    finally:
        for index in bound:
            state.upsert("Pod", cluster.pod(index))


# --- queue accounting -----------------------------------------------------------------------


def bench_deserved(fixture: EngineFixture, budget: Budget) -> Measurement:
    conf = load_configuration(PROPORTION_ONLY, "proportion-only bench configuration")
    state = fixture.state
    queues: dict[str, int] = {}
    memos = SessionMemos()  # one owner's sessions, one after another, as the accounting's

    def call(_: int) -> None:
        with state.locked():
            ssn = open_session(state.shared_snapshot(), conf, clone=False, memos=memos)
        plugin = ssn.plugins["proportion"]
        assert isinstance(plugin, ProportionPlugin)
        queues["with_jobs"] = len(plugin.queue_opts)
        close_session(ssn, update_phases=False)  # the cache's own jobs: see bench_accounting

    samples = sample(call, budget)
    return Measurement(
        "deserved",
        BENCHES["deserved"],
        samples=samples,
        target=5.0,
        target_stat="p50",
        extra={"queues": len(state.queues()), "queues_with_jobs": queues.get("with_jobs")},
    )


def bench_waterfill(fixture: EngineFixture, budget: Budget) -> Measurement:
    conf = load_configuration(PROPORTION_ONLY, "proportion-only bench configuration")
    state = fixture.state
    with state.locked():
        ssn = open_session(state.shared_snapshot(), conf, clone=False)
    plugin = ssn.plugins["proportion"]
    assert isinstance(plugin, ProportionPlugin)
    close_session(ssn, update_phases=False)  # the cache's own jobs: see bench_accounting
    total = plugin.total_resource

    def fresh() -> dict[str, Any]:
        opts = {name: attr.clone() for name, attr in plugin.queue_opts.items()}
        for attr in opts.values():
            attr.deserved = Resource.empty()
            attr.share = 0.0
        return opts

    prepared = [fresh() for _ in range(budget.warmup + budget.n)]
    samples = sample(lambda i: water_fill(prepared[i], total), budget)
    return Measurement(
        "deserved-waterfill",
        BENCHES["deserved-waterfill"],
        samples=samples,
        extra={"queues_with_jobs": len(plugin.queue_opts)},
    )


def bench_accounting(fixture: EngineFixture, budget: Budget) -> Measurement:
    state, conf = fixture.state, fixture.conf
    memos = SessionMemos()

    def call(_: int) -> None:
        # Exactly as the extender's accounting opens and closes it: over the live state,
        # read-only, with its memos, and closed without re-deriving job phases. Those are the
        # cache's own jobs: writing phases into them would change the cluster the later rows
        # measure, and walking all 2,000 jobs' tasks to do so cost more than the rebuild.
        with state.locked():
            ssn = open_session(
                state.shared_snapshot(), conf, clone=False, read_only=True, memos=memos
            )
        close_session(ssn, update_phases=False)

    samples = sample(call, budget)
    return Measurement(
        "accounting-rebuild",
        BENCHES["accounting-rebuild"],
        samples=samples,
        target=5.0,
        target_stat="p50",
        extra={"plugins": [p.name for tier in conf.tiers for p in tier.plugins]},
    )


# --- reclaim --------------------------------------------------------------------------------


def bench_reclaim(fixture: EngineFixture, budget: Budget) -> Measurement:
    state, conf = fixture.state, fixture.conf
    decisions: dict[str, int] = {}

    def call(_: int) -> None:
        with state.locked():
            snapshot = state.shared_snapshot()
            ssn = run_session(snapshot, conf, ["reclaim"])
        decisions["evictions"] = len(ssn.evictions)
        decisions["reclaimer_jobs"] = len({e.preemptor.job for e in ssn.evictions if e.preemptor})

    samples = sample(call, budget)
    with state.locked():
        snapshot = state.shared_snapshot()
        started = time.perf_counter()
        clone = snapshot.clone()
        cloned = time.perf_counter()
        ssn = open_session(clone, conf, clone=False)
        opened = time.perf_counter()
    close_session(ssn)
    return Measurement(
        "reclaim-session",
        BENCHES["reclaim-session"],
        samples=samples,
        target=500.0,
        target_stat="p50",
        extra={
            **decisions,
            "snapshot_clone_ms": round((cloned - started) * 1e3, 1),
            "session_open_ms": round((opened - cloned) * 1e3, 1),
        },
    )


def bench_reclaim_cycle(fixture: EngineFixture, budget: Budget) -> Measurement:
    """What ``serve --reclaim`` does every second: copy the cluster's jobs and nodes under
    the lock (sharing the tasks), then enqueue + preempt + reclaim with the live rules."""
    state = fixture.state
    conf = live_configuration(fixture.conf)
    parts: dict[str, float] = {}
    decisions: dict[str, int] = {}
    memos = SessionMemos()  # the loop's own, kept from one cycle to the next

    def call(_: int) -> None:
        started = time.perf_counter()
        snapshot = loop_snapshot(state)
        copied = time.perf_counter()
        decision = decide(snapshot, conf, memos=memos)
        parts["snapshot_ms"] = round((copied - started) * 1e3, 1)
        for action, ms in decision.latency_ms.items():
            parts[f"{action}_ms"] = round(ms, 1)
        decisions["evictions"] = len(decision.evictions)

    samples = sample(call, budget)
    return Measurement(
        "reclaim-cycle",
        BENCHES["reclaim-cycle"],
        samples=samples,
        target=500.0,
        target_stat="p50",
        extra={**decisions, **parts},
    )


# --- usage history ----------------------------------------------------------------------------


class _BenchClock:
    """A monotonic clock the bench moves: each call reads the history anew (the worst case,
    where every session's usage differs from the last one's and both loops run)."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


@contextmanager
def usage_measured(state: ClusterState) -> Iterator[_BenchClock]:
    """The state with a usage history in which every queue held what it holds now for a
    week, and the queues' shares of that usage uneven (queue i held (i % 7 + 1) times its
    allocation): removed again afterwards, so the other rows see the state they always did."""
    clock = _BenchClock()
    history = UsageHistory(WEEK, monotonic=clock)
    with state.locked():
        for i, (name, usage) in enumerate(sorted(state.queue_usage_view().items())):
            history.held(name, usage.allocated.clone().multi(float(i % 7 + 1)))
    clock.now = WEEK
    with state.locked():
        for name, usage in state.queue_usage_view().items():
            history.held(name, usage.allocated)
        state.usage_history = history
    try:
        yield clock
    finally:
        with state.locked():
            state.usage_history = None


def _fresh_reading_ms(call: Callable[[int], None], clock: _BenchClock, n: int = 5) -> float:
    """The median time of ``call`` when every call reads the usage anew (the first session
    after a refresh interval: both deserved loops may run)."""
    times = []
    for i in range(n):
        clock.now += MAX_REFRESH
        started = time.perf_counter()
        call(i)
        times.append((time.perf_counter() - started) * 1e3)
    return round(sorted(times)[n // 2], 2)


def bench_deserved_usage(fixture: EngineFixture, budget: Budget) -> Measurement:
    """Sessions one second apart, as the accounting's are at most: the usage reading stands
    for its refresh interval (30 s at a week's half-life), so most sessions reuse it;
    ``fresh_reading_ms`` is the median of sessions that each read it anew."""
    text = PROPORTION_ONLY.replace(
        "  - name: proportion\n", USAGE_PLUGIN + "  - name: proportion\n"
    )
    conf = load_configuration(text, "usage history bench configuration")
    state = fixture.state
    seen: dict[str, Any] = {}
    memos = SessionMemos()

    with usage_measured(state) as clock:

        def call(_: int) -> None:
            with state.locked():
                ssn = open_session(state.shared_snapshot(), conf, clone=False, memos=memos)
            plugin = ssn.plugins["proportion"]
            assert isinstance(plugin, ProportionPlugin)
            seen["adjusted_queues"] = len(plugin.adjustments)
            close_session(ssn, update_phases=False)

        def one_second_later(i: int) -> None:
            clock.now += 1.0
            call(i)

        samples = sample(one_second_later, budget)
        seen["fresh_reading_ms"] = _fresh_reading_ms(call, clock)
    return Measurement(
        "deserved-usage",
        BENCHES["deserved-usage"],
        samples=samples,
        target=5.0,
        target_stat="p50",
        extra=seen,
    )


def bench_reclaim_cycle_usage(fixture: EngineFixture, budget: Budget) -> Measurement:
    """``reclaim-cycle`` with the plugin listed before proportion in the served tiers, one
    cycle a second as the loop runs; ``fresh_reading_ms`` as in ``deserved-usage``."""
    state = fixture.state
    raw = fixture.conf
    tiers = [
        Tier(
            [
                *(
                    [PluginOption("usagehistory", {}, {"usage.halfLife": "168h"})]
                    if any(p.name == "proportion" for p in tier.plugins)
                    else []
                ),
                *tier.plugins,
            ]
        )
        for tier in raw.tiers
    ]
    conf = live_configuration(replace(raw, tiers=tiers))
    parts: dict[str, Any] = {}
    memos = SessionMemos()

    with usage_measured(state) as clock:

        def call(_: int) -> None:
            decision = decide(loop_snapshot(state), conf, memos=memos)
            for action, ms in decision.latency_ms.items():
                parts[f"{action}_ms"] = round(ms, 1)
            parts["evictions"] = len(decision.evictions)

        def one_second_later(i: int) -> None:
            clock.now += 1.0
            call(i)

        samples = sample(one_second_later, budget)
        parts["fresh_reading_ms"] = _fresh_reading_ms(call, clock, n=3)
    return Measurement(
        "reclaim-cycle-usage",
        BENCHES["reclaim-cycle-usage"],
        samples=samples,
        target=500.0,
        target_stat="p50",
        extra=parts,
    )
