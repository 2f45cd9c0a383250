"""``make bench-e2e``'s arithmetic and report, on made-up rounds (the bench itself needs a
control plane and minutes; nothing here runs it or asserts a rate it measured)."""

from __future__ import annotations

import os

import pytest

from bench.e2e_bench import (
    ALL_CONFIGS,
    SCALES,
    Round,
    cpu_seconds,
    extender_counts,
    main,
    peak_rss_mib,
    render,
    rendered_configuration,
    summary,
)

METRICS = """\
# HELP queue_extender_decisions_total Answers by verb and outcome.
# TYPE queue_extender_decisions_total counter
queue_extender_decisions_total{outcome="passed",verb="filter"} 998.0
queue_extender_decisions_total{outcome="failed",verb="filter"} 2.0
queue_extender_decisions_total{outcome="scored",verb="prioritize"} 1000.0
queue_extender_errors_total{verb="filter"} 1.0
queue_extender_filter_rejections_total{reason="capability"} 2.0
queue_extender_request_duration_seconds_count{verb="filter"} 1000.0
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
    }


def test_clean_rounds_carry_no_notes() -> None:
    clean = bound_round("ours", 1, [0.0, 1.0])
    clean.extender_counts = {"filter/passed": 2.0, "prioritize/scored": 2.0}
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
