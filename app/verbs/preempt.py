"""POST {prefix}/{preemptVerb}: the thin preempt handler.

kube-scheduler fails the whole preemption on a node with an empty victim list ("expected at
least one victim pod on node") and on a node it does not know, so the answer keeps only
candidate nodes with at least one victim. An empty map means "no preemption", which is
also what every failure answers: nothing is evicted on doubt.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from app.http.errors import encode_error
from app.telemetry.metrics import VerbMetrics
from app.verbs.common import (
    VerbContext,
    VerbHandler,
    always_200,
    backend_failed,
)
from app.verbs.protocol import (
    DecodedPreemptionArgs,
    encode_preemption_result,
    parse_preemption_args,
)
from scheduler_core.extender.decisions import NodeVictims

log = logging.getLogger("app.verbs")

VERB = "preempt"


def echo_victims(args: DecodedPreemptionArgs) -> dict[str, NodeVictims]:
    """kube-scheduler's own proposal, minus nodes with no victims (the unmanaged answer)."""
    return {
        node: NodeVictims(uids=list(uids), num_pdb_violations=args.pdb_violations.get(node, 0))
        for node, uids in args.candidates.items()
        if uids
    }


def keep_valid_victims(
    candidates: Mapping[str, list[str]], result: Mapping[str, NodeVictims]
) -> dict[str, NodeVictims]:
    """The backend's answer restricted to candidate nodes with at least one victim.

    UIDs are de-duplicated (first position kept, so the priority order survives).
    """
    out: dict[str, NodeVictims] = {}
    strangers = 0
    for node, victims in result.items():
        if node not in candidates:
            strangers += 1
            continue
        if isinstance(victims.uids, str):
            raise TypeError(f"victims of node {node!r} must be a list of UIDs, not a string")
        uids = list(dict.fromkeys(str(u) for u in victims.uids))
        if uids:
            pdb = max(0, int(victims.num_pdb_violations))
            out[node] = NodeVictims(uids=uids, num_pdb_violations=pdb)
    if strangers:
        log.warning("preempt: dropped %d node(s) that were not candidates", strangers)
    return out


def answer_preempt(ctx: VerbContext, m: VerbMetrics, args: DecodedPreemptionArgs) -> bytes:
    """The preempt answer for a well-formed request. Raises ``WireError`` (a 400 naming the
    field) for a pod the engine cannot read; never raises otherwise."""
    try:
        if not ctx.backend.is_managed(args.pod):
            m.outcome("unmanaged")
            return encode_preemption_result(echo_victims(args))
        proposal = {node: list(uids) for node, uids in args.candidates.items()}
        victims = keep_valid_victims(args.candidates, ctx.backend.preempt(args.pod, proposal))
    except Exception as exc:
        backend_failed(VERB, ctx, m, args.pod, exc)
        return encode_preemption_result({})
    if victims:
        m.outcome("victims")
        ctx.metrics.preemption_victims.inc(sum(len(v.uids) for v in victims.values()))
    else:
        m.outcome("no_victims")
    return encode_preemption_result(victims)


def make_preempt_handler(ctx: VerbContext) -> VerbHandler[DecodedPreemptionArgs]:
    return always_200(ctx, VERB, parse_preemption_args, answer_preempt, encode_error)
