"""Resources as the answers show them: Kubernetes units, unlimited as ``None``."""

from __future__ import annotations

from scheduler_core.api.resource import Resource

#: Amounts at or above these are the engine's stand-ins for "no limit" (max float, or max
#: int64 milli-units): 8 EiB of memory, 9 quadrillion cores or devices.
UNLIMITED_BYTES = 9e18
UNLIMITED_UNITS = 9e15

Amounts = dict[str, float | None]


def amounts(resource: Resource | None) -> Amounts | None:
    """cores, bytes and scalar units; the pod-slot count is left out (it is node bookkeeping,
    not something a queue is charged or limited by)."""
    if resource is None:
        return None
    out: Amounts = {}
    for name, value in resource.to_quantities().items():
        if name == "pods":
            continue
        limit = UNLIMITED_BYTES if name == "memory" else UNLIMITED_UNITS
        out[name] = None if value >= limit else round(value, 6)
    return out


def describe(values: Amounts | None) -> str:
    """``cpu 4, memory 8Gi`` for sentences."""
    if not values:
        return "nothing"
    parts = []
    for name, value in values.items():
        if value is None:
            parts.append(f"{name} unlimited")
        elif name == "memory":
            parts.append(f"memory {memory_text(value)}")
        else:
            parts.append(f"{name} {value:g}")
    return ", ".join(parts)


def memory_text(value: float) -> str:
    """Bytes in the largest binary unit they reach (``128Mi``, ``1.5Gi``), four significant
    digits: one spelling for the sentences, the status page and the CLI's tables, so a person
    comparing them compares like with like."""
    for unit, size in (("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10)):
        if value >= size:
            return f"{value / size:.4g}{unit}"
    return f"{value:g}"
