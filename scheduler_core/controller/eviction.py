"""Evicting one pod through the Eviction API (``policy/v1``, ``pods/eviction``).

Never a plain delete: the API server checks PodDisruptionBudgets for an eviction and answers
429 when one forbids it. The request carries the pod's UID as a precondition, so a pod that
was deleted and made again under the same name is not evicted for a decision about the old
one.

Every request has a deadline, given by the caller, that the API server is told too; a
request that never left (no connection could be made) is reported apart from one whose
answer was lost, because only the first may be sent again without doubt. An answer that was
lost is *unknown*, never a failure: the server may well have applied it, and the caller must
treat the pod as possibly evicted.
"""

from __future__ import annotations

import enum
import logging

from .rest import ApiError, RestClient

log = logging.getLogger(__name__)


class EvictionResult(enum.Enum):
    OK = "ok"
    PDB = "pdb"  # 429: a PodDisruptionBudget forbids it now; a later cycle may try again
    GONE = "gone"  # 404, or 409 on the UID precondition: that pod no longer exists
    ERROR = "error"  # the server answered and refused it: certainly not done
    UNKNOWN = "unknown"  # sent, but no answer (timeout, broken connection) or a 5xx: maybe done
    NOT_SENT = "not-sent"  # no connection could be made: certainly not done, safe to retry
    DRY_RUN = "dry-run"


def evict(
    rest: RestClient, namespace: str, name: str, uid: str, *, deadline: float
) -> EvictionResult:
    """One eviction request, answered within ``deadline`` seconds or abandoned."""
    body = {
        "apiVersion": "policy/v1",
        "kind": "Eviction",
        "metadata": {"name": name, "namespace": namespace},
        "deleteOptions": {"preconditions": {"uid": uid}} if uid else {},
    }
    path = f"/api/v1/namespaces/{namespace}/pods/{name}/eviction"
    try:
        rest.post_within(path, body, "pods/eviction", deadline)
    except ApiError as exc:
        if exc.status == 429:
            log.info(
                "Eviction of pod %s/%s refused by a disruption budget: %s",
                namespace,
                name,
                exc.message or exc.reason,
            )
            return EvictionResult.PDB
        if exc.status in (404, 409):
            log.info("Pod %s/%s is already gone", namespace, name)
            return EvictionResult.GONE
        if not exc.sent:
            log.warning("Eviction of pod %s/%s not sent: %s", namespace, name, exc)
            return EvictionResult.NOT_SENT
        if exc.ambiguous:
            log.warning(
                "Eviction of pod %s/%s got no clear answer (%s); it may have been applied",
                namespace,
                name,
                exc,
            )
            return EvictionResult.UNKNOWN
        log.warning("Eviction of pod %s/%s failed: %s", namespace, name, exc)
        return EvictionResult.ERROR
    return EvictionResult.OK
