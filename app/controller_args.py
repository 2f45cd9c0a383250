"""The ``controller`` flags of ``serve`` (leader election, status write-back) and the
controller they build. Only a live cluster (``--kubeconfig`` / ``--in-cluster``) has a
controller: a static file has nothing to write back to."""

from __future__ import annotations

import argparse
import atexit
import logging
from typing import Any

from prometheus_client import CollectorRegistry

from app.flag_types import positive_seconds
from scheduler_core.controller.leader import ElectionTimings, pod_namespace, validate_timings
from scheduler_core.controller.runtime import DEFAULT_LEASE_NAME, Controller, ControllerOptions

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
    return ControllerOptions(
        write_status=args.write_status is not False,
        leader_elect=args.leader_elect is not False,
        lease_name=name,
        lease_namespace=namespace.strip() if namespace else pod_namespace(),
        timings=timings,
    )


def controller_from_args(
    args: argparse.Namespace, api_client: Any, registry: CollectorRegistry | None
) -> Controller:
    """The started controller of a live cluster; it leaves the election at exit."""
    controller = Controller(api_client, controller_options_from_args(args), registry=registry)
    controller.start()
    atexit.register(controller.stop)
    return controller


def start_status_writer(backend: Any) -> None:
    """The status write-back of a live backend, unless ``--write-status=false``."""
    from scheduler_core.controller.status_writer import StatusWriter
    from scheduler_core.extender.holds import hold_reason

    controller = backend.controller
    if controller is None or not controller.options.write_status:
        return
    accounting = backend.accounting
    state = backend.state

    # Its own sessions over the live objects: rebuilding the verbs' accounting session from
    # here would move their refresh clock and hand them a view older than they would build.
    writer = StatusWriter(
        controller,
        state.shared_snapshot,
        lambda: backend.conf,
        state.locked,
        lambda: state.version,
        lambda ssn, job, task: hold_reason(accounting, ssn, job, task),
        managed_schedulers=backend.options.scheduler_names,
        namespaces=backend.options.namespaces,
        interval=max(1.0, backend.options.refresh_interval),
    )
    writer.start()
    atexit.register(writer.stop)
    backend.status_writer = writer
