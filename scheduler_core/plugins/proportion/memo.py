"""What proportion remembers across the sessions of one owner: the last run of the deserved
loop (reused when its inputs, or all that the loop read of them, are the same), the queues'
spec-derived records, and the last result on weights adjusted for past usage."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import cast, overload

from scheduler_core.api.queue import QueueInfo
from scheduler_core.api.resource import MIN_RESOURCE, Resource
from scheduler_core.framework.hooks import WeightAdjustment
from scheduler_core.plugins.fairshare.attrs import FillRound, QueueAttr, proportion_share
from scheduler_core.plugins.proportion.fill import water_fill

ResourceKey = tuple[float, float, tuple[tuple[str, float], ...]]


def resource_key(resource: Resource) -> ResourceKey:
    scalars = tuple(sorted(resource.scalars.items())) if resource.scalars else ()
    return resource.milli_cpu, resource.memory, scalars


#: The deserved loop's inputs: the total, then per queue in order its spec key, request
#: and starting deserved.
FillKey = tuple[ResourceKey, tuple[tuple[tuple[object, ...], ResourceKey, ResourceKey], ...]]


@dataclass(frozen=True, slots=True)
class Fill:
    """One run of the deserved loop: its inputs, and what it decided."""

    key: FillKey
    deserved: dict[str, Resource]
    rounds: FillRecord


class FillRecord(Sequence[FillRound]):
    """The deserved loop's passes, as the explain API shows them: recorded only when first
    read, by running the loop again on the inputs it ran on (kept as the memo key holds
    them). Every session works the shares out, but only a person asking why reads the
    passes, and recording each step of each pass doubled the loop's cost. The loop is
    deterministic, so the replay is the run."""

    __slots__ = ("_key", "_rounds")

    def __init__(self, key: FillKey) -> None:
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
                    real_capability=_from_key(cast(ResourceKey, spec[2])),
                    guarantee=_from_key(cast(ResourceKey, spec[3])),
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


def _from_key(key: ResourceKey) -> Resource:
    milli_cpu, memory, scalars = key
    resource = Resource(milli_cpu, memory)
    for name, amount in scalars:
        resource.set_scalar(name, amount)
    return resource


def spec_key(attr: QueueAttr) -> tuple[object, ...]:
    """What the deserved loop reads of a queue that comes from its spec and the cluster
    totals, not from its jobs."""
    return (
        attr.name,
        attr.weight,
        resource_key(attr.real_capability),
        resource_key(attr.guarantee),
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

    ``spec_keys`` (queue name -> ``spec_key`` of its attributes, when the caller already
    has it) saves building the spec part of the comparison for every queue on every
    session: only the requests change from one session to the next in a steady cluster."""
    known = spec_keys or {}
    key: FillKey = (
        resource_key(total),
        tuple(
            (
                known.get(a.name) or spec_key(a),
                resource_key(a.request),
                resource_key(a.deserved),
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
            memo.last_fill = Fill(key, last.deserved, last.rounds)
        return last.rounds
    water_fill(queue_opts, total)
    deserved = {name: attr.deserved.clone() for name, attr in queue_opts.items()}
    rounds = FillRecord(key)
    memo.last_fill = Fill(key, deserved, rounds)
    return rounds


def _same_fill(last: Fill, key: FillKey) -> bool:
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


def _below_both(deserved: Resource, before: ResourceKey, after: ResourceKey) -> bool:
    """Every dimension that differs between the two request keys holds, in ``deserved``,
    at least ``MIN_RESOURCE`` less than either request (the loop's own epsilon)."""
    old, new = _amounts(before), _amounts(after)
    for name in old.keys() | new.keys():
        was, now = old.get(name, 0.0), new.get(name, 0.0)
        if was != now and deserved.get(name) + MIN_RESOURCE > min(was, now):
            return False
    return True


def _amounts(key: ResourceKey) -> dict[str, float]:
    milli_cpu, memory, scalars = key
    return {"cpu": milli_cpu, "memory": memory, **dict(scalars)}


@dataclass(frozen=True, slots=True)
class QueueSpec:
    """A queue's attributes as its spec and the cluster totals make them (no job counted).

    ``queue`` is the spec object they were derived from, held so that ``is`` tells whether
    the cache still has it: the cache replaces a queue's object on every Queue event and
    never changes one in place."""

    queue: QueueInfo
    attr: QueueAttr
    key: tuple[object, ...]


@dataclass(frozen=True, slots=True)
class SpecMemo:
    """Queue name -> spec-derived attributes, valid for one total resource and one total
    guarantee (real capabilities depend on both)."""

    totals: tuple[object, ...]
    specs: dict[str, QueueSpec]


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

    last_fill: Fill | None = None
    specs: SpecMemo | None = None
    #: In the memo of the loop on adjusted weights: the last adjusted result.
    adjusted: Adjusted | None = None


@dataclass(frozen=True, slots=True)
class Adjusted:
    """The deserved shares worked out on weights adjusted for past usage, with what they
    were worked out from: the weighted loop's run and the adjustments (by identity). Its
    maps are never changed after it is made."""

    weighted_fill: Fill
    adjustments: Mapping[str, WeightAdjustment]
    weighted: dict[str, Resource]
    deserved: dict[str, Resource]
    rounds: Sequence[FillRound]


#: Proportion's slot in ``Session.memos``.
MEMO_SLOT = "proportion"
#: Its slot for the last loop on weights adjusted for past usage (kept apart: both loops
#: run in every such session, and one memo would always hold the other's run).
USAGE_MEMO_SLOT = "proportion.usage"
