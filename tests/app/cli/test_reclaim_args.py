"""The `reclaim` flags of serve: brakes on by default, each overridable, bad values refused."""

from __future__ import annotations

import pytest

from app.cli.main import build_parser
from app.cli.reclaim_flags import reclaim_options_from_args
from scheduler_core.controller.reclaim import ReclaimOptions


def options(*flags: str) -> ReclaimOptions | None:
    return reclaim_options_from_args(
        build_parser().parse_args(["serve", "--kubeconfig", "kc", *flags])
    )


def test_the_loop_is_braked_by_default() -> None:
    opts = options("--reclaim")
    assert opts is not None
    assert (opts.max_evictions, opts.max_evictions_per_minute) == (10, 50)
    assert opts.max_evictions_per_queue == 0
    assert opts.eviction_timeout == 5.0


def test_every_brake_can_be_set_and_zero_lifts_a_cap() -> None:
    opts = options(
        "--reclaim",
        "--reclaim-max-evictions",
        "0",
        "--reclaim-max-evictions-per-minute",
        "7",
        "--reclaim-max-evictions-per-queue",
        "2",
        "--reclaim-eviction-timeout",
        "2.5",
    )
    assert opts == ReclaimOptions(
        max_evictions=0,
        max_evictions_per_minute=7,
        max_evictions_per_queue=2,
        eviction_timeout=2.5,
        fork=True,
    )


def test_a_cycle_is_decided_in_a_forked_child_unless_asked_in_process() -> None:
    forked, in_process = options("--reclaim"), options("--reclaim", "--reclaim-in-process")
    assert forked is not None and forked.fork
    assert in_process is not None and not in_process.fork


@pytest.mark.parametrize(
    "flags",
    [
        ["--reclaim-max-evictions-per-minute", "-1"],
        ["--reclaim-max-evictions", "many"],
        ["--reclaim-eviction-timeout", "0"],
    ],
)
def test_a_bad_brake_is_refused_by_the_parser(
    flags: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit):
        options("--reclaim", *flags)
    assert "--reclaim-" in capsys.readouterr().err


def test_an_eviction_timeout_too_short_to_be_answered_is_refused() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        options("--reclaim", "--reclaim-eviction-timeout", "0.2")
