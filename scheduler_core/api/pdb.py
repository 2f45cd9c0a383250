"""PodDisruptionBudget, reduced to what victim selection needs to count violations."""

from __future__ import annotations

from dataclasses import dataclass, field

from scheduler_core.api.task import NodeSelectorRequirement


@dataclass(slots=True)
class PodDisruptionBudget:
    name: str
    namespace: str
    match_labels: dict[str, str] = field(default_factory=dict)
    match_expressions: tuple[NodeSelectorRequirement, ...] = ()
    disruptions_allowed: int = 0
    selects_nothing: bool = False

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    def matches(self, namespace: str, labels: dict[str, str]) -> bool:
        """Label-selector semantics of policy/v1: an empty selector selects every pod."""
        if self.selects_nothing or namespace != self.namespace:
            return False
        for k, v in self.match_labels.items():
            if labels.get(k) != v:
                return False
        for req in self.match_expressions:
            present = req.key in labels
            value = labels.get(req.key, "")
            op = req.operator
            if op == "In" and not (present and value in req.values):
                return False
            if op == "NotIn" and present and value in req.values:
                return False
            if op == "Exists" and not present:
                return False
            if op == "DoesNotExist" and present:
                return False
        return True
