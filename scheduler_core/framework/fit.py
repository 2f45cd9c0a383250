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
    #: The engine cannot judge whether the pod fits (an unbound claim, a volume or device
    #: it does not model, scheduling gates): kube-scheduler may still place it, but the
    #: engine never evicts for it, since it cannot know the eviction would help.
    NOT_EVALUABLE = "NotEvaluable"


#: Codes that make a node useless even for preemption: evicting pods cannot fix them, or
#: (``NOT_EVALUABLE``) nobody here can tell whether it would.
HARD_CODES = frozenset(
    {
        FitCode.UNSCHEDULABLE_AND_UNRESOLVABLE,
        FitCode.ERROR,
        FitCode.SKIP,
        FitCode.WAIT,
        FitCode.NOT_EVALUABLE,
    }
)


@dataclass(slots=True)
class FitError:
    """A predicate's verdict for one (task, node), kube-scheduler's ``Status`` shape: a
    code, ``reasons`` for people, and the ``plugin`` (filter) that said it."""

    task: str
    node: str
    code: FitCode
    reasons: list[str] = field(default_factory=list)
    plugin: str = ""

    def unresolvable(self) -> bool:
        return self.code in HARD_CODES

    @property
    def not_evaluable(self) -> bool:
        return self.code is FitCode.NOT_EVALUABLE

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
