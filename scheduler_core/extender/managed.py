"""Which pods the extender decides for.

kube-scheduler shares its extenders across every profile, so a call can be for a pod another
scheduler profile owns; those pass through every verb unchanged (but still count in node and
queue usage).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from scheduler_core.cache.convert import GROUP_NAME_ANNOTATION, QUEUE_NAME_ANNOTATION


@dataclass(frozen=True, slots=True)
class ManagedPods:
    """A pod is managed when its ``spec.schedulerName`` is one of ``scheduler_names``, or,
    with ``manage_annotated``, when it names a PodGroup or a queue; ``namespaces``, when
    given, limits both to those namespaces."""

    scheduler_names: tuple[str, ...] = ("queue-scheduler",)
    manage_annotated: bool = False
    namespaces: tuple[str, ...] = ()

    def __call__(self, pod: dict[str, Any]) -> bool:
        meta = pod.get("metadata")
        if not isinstance(meta, dict):
            meta = {}
        if self.namespaces:
            namespace = (meta or {}).get("namespace") or "default"
            if namespace not in self.namespaces:
                return False
        spec = pod.get("spec")
        if not isinstance(spec, dict):
            spec = {}
        scheduler = (spec or {}).get("schedulerName") or "default-scheduler"
        if scheduler in self.scheduler_names:
            return True
        if self.manage_annotated:
            annotations = (meta or {}).get("annotations") or {}
            return isinstance(annotations, dict) and bool(
                annotations.get(GROUP_NAME_ANNOTATION) or annotations.get(QUEUE_NAME_ANNOTATION)
            )
        return False
