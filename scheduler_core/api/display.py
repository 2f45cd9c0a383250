"""Resources as the sentences people read show them (filter reasons, explain, events)."""

from __future__ import annotations

from scheduler_core.api.resource import Resource


def dims(resource: Resource, *, skip_zero: bool = False) -> str:
    """``cpu 2, memory 4Gi, nvidia.com/gpu 1``; the pod-slot dimension is left out (it is
    the predicates' business), and with ``skip_zero`` so is every empty dimension."""
    parts = []
    for name, value in resource.to_quantities().items():
        if name == "pods" or (skip_zero and not value):
            continue
        parts.append(f"{name} {value:g}" if name != "memory" else f"memory {value / 2**30:.3g}Gi")
    return ", ".join(parts) or "nothing"
