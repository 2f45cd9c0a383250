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

from collections.abc import Callable, Iterable, Iterator, Sequence
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
    shapes = {t.uid: _shape(t.init_resreq) for t in left}
    placed = 0
    goal = len(members) if stop_at is None else min(stop_at, len(members))
    for node in sorted(nodes, key=lambda n: n.name):
        if not left or placed >= goal:
            break
        free = room(node).clone()
        kept: list[TaskInfo] = []
        # The room on a node only shrinks as members are placed on it: a request that did
        # not fit once does not fit again, and its twins (a gang's members mostly are) are
        # passed over without another comparison.
        too_big: set[tuple[object, ...]] = set()
        for task in left:
            shape = shapes[task.uid]
            if shape in too_big:
                kept.append(task)
            elif not task.init_resreq.less_equal(free, ZERO):
                too_big.add(shape)
                kept.append(task)
            elif ssn.predicate(task, node) is None:
                free.sub_without_assert(task.init_resreq)
                placed += 1
            else:
                kept.append(task)
        left = kept
    return placed


def _shape(request: Resource) -> tuple[object, ...]:
    """A request as a key: members with equal keys ask for exactly the same amounts."""
    scalars = tuple(sorted(request.scalars.items())) if request.scalars else ()
    return (request.milli_cpu, request.memory, scalars)


#: Memo slot: a node's future idle by name, with the node stamp it was read at.
_ROOMS = "topology_fit.future_idle"
#: Memo slot: per request shape, each node's row for the domain sums, by node stamp.
_ROWS = "topology_fit.node_rows"


def _remembered(ssn: Session, room: RoomFn) -> RoomFn:
    """``room`` asked once per node for one choice: every tier and the binpack order read
    the same nodes again, and a node's room does not change within one choice. The default
    room (future idle) is kept across choices and sessions by node stamp, which changes
    whenever the node's tasks do: the first member of the next gang reads 5,000 nodes'
    rooms from the memo instead of computing them again."""
    seen: dict[str, Resource] = {}
    if room is future_room:
        kept: dict[str, tuple[int, Resource]] = ssn.memos.slot(_ROOMS, dict)
        if len(kept) > 4 * max(len(ssn.nodes), 1024):
            kept.clear()  # names of nodes long gone

        def stamped(node: NodeInfo) -> Resource:
            got = kept.get(node.name)
            if got is not None and got[0] == node.stamp:
                return got[1]
            idle = node.future_idle()
            kept[node.name] = (node.stamp, idle)
            return idle

        room = stamped

    def remembered(node: NodeInfo) -> Resource:
        got = seen.get(node.name)
        if got is None:
            got = seen[node.name] = room(node)
        return got

    return remembered


#: A node's or domain's sums: allocatable and room (at least 0) on the dimensions fullness
#: reads, room on the dimensions the gang asks, the most members it could hold.
_Row = tuple[list[float], list[float], list[float], int]


class _Tally:
    """One choice's sums on the gang's dimensions: per node (its allocatable, its room, and
    how many members its room could hold at most), read once, and per domain, added up from
    its children where they cover it (a spine from its leaves, not from its 5,000 nodes).
    What ``_fullness`` and ``_may_hold`` compute, without walking every node per tier."""

    def __init__(
        self,
        ssn: Session,
        topology: Topology,
        wanted: Resource,
        smallest: dict[str, float],
        room: RoomFn,
        room_is_default: bool,
    ) -> None:
        self.ssn = ssn
        self.topology = topology
        self.room = room
        self.shown = [n for n in wanted.resource_names() if n != "pods"] or ["cpu"]
        self.needed = [wanted.get(d) for d in wanted.resource_names() if d != "pods"]
        self.held = [n for n in wanted.resource_names() if n != "pods"]
        self.smallest = list(smallest.items())
        #: domain name → (allocatable by shown dim, room ≥ 0 by shown dim, room by held dim,
        #: the most members it could hold)
        self._rows: dict[str, _Row] = {}
        #: Node rows of the default room, kept across choices by node stamp (as the rooms
        #: are) for gangs asking the same dimensions and smallest request.
        self._node_rows: dict[str, tuple[int, _Row]] | None = None
        if room_is_default:
            key = (tuple(self.shown), tuple(self.held), tuple(self.smallest))
            by_key: dict[object, dict[str, tuple[int, _Row]]] = ssn.memos.slot(_ROWS, dict)
            if key not in by_key and len(by_key) >= 8:
                by_key.clear()  # a few request shapes at a time
            self._node_rows = by_key.setdefault(key, {})

    def _node_row(self, node: NodeInfo) -> _Row:
        kept = self._node_rows
        if kept is not None:
            got = kept.get(node.name)
            if got is not None and got[0] == node.stamp:
                return got[1]
        row = self._read(node)
        if kept is not None:
            kept[node.name] = (node.stamp, row)
        return row

    def _read(self, node: NodeInfo) -> _Row:
        left = self.room(node)
        total = [node.allocatable.get(d) for d in self.shown]
        free = [max(left.get(d), 0.0) for d in self.shown]
        raw = [left.get(d) for d in self.held]
        fits = min((int(left.get(d) // need) for d, need in self.smallest), default=1 << 30)
        return total, free, raw, max(fits, 0)

    def row(self, domain: Domain) -> _Row:
        got = self._rows.get(domain.name)
        if got is not None:
            return got
        kids = [self.topology.domains.get(k) for k in domain.children]
        parts: list[_Row]
        if (
            kids
            and all(k is not None for k in kids)
            and sum(len(k.nodes) for k in kids if k is not None) == len(domain.nodes)
        ):
            parts = [self.row(k) for k in kids if k is not None]
        else:
            nodes = self.ssn.nodes
            parts = [self._node_row(nodes[n]) for n in domain.nodes if n in nodes]
        total = [sum(p[0][i] for p in parts) for i in range(len(self.shown))]
        free = [sum(p[1][i] for p in parts) for i in range(len(self.shown))]
        raw = [sum(p[2][i] for p in parts) for i in range(len(self.held))]
        got = self._rows[domain.name] = (total, free, raw, sum(p[3] for p in parts))
        return got

    def fullness(self, domain: Domain) -> float:
        total, free, _, _ = self.row(domain)
        used = [1.0 - f / t for f, t in zip(free, total, strict=True) if t > 0]
        return sum(used) / len(used) if used else 0.0

    def may_hold(self, domain: Domain) -> bool:
        _, _, raw, _ = self.row(domain)
        return all(r >= n for r, n in zip(raw, self.needed, strict=True))

    def upper_bound(self, domain: Domain) -> int:
        return self.row(domain)[3]


def _rooms(domain: Domain, ssn: Session, room: RoomFn) -> Iterator[tuple[NodeInfo, Resource]]:
    """Each of the domain's nodes the session knows, with its room as `room` reads it."""
    for name in domain.nodes:
        node = ssn.nodes.get(name)
        if node is not None:
            yield node, room(node)


def _fullness(domain: Domain, ssn: Session, wanted: Resource, room: RoomFn) -> float:
    """The fraction of the domain's allocatable on the gang's dimensions that is not free
    (higher is fuller): the domain-level binpack order."""
    names = [n for n in wanted.resource_names() if n != "pods"] or ["cpu"]
    total = dict.fromkeys(names, 0.0)
    free = dict.fromkeys(names, 0.0)
    for node, left in _rooms(domain, ssn, room):
        for dim in names:
            total[dim] += node.allocatable.get(dim)
            free[dim] += max(left.get(dim), 0.0)
    used = [1.0 - free[d] / total[d] for d in names if total[d] > 0]
    return sum(used) / len(used) if used else 0.0


def domain_fullness(ssn: Session, domain: Domain, wanted: Resource) -> float:
    """How full ``domain`` is on ``wanted``'s dimensions (0 empty .. 1 full), as the choice
    ranks domains: the score of Volcano's hypernode binpack."""
    return _fullness(domain, ssn, wanted, future_room)


def _may_hold(domain: Domain, ssn: Session, wanted: Resource, room: RoomFn) -> bool:
    """A cheap upper bound before the trial: the free room summed over the domain covers
    the gang's total request. A domain that fails it cannot hold the gang."""
    names = [n for n in wanted.resource_names() if n != "pods"]
    free = dict.fromkeys(names, 0.0)
    for _, left in _rooms(domain, ssn, room):
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
    if max_tier is None and request.from_constraint:
        return None  # a key the tree lacks: kube-scheduler's own constraint places the gang
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
    room_is_default = room is future_room
    room = _remembered(ssn, room)
    smallest = {
        dim: need
        for dim in wanted.resource_names()
        if dim != "pods" and (need := min(t.init_resreq.get(dim) for t in todo)) > 0
    }
    tally = _Tally(ssn, topology, wanted, smallest, room, room_is_default)
    trials: list[TierTrial] = []
    for tier in topology.tiers:
        if tier > max_tier:
            break
        if pinned is not None and tier < pinned.tier:
            continue
        candidates = [
            d for d in topology.domains_at(tier) if pinned is None or pinned.nodes <= d.nodes
        ]
        ranked = sorted(candidates, key=lambda d: (-tally.fullness(d), d.name))
        if not todo and ranked:
            return DomainChoice(request, ranked[0], 0, tuple(trials), pins, "", topology)
        holds: dict[str, int] = {}
        for domain in ranked:
            if not tally.may_hold(domain):
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
        # Domains whose upper bound is below what some domain holds cannot be the best: only
        # the others are counted (in a tier of 600 leaves, a handful).
        bounds = {d.name: tally.upper_bound(d) for d in ranked}
        floor = 0
        if ranked:
            top = max(ranked, key=lambda d: bounds[d.name])
            if top.name not in holds:
                holds[top.name] = count_fitting(ssn, todo, domain_nodes(ssn, top), room)
            floor = holds[top.name]
        best: Domain | None = None
        best_holds = 0
        for domain in ranked:
            held = holds.get(domain.name)
            if held is None:
                if bounds[domain.name] < floor or (
                    best is not None and bounds[domain.name] <= best_holds
                ):
                    continue
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


@dataclass(frozen=True, slots=True)
class DomainCandidates:
    """The domains a gang may land in, tier by tier (narrowest first, each tier's domains by
    name), with the members already placed pinning them; ``reason`` says why there are none
    when the request names an unknown tier or the placed members share no allowed domain.

    Reclaim and preempt try these one by one with victims, where placement asks
    ``choose_domain`` for free room only: both see the same candidates in the same order."""

    request: NetworkTopologyRequest
    max_tier: int | None
    tiers: tuple[tuple[int, tuple[Domain, ...]], ...]
    pinned_by: tuple[str, ...] = ()
    reason: str = ""

    @property
    def hard(self) -> bool:
        """Whether no member may land outside a domain (a malformed request holds the gang
        as a hard one does)."""
        return self.request.mode == TopologyMode.HARD or bool(self.request.problem)


def candidate_domains(ssn: Session, job: JobInfo) -> DomainCandidates | None:
    """The candidates for ``job`` (None when it is placed as any other, as ``choose_domain``
    has it: no request, requests turned off, or no tree): every domain of a tier ≤ the
    request's bound that holds the nodes of the members already placed. A malformed
    request has none, tree or not: its gang is held."""
    request = job.network_topology
    if request is None or not ssn.conf.network_topology.enabled:
        return None
    pins = placed_nodes(job)
    if request.problem:
        return DomainCandidates(request, None, (), pins, request.problem)
    topology = ssn.topology
    if topology.empty:
        return None
    max_tier = topology.highest_tier(request)
    if max_tier is None and request.from_constraint:
        return None
    if max_tier is None:
        known = ", ".join(sorted(d.tier_name for d in _tier_heads(topology) if d.tier_name))
        return DomainCandidates(
            request,
            None,
            (),
            pins,
            f"tier {request.highest_tier_name!r} is not a tier of the topology "
            f"(known: {known or 'none'})",
        )
    pinned: Domain | None = None
    if pins:
        pinned = topology.common_domain(pins, max_tier)
        if pinned is None:
            return DomainCandidates(
                request,
                max_tier,
                (),
                pins,
                f"members already run on {', '.join(pins)}, which no domain of tier "
                f"≤ {max_tier} holds together",
            )
    tiers: list[tuple[int, tuple[Domain, ...]]] = []
    for tier in topology.tiers:
        if tier > max_tier:
            break
        if pinned is not None and tier < pinned.tier:
            continue
        domains = tuple(
            d for d in topology.domains_at(tier) if pinned is None or pinned.nodes <= d.nodes
        )
        if domains:
            tiers.append((tier, domains))
    return DomainCandidates(request, max_tier, tuple(tiers), pins)
