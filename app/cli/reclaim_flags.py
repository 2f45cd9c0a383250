"""``serve --reclaim`` and its flags: the active reclaim loop of a live cluster."""

from __future__ import annotations

import argparse

from app.cli.flag_types import count, positive_seconds
from scheduler_core.controller.reclaim import (
    DEFAULT_EVICTION_TIMEOUT,
    DEFAULT_MAX_EVICTIONS,
    DEFAULT_MAX_EVICTIONS_PER_MINUTE,
    MIN_EVICTION_DEADLINE,
    ReclaimOptions,
)


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
        default=DEFAULT_MAX_EVICTIONS,
        metavar="N",
        help=f"at most N evictions per cycle (default {DEFAULT_MAX_EVICTIONS}; 0: no limit)",
    )
    group.add_argument(
        "--reclaim-max-evictions-per-minute",
        type=count,
        default=DEFAULT_MAX_EVICTIONS_PER_MINUTE,
        metavar="N",
        help=f"at most N evictions over any 60 seconds, cluster-wide (only the leader evicts) "
        f"(default {DEFAULT_MAX_EVICTIONS_PER_MINUTE}; 0: no limit)",
    )
    group.add_argument(
        "--reclaim-eviction-timeout",
        type=positive_seconds,
        default=DEFAULT_EVICTION_TIMEOUT,
        metavar="SECONDS",
        help=f"the longest one eviction request may take (default {DEFAULT_EVICTION_TIMEOUT:g}; "
        f"at least {MIN_EVICTION_DEADLINE:g}); shortened to what is left of the leader lease",
    )
    group.add_argument(
        "--reclaim-in-process",
        action="store_true",
        help="decide each cycle on the loop's thread instead of in a forked child (the "
        "default keeps a cycle over a long backlog off the interpreter the verbs answer on)",
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
        max_evictions_per_minute=args.reclaim_max_evictions_per_minute,
        eviction_timeout=args.reclaim_eviction_timeout,
        fork=not args.reclaim_in_process,
    )
