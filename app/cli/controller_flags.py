"""The ``controller`` flags of ``serve`` (leader election, status write-back) and the
controller they build. Only a live cluster (``--kubeconfig`` / ``--in-cluster``) has a
controller: a static file has nothing to write back to."""

from __future__ import annotations

import argparse
import logging

from app.cli.flag_types import positive_seconds
from scheduler_core.controller.leader import ElectionTimings, pod_namespace, validate_timings
from scheduler_core.controller.runtime import (
    DEFAULT_LEASE_NAME,
    DEFAULT_SCHEDULER_LEASE_NAME,
    DEFAULT_SCHEDULER_LEASE_NAMESPACE,
    ControllerOptions,
)

log = logging.getLogger(__name__)

_TRUE = ("true", "1", "yes", "on")
_FALSE = ("false", "0", "no", "off")


def _boolean(value: str) -> bool:
    lowered = value.strip().lower()
    if lowered in _TRUE:
        return True
    if lowered in _FALSE:
        return False
    raise argparse.ArgumentTypeError(f"expected true or false, not {value!r}")


def add_controller_group(p: argparse.ArgumentParser) -> None:
    """The ``controller`` argument group of ``serve``."""
    ctl = p.add_argument_group(
        "controller", "what the leader replica writes back to a live cluster"
    )
    ctl.add_argument(
        "--leader-elect",
        type=_boolean,
        nargs="?",
        const=True,
        default=None,
        metavar="BOOL",
        help="elect one writing replica through a coordination.k8s.io Lease "
        "(default true with --kubeconfig/--in-cluster; --leader-elect=false: always write)",
    )
    ctl.add_argument(
        "--write-status",
        type=_boolean,
        nargs="?",
        const=True,
        default=None,
        metavar="BOOL",
        help="write PodGroup and Queue status, conditions and events back to the cluster "
        "(default true with --kubeconfig/--in-cluster; --write-status=false turns it off)",
    )
    ctl.add_argument(
        "--leader-elect-mode",
        choices=("standalone", "sidecar"),
        default="standalone",
        help="standalone: elect through the extender's own Lease (--leader-elect-lease-name); "
        "sidecar: lead exactly while the kube-scheduler of this pod holds its Lease "
        "(--scheduler-lease-name), so the replica answering the active scheduler is the one "
        "that reclaims and writes status (default standalone)",
    )
    ctl.add_argument(
        "--scheduler-lease-name",
        default=DEFAULT_SCHEDULER_LEASE_NAME,
        help="sidecar mode: kube-scheduler's leaderElection.resourceName "
        f"(default {DEFAULT_SCHEDULER_LEASE_NAME})",
    )
    ctl.add_argument(
        "--scheduler-lease-namespace",
        default=DEFAULT_SCHEDULER_LEASE_NAMESPACE,
        help="sidecar mode: kube-scheduler's leaderElection.resourceNamespace "
        f"(default {DEFAULT_SCHEDULER_LEASE_NAMESPACE})",
    )
    ctl.add_argument(
        "--leader-elect-hostname",
        default=None,
        help="sidecar mode: the host name kube-scheduler's holder identity starts with "
        "(it writes hostname_uuid; default this host's name, which a pod's containers share)",
    )
    ctl.add_argument(
        "--leader-elect-lease-name",
        default=DEFAULT_LEASE_NAME,
        help=f"name of the Lease (default {DEFAULT_LEASE_NAME})",
    )
    ctl.add_argument(
        "--leader-elect-lease-namespace",
        default=None,
        help="namespace of the Lease (default: the pod's own namespace, else default)",
    )
    ctl.add_argument(
        "--leader-elect-lease-duration",
        type=positive_seconds,
        default=15.0,
        help="seconds a follower waits before taking over an unrenewed lease (default 15)",
    )
    ctl.add_argument(
        "--leader-elect-renew-deadline",
        type=positive_seconds,
        default=10.0,
        help="seconds the leader keeps retrying a renewal before it stops writing (default 10)",
    )
    ctl.add_argument(
        "--leader-elect-retry-period",
        type=positive_seconds,
        default=2.0,
        help="seconds between election attempts and renewals (default 2)",
    )


def live_cluster(args: argparse.Namespace) -> bool:
    return bool(getattr(args, "kubeconfig", None) or getattr(args, "in_cluster", False))


def controller_options_from_args(args: argparse.Namespace) -> ControllerOptions:
    """Raises ValueError with a one-line reason on inconsistent flags."""
    timings = ElectionTimings(
        lease_duration=args.leader_elect_lease_duration,
        renew_deadline=args.leader_elect_renew_deadline,
        retry_period=args.leader_elect_retry_period,
    )
    validate_timings(timings)
    if args.leader_elect and not live_cluster(args):
        raise ValueError("--leader-elect needs a cluster: --kubeconfig or --in-cluster")
    if args.write_status and not live_cluster(args):
        raise ValueError("--write-status needs a cluster: --kubeconfig or --in-cluster")
    name = args.leader_elect_lease_name.strip()
    if not name:
        raise ValueError("--leader-elect-lease-name must not be empty")
    namespace = args.leader_elect_lease_namespace
    if namespace is not None and not namespace.strip():
        raise ValueError("--leader-elect-lease-namespace must not be empty")
    mode = args.leader_elect_mode
    if mode == "sidecar" and args.leader_elect is False:
        raise ValueError(
            "--leader-elect-mode=sidecar needs leader election: drop --leader-elect=false"
        )
    scheduler_lease = args.scheduler_lease_name.strip()
    scheduler_namespace = args.scheduler_lease_namespace.strip()
    if not scheduler_lease or not scheduler_namespace:
        raise ValueError("--scheduler-lease-name and --scheduler-lease-namespace must not be empty")
    hostname = args.leader_elect_hostname
    if hostname is not None and (not hostname.strip() or "_" in hostname):
        raise ValueError(
            f"--leader-elect-hostname must be a host name (no underscore), not {hostname!r}"
        )
    return ControllerOptions(
        write_status=args.write_status is not False,
        leader_elect=args.leader_elect is not False,
        lease_name=name,
        lease_namespace=namespace.strip() if namespace else pod_namespace(),
        timings=timings,
        leader_elect_mode=mode,
        scheduler_lease_name=scheduler_lease,
        scheduler_lease_namespace=scheduler_namespace,
        hostname=hostname.strip() if hostname else None,
    )
