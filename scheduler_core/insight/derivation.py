"""How a queue's deserved share was reached, read from the record the fair-share plugin
kept while it computed it (proportion's passes, capacity's steps)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from scheduler_core.framework.session import Session
from scheduler_core.insight.amounts import Amounts, amounts, describe
from scheduler_core.insight.described import described
from scheduler_core.plugins.fairshare.attrs import DerivationStep, FillRound

#: What held a queue's deserved share where it ended.
BOUND_REQUEST = "request"
BOUND_CAPABILITY = "capability"
BOUND_GUARANTEE = "guarantee"
BOUND_SHARE = "weighted share of what remained"
BOUND_SPEC = "spec.deserved"


@dataclass(slots=True)
class DerivationRound:
    """One pass of proportion's loop as it concerned this queue, or one step of capacity's
    computation (then only ``label``, ``deserved`` and ``clamped`` are set)."""

    round: int
    label: str
    deserved: Amounts | None
    clamped: dict[str, list[str]] = field(
        default_factory=dict,
        metadata=described("clamp (capability, request, guarantee) -> dimensions"),
    )
    remaining: Amounts | None = field(
        default=None, metadata=described("left to hand out at the pass start")
    )
    total_weight: int | None = None
    weight: int | None = None
    before: Amounts | None = None
    offered: Amounts | None = field(
        default=None, metadata=described("before + weighted share of remaining")
    )
    met: str = field(default="", metadata=described('"request", "capability" or empty'))


@dataclass(slots=True)
class Derivation:
    """How proportion's passes or capacity's steps reached a queue's deserved share."""

    plugin: str
    rounds: list[DerivationRound]
    bound_by: dict[str, str] = field(
        metadata=described("resource -> what held its deserved amount")
    )
    summary: str


def queue_derivation(ssn: Session, queue: str) -> Derivation:
    plugin = ssn.plugins.get("proportion")
    rounds = getattr(plugin, "derivation", None)
    if plugin is not None and isinstance(rounds, Sequence):
        return _proportion(queue, rounds)
    plugin = ssn.plugins.get("capacity")
    steps = getattr(plugin, "derivation", None)
    if plugin is not None and isinstance(steps, dict):
        return _capacity(queue, steps.get(queue))
    return Derivation("", [], {}, "no fair-share plugin (proportion, capacity) is on")


def _proportion(queue: str, rounds: Sequence[FillRound]) -> Derivation:
    out: list[DerivationRound] = []
    for record in rounds:
        for step in record.steps:
            if step.queue != queue:
                continue
            out.append(
                DerivationRound(
                    round=record.index,
                    label=f"pass {record.index}",
                    deserved=amounts(step.deserved),
                    clamped=dict(step.clamped),
                    remaining=amounts(record.remaining),
                    total_weight=record.total_weight,
                    weight=step.weight,
                    before=amounts(step.before),
                    offered=amounts(step.offered),
                    met=step.met,
                )
            )
    if not out:
        return Derivation(
            "proportion", [], {}, f"queue {queue} has no jobs: proportion gives it nothing"
        )
    last = out[-1]
    bound = _bounds(out, BOUND_SHARE)
    return Derivation(
        "proportion",
        out,
        bound,
        f"deserved {describe(last.deserved)} after {len(out)} pass(es) of the weighted "
        f"water-filling; {_bound_text(bound)}",
    )


def _bounds(rounds: list[DerivationRound], default: str) -> dict[str, str]:
    """Per resource, the latest clamp that moved it (a guarantee raise before a capability
    cap before a request cap within one step); else ``default`` (its weighted share)."""
    dims = dict.fromkeys(name for r in rounds for name in (r.deserved or {}))
    out: dict[str, str] = {}
    for dim in dims:
        out[dim] = default
        for r in reversed(rounds):
            hit = next(
                (
                    _clamp_name(name)
                    for name, changed in sorted(r.clamped.items(), key=_clamp_rank)
                    if dim in changed
                ),
                None,
            )
            if hit is not None:
                out[dim] = hit
                break
    return out


def _clamp_rank(item: tuple[str, list[str]]) -> int:
    name = _clamp_name(item[0])
    return [BOUND_GUARANTEE, BOUND_CAPABILITY, BOUND_REQUEST].index(name)


def _clamp_name(label: str) -> str:
    if "guarantee" in label:
        return BOUND_GUARANTEE
    if "capab" in label:
        return BOUND_CAPABILITY
    return BOUND_REQUEST


def _bound_text(bound: dict[str, str]) -> str:
    return "bound by: " + "; ".join(f"{dim}: its {what}" for dim, what in bound.items())


def _capacity(queue: str, steps: list[DerivationStep] | None) -> Derivation:
    if not steps:
        return Derivation(
            "capacity", [], {}, f"queue {queue} has no capacity attributes this session"
        )
    out = [
        DerivationRound(
            round=i + 1,
            label=step.label,
            deserved=amounts(step.value),
            clamped={step.label: list(step.changed)} if step.changed else {},
        )
        for i, step in enumerate(steps)
    ]
    deserving = [r for r in out if r.label.startswith(("deserved", "spec"))]
    bound = _bounds(deserving, BOUND_SPEC)
    deserved = deserving[-1].deserved if deserving else None
    return Derivation(
        "capacity",
        out,
        bound,
        f"deserved {describe(deserved)}: its spec.deserved, capped by the real capability "
        f"and raised to the guarantee; {_bound_text(bound)}",
    )
