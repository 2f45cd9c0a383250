"""A scripted `ExtenderBackend` for testing the HTTP layer alone (no engine)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from app.telemetry.metrics import QueueMetrics
from scheduler_core.extender.decisions import FilterResult, NodeVictims
from scheduler_core.extender.prioritize import HostScores


@dataclass(frozen=True)
class Res:
    """A stand-in for the engine's Resource (satisfies `ResourceLike`)."""

    milli_cpu: float = 0.0
    memory: float = 0.0
    scalars: Mapping[str, float] | None = None


Pod = dict[str, Any]


def scripted_scores(*pairs: tuple[str, Any]) -> HostScores:
    """An answer naming these nodes in this order with these scores exactly as given: not
    clipped to 0..10 and of any type, as a buggy backend could leave it, so that the
    route's own checks are what a test sees."""
    answer = HostScores.neutral([name for name, _ in pairs])
    answer.scores = np.array([score for _, score in pairs])
    return answer


def pod_name(pod: Any) -> str:
    """The pod's name, or "" for any shape that has none (generated requests have odd ones)."""
    meta = pod.get("metadata") if isinstance(pod, dict) else None
    name = meta.get("name") if isinstance(meta, dict) else None
    return name if isinstance(name, str) else ""


@dataclass
class FakeBackend:
    """Answers from a script; records every call as (method, pod name, argument).

    Defaults: ready, manages every pod, passes every node, scores 0, echoes the non-empty
    victim lists. `fail` names methods that raise RuntimeError.
    """

    ready: tuple[bool, str] = (True, "")
    managed: bool = True
    filter_fn: Callable[[Pod, list[str]], FilterResult] | None = None
    prioritize_fn: Callable[[Pod, list[str]], HostScores] | None = None
    preempt_fn: Callable[[Pod, dict[str, list[str]]], dict[str, NodeVictims]] | None = None
    queues: list[QueueMetrics] = field(default_factory=list)
    state: dict[str, Any] = field(default_factory=lambda: {"queues": {"default": {"weight": 1}}})
    fail: set[str] = field(default_factory=set)
    calls: list[tuple[str, str, Any]] = field(default_factory=list)

    def _enter(self, method: str, pod: Pod | None, arg: Any = None) -> None:
        self.calls.append((method, pod_name(pod), arg))
        if method in self.fail:
            raise RuntimeError(f"scripted {method} failure")

    def verbs_called(self) -> list[str]:
        return [c[0] for c in self.calls if c[0] in ("filter", "prioritize", "preempt")]

    def readiness(self) -> tuple[bool, str]:
        self._enter("readiness", None)
        return self.ready

    def decode_offered_names(self, data: bytes) -> tuple[str, ...] | None:
        return None  # the service decodes every list itself

    def is_managed(self, pod: Pod) -> bool:
        self._enter("is_managed", pod)
        return self.managed

    def filter(self, pod: Pod, node_names: list[str]) -> FilterResult:
        self._enter("filter", pod, list(node_names))
        if self.filter_fn is not None:
            return self.filter_fn(pod, node_names)
        return FilterResult(passed=list(node_names))

    def prioritize(self, pod: Pod, node_names: list[str]) -> HostScores:
        self._enter("prioritize", pod, list(node_names))
        if self.prioritize_fn is not None:
            return self.prioritize_fn(pod, node_names)
        return HostScores.neutral(node_names)

    def preempt(self, pod: Pod, candidates: dict[str, list[str]]) -> dict[str, NodeVictims]:
        self._enter("preempt", pod, {k: list(v) for k, v in candidates.items()})
        if self.preempt_fn is not None:
            return self.preempt_fn(pod, candidates)
        return {n: NodeVictims(uids=list(u), num_pdb_violations=0) for n, u in candidates.items()}

    def queue_metrics(self) -> list[QueueMetrics]:
        self._enter("queue_metrics", None)
        return self.queues

    def explain(self, pod: Pod) -> dict[str, Any]:
        self._enter("explain", pod)
        return {"pod": pod_name(pod), "queue": "default", "tags": {"a"}}

    def debug_state(self) -> dict[str, Any]:
        self._enter("debug_state", None)
        return self.state
