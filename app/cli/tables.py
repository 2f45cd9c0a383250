"""kubectl-style plain-text tables, shared by ``simulate`` and the query commands."""

from __future__ import annotations

from collections.abc import Mapping

from scheduler_core.insight.amounts import memory_text


def fmt_bytes(value: float) -> str:
    """The spelling the API's sentences and the status page use too."""
    return memory_text(value)


def fmt_resources(values: Mapping[str, float | None] | None) -> str:
    """``cpu=4,memory=8Gi``; ``<none>`` for no list, ``unlimited`` for a null amount."""
    if values is None:
        return "<none>"
    parts = []
    for name, value in values.items():
        if name == "pods":
            continue
        if value is None:
            parts.append(f"{name}=unlimited")
        elif name == "memory":
            parts.append(f"memory={fmt_bytes(value)}")
        else:
            parts.append(f"{name}={value:g}")
    return ",".join(parts) or "0"


def table(headers: list[str], rows: list[list[str]]) -> str:
    widths = [len(h) for h in headers]
    for row in rows:
        widths = [max(w, len(c)) for w, c in zip(widths, row, strict=True)]
    lines = [
        "   ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip()
        for r in [headers, *rows]
    ]
    return "\n".join(lines) + "\n"
