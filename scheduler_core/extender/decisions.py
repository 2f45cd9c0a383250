"""Plain results of the extender verbs, independent of the wire format."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from scheduler_core.framework.status import Status


@dataclass(slots=True)
class FilterResult:
    """The filter verb's answer, sent as it is: ``passed`` nodes in the order asked (the
    offered sequence itself when every node passed: no copy of thousands of names), and a
    ``Status`` for every rejected node (its code decides FailedNodes or
    FailedAndUnresolvableNodes). A non-empty ``error`` (the caches are not synced yet) makes
    the whole answer an error, naming no node."""

    passed: Sequence[str]
    failed: dict[str, Status] = field(default_factory=dict)
    error: str = ""


@dataclass(slots=True)
class NodeVictims:
    """The preempt verb's answer for one node: victim UIDs most important first (kube-scheduler
    reads ``Pods[0]`` in ``pickOneNodeForPreemption``), the PodDisruptionBudgets they would
    break, and which rules chose them (``None`` when they are kube-scheduler's own, passed
    through for a pod the extender does not manage)."""

    uids: list[str]
    num_pdb_violations: int
    mode: Literal["preempt", "reclaim"] | None = None
