"""A cluster state + queue accounting built from plain Kubernetes dicts, with a fake clock."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from scheduler_core.cache.objects import collect
from scheduler_core.cache.state import ClusterState
from scheduler_core.conf import default_configuration, load_configuration
from scheduler_core.extender.accounting import QueueAccounting


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def accounting(
    objects: Iterable[Mapping[str, Any]], conf_text: str | None = None, ttl: float = 30.0
) -> tuple[QueueAccounting, Clock]:
    state = ClusterState()
    state.apply_objects(collect(objects))
    conf = load_configuration(conf_text) if conf_text else default_configuration()
    clock = Clock()
    return QueueAccounting(state, conf, assume_ttl=ttl, clock=clock), clock
