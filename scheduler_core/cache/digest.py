"""What the engine reads of an object, digested: most watch updates of pods and nodes
(a status heartbeat, managedFields) change nothing the engine reads, and are recognised
before conversion by comparing digests."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

import orjson


def stored_version(pod: Mapping[str, Any]) -> str:
    """The resourceVersion of a pod as the API server stored it; "" without one (a static
    file's pod, a hand-made one)."""
    meta = pod.get("metadata")
    version = meta.get("resourceVersion") if isinstance(meta, dict) else None
    return version if isinstance(version, str) else ""


#: What the engine never reads of any object: the server's version stamp and the record of
#: which client wrote which field.
_UNREAD_METADATA = frozenset({"resourceVersion", "managedFields"})
#: Of a node condition, the kubelet's periodic "still so" stamp (a change of the condition
#: itself moves its status, reason, message or lastTransitionTime).
_UNREAD_CONDITION = "lastHeartbeatTime"
_DIGESTED_KINDS = frozenset({"Pod", "Node"})
#: Bytes of each digest; a pod's is two: of the pod without ``spec.nodeName`` and
#: ``status``, then of those two (a bind changes only the second).
DIGEST_SIZE = 16


def _hashed(encoded: bytes) -> bytes:
    """``DIGEST_SIZE`` bytes of SHA-256 (which the processor computes faster than BLAKE2b
    here, and as collision-resistant at this length)."""
    return hashlib.sha256(encoded).digest()[:DIGEST_SIZE]


def read_digest(kind: str, obj: Mapping[str, Any]) -> tuple[tuple[str, str], bytes] | None:
    """((kind, key), digest of ``obj`` without what the engine never reads), or None when
    ``kind`` is not digested or the object has an unexpected shape (it is then converted,
    and its conversion says what is wrong). Everything else of the object is digested, so
    an update that changes any other field is never taken for an unchanged one."""
    if kind not in _DIGESTED_KINDS:
        return None
    meta = obj.get("metadata")
    if not isinstance(meta, dict):
        return None
    name, namespace = meta.get("name"), meta.get("namespace")
    if not isinstance(name, str) or not name:
        return None
    key = f"{namespace}/{name}" if isinstance(namespace, str) and namespace else name
    unread = dict(meta)  # a copy and two deletions: cheaper than a filtering comprehension
    for field in _UNREAD_METADATA:
        unread.pop(field, None)
    view = {**obj, "metadata": unread}
    status = obj.get("status")
    if kind == "Node" and isinstance(status, dict):
        conditions = status.get("conditions")
        if isinstance(conditions, list):
            view["status"] = {
                **status,
                "conditions": [
                    {k: v for k, v in c.items() if k != _UNREAD_CONDITION}
                    if isinstance(c, dict)
                    else c
                    for c in conditions
                ],
            }
    placement: list[Any] = []
    if kind == "Pod":
        spec = view.get("spec")
        if isinstance(spec, dict) and "nodeName" in spec:
            view["spec"] = placed = dict(spec)
            placement.extend((True, placed.pop("nodeName")))
        else:
            placement.extend((False, None))
        placement.extend(("status" in view, view.pop("status", None)))
    try:
        encoded = orjson.dumps(view)
        digest = _hashed(encoded)
        if placement:
            digest += _hashed(orjson.dumps(placement))
    except TypeError:
        return None
    return (kind, key), digest
