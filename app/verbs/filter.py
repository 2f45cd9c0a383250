"""POST {prefix}/{filterVerb}: the thin filter handler and the sanity rules on its answer.

kube-scheduler trusts the answer blindly: a name outside the input list is an error, and a
node dropped without a reason gets UnschedulableAndUnresolvable, so preemption can never
pick it. The handler therefore makes every input node appear in exactly one of NodeNames /
FailedNodes / FailedAndUnresolvableNodes, whatever the backend returned.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from functools import partial

from app.telemetry.metrics import VerbMetrics
from app.verbs.common import (
    VerbContext,
    VerbHandler,
    always_200,
    backend_failed,
    pod_ref,
)
from app.verbs.protocol import (
    DecodedArgs,
    OfferedNames,
    encode_filter_error,
    encode_filter_result,
    parse_extender_args,
)
from scheduler_core.extender.decisions import FilterResult
from scheduler_core.framework.status import Code, Status

log = logging.getLogger("app.verbs")

VERB = "filter"
NOT_EVALUATED = "the queue extender gave no verdict for this node"
CODE_NOT_EVALUATED = "not-evaluated"
CODE_UNSCHEDULABLE = "unschedulable"
CODE_UNRESOLVABLE = "unresolvable"


#: An input node the backend gave no verdict: kept a preemption candidate (FailedNodes).
NOT_EVALUATED_STATUS = Status(Code.UNSCHEDULABLE, [NOT_EVALUATED], reason_code=CODE_NOT_EVALUATED)


def keep_to_inputs(inputs: Sequence[str], result: FilterResult) -> FilterResult:
    """The backend's result made safe to send: a partition of `inputs`.

    A node the backend both passed and rejected is rejected (the more conservative verdict
    wins); names not in the input are dropped; input nodes with no verdict get
    ``NOT_EVALUATED_STATUS``, so that they at least stay preemption candidates. Passing
    names keep the input order.
    """
    passed = result.passed
    if not result.failed and (passed is inputs or list(passed) == list(inputs)):
        return result
    input_set = set(inputs)
    failed = {n: s for n, s in result.failed.items() if n in input_set}
    claimed = set(passed)
    passed = [n for n in inputs if n in claimed and n not in failed]
    if len(set(passed)) + len(failed) < len(input_set):
        passing = set(passed)
        missing = [n for n in input_set if n not in passing and n not in failed]
        for n in missing:
            failed[n] = NOT_EVALUATED_STATUS
        log.warning("filter: backend gave no verdict for %d input node(s)", len(missing))
    stray = (claimed | result.failed.keys()) - input_set
    if stray:
        log.warning(
            "filter: dropped %d node(s) the backend named but the request did not", len(stray)
        )
    return FilterResult(passed, failed, result.error)


def filter_outcome(result: FilterResult) -> str:
    """The decision metric's outcome for a sent result: "passed" while any node passes,
    "unresolvable" when no rejected node can be helped by eviction, "failed" otherwise."""
    if result.passed:
        return "passed"
    if result.failed and not any(s.resolvable for s in result.failed.values()):
        return "unresolvable"
    return "failed"


def rejection_codes(result: FilterResult) -> set[str]:
    """The short, stable codes of the rejections, for the rejection metric; a status that
    names none counts as plain "unschedulable" or "unresolvable"."""
    return {
        s.reason_code or (CODE_UNSCHEDULABLE if s.resolvable else CODE_UNRESOLVABLE)
        for s in result.failed.values()
    }


def answer_filter(ctx: VerbContext, m: VerbMetrics, args: DecodedArgs) -> bytes:
    """The filter answer for a well-formed request. Raises ``WireError`` (a 400 naming the
    field) for a pod the engine cannot read; never raises otherwise."""
    try:
        if not ctx.backend.is_managed(args.pod):
            m.outcome("unmanaged")
            return encode_filter_result(args, FilterResult(args.node_names))
        # The request's own tuple, not a copy: a list offered again is recognised by it.
        result = ctx.backend.filter(args.pod, args.node_names)
        error = str(result.error or "")
        answer = keep_to_inputs(args.node_names, result)
    except Exception as exc:
        backend_failed(VERB, ctx, m, args.pod, exc)
        if ctx.on_error == "pass":
            return encode_filter_result(args, FilterResult(args.node_names))
        return encode_filter_error(f"queue extender internal error: {type(exc).__name__}: {exc}")
    if error:
        # An error answer lists no node at all: kube-scheduler fails the attempt and retries
        # the pod, and no node looks like a preemption candidate meanwhile.
        log.warning("filter for pod %s: backend reported an error: %s", pod_ref(args.pod), error)
        m.outcome("error")
        return encode_filter_error(error)
    m.outcome(filter_outcome(answer))
    if answer.failed:
        ctx.metrics.rejections(rejection_codes(answer))
    return encode_filter_result(args, answer)


def make_filter_handler(ctx: VerbContext) -> VerbHandler[DecodedArgs]:
    # The handler's own lists of recent offers: a list offered again is decoded once, a new
    # one into the cache's own name strings when it can be.
    offered = OfferedNames(known=ctx.backend.decode_offered_names)
    parse = partial(parse_extender_args, offered=offered)
    return always_200(ctx, VERB, parse, answer_filter, encode_filter_error)
