"""``serve --reclaim`` and its flags: the active reclaim loop of a live cluster."""

from __future__ import annotations

import argparse

from app.cli.flag_types import count, positive_seconds
from scheduler_core.controller.reclaim import ReclaimOptions


def add_reclaim_group(p: argparse.ArgumentParser) -> None:
    group = p.add_argument_group(
        "reclaim", "the active reclaim loop: evicts pods of queues above their deserved share"
    )
    group.add_argument(
        "--reclaim",
        action="store_true",
        help="run the reclaim loop on the leader (off by default; needs --kubeconfig or "
        "--in-cluster and the pods/eviction right)",
    )
    group.add_argument(
        "--reclaim-interval",
        type=positive_seconds,
        default=1.0,
        help="seconds between reclaim cycles (default 1, Volcano's schedule period)",
    )
    group.add_argument(
        "--reclaim-dry-run",
        action="store_true",
        help="decide and record WouldReclaim events and metrics, evict nothing",
    )
    group.add_argument(
        "--reclaim-max-evictions",
        type=count,
        default=0,
        metavar="N",
        help="at most N evictions per cycle (default 0: no limit)",
    )
    group.add_argument(
        "--reclaim-max-evictions-per-queue",
        type=count,
        default=0,
        metavar="N",
        help="at most N evictions from one queue per cycle (default 0: no limit)",
    )


def reclaim_options_from_args(args: argparse.Namespace) -> ReclaimOptions | None:
    """None when the loop is off; raises ValueError with a one-line reason on bad flags."""
    if not getattr(args, "reclaim", False):
        if getattr(args, "reclaim_dry_run", False):
            raise ValueError("--reclaim-dry-run needs --reclaim")
        return None
    if not (getattr(args, "kubeconfig", None) or getattr(args, "in_cluster", False)):
        raise ValueError("--reclaim needs a cluster: --kubeconfig or --in-cluster")
    return ReclaimOptions(
        interval=args.reclaim_interval,
        dry_run=args.reclaim_dry_run,
        max_evictions=args.reclaim_max_evictions,
        max_evictions_per_queue=args.reclaim_max_evictions_per_queue,
    )
