"""A fingerprint of everything a read-only answer must leave as it found it."""

from __future__ import annotations

from typing import Any

from scheduler_core.accounting.keeper import QueueAccounting
from scheduler_core.report import queue_attrs


def fingerprint(acct: QueueAccounting) -> tuple[Any, ...]:
    """Cluster version, every task's status and node, every node's accounting, every job's
    phase, the accounting session's queue figures and the assumed pods."""
    state = acct.state
    with state.locked():
        snap = state.shared_snapshot()
        tasks = sorted(
            (t.key, str(t.status), t.node_name)
            for j in snap.jobs.values()
            for t in j.tasks.values()
        )
        nodes = sorted(
            (n.name, repr(n.idle), repr(n.used), repr(n.pipelined), tuple(sorted(n.tasks)))
            for n in snap.nodes.values()
        )
        jobs = sorted((uid, str(j.phase), len(j.tasks)) for uid, j in snap.jobs.items())
        queues = sorted(
            (name, repr(a.deserved), repr(a.allocated), a.share)
            for name, a in queue_attrs(acct.session()).items()
        )
        return (
            state.version,
            tuple(sorted(state.counts().items())),
            tuple(tasks),
            tuple(nodes),
            tuple(jobs),
            tuple(queues),
            tuple(sorted(acct.assumed)),
        )
