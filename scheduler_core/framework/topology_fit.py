"""Which network domain a gang with a ``networkTopology`` request lands in.

The filter verb, the preempt verb, the reclaim loop and explain all ask the same question —
"where do this gang's members that are not placed yet fit *together*?" — and must get the
same answer, so it is answered here, once, on a session:

- fit is the session's own fit, node by node: the predicates (kube-scheduler's filters as
  the engine models them) and the room left on the node once the members placed before on
  it in this trial are counted. Never a sum of free capacity over the domain: eight pods of
  one GPU do not fit on eight nodes with half a GPU free each;
- the lowest tier (narrowest domains) first, up to the highest tier the request allows;
- among the domains of that tier, the fullest one that fits (domain-level binpack), so that
  whole domains stay free for bigger gangs; ties broken by name;
- members already running or bound pin the domain: only domains holding all of them count.

What it does not model: members of the same gang placed in one trial do not see each other
through the predicates (host ports, inter-pod anti-affinity among themselves); their
resources do, through the room. kube-scheduler still checks each member for real.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from scheduler_core.api.display import dims
from scheduler_core.api.job import JobInfo
from scheduler_core.api.node import NodeInfo
from scheduler_core.api.resource import ZERO, Resource
from scheduler_core.api.task import TaskInfo
from scheduler_core.api.topology import Domain, NetworkTopologyRequest, Topology, TopologyMode
from scheduler_core.api.types import TaskStatus
from scheduler_core.framework.session import Session

#: How much room a node offers a member in a trial (placement: its future idle; reclaim:
#: that plus what the victims would free).
RoomFn = Callable[[NodeInfo], Resource]


def future_room(node: NodeInfo) -> Resource:
    return node.future_idle()


@dataclass(frozen=True, slots=True)
class TierTrial:
    """What one tier could do for the gang: the domain that holds the most of its members
    (the fullest first among equals) and how many it holds."""

    tier: int
    best: Domain | None
    holds: int


@dataclass(frozen=True, slots=True)
class DomainChoice:
    """The answer for one gang: the domain chosen, or None with the reason; the tiers tried
    and what each could hold (for explain and for the sentence a refused member gets)."""

    request: NetworkTopologyRequest
    domain: Domain | None
    needed: int
    trials: tuple[TierTrial, ...] = ()
    #: Nodes of members already placed, which pinned the candidates.
    pinned_by: tuple[str, ...] = ()
    reason: str = ""
    #: The tree the choice was made in: a choice made in another tree no longer holds.
    topology: Topology | None = None

    @property
    def hard(self) -> bool:
        return self.request.mode == TopologyMode.HARD

    def allows(self, node: str) -> bool:
        """Whether a member may go to ``node``: inside the chosen domain; with none chosen,
        nowhere for a hard request and anywhere for a soft one (its fallback)."""
        if self.domain is None:
            return not self.hard
        return node in self.domain.nodes


def pending_members(job: JobInfo) -> list[TaskInfo]:
    """The members not placed yet, the largest first (so a trial packs the hard ones before
    the easy ones), then by name for a deterministic trial."""
    return sorted(
        job.tasks_with(TaskStatus.PENDING),
        key=lambda t: (-t.init_resreq.milli_cpu, -t.init_resreq.memory, t.name),
    )


def placed_nodes(job: JobInfo) -> tuple[str, ...]:
    """Nodes of the members that already have one (running, bound, binding, allocated)."""
    return tuple(sorted({t.node_name for t in job.tasks.values() if t.node_name}))


def count_fitting(
    ssn: Session,
    members: Sequence[TaskInfo],
    nodes: Iterable[NodeInfo],
    room: RoomFn = future_room,
    stop_at: int | None = None,
) -> int:
    """How many of ``members`` fit on ``nodes`` together: node by node (by name), each node
    takes every member that passes the session's predicates on it and fits in the room the
    members placed on it before have left. ``stop_at``: stop counting once that many fit."""
    left = list(members)
    placed = 0
    goal = len(members) if stop_at is None else min(stop_at, len(members))
    for node in sorted(nodes, key=lambda n: n.name):
        if not left or placed >= goal:
            break
        free = room(node).clone()
        kept: list[TaskInfo] = []
        for task in left:
            if task.init_resreq.less_equal(free, ZERO) and ssn.predicate(task, node) is None:
                free.sub_without_assert(task.init_resreq)
                placed += 1
            else:
                kept.append(task)
        left = kept
    return placed


def _fullness(domain: Domain, ssn: Session, wanted: Resource, room: RoomFn) -> float:
    """The fraction of the domain's allocatable on the gang's dimensions that is not free
    (higher is fuller): the domain-level binpack order."""
    names = [n for n in wanted.resource_names() if n != "pods"] or ["cpu"]
    total = dict.fromkeys(names, 0.0)
    free = dict.fromkeys(names, 0.0)
    for name in domain.nodes:
        node = ssn.nodes.get(name)
        if node is None:
            continue
        left = room(node)
        for dim in names:
            total[dim] += node.allocatable.get(dim)
            free[dim] += max(left.get(dim), 0.0)
    used = [1.0 - free[d] / total[d] for d in names if total[d] > 0]
    return sum(used) / len(used) if used else 0.0


def _may_hold(domain: Domain, ssn: Session, wanted: Resource, room: RoomFn) -> bool:
    """A cheap upper bound before the trial: the free room summed over the domain covers
    the gang's total request. A domain that fails it cannot hold the gang."""
    names = [n for n in wanted.resource_names() if n != "pods"]
    free = dict.fromkeys(names, 0.0)
    for name in domain.nodes:
        node = ssn.nodes.get(name)
        if node is None:
            continue
        left = room(node)
        for dim in names:
            free[dim] += left.get(dim)
        if all(free[d] >= wanted.get(d) for d in names):
            return True
    return all(free[d] >= wanted.get(d) for d in names)


def domain_nodes(ssn: Session, domain: Domain) -> list[NodeInfo]:
    return [ssn.nodes[n] for n in domain.nodes if n in ssn.nodes]


def choose_domain(
    ssn: Session,
    job: JobInfo,
    members: Sequence[TaskInfo] | None = None,
    room: RoomFn = future_room,
) -> DomainChoice | None:
    """The domain for ``job``'s members not placed yet (``members``, by default every
    pending one), or None when the job asks for no topology (or the session's tree is empty
    because requests are off: then the job is placed as any other)."""
    request = job.network_topology
    topology = ssn.topology
    if request is None or not ssn.conf.network_topology.enabled:
        return None
    if request.problem:
        # A malformed request holds the gang (no partial placement by count), tree or not.
        todo_count = len(members) if members is not None else len(pending_members(job))
        return DomainChoice(
            request, None, todo_count, reason=f"{request.problem}", topology=topology
        )
    if topology.empty:
        return None
    todo = list(members) if members is not None else pending_members(job)
    pins = placed_nodes(job)
    max_tier = topology.highest_tier(request)
    if max_tier is None:
        return DomainChoice(
            request,
            None,
            len(todo),
            pinned_by=pins,
            reason=f"tier {request.highest_tier_name!r} is not a tier of the topology "
            f"(known: {', '.join(sorted(d.tier_name for d in _tier_heads(topology))) or 'none'})",
            topology=topology,
        )
    pinned: Domain | None = None
    if pins:
        pinned = topology.common_domain(pins, max_tier)
        if pinned is None:
            return DomainChoice(
                request,
                None,
                len(todo),
                pinned_by=pins,
                reason=f"members already run on {', '.join(pins)}, which no domain of tier "
                f"≤ {max_tier} holds together",
                topology=topology,
            )
    wanted = Resource.empty()
    for task in todo:
        wanted.add(task.init_resreq)
    trials: list[TierTrial] = []
    for tier in topology.tiers:
        if tier > max_tier:
            break
        if pinned is not None and tier < pinned.tier:
            continue
        candidates = [
            d for d in topology.domains_at(tier) if pinned is None or pinned.nodes <= d.nodes
        ]
        ranked = sorted(candidates, key=lambda d: (-_fullness(d, ssn, wanted, room), d.name))
        if not todo and ranked:
            return DomainChoice(request, ranked[0], 0, tuple(trials), pins, "", topology)
        holds: dict[str, int] = {}
        for domain in ranked:
            if not _may_hold(domain, ssn, wanted, room):
                continue
            holds[domain.name] = count_fitting(ssn, todo, domain_nodes(ssn, domain), room)
            if holds[domain.name] == len(todo):
                return DomainChoice(
                    request,
                    domain,
                    len(todo),
                    tuple(trials),
                    pins,
                    f"{domain.describe()} holds all {len(todo)} members not placed yet",
                    topology,
                )
        # None holds the gang: what the best of them holds, for the sentence and explain.
        best: Domain | None = None
        best_holds = 0
        for domain in ranked:
            held = holds.get(domain.name)
            if held is None:
                held = count_fitting(ssn, todo, domain_nodes(ssn, domain), room)
            if best is None or held > best_holds:
                best, best_holds = domain, held
        trials.append(TierTrial(tier, best, best_holds))
    return DomainChoice(
        request,
        None,
        len(todo),
        tuple(trials),
        pins,
        no_domain_sentence(request, len(todo), wanted, max_tier, trials),
        topology,
    )


def _tier_heads(topology: Topology) -> list[Domain]:
    """One domain of each tier (for naming the tiers a request could have named)."""
    return [topology.domains_at(t)[0] for t in topology.tiers if topology.domains_at(t)]


def no_domain_sentence(
    request: NetworkTopologyRequest,
    needed: int,
    wanted: Resource,
    max_tier: int,
    trials: Sequence[TierTrial],
) -> str:
    """``needs 3 pods (cpu 24) within one tier-2 domain; the most any tier-2 domain holds
    is 2 (spine-a)``: the request, and the best there is at the highest tier tried."""
    head = f"needs {needed} pods ({dims(wanted)}) within one tier-{max_tier} domain"
    if not trials:
        return f"{head}; the topology has no domain of tier ≤ {max_tier}"
    last = trials[-1]
    where = f" ({last.best.name})" if last.best is not None else ""
    return f"{head}; the most any tier-{last.tier} domain holds is {last.holds}{where}"


def domain_fullness(ssn: Session, domain: Domain, wanted: Resource) -> float:
    """How full ``domain`` is on ``wanted``'s dimensions (0 empty .. 1 full), as the choice
    ranks domains: the score of Volcano's hypernode binpack."""
    return _fullness(domain, ssn, wanted, future_room)
