"""``make bench-e2e``'s arithmetic and report, on made-up rounds (the bench itself needs a
control plane and minutes; nothing here runs it or asserts a rate it measured)."""

from __future__ import annotations

import itertools
import os
import threading
import time

import pytest

from bench.e2e_bench import (
    ALL_CONFIGS,
    SCALES,
    FinishedPods,
    Round,
    algorithm_seconds,
    cpu_seconds,
    extender_counts,
    filter_answer_seconds,
    main,
    paired_ratios,
    peak_rss_mib,
    render,
    rendered_configuration,
    round_order,
    split_main_thread,
    summary,
    thread_cpu_seconds,
)

METRICS = """\
# HELP queue_extender_decisions_total Answers by verb and outcome.
# TYPE queue_extender_decisions_total counter
queue_extender_decisions_total{outcome="passed",verb="filter"} 998.0
queue_extender_decisions_total{outcome="failed",verb="filter"} 2.0
queue_extender_decisions_total{outcome="scored",verb="prioritize"} 1000.0
queue_extender_errors_total{verb="filter"} 1.0
queue_extender_filter_rejections_total{reason="capability"} 2.0
queue_extender_accounting_sessions_total{way="opened"} 3.0
queue_extender_accounting_sessions_total{way="followed"} 990.0
queue_extender_request_duration_seconds_count{verb="filter"} 1000.0
queue_extender_request_duration_seconds_sum{verb="filter"} 0.25
queue_extender_request_duration_seconds_count{verb="prioritize"} 10.0
queue_extender_request_duration_seconds_sum{verb="prioritize"} 9.0
"""


def bound_round(config: str, index: int, binds: list[float], pods: int | None = None) -> Round:
    return Round(config, index, pods if pods is not None else len(binds), binds=binds)


def test_rate_counts_intervals_between_the_first_and_last_bind() -> None:
    assert bound_round("plain", 1, [10.0, 10.5, 11.0, 12.0]).rate == pytest.approx(1.5)
    assert bound_round("plain", 1, [10.0]).rate is None
    assert bound_round("plain", 1, [3.0, 3.0]).rate is None


def test_summary_takes_min_and_median_per_configuration() -> None:
    rounds = [
        bound_round("plain", 1, [0.0, 1.0]),  # 1 pod/s
        bound_round("plain", 2, [0.0, 0.25]),  # 4 pods/s
        bound_round("plain", 3, [0.0, 0.5]),  # 2 pods/s
        bound_round("noop", 1, [0.0, 1.0]),
    ]
    stats = summary(rounds, ["plain", "noop", "ours"])
    assert stats["plain"] == {"min": 1.0, "median": 2.0}
    assert stats["noop"] == {"min": 1.0, "median": 1.0}
    assert stats["ours"] == {"min": None, "median": None}


def test_report_shows_every_round_and_the_ratios() -> None:
    rounds = [
        bound_round("plain", 1, [0.0, 0.01]),  # 100/s
        bound_round("noop", 1, [0.0, 0.02]),  # 50/s
        bound_round("watch", 1, [0.0, 0.025]),  # 40/s
        bound_round("ours", 1, [0.0, 0.04, 0.05], pods=4),  # 40/s, one pod never bound
    ]
    rounds[3].extender_counts = extender_counts(METRICS)
    text = render(SCALES["small"], rounds)
    assert "200 nodes × 1000 pods" in text
    assert "ours/plain 0.40, noop/plain 0.50, watch/noop 0.80" in text
    assert "ours/noop-filter" not in text  # only ratios of configurations that ran
    assert "only 3/4 bound" in text
    assert "errors/filter=1" in text
    assert "filter/failed=2" in text


def test_extender_counts_read_decisions_errors_and_rejections() -> None:
    assert extender_counts(METRICS) == {
        "filter/passed": 998.0,
        "filter/failed": 2.0,
        "prioritize/scored": 1000.0,
        "errors/filter": 1.0,
        "filter_rejected/capability": 2.0,
        "sessions/opened": 3.0,
        "sessions/followed": 990.0,
    }


def test_clean_rounds_carry_no_notes() -> None:
    clean = bound_round("ours", 1, [0.0, 1.0])
    clean.extender_counts = {
        "filter/passed": 2.0,
        "prioritize/scored": 2.0,
        "sessions/opened": 1.0,  # how the answers were reached, not what they were
    }
    assert clean.notes() == ""


def test_the_target_ratios_are_reported_with_every_configuration() -> None:
    rates = {"plain": 0.01, "noop": 0.04, "noop-filter": 0.02, "ours": 0.025, "ours-exact": 0.05}
    rounds = [bound_round(config, 1, [0.0, gap]) for config, gap in rates.items()]
    rounds[3].peak_rss_mib = 180.0
    rounds[3].extender_cpu = 0.5  # two pods: 250 ms each
    text = render(SCALES["small"], rounds)
    # 100, 25, 50, 40 and 20 pods/s.
    assert "ours/plain 0.40, ours/noop-filter 0.80, ours-exact/noop 0.80" in text
    assert "serve's peak RSS: ours 180 MiB" in text
    assert "extender CPU per pod (median of rounds): ours 250.00 ms" in text


def test_each_target_says_how_many_rounds_met_it_on_their_own() -> None:
    # ours/plain round by round 0.50, 0.70, 0.80, medians 70/100 = 0.70: met, by two rounds;
    # ours/noop-filter round by round 1.00, 0.875, 0.80, medians 70/80 = 0.875: missed,
    # though one round met it.
    gaps = {
        "plain": [0.01, 0.01, 0.01],  # 100/s each round
        "noop-filter": [0.02, 0.0125, 0.01],  # 50, 80, 100/s
        "ours": [0.02, 1 / 70, 0.0125],  # 50, 70, 80/s
    }
    rounds = [
        bound_round(config, index, [0.0, gap])
        for config, per_round in gaps.items()
        for index, gap in enumerate(per_round, start=1)
    ]
    text = render(SCALES["small"], rounds)
    assert "  ours/plain >= 0.6: 0.70 met; round by round 0.50, 0.70, 0.80 (2 of 3" in text
    assert (
        "  ours/noop-filter >= 0.9: 0.88 MISSED; round by round 1.00, 0.88, 0.80 (1 of 3"
    ) in text
    assert "ours-exact/noop >=" not in text  # neither ran


def test_paired_ratios_skip_rounds_where_either_side_had_no_rate() -> None:
    rounds = [
        bound_round("ours", 1, [0.0, 0.02]),
        bound_round("plain", 1, [0.0, 0.01]),
        bound_round("ours", 2, [0.0]),  # no rate
        bound_round("plain", 2, [0.0, 0.01]),
        bound_round("ours", 3, [0.0, 0.01]),
    ]
    assert paired_ratios(rounds, "ours", "plain") == [pytest.approx(0.5)]


def test_ours_as_deployed_leaves_scoring_to_kube_scheduler() -> None:
    assert not ALL_CONFIGS["ours"].prioritize and not ALL_CONFIGS["noop-filter"].prioritize
    assert ALL_CONFIGS["ours-exact"].prioritize and ALL_CONFIGS["noop"].prioritize
    url = "http://127.0.0.1:8888/"
    [deployed] = rendered_configuration(ALL_CONFIGS["ours"], url).document["extenders"]
    [exact] = rendered_configuration(ALL_CONFIGS["ours-exact"], url).document["extenders"]
    assert "prioritizeVerb" not in deployed and deployed["filterVerb"] == "filter"
    assert exact["prioritizeVerb"] == "prioritize" and exact["urlPrefix"] == url


def test_peak_rss_is_read_from_the_process_status() -> None:
    peak = peak_rss_mib(os.getpid())
    assert peak is not None and peak > 1
    assert peak_rss_mib(2**22 + 12345) is None


def test_cpu_seconds_grow_with_the_work_the_process_does() -> None:
    before = cpu_seconds(os.getpid())
    sum(i * i for i in range(2_000_000))
    after = cpu_seconds(os.getpid())
    assert before is not None and after is not None and after > before
    assert cpu_seconds(None) is None and cpu_seconds(2**22 + 12345) is None


def pairs(orders: list[list[str]]) -> list[tuple[str, str]]:
    """Every (before, after) of configurations run one right after the other, rounds
    joined end to end."""
    flat = [config for order in orders for config in order]
    return list(itertools.pairwise(flat))


def test_rounds_run_every_configuration_after_each_other_equally_often() -> None:
    six = ["plain", "noop", "noop-filter", "watch", "ours", "ours-exact"]
    orders = [round_order(six, index) for index in range(6)]
    assert all(sorted(order) == sorted(six) for order in orders)
    within = [p for order in orders for p in pairs([order])]
    assert len(within) == len(set(within)) == 30  # each ordered pair exactly once
    # Every configuration runs in every position once.
    assert all(sorted(order[position] for order in orders) == sorted(six) for position in range(6))
    assert round_order(six, 6) == round_order(six, 0)


def test_three_rounds_of_three_vary_what_runs_before_ours() -> None:
    three = ["plain", "noop-filter", "ours"]
    orders = [round_order(three, index) for index in range(3)]
    before_ours = {b for b, a in pairs(orders) if a == "ours"}
    assert len(before_ours) >= 2
    assert round_order([], 2) == []
    assert round_order(["ours"], 5) == ["ours"]


SCHEDULER_METRICS = """\
# TYPE scheduler_scheduling_algorithm_duration_seconds histogram
scheduler_scheduling_algorithm_duration_seconds_bucket{le="0.001"} 300
scheduler_scheduling_algorithm_duration_seconds_bucket{le="+Inf"} 1000
scheduler_scheduling_algorithm_duration_seconds_sum 2.5
scheduler_scheduling_algorithm_duration_seconds_count 1000
scheduler_scheduling_attempt_duration_seconds_sum{profile="queue-scheduler",result="scheduled"} 9
scheduler_scheduling_attempt_duration_seconds_count{profile="queue-scheduler",result="scheduled"} 3
"""


def test_kube_schedulers_algorithm_mean_is_its_histograms_sum_over_count() -> None:
    assert algorithm_seconds(SCHEDULER_METRICS) == pytest.approx(0.0025)
    no_samples = SCHEDULER_METRICS.replace("_count 1000", "_count 0")
    assert algorithm_seconds(no_samples) is None
    assert algorithm_seconds(None) is None and algorithm_seconds("") is None


def test_window_cpu_splits_the_main_thread_from_the_others() -> None:
    pid = 100
    before = {100: 1.0, 101: 0.5, 102: 2.0}
    after = {100: 1.75, 101: 0.75, 103: 0.25}  # 102 ended, 103 started in between
    main_s, other_s = split_main_thread(pid, before, after)
    assert main_s == pytest.approx(0.75)
    assert other_s == pytest.approx(0.5)


def test_thread_cpu_is_read_per_thread_of_a_live_process() -> None:
    stop = threading.Event()
    worker = threading.Thread(target=lambda: stop.wait(5))
    worker.start()
    try:
        threads = thread_cpu_seconds(os.getpid())
        assert threads is not None
        assert os.getpid() in threads and worker.native_id in threads
    finally:
        stop.set()
        worker.join()
    assert thread_cpu_seconds(None) is None and thread_cpu_seconds(2**22 + 12345) is None


def test_our_filter_time_is_the_filter_histograms_sum_over_count() -> None:
    assert filter_answer_seconds(METRICS) == pytest.approx(0.00025)  # prioritize left out
    no_calls = (
        'queue_extender_request_duration_seconds_count{verb="filter"} 0.0\n'
        'queue_extender_request_duration_seconds_sum{verb="filter"} 0.0\n'
    )
    assert filter_answer_seconds(no_calls) is None
    assert filter_answer_seconds("") is None


def test_report_gives_the_algorithm_time_and_the_cpu_while_kube_scheduler_ran() -> None:
    rounds = [bound_round("noop-filter", 1, [0.0, 0.01]), bound_round("ours", 1, [0.0, 0.02])]
    rounds[0].algorithm_s = 0.0015
    rounds[1].algorithm_s = 0.002
    rounds[1].window_cpu_main, rounds[1].window_cpu_other = 0.0006, 0.0002  # two pods
    rounds[1].filter_answer_s = 0.0004
    text = render(SCALES["small"], rounds)
    assert "our handler's own time a filter call, mean (median of rounds): ours 0.40 ms" in text
    assert "algorithm a pod, mean (median of rounds): noop-filter 1.50 ms, ours 2.00 ms" in text
    assert "other threads): ours 0.30 + 0.10 ms" in text


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--scales", "enormous"], "unknown scale enormous"),
        (["--configs", "plain,fast"], "unknown configuration fast"),
        (["--configs", "ours,base"], "base and base-exact need --baseline EXE"),
    ],
)
def test_bad_flags_are_refused(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as refused:
        main(argv)
    assert refused.value.code == 2
    assert message in capsys.readouterr().err


class _Core:
    """The two calls ``FinishedPods`` makes, noted."""

    def __init__(self) -> None:
        self.deleted: list[str] = []

    def delete_namespaced_pod(self, name: str, namespace: str, **_: object) -> _Core:
        self.deleted.append(name)
        return self

    def read(self) -> bytes:
        return b""

    def release_conn(self) -> None:
        pass


def test_churn_deletes_each_bound_pod_once_keep_more_were_bound_after_it_in_bind_order() -> None:
    class Watch:
        def __init__(self) -> None:
            self.bound: dict[str, float] = {}
            self.done = threading.Event()

    core, watch = _Core(), Watch()
    finished = FinishedPods(core, "ns", watch, keep=2)  # type: ignore[arg-type]
    assert finished.due(["a", "b"]) == []  # two bound, two kept
    assert finished.due(["a", "b", "c", "d"]) == ["a", "b"]
    finished.deleted = 2
    assert finished.due(["a", "b", "c", "d"]) == []
    assert finished.due(["a", "b", "c", "d", "e"]) == ["c"]

    watch.bound = {name: float(i) for i, name in enumerate("pqrst")}
    running = FinishedPods(core, "ns", watch, keep=3).start()  # type: ignore[arg-type]
    deadline = time.monotonic() + 10
    while len(core.deleted) < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(0.2)  # (passes after the first find nothing more to delete)
    running.stop()
    assert core.deleted == ["p", "q"] and running.deleted == 2


def test_the_report_says_how_many_pods_churn_deleted() -> None:
    rounds = [bound_round("ours", 1, [0.0, 0.01]), bound_round("plain", 1, [0.0, 0.01])]
    assert "deleted" not in render(SCALES["small"], rounds)
    rounds[0].deleted = 940
    assert "bound pods deleted while the round ran, --churn (median of rounds): ours 940" in (
        render(SCALES["small"], rounds)
    )


def test_a_negative_churn_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["--churn", "-1"])
    assert "--churn must be at least 0" in capsys.readouterr().err
