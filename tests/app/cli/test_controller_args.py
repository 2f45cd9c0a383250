"""The `controller` flags of serve: kube-scheduler's defaults, clear errors on bad values."""

from __future__ import annotations

import pytest

from app.cli.controller_flags import controller_options_from_args
from app.cli.main import build_parser


def options(*flags: str):  # type: ignore[no-untyped-def]
    return controller_options_from_args(build_parser().parse_args(["serve", *flags]))


def test_a_live_cluster_elects_a_leader_by_default_with_kube_schedulers_timings() -> None:
    opts = options("--kubeconfig", "kc")
    assert opts.leader_elect
    assert opts.lease_name == "kube-queue-extender"
    assert opts.lease_namespace == "default"  # not in a pod: no service-account namespace
    t = opts.timings
    assert (t.lease_duration, t.renew_deadline, t.retry_period) == (15.0, 10.0, 2.0)


def test_leader_elect_false_always_writes() -> None:
    assert not options("--kubeconfig", "kc", "--leader-elect=false").leader_elect
    assert options("--kubeconfig", "kc", "--leader-elect").leader_elect


def test_lease_name_and_namespace_are_taken_as_given() -> None:
    opts = options(
        "--in-cluster", "--leader-elect-lease-name", "q", "--leader-elect-lease-namespace", "ops"
    )
    assert (opts.lease_name, opts.lease_namespace) == ("q", "ops")


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--leader-elect-lease-duration", "5"], "lease duration"),
        (["--leader-elect-renew-deadline", "2", "--leader-elect-retry-period", "2"], "renew"),
        (["--leader-elect-lease-namespace", " "], "must not be empty"),
    ],
)
def test_inconsistent_timings_are_one_clear_error(flags: list[str], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        options("--kubeconfig", "kc", *flags)


def test_leader_election_without_a_cluster_is_refused() -> None:
    with pytest.raises(ValueError, match="needs a cluster"):
        options("--leader-elect")


@pytest.mark.parametrize("value", ["-1", "0", "soon"])
def test_a_non_positive_duration_is_refused_by_the_parser(value: str) -> None:
    with pytest.raises(SystemExit):
        build_parser().parse_args(["serve", "--leader-elect-retry-period", value])


def test_leader_elect_takes_only_true_or_false() -> None:
    with pytest.raises(SystemExit):
        build_parser().parse_args(["serve", "--leader-elect=maybe"])


def test_standalone_is_the_default_mode_and_sidecar_follows_kube_schedulers_lease() -> None:
    assert options("--kubeconfig", "kc").leader_elect_mode == "standalone"
    opts = options(
        "--in-cluster",
        "--leader-elect-mode=sidecar",
        "--scheduler-lease-name",
        "queue-scheduler",
        "--scheduler-lease-namespace",
        "ops",
        "--leader-elect-hostname",
        "queue-scheduler-7d9f-abcde",
    )
    assert (opts.leader_elect_mode, opts.scheduler_lease_name, opts.scheduler_lease_namespace) == (
        "sidecar",
        "queue-scheduler",
        "ops",
    )
    assert opts.hostname == "queue-scheduler-7d9f-abcde"
    defaults = options("--in-cluster", "--leader-elect-mode=sidecar")
    assert (defaults.scheduler_lease_name, defaults.scheduler_lease_namespace) == (
        "kube-scheduler",
        "kube-system",
    )


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--leader-elect-mode=sidecar", "--leader-elect=false"], "needs leader election"),
        (["--leader-elect-mode=sidecar", "--scheduler-lease-name", " "], "must not be empty"),
        (["--leader-elect-hostname", "a_b"], "no underscore"),
    ],
)
def test_inconsistent_sidecar_flags_are_one_clear_error(flags: list[str], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        options("--kubeconfig", "kc", *flags)


def test_an_unknown_mode_is_refused_by_the_parser() -> None:
    with pytest.raises(SystemExit):
        build_parser().parse_args(["serve", "--leader-elect-mode", "both"])
