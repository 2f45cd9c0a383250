"""POST {prefix}/{filterVerb}: the thin filter handler and the sanity rules on its answer.

kube-scheduler trusts the answer blindly: a name outside the input list is an error, and a
node dropped without a reason gets UnschedulableAndUnresolvable, so preemption can never
pick it. The handler therefore makes every input node appear in exactly one of NodeNames /
FailedNodes / FailedAndUnresolvableNodes, whatever the backend returned.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from app.telemetry.metrics import VerbMetrics
from app.verbs.common import (
    Endpoint,
    VerbContext,
    log_backend_failure,
    pod_ref,
    verb_endpoint,
)
from app.verbs.ports import BadPodError, FilterDecision
from app.verbs.wire import (
    DecodedArgs,
    WireError,
    encode_filter_error,
    encode_filter_result,
    parse_extender_args,
)

log = logging.getLogger("app.verbs")

VERB = "filter"
NOT_EVALUATED = "the queue extender gave no verdict for this node"
CODE_NOT_EVALUATED = "not-evaluated"
CODE_UNSCHEDULABLE = "unschedulable"
CODE_UNRESOLVABLE = "unresolvable"


@dataclass(slots=True)
class FilterAnswer:
    """A filter decision made safe to send: a partition of the input nodes."""

    passed: list[str]
    failed: dict[str, str]
    unresolvable: dict[str, str]
    outcome: str
    rejection_codes: set[str] = field(default_factory=set)


def partition_filter_decision(inputs: list[str], d: FilterDecision) -> FilterAnswer:
    """Partitions `inputs` by the backend's decision.

    Unresolvable beats failed beats passed (the more conservative verdict wins, as
    kube-scheduler itself ranks FailedAndUnresolvableNodes over FailedNodes); names not in
    the input are dropped; input nodes with no verdict become FailedNodes, so that they at
    least stay preemption candidates.
    """
    if not d.failed and not d.failed_unresolvable and d.node_names == inputs:
        return FilterAnswer(list(inputs), {}, {}, "passed" if inputs else "failed")
    input_set = set(inputs)
    unresolvable = {n: str(r) for n, r in d.failed_unresolvable.items() if n in input_set}
    failed = {n: str(r) for n, r in d.failed.items() if n in input_set and n not in unresolvable}
    claimed = set(d.node_names)
    passed = [n for n in inputs if n in claimed and n not in failed and n not in unresolvable]
    codes = {d.reason_codes.get(n, CODE_UNRESOLVABLE) for n in unresolvable}
    codes.update(d.reason_codes.get(n, CODE_UNSCHEDULABLE) for n in failed)
    if len(set(passed)) + len(failed) + len(unresolvable) < len(input_set):
        passing = set(passed)
        missing = [n for n in input_set if n not in passing and n not in failed]
        missing = [n for n in missing if n not in unresolvable]
        for n in missing:
            failed[n] = NOT_EVALUATED
        codes.add(CODE_NOT_EVALUATED)
        log.warning("filter: backend gave no verdict for %d input node(s)", len(missing))
    stray = (claimed | d.failed.keys() | d.failed_unresolvable.keys()) - input_set
    if stray:
        log.warning(
            "filter: dropped %d node(s) the backend named but the request did not", len(stray)
        )
    if passed:
        outcome = "passed"
    elif unresolvable and not failed:
        outcome = "unresolvable"
    else:
        outcome = "failed"
    return FilterAnswer(passed, failed, unresolvable, outcome, codes)


def answer_filter(ctx: VerbContext, m: VerbMetrics, args: DecodedArgs) -> bytes:
    """The filter answer for a well-formed request. Raises ``WireError`` (a 400 naming the
    field) for a pod the engine cannot read; never raises otherwise."""
    try:
        if not ctx.backend.is_managed(args.pod):
            m.outcome("unmanaged")
            return encode_filter_result(args, args.node_names, {}, {})
        decision = ctx.backend.filter(args.pod, list(args.node_names))
        answer = partition_filter_decision(args.node_names, decision)
        error = str(decision.error or "")
    except BadPodError as exc:
        raise WireError(str(exc)) from exc
    except Exception as exc:
        m.error()
        m.outcome("error")
        log_backend_failure(VERB, args.pod, exc, ctx.on_error)
        if ctx.on_error == "pass":
            return encode_filter_result(args, args.node_names, {}, {})
        return encode_filter_error(f"queue extender internal error: {type(exc).__name__}: {exc}")
    if error:
        # An error answer lists no node at all: kube-scheduler fails the attempt and retries
        # the pod, and no node looks like a preemption candidate meanwhile.
        log.warning("filter for pod %s: backend reported an error: %s", pod_ref(args.pod), error)
        m.outcome("error")
        return encode_filter_error(error)
    m.outcome(answer.outcome)
    if answer.rejection_codes:
        ctx.metrics.rejections(answer.rejection_codes)
    return encode_filter_result(args, answer.passed, answer.failed, answer.unresolvable)


def make_filter_endpoint(ctx: VerbContext) -> Endpoint:
    return verb_endpoint(
        ctx,
        VERB,
        parse_extender_args,
        lambda m, args: (200, answer_filter(ctx, m, args)),
        encode_filter_error,
    )
