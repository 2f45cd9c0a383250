"""Predicate results: why a task does not fit a node, with kube-scheduler's status codes."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field


class FitCode(enum.Enum):
    UNSCHEDULABLE = "Unschedulable"
    UNSCHEDULABLE_AND_UNRESOLVABLE = "UnschedulableAndUnresolvable"
    ERROR = "Error"
    SKIP = "Skip"
    WAIT = "Wait"


#: Codes that make a node useless even for preemption: evicting pods cannot fix them.
HARD_CODES = frozenset(
    {FitCode.UNSCHEDULABLE_AND_UNRESOLVABLE, FitCode.ERROR, FitCode.SKIP, FitCode.WAIT}
)


@dataclass(slots=True)
class FitError:
    """A predicate's verdict for one (task, node); ``reasons`` are for people."""

    task: str
    node: str
    code: FitCode
    reasons: list[str] = field(default_factory=list)

    def unresolvable(self) -> bool:
        return self.code in HARD_CODES

    def __str__(self) -> str:
        return f"task {self.task} on node {self.node}: {', '.join(self.reasons) or self.code.value}"


@dataclass(slots=True)
class ValidateResult:
    """A failed JobValid check (gang): the reason code and a message for the PodGroup."""

    passed: bool
    reason: str = ""
    message: str = ""


# Vote codes: of the JobPipelined / JobEnqueueable hooks (in a ``Vote``) and of the victim
# hooks (beside their victims; ABSTAIN there means "this plugin does not take part").
PERMIT = 1
ABSTAIN = 0
REJECT = -1


@dataclass(frozen=True, slots=True)
class Vote:
    """A plugin's answer to "may this job be enqueued / pipelined", with the plugin's own
    reason for a rejection (kube-scheduler's ``Status``: a code and why), so whoever shows
    the refusal to a person does not have to guess it again."""

    code: int
    reason: str = ""

    @property
    def rejected(self) -> bool:
        return self.code < 0


PERMITTED = Vote(PERMIT)
ABSTAINED = Vote(ABSTAIN)
