"""A PodGroup's status as Volcano's scheduler sets it, computed from what the engine knows.

The phase follows Volcano's ``jobStatus`` (``pkg/scheduler/framework/job_updater.go`` and
``session.go``, https://github.com/volcano-sh/volcano):

* some members Running while the gang is unschedulable this cycle -> ``Unknown``;
* scheduled members (Running, Bound, Succeeded, Failed, and Releasing ones still on a node)
  >= minMember -> ``Running``, or ``Completed`` once every scheduled member finished;
* otherwise ``Inqueue`` if the queue admitted the job (enqueue's gate) or it already was
  ``Inqueue``, else ``Pending``.

Conditions are kept per type as Volcano's ``UpdatePodGroupCondition`` keeps them; a condition
whose status, reason and message did not change keeps its ``lastTransitionTime`` (Volcano
compares them without the time, so the time of the first such condition is what stays).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

PENDING: Final = "Pending"
INQUEUE: Final = "Inqueue"
RUNNING: Final = "Running"
UNKNOWN: Final = "Unknown"
COMPLETED: Final = "Completed"
PHASES: Final = (PENDING, INQUEUE, RUNNING, UNKNOWN, COMPLETED)

UNSCHEDULABLE: Final = "Unschedulable"
SCHEDULED: Final = "Scheduled"
#: Volcano's reason on the Scheduled condition (gang.go OnSessionClose).
SCHEDULED_REASON: Final = "tasks in gang are ready to be scheduled"
#: Volcano's condition reasons (apis/pkg/apis/scheduling/v1beta1/types.go).
NOT_ENOUGH_RESOURCES: Final = "NotEnoughResources"
NOT_ENOUGH_TASKS: Final = "NotEnoughTasks"
#: The network domain a topology gang lands in, on its PodGroup (an annotation rather than
#: a status field: Volcano's PodGroup status has no such field, and a condition would be
#: rewritten by Volcano's own controllers where they run too).
TOPOLOGY_DOMAIN_ANNOTATION: Final = "kube-queue-extender.io/topology-domain"


@dataclass(frozen=True, slots=True)
class Hold:
    """Why the gang cannot start now: a Volcano condition reason and the engine's sentence."""

    reason: str
    message: str


@dataclass(frozen=True, slots=True)
class PodGroupFacts:
    """What the engine sees of one PodGroup in one cycle."""

    min_member: int
    scheduled: int  # Volcano's ScheduledTaskNum + ReleasingScheduledTaskNum
    running: int
    succeeded: int
    failed: int
    ready: bool  # Volcano's JobInfo.IsReady: enough members hold resources to run the gang
    admitted: bool  # the queue lets it in (enqueue's gate)
    hold: Hold | None = None  # set when the gang is not ready and a queue or gang rule holds it
    #: The network domain of a gang that asks for one (``TOPOLOGY_DOMAIN_ANNOTATION``).
    domain: str | None = None


def next_phase(current: str, facts: PodGroupFacts) -> str:
    if facts.running > 0 and facts.hold is not None:
        return UNKNOWN
    if facts.scheduled >= facts.min_member and facts.scheduled > 0:
        finished = facts.succeeded + facts.failed
        return COMPLETED if finished == facts.scheduled else RUNNING
    if current == INQUEUE or facts.admitted:
        return INQUEUE
    return PENDING


def next_conditions(
    current: list[dict[str, Any]], facts: PodGroupFacts, now: str
) -> list[dict[str, Any]]:
    """``current`` with the Unschedulable and Scheduled conditions brought up to date.

    Unschedulable is True with the hold's reason while a rule holds the gang, and turns False
    once the gang is ready (Volcano leaves a stale True there; a person reading ``kubectl
    describe`` should not see one). Scheduled is True once the gang is ready.
    """
    wanted: dict[str, tuple[str, str, str]] = {}
    if facts.hold is not None:
        wanted[UNSCHEDULABLE] = ("True", facts.hold.reason, facts.hold.message)
    elif facts.ready and any(c.get("type") == UNSCHEDULABLE for c in current):
        wanted[UNSCHEDULABLE] = ("False", SCHEDULED, "")
    if facts.ready:
        wanted[SCHEDULED] = ("True", SCHEDULED_REASON, "")
    out: list[dict[str, Any]] = []
    for condition in current:
        ctype = condition.get("type")
        if ctype not in wanted:
            out.append(condition)
            continue
        out.append(_condition(condition, ctype, *wanted.pop(ctype), now))
    for ctype, values in wanted.items():
        out.append(_condition(None, ctype, *values, now))
    return out


def _condition(
    old: dict[str, Any] | None, ctype: str, status: str, reason: str, message: str, now: str
) -> dict[str, Any]:
    same = (
        old is not None
        and old.get("status") == status
        and (old.get("reason") or "") == reason
        and (old.get("message") or "") == message
    )
    if same and old is not None:
        return old
    condition: dict[str, Any] = {
        "type": ctype,
        "status": status,
        "lastTransitionTime": now,
        "reason": reason,
    }
    if message:
        condition["message"] = message
    if old is not None and old.get("transitionID"):
        condition["transitionID"] = old["transitionID"]
    return condition


def next_status(current: dict[str, Any], facts: PodGroupFacts, now: str) -> dict[str, Any]:
    """The whole new ``status``: fields this module does not own are kept as they are."""
    status = dict(current)
    status["phase"] = next_phase(str(current.get("phase") or PENDING), facts)
    conditions = next_conditions(list(current.get("conditions") or []), facts, now)
    if conditions:
        status["conditions"] = conditions
    for name, value in (
        ("running", facts.running),
        ("succeeded", facts.succeeded),
        ("failed", facts.failed),
    ):
        if value or name in status:
            status[name] = value
    return status
