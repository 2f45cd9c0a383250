"""proportion's session: the queue records it derives as a session opens (from the jobs, or
from the live cache's per-queue sums), their deserved shares, and how a long-lived
read-only session follows a change of usage without being rebuilt."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import partial
from typing import ClassVar

from scheduler_core.api.queue import QueueInfo
from scheduler_core.api.resource import ZERO, Resource
from scheduler_core.api.usage import JobUsage, job_usage
from scheduler_core.framework.arguments import Arguments
from scheduler_core.framework.hooks import OVERUSED, QUEUE_ORDER, WeightAdjustment
from scheduler_core.framework.registry import FollowStep, UsageChange
from scheduler_core.framework.session import QueueShare, Session
from scheduler_core.logutil import v
from scheduler_core.plugins.fairshare.attrs import FillRound, QueueAttr, proportion_share, trace
from scheduler_core.plugins.fairshare.spec import flat_attr, total_guarantee
from scheduler_core.plugins.proportion.adjusted import derive_adjusted
from scheduler_core.plugins.proportion.args import ProportionArgs
from scheduler_core.plugins.proportion.hooks import ProportionRules
from scheduler_core.plugins.proportion.memo import (
    MEMO_SLOT,
    USAGE_MEMO_SLOT,
    ProportionMemo,
    QueueSpec,
    SpecMemo,
    deserved_shares,
    resource_key,
    spec_key,
)

log = logging.getLogger("scheduler_core.plugins.proportion")


class ProportionPlugin(ProportionRules):
    """Weighted fair share between flat queues; ``queue_opts`` stays readable after the
    session closes, so reporting (simulate, /metrics) can show what it decided from."""

    name = "proportion"
    log_label = "Proportion"
    args_type: ClassVar[type[ProportionArgs]] = ProportionArgs

    def __init__(self, arguments: Arguments) -> None:
        super().__init__(arguments)
        #: every pass of the deserved loop, as it ran this session (the explain API's record)
        self.derivation: Sequence[FillRound] = ()
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
                    spec = specs[queue_name] = QueueSpec(queue, derived, spec_key(derived))
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
        ssn.add_hook(OVERUSED, self.name, self._overused)
        self._register_queue_hooks(ssn)

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
        gained or lost its jobs: open a new session).

        When jobs went (``change.gone``), a queue whose first job went may come later in
        the order a new session takes the queues in (that of their first jobs), and the
        deserved loop runs in that order: the records are put in it again."""
        fresh: dict[str, QueueAttr] = {}
        opts, usage = self.queue_opts, change.usage
        for name in change.queues:
            attr, total = opts.get(name), usage.get(name)
            if attr is None or total is None:
                return None
            fresh[name] = _attr_from_spec(attr, total, attr.deserved)
        order = None
        if change.gone:
            order = self._order_of_first_jobs(ssn)
            if order is None:
                return None
        return partial(self._take_fresh, fresh, order)

    def _order_of_first_jobs(self, ssn: Session) -> list[str] | None:
        """The queues with records in the order a session opening now would take them (that
        of their first jobs), or None when the queues with jobs are not those with records.
        Stops at the job that brings the last of them."""
        opts = self.queue_opts
        seen: dict[str, None] = {}
        for job in ssn.jobs.values():
            if job.queue not in seen:
                seen[job.queue] = None
                if len(seen) == len(opts):
                    break
        if seen.keys() != opts.keys():
            return None
        return list(seen)

    def _take_fresh(self, fresh: dict[str, QueueAttr], order: list[str] | None = None) -> None:
        opts = self.queue_opts
        # A loop, not ``any`` over a generator: this runs after every bind.
        moved = False
        for name, record in fresh.items():
            if not record.request.semantic_equal(opts[name].request):
                moved = True
                break
        if order is not None and order != list(opts):
            records = [(name, opts[name]) for name in order]
            opts.clear()
            opts.update(records)
            moved = True  # the deserved loop's order moved
        opts.update(fresh)  # an existing key keeps its place: the loop's order
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
        (``adjustWeights``), the loop again on the adjusted weights (``derive_adjusted``).
        Without an adjustment the first loop's answer stands untouched: exactly Volcano's."""
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
        self.weighted, self.derivation = derive_adjusted(
            self.queue_opts, self.total_resource, adjustments, self._memo, self._adjusted_memo
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

    def _spec_memo(self, queues: int) -> dict[str, QueueSpec]:
        """The shared spec memo for this session's totals (a fresh one if they changed, or
        if deleted queues have left it twice the size of the cluster's queue list)."""
        totals = (resource_key(self.total_resource), resource_key(self.total_guarantee))
        memo = self._memo.specs
        if memo is None or memo.totals != totals or len(memo.specs) > 2 * queues:
            memo = self._memo.specs = SpecMemo(totals, {})
        return memo.specs

    def _new_attr(self, queue: QueueInfo) -> QueueAttr:
        return flat_attr(queue, self.total_resource, self.total_guarantee)


def _attr_from_spec(
    spec: QueueAttr, usage: JobUsage, deserved: Resource | None = None
) -> QueueAttr:
    """A session's own record for a queue: its spec-derived attributes and its jobs' sums,
    the same as ``usage.add_to`` on a fresh record, without building the zeros first; with
    ``deserved`` (a followed queue keeps its record's) or none yet.

    Capability, real capability and guarantee are shared with the memo, not copied: in flat
    mode nothing changes them in place after they are derived (the deserved loop and the
    hooks only read them, and a what-if clones the record first). The sums are copied: the
    session's allocate and evict events change them."""
    return QueueAttr(
        name=spec.name,
        weight=spec.weight,
        allocated=usage.allocated.added_to_zero(),
        request=usage.request.added_to_zero(),
        inqueue=usage.inqueue.added_to_zero(),
        elastic=usage.elastic.added_to_zero(),
        capability=spec.capability,
        real_capability=spec.real_capability,
        guarantee=spec.guarantee,
        deserved=deserved if deserved is not None else Resource.empty(),
    )


def _contended(attrs: Iterable[QueueAttr], total: Resource) -> bool:
    """Whether the queues together ask for more than the cluster holds on some dimension:
    only then does how the weights split it make a difference worth adjusting."""
    asked = Resource.empty()
    for attr in attrs:
        asked.add(attr.request)
    return not asked.less_equal(total, ZERO)
