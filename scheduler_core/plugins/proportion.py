"""proportion: weighted fair share between flat queues (Volcano's ``proportion`` plugin).

Each queue with work in the session is given a *deserved* share of the cluster by iterative
water-filling over the queue weights, bounded by its real capability and its request and
raised to its guarantee. Everything else follows from deserved: a queue at or above it is
overused (allocate skips it, reclaim may take from it), a task may only be allocated if the
queue stays within it on the dimensions the task asks for, and queues with the lowest
``allocated / deserved`` are served first.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import cast, overload

from scheduler_core.api.job import JobInfo
from scheduler_core.api.queue import QueueInfo
from scheduler_core.api.resource import (
    INFINITY,
    MIN_RESOURCE,
    ZERO,
    Resource,
    exceeded_part,
    res_max,
)
from scheduler_core.api.task import TaskInfo
from scheduler_core.api.usage import JobUsage, deduct_sch_gated_resources, job_usage
from scheduler_core.framework.arguments import Arguments
from scheduler_core.framework.fit import PERMIT, PERMITTED, Vote
from scheduler_core.framework.hooks import (
    ALLOCATABLE,
    JOB_ENQUEUEABLE,
    JOB_ENQUEUED,
    OVERUSED,
    PREEMPTIVE,
    QUEUE_ORDER,
    RECLAIMABLE,
    SIMULATE_ALLOCATABLE,
    WeightAdjustment,
)
from scheduler_core.framework.registry import (
    FollowStep,
    Plugin,
    UsageChange,
    register_plugin,
)
from scheduler_core.framework.session import CycleState, QueueShare, Session
from scheduler_core.logutil import v
from scheduler_core.plugins.fairshare import charging
from scheduler_core.plugins.fairshare.attrs import (
    FillRound,
    FillStep,
    QueueAttr,
    changed_dimensions,
    proportion_share,
    trace,
)
from scheduler_core.plugins.fairshare.charging import QueueCharging
from scheduler_core.plugins.fairshare.refusals import (
    cannot_take_more,
    not_open,
    over_limit,
    over_real_capability,
    queue_not_open,
)
from scheduler_core.plugins.fairshare.spec import (
    flat_capability,
    flat_real_capability,
    format_resource_names,
    spec_guarantee,
    total_guarantee,
)

log = logging.getLogger("scheduler_core.plugins.proportion")

#: A guard, not a semantic: the loop converges in a handful of passes in practice (each pass
#: meets a queue or hands out part of what remains); it only stops a pathological float
#: sequence from holding a session forever.
MAX_DESERVED_PASSES = 10_000


def water_fill(
    queue_opts: Mapping[str, QueueAttr],
    total: Resource,
    rounds: list[FillRound] | None = None,
    *,
    quiet: bool = False,
) -> Resource:
    """Volcano's deserved loop; fills ``attr.deserved``/``attr.share`` in place and returns
    what is left of ``total``. With ``rounds``, each pass is appended to it as it happens
    (the explain API shows a queue's deserved derivation from this record, so it can never
    disagree with the loop).

    Per pass, every queue not yet met gets ``remaining * weight / total weight`` added, then
    is capped by its real capability (missing scalars unlimited) and its request (scalars it
    does not request become 0), then raised to its guarantee. A queue is met when its request
    fits its deserved, or when its deserved did not move (a cap holds it). The loop ends when
    no unmet weight is left, nothing remains, or a pass changed nothing. ``remaining`` and the
    total weight are fixed within a pass, so the result does not depend on queue order.
    """
    verbose = not quiet and log.isEnabledFor(v(4))
    remaining = total.clone()
    meet: set[str] = set()
    for _ in range(MAX_DESERVED_PASSES):
        total_weight = sum(a.weight for a in queue_opts.values() if a.name not in meet)
        if total_weight == 0:
            if verbose:
                trace(log, v(4), "Exiting when total weight is 0")
            break
        old_remaining = remaining.clone()
        record = None
        if rounds is not None:
            record = FillRound(len(rounds) + 1, remaining.clone(), total_weight)
            rounds.append(record)
        increased = Resource.empty()
        decreased = Resource.empty()
        for attr in queue_opts.values():
            if verbose:
                trace(
                    log,
                    v(4),
                    "Considering Queue <%s>: weight <%d>, total weight <%d>.",
                    attr.name,
                    attr.weight,
                    total_weight,
                )
            if attr.name in meet:
                continue
            old_deserved = attr.deserved.clone()
            attr.deserved.add(remaining.clone().multi(float(attr.weight) / float(total_weight)))
            offered = attr.deserved.clone() if record is not None else attr.deserved
            attr.deserved.min_dimension_resource(attr.real_capability, INFINITY)
            capped = attr.deserved.clone() if record is not None else attr.deserved
            attr.deserved.min_dimension_resource(attr.request, ZERO)
            requested = attr.deserved.clone() if record is not None else attr.deserved
            attr.deserved = res_max(attr.deserved, attr.guarantee) or Resource.empty()
            if attr.request.less_equal(attr.deserved, ZERO):
                meet.add(attr.name)
                met = "queue <%s> is meet"
            elif attr.deserved.semantic_equal(old_deserved):
                meet.add(attr.name)
                met = "queue <%s> is meet cause of the capability"
            else:
                met = ""
            if verbose:
                _trace_pass(attr, met)
            if record is not None:
                record.steps.append(_fill_step(attr, old_deserved, offered, capped, requested, met))
            inc, dec = attr.deserved.diff(old_deserved, ZERO)
            increased.add(inc)
            decreased.add(dec)
        remaining = exceeded_part(remaining.clone().add(decreased), increased)
        if verbose:
            trace(log, v(4), "Remaining resource is <%s>", remaining)
        if remaining.is_empty() or remaining.semantic_equal(old_remaining):
            if verbose:
                trace(
                    log,
                    v(4),
                    "Exiting when remaining is empty or no queue has more resource request: <%s>",
                    remaining,
                )
            break
    else:
        trace(
            log,
            logging.ERROR,
            "Deserved loop stopped after %d passes; remaining <%s>",
            MAX_DESERVED_PASSES,
            remaining,
        )
    # Share depends only on deserved and allocated, which the loop no longer changes for a
    # met queue, so computing it once here equals Volcano's update on every pass.
    for attr in queue_opts.values():
        attr.share = proportion_share(attr)
    return remaining


def _fill_step(
    attr: QueueAttr,
    before: Resource,
    offered: Resource,
    capped: Resource,
    requested: Resource,
    met: str,
) -> FillStep:
    clamps = {
        "capability": changed_dimensions(offered, capped),
        "request": changed_dimensions(capped, requested),
        "guarantee": changed_dimensions(requested, attr.deserved),
    }
    return FillStep(
        queue=attr.name,
        weight=attr.weight,
        before=before,
        offered=offered,
        deserved=attr.deserved.clone(),
        clamped={k: dims for k, dims in clamps.items() if dims},
        met="" if not met else "capability" if met.endswith("capability") else "request",
    )


_ResourceKey = tuple[float, float, tuple[tuple[str, float], ...]]


def _resource_key(resource: Resource) -> _ResourceKey:
    scalars = tuple(sorted(resource.scalars.items())) if resource.scalars else ()
    return resource.milli_cpu, resource.memory, scalars


#: The deserved loop's inputs: the total, then per queue in order its spec key, request
#: and starting deserved.
_FillKey = tuple[_ResourceKey, tuple[tuple[tuple[object, ...], _ResourceKey, _ResourceKey], ...]]


@dataclass(frozen=True, slots=True)
class _Fill:
    """One run of the deserved loop: its inputs, and what it decided."""

    key: _FillKey
    deserved: dict[str, Resource]
    rounds: FillRecord


class FillRecord(Sequence[FillRound]):
    """The deserved loop's passes, as the explain API shows them: recorded only when first
    read, by running the loop again on the inputs it ran on (kept as the memo key holds
    them). Every session works the shares out, but only a person asking why reads the
    passes, and recording each step of each pass doubled the loop's cost. The loop is
    deterministic, so the replay is the run."""

    __slots__ = ("_key", "_rounds")

    def __init__(self, key: _FillKey) -> None:
        self._key = key
        self._rounds: list[FillRound] | None = None

    def _passes(self) -> list[FillRound]:
        rounds = self._rounds
        if rounds is None:
            total, queues = self._key
            opts = {
                str(spec[0]): QueueAttr(
                    name=str(spec[0]),
                    weight=cast(int, spec[1]),
                    real_capability=_from_key(cast(_ResourceKey, spec[2])),
                    guarantee=_from_key(cast(_ResourceKey, spec[3])),
                    request=_from_key(request),
                    deserved=_from_key(start),
                )
                for spec, request, start in queues
            }
            rounds = []
            water_fill(opts, _from_key(total), rounds, quiet=True)  # traced when it ran
            self._rounds = rounds  # two threads replaying at once write equal lists
        return rounds

    def __len__(self) -> int:
        return len(self._passes())

    @overload
    def __getitem__(self, i: int) -> FillRound: ...
    @overload
    def __getitem__(self, i: slice) -> list[FillRound]: ...
    def __getitem__(self, i: int | slice) -> FillRound | list[FillRound]:
        return self._passes()[i]

    def __iter__(self) -> Iterator[FillRound]:
        return iter(self._passes())


def _from_key(key: _ResourceKey) -> Resource:
    milli_cpu, memory, scalars = key
    resource = Resource(milli_cpu, memory)
    for name, amount in scalars:
        resource.set_scalar(name, amount)
    return resource


def _spec_key(attr: QueueAttr) -> tuple[object, ...]:
    """What the deserved loop reads of a queue that comes from its spec and the cluster
    totals, not from its jobs."""
    return (
        attr.name,
        attr.weight,
        _resource_key(attr.real_capability),
        _resource_key(attr.guarantee),
    )


def deserved_shares(
    queue_opts: Mapping[str, QueueAttr],
    total: Resource,
    memo: ProportionMemo,
    spec_keys: Mapping[str, tuple[object, ...]] | None = None,
) -> FillRecord:
    """``water_fill`` on ``queue_opts``, or the last run's result when every input is the
    same (total resource; each queue's name, weight, real capability, request, guarantee and
    starting deserved, in order); returns the loop's rounds either way. At every verbosity
    the same: the loop's V(4) lines are logged when it runs, not when its result is reused.

    ``spec_keys`` (queue name -> ``_spec_key`` of its attributes, when the caller already
    has it) saves building the spec part of the comparison for every queue on every
    session: only the requests change from one session to the next in a steady cluster."""
    known = spec_keys or {}
    key: _FillKey = (
        _resource_key(total),
        tuple(
            (
                known.get(a.name) or _spec_key(a),
                _resource_key(a.request),
                _resource_key(a.deserved),
            )
            for a in queue_opts.values()
        ),
    )
    last = memo.last_fill
    if last is not None and _same_fill(last, key):
        for name, attr in queue_opts.items():
            attr.deserved = last.deserved[name].clone()
            attr.share = proportion_share(attr)
        if last.key != key:
            # The same run on other inputs: recorded under these, so that whoever keys on
            # this run's identity (the loop on adjusted weights) sees that they moved.
            memo.last_fill = _Fill(key, last.deserved, last.rounds)
        return last.rounds
    water_fill(queue_opts, total)
    deserved = {name: attr.deserved.clone() for name, attr in queue_opts.items()}
    rounds = FillRecord(key)
    memo.last_fill = _Fill(key, deserved, rounds)
    return rounds


def _same_fill(last: _Fill, key: _FillKey) -> bool:
    """Whether the loop on ``key``'s inputs would run exactly as it did on ``last``'s.

    Equal inputs do. So do inputs that differ only in the requests of queues the loop never
    let reach their request: a new pod in a queue whose backlog already exceeds its share,
    or a pod of such a queue deleted. The loop only ever reads a queue's request through the
    clamp ``min(deserved, request)`` and the test "request fits deserved"; within one run a
    queue's deserved never falls, so if it ended at least an epsilon below both the old and
    the new request on every dimension whose request moved, neither the clamp nor the test
    turned out differently on any pass, for that queue or (with the same remainder handed
    out) any other. Found on every pod a job creates, that saves the whole loop twice (the
    one-off session that judges the pod, and the accounting that counts it next)."""
    if last.key == key:
        return True
    last_total, last_queues = last.key
    total, queues = key
    if last_total != total or len(last_queues) != len(queues):
        return False
    for (spec, request, start), (old_spec, old_request, old_start) in zip(
        queues, last_queues, strict=True
    ):
        if spec != old_spec or start != old_start:
            return False
        if request != old_request and not _below_both(
            last.deserved[str(spec[0])], old_request, request
        ):
            return False
    return True


def _below_both(deserved: Resource, before: _ResourceKey, after: _ResourceKey) -> bool:
    """Every dimension that differs between the two request keys holds, in ``deserved``,
    at least ``MIN_RESOURCE`` less than either request (the loop's own epsilon)."""
    old, new = _amounts(before), _amounts(after)
    for name in old.keys() | new.keys():
        was, now = old.get(name, 0.0), new.get(name, 0.0)
        if was != now and deserved.get(name) + MIN_RESOURCE > min(was, now):
            return False
    return True


def _amounts(key: _ResourceKey) -> dict[str, float]:
    milli_cpu, memory, scalars = key
    return {"cpu": milli_cpu, "memory": memory, **dict(scalars)}


@dataclass(frozen=True, slots=True)
class _QueueSpec:
    """A queue's attributes as its spec and the cluster totals make them (no job counted).

    ``queue`` is the spec object they were derived from, held so that ``is`` tells whether
    the cache still has it: the cache replaces a queue's object on every Queue event and
    never changes one in place."""

    queue: QueueInfo
    attr: QueueAttr
    key: tuple[object, ...]


@dataclass(frozen=True, slots=True)
class _SpecMemo:
    """Queue name -> spec-derived attributes, valid for one total resource and one total
    guarantee (real capabilities depend on both)."""

    totals: tuple[object, ...]
    specs: dict[str, _QueueSpec]


@dataclass(slots=True)
class ProportionMemo:
    """What proportion remembers across the sessions of one owner (``SessionMemos``).

    ``last_fill``: the last run of the deserved loop. Most cluster changes (a pod bound, a
    pod started, a label) leave every queue's request, capability and weight as they were,
    and with them the deserved shares: such a session takes the last result instead of
    running the loop again. Replaced whole, never changed in place, so threads can share it.

    ``specs``: between two cluster changes the queue specs and the cluster's total are nearly
    always what they were, so each session would derive the same ~200 real capabilities
    again. Replaced whole when the totals change; an entry is replaced when its queue's
    object is not the one it was derived from. An entry is always correct for the object it
    names, whoever wrote it.
    """

    last_fill: _Fill | None = None
    specs: _SpecMemo | None = None
    #: In the memo of the loop on adjusted weights: the last adjusted result.
    adjusted: _Adjusted | None = None


@dataclass(frozen=True, slots=True)
class _Adjusted:
    """The deserved shares worked out on weights adjusted for past usage, with what they
    were worked out from: the weighted loop's run and the adjustments (by identity). Its
    maps are never changed after it is made."""

    weighted_fill: _Fill
    adjustments: Mapping[str, WeightAdjustment]
    weighted: dict[str, Resource]
    deserved: dict[str, Resource]
    rounds: Sequence[FillRound]


#: Proportion's slot in ``Session.memos``.
MEMO_SLOT = "proportion"
#: Its slot for the last loop on weights adjusted for past usage (kept apart: both loops
#: run in every such session, and one memo would always hold the other's run).
USAGE_MEMO_SLOT = "proportion.usage"
#: Adjusted weights are the weights times their factor times this, rounded.
ADJUSTED_WEIGHT_SCALE = 1000


def _trace_pass(attr: QueueAttr, met: str) -> None:
    """Volcano's V(4) lines for one queue in one pass (share as of this pass)."""
    attr.share = proportion_share(attr)
    trace(log, v(4), "Format queue <%s> deserved resource to <%s>", attr.name, attr.deserved)
    if met:
        trace(log, v(4), met, attr.name)
    trace(
        log,
        v(4),
        "The attributes of queue <%s> in proportion: deserved <%s>, realCapability "
        "<%s>, allocate <%s>, request <%s>, elastic <%s>, share <%0.2f>",
        attr.name,
        attr.deserved,
        attr.real_capability,
        attr.allocated,
        attr.request,
        attr.elastic,
        attr.share,
    )


@register_plugin
class ProportionPlugin(QueueCharging, Plugin):
    """``queue_opts`` (queue name -> attributes) stays readable after the session closes, so
    reporting (simulate, /metrics) can show what the session decided from."""

    name = "proportion"
    log_label = "Proportion"

    def _share(self, attr: QueueAttr) -> float:
        return proportion_share(attr)

    def __init__(self, arguments: Arguments) -> None:
        super().__init__(arguments)
        self.total_resource = Resource.empty()
        self.total_guarantee = Resource.empty()
        self.queue_opts: dict[str, QueueAttr] = {}
        #: every pass of the deserved loop, as it ran this session (the explain API's record)
        self.derivation: Sequence[FillRound] = ()
        #: job uid -> why the queue refused to admit it (Volcano records a PodGroup event).
        self.unschedulable_reasons: dict[str, str] = {}
        self._ssn: Session | None = None
        self._memo = ProportionMemo()
        self._adjusted_memo = ProportionMemo()
        #: The session's ``weight_adjustments`` (None before the session opens).
        self._weight_adjustments: (
            Callable[[Mapping[str, int]], Mapping[str, WeightAdjustment]] | None
        ) = None
        #: Queue name -> the adjustment its past usage made to its weight this session
        #: (empty: no plugin adjusted, no usage to weigh, or nothing contended).
        self.adjustments: dict[str, WeightAdjustment] = {}
        #: Queue name -> its deserved share on the unadjusted weights, when adjusted.
        self.weighted: dict[str, Resource] = {}

    # --- session --------------------------------------------------------------------------

    def on_session_open(self, ssn: Session) -> None:
        self._ssn = ssn
        self._memo = ssn.memos.slot(MEMO_SLOT, ProportionMemo)
        self.total_resource = ssn.total_resource.clone()
        trace(log, v(4), "The total resource is <%s>", self.total_resource)
        self.total_guarantee = total_guarantee(ssn.queues.values())
        trace(log, v(4), "The total guarantee resource is <%s>", self.total_guarantee)

        usage = ssn.snapshot.queue_usage
        spec_keys: dict[str, tuple[object, ...]] | None = None
        if usage is not None:
            # The live cache keeps each queue's job sums current: no need to walk the jobs.
            # Queues are still taken in the order their jobs come, as the loop below would.
            specs = self._spec_memo(len(ssn.queues))
            spec_keys = {}
            for queue_name in dict.fromkeys(job.queue for job in ssn.jobs.values()):
                queue = ssn.queues.get(queue_name)
                total = usage.get(queue_name)
                if queue is None or total is None:
                    continue
                spec = specs.get(queue_name)
                if spec is None or spec.queue is not queue:
                    derived = self._new_attr(queue)
                    spec = specs[queue_name] = _QueueSpec(queue, derived, _spec_key(derived))
                self.queue_opts[queue.name] = _attr_from_spec(spec.attr, total)
                spec_keys[queue_name] = spec.key
        else:
            for job in ssn.jobs.values():
                trace(log, v(4), "Considering Job <%s/%s>.", job.namespace, job.name)
                attr = self.queue_opts.get(job.queue)
                if attr is None:
                    queue = ssn.queues.get(job.queue)
                    if queue is None:
                        log.warning(
                            "Job <%s> names queue <%s> which is not in the session",
                            job.uid,
                            job.queue,
                        )
                        continue
                    attr = self._new_attr(queue)
                    self.queue_opts[queue.name] = attr
                    trace(log, v(4), "Added Queue <%s> attributes.", queue.name)
                job_usage(job).add_to(attr)

        self._weight_adjustments = ssn.weight_adjustments
        self._adjusted_memo = ssn.memos.slot(USAGE_MEMO_SLOT, ProportionMemo)
        self._derive(spec_keys)

        ssn.add_hook(QUEUE_ORDER, self.name, self._queue_order)
        ssn.add_hook(RECLAIMABLE, self.name, self._reclaimable)
        ssn.add_hook(OVERUSED, self.name, self._overused)
        ssn.add_hook(ALLOCATABLE, self.name, self._allocatable)
        ssn.add_hook(PREEMPTIVE, self.name, self._queue_allocatable)
        ssn.add_hook(SIMULATE_ALLOCATABLE, self.name, self._simulate_allocatable)
        ssn.add_hook(JOB_ENQUEUEABLE, self.name, self._job_enqueueable)
        ssn.add_hook(JOB_ENQUEUED, self.name, self._job_enqueued)
        charging.register(ssn, self)

    def on_session_close(self, ssn: Session) -> None:
        self._ssn = None

    def can_follow(self, ssn: Session) -> bool:
        """Always: what a follow step re-derives is what opening a session would, at every
        log verbosity (behaviour never depends on -v)."""
        return True

    def follow(self, ssn: Session, change: UsageChange) -> FollowStep | None:
        """Re-derive the changed queues' records from the live cache's per-queue sums exactly
        as a session opening now would, keeping every other queue's record: how a long-lived
        read-only session follows a change of some jobs' usage without being rebuilt.
        Deserved shares are worked out again only when a request moved (they depend on the
        requests, never on what is allocated). The caller charges again what it had charged
        to these queues (assumed pods). None when a queue has no record or no sum (a queue
        gained or lost its jobs: open a new session)."""
        fresh: dict[str, QueueAttr] = {}
        for name in change.queues:
            attr, total = self.queue_opts.get(name), change.usage.get(name)
            if attr is None or total is None:
                return None
            record = _attr_from_spec(attr, total)
            record.deserved = attr.deserved
            fresh[name] = record
        return partial(self._take_fresh, fresh)

    def _take_fresh(self, fresh: dict[str, QueueAttr]) -> None:
        moved = any(
            not record.request.semantic_equal(self.queue_opts[name].request)
            for name, record in fresh.items()
        )
        self.queue_opts.update(fresh)  # an existing key keeps its place: the loop's order
        if moved:
            for attr in self.queue_opts.values():
                attr.deserved = Resource.empty()
                attr.share = 0.0
            self._derive(None)
        else:
            for attr in fresh.values():
                attr.share = proportion_share(attr)

    def _derive(self, spec_keys: Mapping[str, tuple[object, ...]] | None) -> None:
        """Every queue's deserved share: the weighted loop, then, where the queues ask for
        more than the cluster holds and a plugin adjusts their weights for their past usage
        (``adjustWeights``), the loop again on the adjusted weights, each queue kept at no
        less than its adjustment's floor of the weighted result (and its guarantee, which
        the loop keeps). Without an adjustment the first loop's answer stands untouched:
        exactly Volcano's."""
        self.weighted = {}
        self.adjustments = {}
        self.derivation = deserved_shares(
            self.queue_opts, self.total_resource, self._memo, spec_keys
        )
        adjust = self._weight_adjustments
        if adjust is None or not _contended(self.queue_opts.values(), self.total_resource):
            return
        adjustments = adjust({name: attr.weight for name, attr in self.queue_opts.items()})
        if not adjustments:
            return
        self.adjustments = dict(adjustments)
        weighted_fill = self._memo.last_fill
        last = self._adjusted_memo.adjusted
        if (
            last is not None
            and last.weighted_fill is weighted_fill
            and last.adjustments is adjustments
        ):
            # The same weighted loop and the same adjustments (the plugin hands the same
            # object back while its reading stands): the same result, without the work.
            self.weighted = last.weighted
            self.derivation = last.rounds
            for name, attr in self.queue_opts.items():
                attr.deserved = last.deserved[name].clone()
                attr.share = proportion_share(attr)
            return
        self.weighted = {name: attr.deserved.clone() for name, attr in self.queue_opts.items()}
        weights = {name: attr.weight for name, attr in self.queue_opts.items()}
        for name, attr in self.queue_opts.items():
            adjustment = adjustments.get(name)
            factor = adjustment.factor if adjustment is not None else 1.0
            # Whole numbers, as the loop and its record take weights: a thousandth of the
            # weight is finer than any share a person reads.
            attr.weight = max(1, round(attr.weight * factor * ADJUSTED_WEIGHT_SCALE))
            attr.deserved = Resource.empty()
            attr.share = 0.0
        try:
            self.derivation = deserved_shares(
                self.queue_opts, self.total_resource, self._adjusted_memo
            )
        finally:
            for name, attr in self.queue_opts.items():
                attr.weight = weights[name]
        for name, attr in self.queue_opts.items():
            adjustment = adjustments.get(name)
            if adjustment is not None and adjustment.floor > 0:
                floor = self.weighted[name].clone().multi(adjustment.floor)
                attr.deserved = res_max(attr.deserved, floor) or attr.deserved
            attr.share = proportion_share(attr)
        if weighted_fill is not None:
            self._adjusted_memo.adjusted = _Adjusted(
                weighted_fill,
                adjustments,
                self.weighted,
                {name: attr.deserved.clone() for name, attr in self.queue_opts.items()},
                self.derivation,
            )

    def _queue_share(self, queue: QueueInfo) -> QueueShare | None:
        """As the charging half has it, with the weighted share and what moved it when the
        queue's weight was adjusted for its past usage (the eviction events say so)."""
        share = super()._queue_share(queue)
        adjustment = self.adjustments.get(queue.name)
        weighted = self.weighted.get(queue.name)
        if share is not None and adjustment is not None and weighted is not None:
            share.weighted = weighted.clone()
            share.moved_by = adjustment.reason
        return share

    def _spec_memo(self, queues: int) -> dict[str, _QueueSpec]:
        """The shared spec memo for this session's totals (a fresh one if they changed, or
        if deleted queues have left it twice the size of the cluster's queue list)."""
        totals = (_resource_key(self.total_resource), _resource_key(self.total_guarantee))
        memo = self._memo.specs
        if memo is None or memo.totals != totals or len(memo.specs) > 2 * queues:
            memo = self._memo.specs = _SpecMemo(totals, {})
        return memo.specs

    def _new_attr(self, queue: QueueInfo) -> QueueAttr:
        capability = flat_capability(queue)
        guarantee = spec_guarantee(queue)
        real = flat_real_capability(
            self.total_resource, self.total_guarantee, guarantee, capability
        )
        return QueueAttr(
            name=queue.name,
            weight=queue.weight,
            capability=capability if capability is not None else Resource.empty(),
            real_capability=real,
            guarantee=guarantee,
        )

    def _attr_of_task(self, task: TaskInfo, opts: Mapping[str, QueueAttr]) -> QueueAttr | None:
        job = self._ssn.jobs.get(task.job) if self._ssn is not None else None
        if job is None:
            log.warning(
                "Failed to find job <%s> of task <%s/%s>", task.job, task.namespace, task.name
            )
            return None
        attr = opts.get(job.queue)
        if attr is None:
            log.warning(
                "Failed to find queue <%s> attributes of task <%s/%s>",
                job.queue,
                task.namespace,
                task.name,
            )
        return attr

    # --- queue hooks ----------------------------------------------------------------------

    def _queue_order(self, l: QueueInfo, r: QueueInfo) -> int:
        """Higher queue priority first, then the queue furthest below its deserved share."""
        if l.priority != r.priority:
            return r.priority - l.priority
        lattr, rattr = self.queue_opts.get(l.name), self.queue_opts.get(r.name)
        if lattr is None or rattr is None or lattr.share == rattr.share:
            return 0
        return -1 if lattr.share < rattr.share else 1

    def _overused(self, queue: QueueInfo) -> bool:
        attr = self.queue_opts.get(queue.name)
        if attr is None:
            return False
        overused = attr.deserved.less_equal(attr.allocated, ZERO)
        if overused:
            trace(
                log,
                v(3),
                "Queue <%s> is overused: deserved <%s>, allocated <%s>, share <%s>",
                queue.name,
                attr.deserved,
                attr.allocated,
                attr.share,
            )
        return overused

    def _queue_allocatable(self, queue: QueueInfo, candidates: list[TaskInfo]) -> bool:
        """Can the queue grow by ``candidates`` and stay within deserved on the dimensions
        they request (no epsilon)? Used both to allocate and to decide who may reclaim."""
        if not queue.is_open():
            trace(
                log,
                v(3),
                "Queue <%s> current state: %s, is not in open state",
                queue.name,
                queue.state,
            )
            return False
        attr = self.queue_opts.get(queue.name)
        if attr is None:
            return False
        return _fits_deserved(queue.name, attr, candidates)

    def _allocatable(self, queue: QueueInfo, task: TaskInfo) -> Vote:
        if self._queue_allocatable(queue, [task]):
            return PERMITTED
        if not queue.is_open():
            return not_open(queue.name, str(queue.state))
        attr = self.queue_opts.get(queue.name)
        if attr is None:
            return cannot_take_more(queue.name)
        return over_limit(queue.name, attr, task.resreq, "deserved share")

    def _reclaimable(
        self, reclaimer: TaskInfo, reclaimees: list[TaskInfo]
    ) -> tuple[list[TaskInfo], int]:
        """A reclaimee is a victim while its queue, less the victims already chosen in this
        call, is still above deserved; the reclaimer does not matter here."""
        del reclaimer
        victims: list[TaskInfo] = []
        allocations: dict[str, Resource] = {}
        for reclaimee in reclaimees:
            job = self._ssn.jobs.get(reclaimee.job) if self._ssn is not None else None
            if job is None:
                continue
            attr = self.queue_opts.get(job.queue)
            if attr is None:
                continue
            allocated = allocations.get(job.queue)
            if allocated is None:
                allocated = allocations[job.queue] = attr.allocated.clone()
            if not allocated.less_equal(attr.deserved, ZERO):
                allocated.sub_without_assert(reclaimee.resreq)
                victims.append(reclaimee)
        trace(log, v(4), "Victims from proportion plugins are %s", [t.key for t in victims])
        return victims, PERMIT

    # --- job hooks ------------------------------------------------------------------------

    def _job_enqueueable(self, job: JobInfo) -> Vote:
        """Admit a job only if its minResources, on top of what the queue holds and has
        already admitted (less what it could give back), fits the real capability."""
        queue = self._ssn.queues.get(job.queue) if self._ssn is not None else None
        if queue is None or not queue.is_open():
            trace(
                log,
                v(3),
                "Queue <%s> current state: %s, is not open state, reject job <%s>.",
                job.queue,
                queue.state if queue is not None else "missing",
                job.uid,
            )
            return queue_not_open(job, str(queue.state) if queue is not None else "missing")
        attr = self.queue_opts.get(job.queue)
        if attr is None or job.min_resources is None:
            return PERMITTED
        min_req = job.get_min_resources()
        r = min_req.clone().add(attr.allocated).add(attr.inqueue).sub_without_assert(attr.elastic)
        fits, names = r.less_equal_with_dimension_and_resources_name(attr.real_capability, min_req)
        if fits:
            return PERMITTED
        message = format_resource_names("queue resource quota insufficient", "insufficient", names)
        self.unschedulable_reasons[job.uid] = message
        trace(
            log,
            v(3),
            "Job <%s> cannot be enqueued into queue <%s>: %s",
            job.uid,
            job.queue,
            message,
        )
        return over_real_capability(job, attr, names)

    def _job_enqueued(self, job: JobInfo) -> None:
        """The admitted job's minResources are reserved in its queue for this session."""
        if job.min_resources is None:
            return
        attr = self.queue_opts.get(job.queue)
        if attr is not None:
            attr.inqueue.add(deduct_sch_gated_resources(job, job.get_min_resources()))

    # --- simulation -----------------------------------------------------------------------

    def _simulate_allocatable(self, state: CycleState, queue: QueueInfo, task: TaskInfo) -> bool:
        """As AllocatableFn on the what-if copy; Volcano skips the open-state check here."""
        attrs = self._state(state)
        attr = attrs.get(queue.name) if attrs is not None else None
        if attr is None:
            return False
        return _fits_deserved(queue.name, attr, [task])


def _attr_from_spec(spec: QueueAttr, usage: JobUsage) -> QueueAttr:
    """A session's own record for a queue: its spec-derived attributes and its jobs' sums,
    the same as ``usage.add_to`` on a fresh record, without building the zeros first.

    Capability, real capability and guarantee are shared with the memo, not copied: in flat
    mode nothing changes them in place after they are derived (the deserved loop and the
    hooks only read them, and a what-if clones the record first). The sums are copied: the
    session's allocate and evict events change them."""
    return QueueAttr(
        name=spec.name,
        weight=spec.weight,
        allocated=_added_to_zero(usage.allocated),
        request=_added_to_zero(usage.request),
        inqueue=_added_to_zero(usage.inqueue),
        elastic=_added_to_zero(usage.elastic),
        capability=spec.capability,
        real_capability=spec.real_capability,
        guarantee=spec.guarantee,
    )


def _contended(attrs: Iterable[QueueAttr], total: Resource) -> bool:
    """Whether the queues together ask for more than the cluster holds on some dimension:
    only then does how the weights split it make a difference worth adjusting."""
    asked = Resource.empty()
    for attr in attrs:
        asked.add(attr.request)
    return not asked.less_equal(total, ZERO)


def _added_to_zero(amount: Resource) -> Resource:
    """``Resource.empty().add(amount)``: a copy without the pod count (``add`` leaves it),
    and without an empty scalar map (``add`` creates none)."""
    copy = amount.clone()
    copy.max_task_num = 0
    if not copy.scalars:
        copy.scalars = None
    return copy


def _fits_deserved(queue_name: str, attr: QueueAttr, candidates: list[TaskInfo]) -> bool:
    total_req = Resource.empty()
    for task in candidates:
        total_req.add(task.resreq)
    future_used = attr.allocated.clone().add(total_req)
    fits, _ = future_used.less_equal_with_dimension_and_resources_name(attr.deserved, total_req)
    if not fits:
        trace(
            log,
            v(3),
            "Queue <%s>: deserved <%s>, allocated <%s>; Candidate <%s>: resource request <%s>",
            queue_name,
            attr.deserved,
            attr.allocated,
            ", ".join(task.name for task in candidates),
            total_req,
        )
    return fits
