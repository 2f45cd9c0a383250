"""Until every informer has synced, no verb decides: an empty cache makes every queue look
idle and every node free, and an answer built on it could place or evict the wrong pods."""

from __future__ import annotations

from typing import Any

from app.backend.engine import EngineBackend
from scheduler_core.cache.objects import collect
from scheduler_core.cache.state import ClusterState
from scheduler_core.conf import default_configuration
from tests.builders import node, pod, queue


class Informers:
    registry = None

    def __init__(self) -> None:
        self.synced = False

    def readiness(self) -> tuple[bool, str]:
        return (True, "synced") if self.synced else (False, "waiting for initial sync: pods")


def backend() -> tuple[EngineBackend, Informers]:
    state = ClusterState()
    state.apply_objects(collect([node("n1"), queue("q"), pod("p", queue="q")]))
    informers = Informers()
    return EngineBackend(state, default_configuration(), informers=informers), informers


def managed(name: str) -> dict[str, Any]:
    return pod(name, queue="q")


def test_filter_answers_an_error_naming_the_sync_until_synced_then_decides() -> None:
    engine, informers = backend()
    decision = engine.filter(managed("p"), ["n1"])
    assert decision.passed == [] and not decision.failed
    assert "not synced" in decision.error and "waiting for initial sync: pods" in decision.error
    assert engine.accounting.assumed == {}, "nothing is assumed on an unsynced cache"
    informers.synced = True
    assert engine.filter(managed("p"), ["n1"]).passed == ["n1"]


def test_preempt_names_no_victims_and_prioritize_scores_alike_until_synced() -> None:
    engine, _ = backend()
    assert engine.preempt(managed("p"), {"n1": []}) == {}
    assert list(engine.prioritize(managed("p"), ["n1"])) == [("n1", 0)]
