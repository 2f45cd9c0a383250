"""``serve --reclaim`` and its flags: the active reclaim loop of a live cluster."""

from __future__ import annotations

import argparse
import atexit
from datetime import UTC, datetime
from typing import Any

from app.flag_types import count, positive_seconds
from app.insight_port import RecentEviction
from scheduler_core.cache.state import ClusterState
from scheduler_core.conf import SchedulerConfiguration
from scheduler_core.controller.eviction import EvictionResult
from scheduler_core.controller.reclaim import ReclaimLoop, ReclaimOptions
from scheduler_core.controller.runtime import Controller
from scheduler_core.controller.snapshot import anything_waiting, loop_snapshot


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


def start_reclaim_loop(
    options: ReclaimOptions,
    conf: SchedulerConfiguration,
    state: ClusterState,
    controller: Controller,
    backend: Any,
) -> ReclaimLoop:
    """The started loop, wired to the backend: its readiness, its queue accounting (the
    preemptor's reservation) and the state (a private snapshot, copied under the lock)."""

    def task(key: str) -> Any:
        with state.locked():
            return state.task(key)

    loop = ReclaimLoop(
        conf,
        options,
        rest=controller.rest,
        recorder=controller.recorder,
        is_leader=controller.is_leader,
        ready=lambda: bool(backend.readiness()[0]),
        snapshot=lambda: loop_snapshot(state),
        waiting=lambda: anything_waiting(state),
        version=lambda: state.version,
        task=task,
        reserve=backend.reserve,
        registry=controller.registry,
    )
    loop.start()
    atexit.register(loop.stop)
    backend.eviction_history = lambda: recent_evictions(loop)
    return loop


def recent_evictions(loop: ReclaimLoop) -> list[RecentEviction]:
    """The loop's last evictions as the status page shows them, newest first."""
    rows = []
    for at, result, planned in reversed(list(loop.history)):
        stamp = datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        prefix = "dry run: " if result is EvictionResult.DRY_RUN else ""
        rows.append(
            RecentEviction(planned.victim.key, planned.victim_queue, prefix + planned.rule, stamp)
        )
    return rows
