"""The loop's copy of the live cluster: private jobs and nodes, shared task objects.

A session changes task statuses and node and job sums; a full clone of 50,000 tasks to keep
the cache safe from that cost more than a third of a cycle at 5,000 nodes. The cache never
changes a task in place (an update replaces it), and a session opened with
``shared_tasks=True`` copies a task before its first change (``Session.own``), so copying the
jobs' and nodes' maps and sums is enough: a few dict copies per job and node, under the lock.
"""

from __future__ import annotations

from scheduler_core.api.snapshot import ClusterSnapshot
from scheduler_core.cache.list_pager import GC_PAUSE
from scheduler_core.cache.state import ClusterState


def sharing_tasks(shared: ClusterSnapshot) -> ClusterSnapshot:
    """``shared`` with its own jobs and nodes around the same task objects: decide on it
    only in a session opened with ``shared_tasks=True``."""
    return shared.around(
        {uid: job.copy_sharing_tasks() for uid, job in shared.jobs.items()},
        {name: node.copy_sharing_tasks() for name, node in shared.nodes.items()},
    )


def loop_snapshot(state: ClusterState) -> ClusterSnapshot:
    """What one cycle decides on, taken with the state's lock held for the copy only (and
    the cyclic collector paused: every object the copy makes lives on, see ``decide``)."""
    with GC_PAUSE.paused(), state.locked():
        return sharing_tasks(state.shared_snapshot())


def anything_unschedulable(state: ClusterState) -> bool:
    """Whether any waiting pod was found unschedulable by kube-scheduler. Preempt and
    reclaim evict only for a waiting pod, and kube-scheduler runs its own preemption only
    after a failed Filter: a pod it has not tried yet may still find room, so until one
    fails a cycle decides nothing, and need not copy anything to find that out. Without
    this a burst of new pods made every cycle order thousands of them, to evict nothing."""
    with state.locked():
        return state.any_unschedulable()
