"""Gang validity and the enqueue/pipelined votes (why a task does not fit a node is a
``status.Status``)."""

from __future__ import annotations

from dataclasses import dataclass


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
