"""One verdict type, kube-scheduler's ``Status``: a code, reasons for people, and who said it.

A "why not" travels from a predicate or the extender's queue check, through the engine,
to the wire encoder and to explain. Saying it one way everywhere means the rule that turns a
verdict into kube-scheduler's ``FailedNodes`` or ``FailedAndUnresolvableNodes`` lives in
one place (``Status.resolvable``), and nobody has to translate between shapes on the way.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field


class Code(enum.Enum):
    SUCCESS = "Success"
    #: Evicting pods (preemption or reclaim) may make room.
    UNSCHEDULABLE = "Unschedulable"
    #: Evicting pods cannot help (a closed queue, a volume zone, a node selector).
    UNSCHEDULABLE_AND_UNRESOLVABLE = "UnschedulableAndUnresolvable"
    ERROR = "Error"
    SKIP = "Skip"
    WAIT = "Wait"
    #: The engine cannot judge whether the pod fits (an unbound claim, a volume or device
    #: it does not model, scheduling gates): kube-scheduler may still place it, but the
    #: engine never evicts for it, since it cannot know the eviction would help.
    NOT_EVALUABLE = "NotEvaluable"


@dataclass(frozen=True, slots=True)
class Status:
    """A verdict: ``code``, ``reasons`` for people, and the ``plugin`` that said it.

    ``reason_code`` is short and stable (e.g. "queue-overused") for the rejection metric and
    the parked-pod bookkeeping, since the human reasons carry numbers and would explode
    label cardinality. ``task`` and ``node`` say which pair a predicate judged, for logs;
    they are empty where the verdict is about the pod alone.
    """

    code: Code = Code.SUCCESS
    reasons: list[str] = field(default_factory=list)
    plugin: str = ""
    reason_code: str = ""
    task: str = ""
    node: str = ""

    @property
    def is_success(self) -> bool:
        return self.code is Code.SUCCESS

    @property
    def resolvable(self) -> bool:
        """Whether evicting pods may change the answer: only a plain ``Unschedulable``.
        Every other failure (unresolvable, an error, a skip or wait, a pod the engine cannot
        judge) makes the node useless even for preemption."""
        return self.code is Code.UNSCHEDULABLE

    @property
    def not_evaluable(self) -> bool:
        return self.code is Code.NOT_EVALUABLE

    @property
    def message(self) -> str:
        """The reasons in one line, as kube-scheduler's extender protocol carries them per
        node (empty when none was given)."""
        return ", ".join(self.reasons)

    def __str__(self) -> str:
        said = self.message or self.code.value
        if self.task or self.node:
            return f"task {self.task} on node {self.node}: {said}"
        return said


SUCCESS = Status()


def unschedulable(reason_code: str, reason: str, *, resolvable: bool) -> Status:
    """A rejection with one reason, its metric code, and whether eviction may help."""
    code = Code.UNSCHEDULABLE if resolvable else Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    return Status(code, [reason], reason_code=reason_code)
