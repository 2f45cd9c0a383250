"""POST {prefix}/{prioritizeVerb}: the thin prioritize handler.

kube-scheduler neither clamps nor checks extender scores (a score of 1,000 would swamp every
in-tree plugin), so the answer is normalised here: one entry per input node, in input
order, scores clamped to 0..MaxExtenderPriority, nodes the backend did not score get 0.
The backend answers ``HostScores`` (the names asked, in order, beside an int array on
0..10); that is checked with one comparison and one range check over the array, and an
answer that fails either (a backend bug) is clamped node by node instead.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial

from app.http.errors import encode_error
from app.telemetry.metrics import VerbMetrics
from app.verbs.common import (
    VerbContext,
    VerbHandler,
    backend_failed,
)
from app.verbs.protocol import (
    DecodedArgs,
    HostScoreEncoder,
    OfferedNames,
    encode_host_priorities,
    encode_zero_priorities,
    parse_extender_args,
)
from scheduler_core.extender.prioritize import (
    MAX_EXTENDER_PRIORITY,
    MIN_EXTENDER_PRIORITY,
    HostScores,
)

VERB = "prioritize"


def clamp_scores(inputs: list[str], scores: Sequence[tuple[str, int]]) -> dict[str, int]:
    """The backend's scores for input nodes only, as ints within 0..10 (last one wins)."""
    wanted = set(inputs)
    fast = dict(scores)
    values = fast.values()
    # The usual answer (every score an int within range) is checked in C over thousands of
    # nodes; anything else takes the per-node path below.
    if not values or (
        set(map(type, values)) == {int}
        and min(values) >= MIN_EXTENDER_PRIORITY
        and max(values) <= MAX_EXTENDER_PRIORITY
    ):
        if fast.keys() <= wanted:
            return fast
        return {host: score for host, score in fast.items() if host in wanted}
    out: dict[str, int] = {}
    for host, score in scores:
        if host in wanted:
            if type(score) is int and MIN_EXTENDER_PRIORITY <= score <= MAX_EXTENDER_PRIORITY:
                out[host] = score  # the common case, at half the cost of clamping
            else:
                out[host] = max(MIN_EXTENDER_PRIORITY, min(MAX_EXTENDER_PRIORITY, int(score)))
    return out


def in_range(answer: HostScores) -> bool:
    """Every score an integer within 0..10, as ``HostScores`` keeps them (unless a backend
    replaced its array afterwards)."""
    scores = answer.scores
    if scores.dtype.kind not in "iu":
        return False
    return len(scores) == 0 or (
        int(scores.min()) >= MIN_EXTENDER_PRIORITY and int(scores.max()) <= MAX_EXTENDER_PRIORITY
    )


def answer_prioritize(
    ctx: VerbContext,
    m: VerbMetrics,
    args: DecodedArgs,
    encode_scores: Callable[[list[str], Sequence[int]], bytes],
) -> tuple[int, bytes]:
    """(status, body) for a well-formed request. Raises ``WireError`` (a 400 naming the
    field) for a pod the engine cannot read, as filter does; never raises otherwise."""
    try:
        if not ctx.backend.is_managed(args.pod):
            m.outcome("unmanaged")
            return 200, encode_zero_priorities(args.node_names)
        names = list(args.node_names)
        answer = ctx.backend.prioritize(args.pod, names)
        if answer.names == names and in_range(answer):
            # One in-range int per input node, in input order: encode the array.
            m.outcome("scored")
            return 200, encode_scores(answer.names, answer.scores.tolist())
        scores = clamp_scores(names, answer)
    except Exception as exc:
        backend_failed(VERB, ctx, m, args.pod, exc)
        if ctx.on_error == "pass":
            return 200, encode_zero_priorities(args.node_names)
        # kube-scheduler drops a failed extender's scores and carries on (never fatal).
        return 500, encode_error(f"queue extender internal error: {type(exc).__name__}: {exc}")
    m.outcome("scored")
    return 200, encode_host_priorities(args.node_names, scores)


def make_prioritize_handler(ctx: VerbContext) -> VerbHandler[DecodedArgs]:
    encode_scores = HostScoreEncoder()
    return VerbHandler(
        ctx,
        VERB,
        partial(parse_extender_args, offered=OfferedNames(known=ctx.backend.decode_offered_names)),
        lambda m, args: answer_prioritize(ctx, m, args, encode_scores),
        encode_error,
    )
