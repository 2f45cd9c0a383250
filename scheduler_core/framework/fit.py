"""The enqueue / pipelined / allocatable votes.

A vote stays its own type rather than a ``status.Status``: it is three-valued (permit,
abstain, reject) and folded tier by tier (a permit in one tier decides, an abstention passes
to the next), and the victim hooks share its integer codes, where ABSTAIN means "this plugin
does not take part". kube-scheduler's Status has no permit-versus-abstain distinction; the
refusing vote's reason becomes a ``Status`` where the extender reports it (``check_pod``).
"""

from __future__ import annotations

from dataclasses import dataclass

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
