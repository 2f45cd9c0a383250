"""Why no eviction can help a waiting pod: what is missing, in a sentence a person can check.

The reclaim loop and the preempt verb look for victims whose eviction lets a starving pod
fit. When none exists because of the queue rules, the rules are named (``NotReclaimable``
and its kin); when the engine cannot judge the pod, it says so (``NotEvaluable``). This
module is the third answer: the pod would not fit *even if every pod were evicted*, so no
set of victims, allowed or not, could help, and what is missing is said instead of nothing.

Judging "every pod evicted" rather than "every victim the rules allow" keeps the claim
safe: it is only made when it is true whatever the rules say. It is judged per node on a
copy of the node with all its pods gone, with the session's own predicates, so it is the
same fit the victim search uses. A pod that requires affinity to other pods is never
judged: emptying a node also removes the pods it wants to be near.

The kinds of "no" are rows of one table (:data:`KINDS`), tried in order; each says whether
it applies and builds its sentence. A new kind (a topology domain too small, say) is one
more row: a detector over :class:`Evidence` and a sentence builder.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Final, TypedDict, Unpack

from scheduler_core.api.devices import Unjudged
from scheduler_core.api.display import dims
from scheduler_core.api.job import JobInfo
from scheduler_core.api.node import NodeInfo
from scheduler_core.api.resource import IGNORED_SCALARS, ZERO, Resource
from scheduler_core.api.storage import pending_needs
from scheduler_core.api.task import TaskInfo
from scheduler_core.framework.cannot_help_alike import AlikeRefusals
from scheduler_core.framework.cannot_help_verdict import CANNOT_HELP_REASON as CANNOT_HELP_REASON
from scheduler_core.framework.cannot_help_verdict import CannotHelp as CannotHelp
from scheduler_core.framework.cannot_help_verdict import Kind as Kind
from scheduler_core.framework.session import Session
from scheduler_core.framework.status import Code, Status
from scheduler_core.logutil import v

log = logging.getLogger("scheduler_core.cannot_help")

#: The predicates' names and reasons the node kinds below recognise (kube-scheduler's
#: plugin names and messages, which the predicates plugin reproduces).
_DEVICE_PLUGIN = "DynamicResources"
#: What a node has that is not a device: a pod short of only other things on an empty node
#: is short of the devices its claims count as.
_NODE_DIMENSIONS = frozenset({"cpu", "memory", "ephemeral-storage", "pods"})
_VOLUME_PLUGINS = frozenset({"VolumeBinding", "VolumeZone", "VolumeRestrictions"})
_PLACEMENT_REASON = "node(s) didn't match Pod's node affinity/selector"
_RESOURCES_PLUGIN = "NodeResourcesFit"


@dataclass(slots=True)
class Evidence:
    """What the detectors read: the session, the job and the pod, and each node's verdict
    on the pod once the node is emptied (worked out once, and only when a detector asks:
    the job-level kinds need no walk over the nodes)."""

    ssn: Session
    job: JobInfo
    task: TaskInfo
    #: Nodes to try first (the caller's nodes that pass what no eviction changes): the
    #: first that would take the pod emptied ends the walk.
    likely: Sequence[NodeInfo] = ()
    #: The refusals of pods alike judged earlier in the session, when the caller keeps them.
    alike: AlikeRefusals | None = None
    _refusals: list[Status] | None = None
    _walked: bool = False
    #: how many refusals of each kind, counted with them (no empty counter made for every
    #: pod that a node would take emptied: most of a backlog's)
    _kinds: Counter[Kind] | None = None

    def refusals(self) -> list[Status] | None:
        """Every node's reason for refusing the pod even with all its pods gone, or None
        when some node would take it (or one cannot be judged): then evicting may help,
        or it is not this module's to say."""
        if not self._walked:
            self._walked = True
            if self.alike is None:
                self._refusals = _node_refusals(self.ssn, self.task, self.likely)
            else:
                self._refusals = self.alike.refusals(
                    self.task, lambda: _node_refusals(self.ssn, self.task, self.likely)
                )
            if self._refusals is not None:
                self._kinds = Counter(_node_kind(err) for err in self._refusals)
        return self._refusals

    def dominant(self) -> Kind | None:
        """The node kind that refuses the most nodes (ties: the table's order)."""
        refusals = self.refusals()
        if not refusals:
            return None
        order = [row.kind for row in KINDS]
        kinds = self._kinds
        assert kinds is not None  # counted with the refusals
        return max(kinds, key=lambda k: (kinds[k], -order.index(k)))

    def reasons(self) -> str:
        """``2 node(s) didn't match ...; 1 Insufficient cpu``: every refusal, counted."""
        counted: Counter[str] = Counter(
            ", ".join(err.reasons) or err.code.value for err in self.refusals() or []
        )
        return "; ".join(f"{n} {why}" for why, n in counted.most_common())


@dataclass(frozen=True, slots=True)
class KindRow:
    """One kind of "no": ``detail`` gives its sentence when it applies to the evidence,
    else None."""

    kind: Kind
    detail: Callable[[Evidence], str | None]


def _capability(ev: Evidence) -> str | None:
    """The job alone asks more than its queue may ever hold."""
    queue = ev.ssn.queues.get(ev.job.queue)
    if queue is None or queue.capability is None or queue.capability.is_empty():
        return None
    own = ev.job.min_resources is not None and not ev.job.synthesized
    need = ev.job.min_resources if own and ev.job.min_resources else ev.task.init_resreq
    who = f"job {ev.job.uid} asks" if own else "it asks"
    what = " (its minResources)" if own else ""
    cap = queue.capability
    over = [
        name
        for name in need.resource_names()
        if name not in IGNORED_SCALARS and _named(cap, name) and need.get(name) > cap.get(name)
    ]
    if not over:
        return None
    return (
        f"{who} {_some(need, over)}{what} alone, more than queue {queue.name}'s "
        f"capability {_some(cap, over)}"
    )


def _named(resource: Resource, name: str) -> bool:
    if name in ("cpu", "memory"):
        return resource.get(name) > 0
    return resource.scalars is not None and name in resource.scalars


def _some(resource: Resource, names: list[str]) -> str:
    part = Resource.empty()
    for name in names:
        if name == "cpu":
            part.milli_cpu = resource.milli_cpu
        elif name == "memory":
            part.memory = resource.memory
        else:
            part.set_scalar(name, resource.get(name))
    return dims(part, skip_zero=True)


def _node_detail(kind: Kind, head: str) -> Callable[[Evidence], str | None]:
    def detail(ev: Evidence) -> str | None:
        if ev.dominant() is not kind:
            return None
        return f"{head} ({ev.reasons()})"

    return detail


def _devices(ev: Evidence) -> str | None:
    if ev.dominant() is not Kind.DEVICES:
        return None
    missing = _unoffered_requests(ev.ssn, ev.task)
    if missing:
        return "; ".join(missing)
    return (
        "no node has the devices its claims ask for, even with every pod on it evicted "
        f"({ev.reasons()})"
    )


#: The kinds of "no", in the order they are tried: the job-level ones first (they need no
#: walk over the nodes), then those read from the nodes' refusals.
def _topology(ev: Evidence) -> str | None:
    """A gang with a network topology request that reclaim found no single domain for, even
    with the victims the queue rules allow (the reclaim action records it on the session)."""
    record = ev.ssn.no_domain.get(ev.job.uid)
    return record[1] if record is not None else None


KINDS: Final[tuple[KindRow, ...]] = (
    KindRow(Kind.CAPABILITY, _capability),
    KindRow(Kind.TOPOLOGY, _topology),
    KindRow(
        Kind.PLACEMENT,
        _node_detail(Kind.PLACEMENT, "no node matches its node selector or affinity"),
    ),
    KindRow(
        Kind.VOLUMES,
        _node_detail(Kind.VOLUMES, "its volumes are bound where no node can reach them"),
    ),
    KindRow(Kind.DEVICES, _devices),
    KindRow(
        Kind.RESOURCES,
        _node_detail(Kind.RESOURCES, "no node is large enough for it even when empty"),
    ),
    KindRow(
        Kind.NODES,
        _node_detail(Kind.NODES, "no node takes it even with every pod on it evicted"),
    ),
)


def judge(
    ssn: Session,
    job: JobInfo,
    task: TaskInfo,
    *,
    likely: Sequence[NodeInfo] = (),
    alike: AlikeRefusals | None = None,
) -> CannotHelp | None:
    """Why no eviction can help ``task`` of ``job``, or None when one might (or the engine
    cannot tell). ``likely``: nodes to try first (see ``Evidence``) and ``alike``: the
    refusals of pods alike judged before in the session; both change how fast the answer
    comes, never the answer."""
    ev = Evidence(ssn, job, task, likely, alike)
    for row in KINDS:
        detail = row.detail(ev)
        if detail:
            return CannotHelp(row.kind, detail)
    return None


# --- the nodes, emptied ------------------------------------------------------------------


def _node_refusals(ssn: Session, task: TaskInfo, likely: Sequence[NodeInfo]) -> list[Status] | None:
    affinity = task.pod_affinity
    if affinity is not None and affinity.required:
        return None
    if not ssn.nodes:
        return None
    for node in likely:
        err = _emptied_verdict(ssn, task, node)
        if err is None or err.not_evaluable:
            return None
    refusals: list[Status] = []
    for node in ssn.nodes.values():
        err = _emptied_verdict(ssn, task, node)
        if err is None or err.not_evaluable:
            return None
        refusals.append(err)
    return refusals


def _emptied_verdict(ssn: Session, task: TaskInfo, node: NodeInfo) -> Status | None:
    """The pod's verdict on ``node`` with every pod on it gone (a copy: the session's node
    is not touched). What no eviction changes is asked first, on the node itself."""
    hard = ssn.predicate_for_preempt(task, node)
    if hard is not None:
        return hard
    copy = node.emptied()
    fits, names = task.init_resreq.less_equal_with_resources_name(copy.future_idle(), ZERO)
    if not fits:
        # Devices a claim asks for count among the pod's requests too (a scalar per
        # class): missing ones are the devices' story, told by the claims.
        devices = bool(task.resource_claims) and all(n not in _NODE_DIMENSIONS for n in names)
        return Status(
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
            ["Insufficient " + ", ".join(names)],
            plugin=_DEVICE_PLUGIN if devices else _RESOURCES_PLUGIN,
        )
    return ssn.predicate(task, copy)


def _node_kind(err: Status) -> Kind:
    if err.plugin == _DEVICE_PLUGIN:
        return Kind.DEVICES
    if err.plugin in _VOLUME_PLUGINS:
        return Kind.VOLUMES
    if err.plugin == _RESOURCES_PLUGIN:
        return Kind.RESOURCES
    if _PLACEMENT_REASON in err.reasons:
        return Kind.PLACEMENT
    return Kind.NODES


def _unoffered_requests(ssn: Session, task: TaskInfo) -> list[str]:
    """``ResourceClaim ns/gpu (request gpu) asks 1 device of class gpu-x; no node publishes
    one``: each of the pod's pending device requests that no single node has enough
    devices for, counting every device of the class whether in use or not."""
    storage = ssn.snapshot.storage
    catalog = storage.devices
    needs, _ = pending_needs(task, storage)
    out: list[str] = []
    for owner, version, request in needs:
        wanted = 1 if request.all_devices else request.count
        best = 0
        for name in ssn.nodes:
            offered = 0
            for info in catalog.current_slices(name):
                matched = catalog.request_matches(info, owner, version, request)
                if isinstance(matched, Unjudged):
                    return []
                offered += len(matched)
            best = max(best, offered)
        if best >= wanted:
            continue
        asks = (
            f"every device of class {request.device_class}"
            if request.all_devices
            else f"{wanted} device{'s' if wanted != 1 else ''} of class {request.device_class}"
        )
        have = "one" if wanted == 1 or request.all_devices else str(wanted)
        found = f" (at most {best} on one node)" if best else ""
        out.append(f"{owner} (request {request.name}) asks {asks}; no node publishes {have}{found}")
    return out


class JudgeHints(TypedDict, total=False):
    """What ``judge`` is told to answer faster, never differently."""

    likely: Sequence[NodeInfo]
    alike: AlikeRefusals | None


def note_if_unhelpable(
    ssn: Session, job: JobInfo, task: TaskInfo, **hints: Unpack[JudgeHints]
) -> CannotHelp | None:
    """``judge``, remembered in the session (``Session.cannot_help``) when no eviction can
    help: what the actions call when they found no victims for a waiting task. A pod of
    the same job and role asking the same as one already judged so shares its verdict (a
    gang of a hundred alike is walked over the nodes once)."""
    verdict = _alike(ssn, task)
    if verdict is None:
        verdict = judge(ssn, job, task, **hints)
    if verdict is not None:
        ssn.cannot_help[task.key] = (task, verdict)
        log.log(
            v(3),
            "No eviction can help task <%s> (%s): %s",
            task.key,
            verdict.kind.value,
            verdict.detail,
        )
    return verdict


def _alike(ssn: Session, task: TaskInfo) -> CannotHelp | None:
    if not task.role:
        return None
    for other, verdict in ssn.cannot_help.values():
        if (
            other.job == task.job
            and other.role == task.role
            and other.init_resreq.semantic_equal(task.init_resreq)
        ):
            return verdict
    return None
