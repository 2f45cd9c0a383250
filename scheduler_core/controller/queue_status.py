"""A Queue's status as Volcano writes it: ``allocated`` (the scheduler's ``updateQueueStatus``),
the PodGroup counters by phase and ``state`` (the queue controller's), computed from the engine.

``state`` is only ever filled in when it is empty (``Open``): ``Closed`` or ``Closing`` is a
person's or another controller's decision and is never overwritten.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from scheduler_core.api.resource import Resource

from .podgroup_status import COMPLETED, INQUEUE, PENDING, RUNNING, UNKNOWN

#: Queue status counter field -> the PodGroup phase it counts.
COUNTERS: Final = {
    "pending": PENDING,
    "running": RUNNING,
    "inqueue": INQUEUE,
    "completed": COMPLETED,
    "unknown": UNKNOWN,
}
OPEN: Final = "Open"


def _quantity(value: float, milli: bool) -> str:
    """A Kubernetes quantity: whole units when exact, else milli-units (cpu ``1500m``)."""
    if milli:
        millis = round(value * 1000)
        return str(millis // 1000) if millis % 1000 == 0 else f"{millis}m"
    return str(round(value))


def resource_list(resource: Resource) -> dict[str, str]:
    """``cpu``, ``memory`` and scalar resources as a ResourceList (Volcano's
    ``ConvertResourceToResourceList``)."""
    out: dict[str, str] = {}
    for name, value in resource.to_quantities().items():
        out[name] = _quantity(value, milli=name not in ("memory", "pods"))
    return out


def status_patch(
    current: Mapping[str, Any], allocated: Resource, phases: Mapping[str, int]
) -> dict[str, Any]:
    """The fields of ``status`` that differ from ``current`` (empty: nothing to write)."""
    wanted: dict[str, Any] = {"allocated": resource_list(allocated)}
    for field, phase in COUNTERS.items():
        wanted[field] = int(phases.get(phase, 0))
    if not current.get("state"):
        wanted["state"] = OPEN
    patch: dict[str, Any] = {}
    for field, value in wanted.items():
        if field == "allocated":
            old = current.get("allocated")
            if _same_resources(old, value):
                continue
            if isinstance(old, dict):  # a merge patch removes a key only when told to
                value = {**dict.fromkeys(k for k in old if k not in value), **value}
        elif current.get(field, 0 if field in COUNTERS else None) == value:
            continue
        patch[field] = value
    return patch


def _same_resources(current: Any, wanted: dict[str, str]) -> bool:
    if not isinstance(current, dict):
        return False
    return {k: str(v) for k, v in current.items()} == wanted
