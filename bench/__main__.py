"""``python -m bench [--quick] [--only NAME[,NAME...]] [--json FILE]``: run, print, save.

The benches run in a fixed order (in-process engine, then HTTP, then the sync), each in a
bounded number of samples and seconds; the table puts every number beside its target (each
``Measurement`` carries its own). A MISS is a result, not a failure: the exit status is 1
only when a bench could not run at all (ERROR), 2 on bad arguments.
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import orjson

from bench import (
    Budget,
    Measurement,
    backlog_bench,
    beside_reclaim_bench,
    cycle_bench,
    engine_bench,
    format_number,
    http_bench,
    insight_bench,
    load_average,
    machine_facts,
    sync_bench,
    topology_bench,
    verbs_bench,
    verbs_engine_bench,
    watch_bench,
)
from bench.synthetic import ClusterSpec, SyntheticCluster

QUICK_SCALE = 0.1

#: Samples and seconds per bench at reference scale; --quick divides both.
BUDGETS: dict[str, Budget] = {
    "filter-inprocess": Budget(n=500, seconds=30, warmup=10),
    "filter-inprocess-churn": Budget(n=40, seconds=30, warmup=2),
    "filter-inprocess-unseen": Budget(n=40, seconds=30, warmup=2),
    "filter-inprocess-bind-churn": Budget(n=40, seconds=30, warmup=2),
    "deserved": Budget(n=50, seconds=20, warmup=3),
    "deserved-waterfill": Budget(n=200, seconds=10, warmup=5),
    "accounting-rebuild": Budget(n=30, seconds=20, warmup=2),
    "reclaim-session": Budget(n=3, seconds=60, warmup=0),
    "api-queues": Budget(n=100, seconds=15, warmup=3),
    "api-queue": Budget(n=100, seconds=15, warmup=3),
    "api-pending": Budget(n=50, seconds=20, warmup=2),
    "api-explain": Budget(n=50, seconds=20, warmup=2),
    "api-whatif": Budget(n=5, seconds=60, warmup=1),
    "reclaim-cycle": Budget(n=5, seconds=30, warmup=1),
    "deserved-usage": Budget(n=50, seconds=20, warmup=3),
    "reclaim-cycle-usage": Budget(n=5, seconds=30, warmup=1),
    "noop-http": Budget(n=2000, seconds=20, warmup=100),
    "filter-http": Budget(n=1000, seconds=40, warmup=20),
    "prioritize-http": Budget(n=300, seconds=30, warmup=5),
    "preempt-http": Budget(n=60, seconds=30, warmup=3),
    "noop-http-rps": Budget(n=4000, seconds=15, warmup=20),
    "filter-http-rps": Budget(n=400, seconds=30, warmup=8),
    "verb-rss-growth": Budget(n=10_000, seconds=120, warmup=0),
    # Every pod of the row's cluster once, after 20 warm-up pods.
    "cycle-200": Budget(n=980, seconds=60, warmup=20),
    "cycle-1000": Budget(n=4_980, seconds=240, warmup=20),
    # One sample is a batch of calls (``verbs_bench.BATCH``).
    "verbs-protocol-filter": Budget(n=25, seconds=30, warmup=2),
    "verbs-protocol-prioritize": Budget(n=25, seconds=30, warmup=2),
    "verbs-protocol-preempt": Budget(n=25, seconds=30, warmup=2),
    # One sample is a batch of pods (``verbs_engine_bench.PODS_PER_SAMPLE``), each pod once.
    "verbs-engine-200": Budget(n=18, seconds=30, warmup=2),
    "verbs-engine-1000": Budget(n=40, seconds=60, warmup=2),
    "verbs-engine-exact-200": Budget(n=18, seconds=30, warmup=2),
    "verbs-engine-live-1000": Budget(n=18, seconds=60, warmup=2),
    "verbs-engine-churn-1000": Budget(n=18, seconds=60, warmup=2),
    "verbs-engine-gangs-1000": Budget(n=18, seconds=60, warmup=2),
    # One sample is a batch of pods (``watch_bench.PODS_PER_SAMPLE``), each pod's two events.
    "watch-decode-200": Budget(n=18, seconds=20, warmup=2),
    "watch-apply-200": Budget(n=18, seconds=20, warmup=2),
    "topology-choose-1000": Budget(n=100, seconds=15, warmup=3),
    "topology-choose-5000": Budget(n=50, seconds=30, warmup=2),
    "topology-filter-5000": Budget(n=200, seconds=30, warmup=10),
    "reclaim-backlog-1000": Budget(n=10, seconds=30, warmup=1),
    "reclaim-backlog-5000": Budget(n=5, seconds=60, warmup=1),
    # One sample is a batch of filter calls (``beside_reclaim_bench.CALLS_PER_SAMPLE``).
    "filter-beside-reclaim": Budget(n=15, seconds=60, warmup=1),
}
# The fit variant's rows measure as their plain rows do, with the same budget.
BUDGETS |= {name: BUDGETS[plain] for name, (plain, _) in engine_bench.FIT_BENCHES.items()}
BUDGETS |= {name: BUDGETS[plain] for name, (plain, _) in http_bench.FIT_BENCHES.items()}
SYNC_TRIALS = 20

GROUPS: tuple[tuple[str, dict[str, str]], ...] = (
    ("engine", engine_bench.BENCHES),
    ("cycle", cycle_bench.BENCHES),
    ("verbs", verbs_bench.BENCHES),
    ("verbs-engine", verbs_engine_bench.BENCHES),
    ("watch", watch_bench.BENCHES),
    ("backlog", backlog_bench.BENCHES),
    ("beside-reclaim", beside_reclaim_bench.BENCHES),
    ("insight", insight_bench.BENCHES),
    ("topology", topology_bench.BENCHES),
    ("http", http_bench.BENCHES),
    ("sync", sync_bench.BENCHES),
    ("fit", {n: w for n, (_, w) in engine_bench.FIT_BENCHES.items()}),
    ("fit-http", {n: w for n, (_, w) in http_bench.FIT_BENCHES.items()}),
)
ALL_BENCHES: dict[str, str] = {name: what for _, table in GROUPS for name, what in table.items()}


def quick_budget(budget: Budget) -> Budget:
    return replace(
        budget,
        n=max(3, budget.n // 5),
        seconds=max(3.0, budget.seconds / 3),
        warmup=min(budget.warmup, 5),
    )


def parse_only(text: str | None) -> set[str]:
    if not text:
        return set(ALL_BENCHES)
    names = {n.strip() for n in text.split(",") if n.strip()}
    unknown = sorted(names - set(ALL_BENCHES))
    if unknown:
        raise ValueError(f"unknown bench {', '.join(unknown)}; known: {', '.join(ALL_BENCHES)}")
    return names


def render(results: list[Measurement]) -> str:
    header = ("bench", "n", "p50", "p99", "mean", "value", "unit", "RSS MiB", "target", "result")
    rows: list[tuple[str, ...]] = [header]
    for m in results:
        stats = m.stats()

        def cell(key: str, stats: dict[str, float] = stats) -> str:
            return format_number(stats[key]) if key in stats else "-"

        verdict = m.verdict()
        factor = m.miss_factor()
        if factor is not None:
            verdict += f" ({factor:.1f}×)"
        value = format_number(m.value) if m.value is not None else "-"
        rows.append(
            (
                m.name,
                str(int(stats["n"])) if stats else ("1" if m.value is not None else "-"),
                cell("p50"),
                cell("p99"),
                cell("mean"),
                value,
                m.unit,
                f"{m.rss_mib:,.0f}" if m.rss_mib is not None else "-",
                m.target_text(),
                verdict,
            )
        )
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    lines = []
    for r in rows:
        numbers = zip(r[1:8], widths[1:8], strict=True)
        cells = [r[0].ljust(widths[0]), *(c.rjust(w) for c, w in numbers)]
        cells += [r[8].ljust(widths[8]), r[9]]
        lines.append("  ".join(cells).rstrip())
    lines.insert(1, "-" * len(lines[0]))
    return "\n".join(lines)


def notes(results: list[Measurement]) -> str:
    out = []
    for m in results:
        if m.error:
            out.append(f"- {m.name}: ERROR {m.error}")
        elif m.extra:
            shown = {k: v for k, v in m.extra.items() if k not in ("pods",)}
            out.append(f"- {m.name}: {orjson.dumps(shown).decode()}")
    return "\n".join(out)


def log(message: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def run(scale: float, quick: bool, selected: set[str]) -> tuple[dict[str, Any], list[Measurement]]:
    budgets = {k: quick_budget(b) if quick else b for k, b in BUDGETS.items()}
    cluster = SyntheticCluster(ClusterSpec.at_scale(scale))
    summary = cluster.summary()
    log(f"cluster: {orjson.dumps(summary).decode()}")
    results: list[Measurement] = []
    engine = [n for n in engine_bench.BENCHES if n in selected]
    insight = [n for n in insight_bench.BENCHES if n in selected]
    if engine or insight:
        log("building the in-process cluster state")
        fixture = engine_bench.build_fixture(cluster)
        summary["state_build_seconds"] = round(fixture.build_seconds, 2)
        log(f"running {', '.join(engine + insight)}")
        results += engine_bench.run(fixture, set(engine), budgets)
        results += insight_bench.run(fixture, set(insight), budgets)
        del fixture
        gc.collect()
    topology = [n for n in topology_bench.BENCHES if n in selected]
    if topology:
        log(f"running {', '.join(topology)} (their own clusters)")
        results += topology_bench.run(set(topology), budgets)
        gc.collect()
    cycle = [n for n in cycle_bench.BENCHES if n in selected]
    if cycle:
        log(f"running {', '.join(cycle)} (their own clusters, at bench-e2e's scales)")
        results += cycle_bench.run(set(cycle), budgets)
        gc.collect()
    verbs = [n for n in verbs_bench.BENCHES if n in selected]
    if verbs:
        log(f"running {', '.join(verbs)} (the protocol and the app in-process, no backend)")
        results += verbs_bench.run(set(verbs), budgets)
    verbs_engine = [n for n in verbs_engine_bench.BENCHES if n in selected]
    if verbs_engine:
        log(f"running {', '.join(verbs_engine)} (the protocol and the engine, bench-e2e's scales)")
        results += verbs_engine_bench.run(set(verbs_engine), budgets)
        gc.collect()
    watch = [n for n in watch_bench.BENCHES if n in selected]
    if watch:
        log(f"running {', '.join(watch)} (the pod informer's events, bench-e2e's small scale)")
        results += watch_bench.run(set(watch), budgets)
        gc.collect()
    backlog = [n for n in backlog_bench.BENCHES if n in selected]
    if backlog:
        log(f"running {', '.join(backlog)} (their own clusters)")
        results += backlog_bench.run(set(backlog), budgets)
        gc.collect()
    if beside_reclaim_bench.NAME in selected:
        log(f"running {beside_reclaim_bench.NAME} (bench-e2e's 1,000 nodes beside the backlog)")
        results += beside_reclaim_bench.run(selected, budgets)
        gc.collect()
    http = [n for n in http_bench.BENCHES if n in selected]
    if http:
        log(f"running {', '.join(http)} (server on core 0, client on core 1)")
        results += http_bench.run(scale, set(http), budgets, cluster)
    if "sync" in selected:
        log("running sync (stand-in API server here on core 1, informers on core 0)")
        trials = max(3, SYNC_TRIALS // 4) if quick else SYNC_TRIALS
        results += sync_bench.run(scale, trials)
    results += run_fit_variant(scale, selected, budgets)
    return summary, results


def run_fit_variant(
    scale: float, selected: set[str], budgets: dict[str, Budget]
) -> list[Measurement]:
    """The fit variant's rows, on their own cluster (built after the plain rows are done and
    their fixture freed: two reference clusters at once would not fit the memory budget)."""
    engine = [n for n in engine_bench.FIT_BENCHES if n in selected]
    http = [n for n in http_bench.FIT_BENCHES if n in selected]
    if not engine and not http:
        return []
    cluster = SyntheticCluster(ClusterSpec.at_scale(scale, fit=True))
    results: list[Measurement] = []
    if engine:
        log("building the fit variant's in-process cluster state")
        fixture = engine_bench.build_fixture(cluster)
        log(f"running {', '.join(engine)}")
        results += engine_bench.run_fit(fixture, set(engine), budgets)
        del fixture
        gc.collect()
    if http:
        log(f"running {', '.join(http)} (server on core 0, client on core 1)")
        results += http_bench.run_fit(scale, set(http), budgets, cluster)
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="1/10 scale, fewer samples")
    parser.add_argument("--only", metavar="NAME[,NAME]", help="run only these benches")
    parser.add_argument("--json", metavar="FILE", help="also write the results as JSON")
    parser.add_argument("--scale", type=float, help="cluster scale (default 1, or 0.1 quick)")
    parser.add_argument("--list", action="store_true", help="list the benches and exit")
    args = parser.parse_args(argv)
    if args.list:
        for name, what in ALL_BENCHES.items():
            print(f"{name:24s} {what}")
        return 0
    try:
        selected = parse_only(args.only)
    except ValueError as exc:
        parser.error(str(exc))
    scale = args.scale if args.scale is not None else (QUICK_SCALE if args.quick else 1.0)
    facts = machine_facts()
    started = time.perf_counter()
    summary, results = run(scale, args.quick, selected)
    engine_bench.fit_growth(results)
    elapsed = time.perf_counter() - started

    facts["loadavg_1m_end"] = load_average()
    print(
        f"machine: {facts['cores']} cores, {facts['cpu_model']}, Python {facts['python']}, "
        f"taskset {'yes' if facts['taskset'] else 'no'}, load average (1 min) "
        f"{facts['loadavg_1m']} at start, {facts['loadavg_1m_end']} at end"
    )
    print(
        f"cluster (scale {scale:g}): {summary['nodes']} nodes, {summary['pods']} pods "
        f"({summary['pods_running']} running), {summary['queues']} queues "
        f"({summary['leaf_queues']} leaves), {summary['podgroups']} pod groups, "
        f"{summary['cpu_used_fraction']:.0%} CPU requested, "
        f"pod JSON ~{summary['pod_json_bytes_avg']} B"
    )
    if scale != 1.0:
        print("note: targets are defined at scale 1; this run is smaller")
    print()
    print(render(results))
    print()
    print(notes(results))
    print(f"\n(total {elapsed:.0f}s)")
    if args.json:
        document = {
            "machine": facts,
            "scale": scale,
            "quick": args.quick,
            "cluster": summary,
            "seconds": elapsed,
            "results": [m.to_json() for m in results],
        }
        Path(args.json).write_bytes(orjson.dumps(document, option=orjson.OPT_INDENT_2))
    return 1 if any(m.verdict() == "ERROR" for m in results) else 0


if __name__ == "__main__":
    sys.exit(main())
