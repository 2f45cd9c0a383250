"""Every hook a plugin can fill, declared once: its name, the type of function it takes, and
the tier flag (a ``PluginOption`` flag of the configuration) that switches it on.

Volcano's session keeps one map per hook (``jobOrderFns``, ``preemptableFns``, ...) and each
dispatcher names its flag by hand; kube-scheduler declares one typed interface per extension
point instead (``pkg/scheduler/framework/interface.go``). Here a plugin registers with
``ssn.add_hook(PREEMPTABLE, self.name, fn)``: a misspelled hook is an ``AttributeError`` at
import, a misspelled flag a ``ValueError`` when this module loads, and mypy checks ``fn``
against the hook's function type.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from scheduler_core.api.job import JobInfo
from scheduler_core.api.node import NodeInfo
from scheduler_core.api.queue import QueueInfo
from scheduler_core.api.resource import Resource
from scheduler_core.api.task import TaskInfo
from scheduler_core.conf import PLUGIN_FLAGS
from scheduler_core.framework.fit import Vote
from scheduler_core.framework.status import Status

F = TypeVar("F")


class CycleState(dict[str, Any]):
    """Per-preemptor scratch state of the plugins for simulated (dry-run) preemption,
    keyed by plugin name (Volcano's ``k8sframework.CycleState``)."""

    def clone(self) -> CycleState:
        copied = CycleState()
        for name, state in self.items():
            copied[name] = state.clone() if hasattr(state, "clone") else state
        return copied


@dataclass(slots=True)
class QueueShare:
    """A queue's allocation and its deserved share as the fair-share plugin sees them now
    (evictions and placements of the running session included)."""

    allocated: Resource
    deserved: Resource
    #: The deserved share on the queues' unadjusted weights, when a plugin moved the weights
    #: for the queues' past usage (None: deserved is the weighted share), and in words
    #: what moved it ("its usage over the last 7d (half-life)").
    weighted: Resource | None = None
    moved_by: str = ""


@dataclass(frozen=True, slots=True)
class WeightAdjustment:
    """How a queue's weight is to be changed before the fair-share plugin works deserved
    shares out, and why (a plugin that weighs the queues' past against their weights).

    ``factor`` multiplies the weight (1: unchanged); ``floor`` is the fraction of the
    deserved share the unchanged weights give that the queue keeps whatever the factor;
    ``usage`` is the queue's usage share and ``weight_share`` its weight share, both in
    [0, 1], as the factor was derived from them; ``reason`` says in words what moved it
    ("its usage over the last 7d")."""

    factor: float
    floor: float
    usage: float
    weight_share: float
    reason: str


@dataclass(frozen=True, slots=True, eq=False)
class Hook(Generic[F]):
    """One extension point. ``flag`` is the tier option that must be on for a plugin's
    function to be asked (None: asked whenever the plugin is in a tier). An untiered hook
    (``tiered=False``) is asked for every plugin that filled it, whatever the tiers say;
    the session decides separately which of those take part (see ``Session.simulating``)."""

    name: str
    flag: str | None
    tiered: bool = True

    def __post_init__(self) -> None:
        if self.flag is not None and self.flag not in PLUGIN_FLAGS:
            raise ValueError(f"hook {self.name}: unknown tier flag {self.flag!r}")

    def __repr__(self) -> str:
        return f"Hook({self.name})"


CompareFn = Callable[[Any, Any], int]
VictimsFn = Callable[[TaskInfo, list[TaskInfo]], tuple[list[TaskInfo], int]]
PredicateFn = Callable[[TaskInfo, NodeInfo], Status | None]
SimulateTaskFn = Callable[[CycleState, TaskInfo, TaskInfo, NodeInfo], None]

# ordering
JOB_ORDER: Hook[CompareFn] = Hook("jobOrder", "enableJobOrder")
#: A plugin's job order as one value per job, ascending (what sorts first goes first): the
#: plugin's ``JOB_ORDER`` compare of two jobs must be the comparison of their keys. A plugin
#: that fills ``JOB_ORDER`` without this leaves the session comparing pair by pair.
JOB_ORDER_KEY: Hook[Callable[[JobInfo], Any]] = Hook("jobOrderKey", "enableJobOrder")
QUEUE_ORDER: Hook[CompareFn] = Hook("queueOrder", "enableQueueOrder")
VICTIM_QUEUE_ORDER: Hook[Callable[[QueueInfo, QueueInfo, QueueInfo], int]] = Hook(
    "victimQueueOrder", None
)
TASK_ORDER: Hook[CompareFn] = Hook("taskOrder", "enableTaskOrder")

# predicates and node order
PREDICATE: Hook[PredicateFn] = Hook("predicate", "enablePredicate")
PRE_PREDICATE: Hook[Callable[[TaskInfo], str | None]] = Hook("prePredicate", "enablePredicate")
NODE_ORDER: Hook[Callable[[TaskInfo, NodeInfo], float]] = Hook("nodeOrder", "enableNodeOrder")
BATCH_NODE_ORDER: Hook[Callable[[TaskInfo, list[NodeInfo]], Mapping[str, float]]] = Hook(
    "batchNodeOrder", "enableNodeOrder"
)

# victims
PREEMPTABLE: Hook[VictimsFn] = Hook("preemptable", "enablePreemptable")
RECLAIMABLE: Hook[VictimsFn] = Hook("reclaimable", "enableReclaimable")
#: What a plugin's ``PREEMPTABLE`` function reads of the preemptor (its task and its job)
#: when judging tasks of other jobs, as one hashable value: two preemptors with equal
#: values get the same victims from it among the same tasks of other jobs, in the same
#: session state. A plugin that fills ``PREEMPTABLE`` without this leaves every preemptor
#: judged on its own.
PREEMPTOR_KEY: Hook[Callable[[TaskInfo], Hashable]] = Hook("preemptorKey", "enablePreemptable")

# queues
OVERUSED: Hook[Callable[[QueueInfo], bool]] = Hook("overused", "enabledOverused")
QUEUE_SHARE: Hook[Callable[[QueueInfo], QueueShare | None]] = Hook("queueShare", "enabledOverused")
PREEMPTIVE: Hook[Callable[[QueueInfo, list[TaskInfo]], bool]] = Hook(
    "preemptive", "enablePreemptive"
)
ALLOCATABLE: Hook[Callable[[QueueInfo, TaskInfo], Vote]] = Hook("allocatable", "enabledAllocatable")
#: Queue name -> weight of the queues competing for more than the cluster holds, to the
#: adjustment of each (queues left out keep their weight). Asked by the fair-share plugin
#: before its deserved loop; the plugins that fill it must therefore open before it.
ADJUST_WEIGHTS: Hook[Callable[[Mapping[str, int]], Mapping[str, WeightAdjustment]]] = Hook(
    "adjustWeights", None
)

# jobs
JOB_READY: Hook[Callable[[JobInfo], bool]] = Hook("jobReady", "enableJobReady")
JOB_PIPELINED: Hook[Callable[[JobInfo], Vote]] = Hook("jobPipelined", "enableJobPipelined")
JOB_VALID: Hook[Callable[[JobInfo], Status | None]] = Hook("jobValid", None)
JOB_ENQUEUEABLE: Hook[Callable[[JobInfo], Vote]] = Hook("jobEnqueueable", "enableJobEnqueued")
JOB_ENQUEUED: Hook[Callable[[JobInfo], None]] = Hook("jobEnqueued", "enableJobEnqueued")
JOB_STARVING: Hook[Callable[[JobInfo], bool]] = Hook("jobStarving", "enableJobStarving")

# simulation (topology-aware preemption, the extender's victim selection)
CYCLE_STATE: Hook[Callable[[TaskInfo], Any]] = Hook("cycleState", None, tiered=False)
SIMULATE_ALLOCATABLE: Hook[Callable[[CycleState, QueueInfo, TaskInfo], bool]] = Hook(
    "simulateAllocatable", "enabledAllocatable"
)
SIMULATE_ADD_TASK: Hook[SimulateTaskFn] = Hook("simulateAddTask", None, tiered=False)
SIMULATE_REMOVE_TASK: Hook[SimulateTaskFn] = Hook("simulateRemoveTask", None, tiered=False)

#: The tier flags that let a plugin take part in simulated preemption (Volcano asks a
#: plugin's simulate functions when it may pick victims or judge a queue allocatable).
SIMULATION_FLAGS = ("enablePreemptable", "enabledAllocatable")
