"""Plain results of the extender verbs, independent of the wire format."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal


@dataclass(slots=True)
class Rejection:
    """Why a pod cannot go anywhere now: ``code`` is short and stable (for metrics), the
    ``reason`` is for the person reading the pod's events; ``resolvable`` says whether
    preemption or reclaim could change the answer."""

    code: str
    reason: str
    resolvable: bool


@dataclass(slots=True)
class FilterResult:
    passed: list[str]
    failed: dict[str, Rejection] = field(default_factory=dict)


@dataclass(slots=True)
class NodeVictims:
    """The preempt verb's answer for one node: victim UIDs most important first (kube-scheduler
    reads ``Pods[0]`` in ``pickOneNodeForPreemption``), the PodDisruptionBudgets they would
    break, and which rules chose them (``None`` when they are kube-scheduler's own, passed
    through for a pod the extender does not manage)."""

    uids: list[str]
    num_pdb_violations: int
    mode: Literal["preempt", "reclaim"] | None = None
