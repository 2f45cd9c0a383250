"""How a queue's deserved share was reached, read from the record the fair-share plugin
kept while it computed it (proportion's passes, capacity's steps)."""

from __future__ import annotations

from dataclasses import dataclass, field

from scheduler_core.framework.session import Session
from scheduler_core.insight.amounts import Amounts, amounts, describe
from scheduler_core.plugins.queue_attr import DerivationStep, FillRound

#: What held a queue's deserved share where it ended.
BOUND_REQUEST = "request"
BOUND_CAPABILITY = "capability"
BOUND_GUARANTEE = "guarantee"
BOUND_SHARE = "weighted share of what remained"
BOUND_SPEC = "spec.deserved"
BOUND_NONE = "no jobs"


@dataclass(slots=True)
class DerivationRound:
    """One pass of proportion's loop as it concerned this queue, or one step of capacity's
    computation (then only ``label``, ``deserved`` and ``clamped`` are set)."""

    round: int
    label: str
    deserved: Amounts | None
    clamped: dict[str, list[str]] = field(default_factory=dict)
    remaining: Amounts | None = None
    total_weight: int | None = None
    weight: int | None = None
    before: Amounts | None = None
    offered: Amounts | None = None
    met: str = ""


@dataclass(slots=True)
class Derivation:
    plugin: str
    rounds: list[DerivationRound]
    bound_by: str
    summary: str


def queue_derivation(ssn: Session, queue: str) -> Derivation:
    plugin = ssn.plugins.get("proportion")
    rounds = getattr(plugin, "derivation", None)
    if plugin is not None and isinstance(rounds, list):
        return _proportion(queue, rounds)
    plugin = ssn.plugins.get("capacity")
    steps = getattr(plugin, "derivation", None)
    if plugin is not None and isinstance(steps, dict):
        return _capacity(queue, steps.get(queue))
    return Derivation("", [], BOUND_NONE, "no fair-share plugin (proportion, capacity) is on")


def _proportion(queue: str, rounds: list[FillRound]) -> Derivation:
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
            "proportion", [], BOUND_NONE, f"queue {queue} has no jobs: proportion gives it nothing"
        )
    last = out[-1]
    bound = _proportion_bound(last)
    return Derivation(
        "proportion",
        out,
        bound,
        f"deserved {describe(last.deserved)} after {len(out)} pass(es) of the weighted "
        f"water-filling; bound by its {bound}",
    )


def _proportion_bound(last: DerivationRound) -> str:
    """The request wins when the queue has everything it asked for; else the last clamp
    that moved it (guarantee raises, capability and request cap); else its share."""
    if last.met == "request":
        return BOUND_REQUEST
    for name in (BOUND_GUARANTEE, BOUND_CAPABILITY, BOUND_REQUEST):
        if last.clamped.get(name):
            return name
    if last.met == "capability":
        return BOUND_CAPABILITY
    return BOUND_SHARE


def _capacity(queue: str, steps: list[DerivationStep] | None) -> Derivation:
    if not steps:
        return Derivation(
            "capacity", [], BOUND_NONE, f"queue {queue} has no capacity attributes this session"
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
    bound = BOUND_SPEC
    for step in steps:
        if step.changed and step.label.startswith("deserved"):
            bound = BOUND_GUARANTEE if "guarantee" in step.label else BOUND_CAPABILITY
    deserved = next(
        (r.deserved for r in reversed(out) if r.label.startswith(("deserved", "spec"))), None
    )
    return Derivation(
        "capacity",
        out,
        bound,
        f"deserved {describe(deserved)}: its spec.deserved, capped by the real capability "
        f"and raised to the guarantee; bound by its {bound}",
    )
