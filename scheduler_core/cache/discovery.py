"""Whether the API server serves a resource, asked the way ``kubectl api-resources`` does.

An optional kind (Volcano's HyperNode, Kubernetes' native PodGroup) is watched only where it
is served: a reflector on a resource that does not exist would fail forever, hold readiness
and fill the log. Discovery answers one of four things: served (at which version), not served
(no version's group version lists the resource), forbidden (served, but listing it is refused
to us, asked only of kinds that are then left out) or unknown (the API server could not be
asked: asked again later).
"""

from __future__ import annotations

import enum
import logging
from dataclasses import dataclass
from typing import Any

import orjson

from scheduler_core.cache.kinds import KindSpec, OptionalKind

log = logging.getLogger(__name__)


class Served(enum.Enum):
    YES = "served"
    NO = "not served"
    FORBIDDEN = "forbidden"
    UNKNOWN = "unknown"


@dataclass(frozen=True, slots=True)
class Found:
    """Discovery's answer for one optional kind: ``spec`` is the version served (when
    ``answer`` is YES or FORBIDDEN)."""

    answer: Served
    spec: KindSpec | None = None


def discover(api_client: Any, optional: OptionalKind, timeout: float = 10.0) -> Found:
    """The preferred served version of ``optional``, asked version by version.

    A version that cannot be asked makes the answer unknown rather than falling back to a
    lesser version: the next round asks again, and the preferred one is watched once it
    answers."""
    for spec in optional.versions:
        answer = served(api_client, spec, timeout)
        if answer is Served.NO:
            continue
        if answer is Served.YES and optional.forbidden_left_out:
            return Found(_listable(api_client, spec, timeout), spec)
        return Found(answer, spec if answer is Served.YES else None)
    return Found(Served.NO)


def served(api_client: Any, spec: KindSpec, timeout: float = 10.0) -> Served:
    """Ask the API server's discovery document of ``spec``'s group version whether it lists
    ``spec``'s resource."""
    try:
        status, body = _get(api_client, spec.api_prefix, [], timeout)
    except Exception as exc:  # any transport or client failure: ask again later
        log.warning("Discovery of %s failed (%s); asking again later", spec.resource, exc)
        return Served.UNKNOWN
    if status == 404:
        return Served.NO
    if status != 200:
        log.warning("Discovery of %s answered HTTP %d; asking again later", spec.resource, status)
        return Served.UNKNOWN
    try:
        document = orjson.loads(body)
        names = {r.get("name") for r in document.get("resources") or () if isinstance(r, dict)}
    except (orjson.JSONDecodeError, AttributeError, TypeError):
        log.warning("Discovery of %s: undecodable answer; asking again later", spec.resource)
        return Served.UNKNOWN
    return Served.YES if spec.plural in names else Served.NO


def _listable(api_client: Any, spec: KindSpec, timeout: float) -> Served:
    """YES unless listing ``spec`` (cluster-wide, one item) is forbidden to us (an extender
    upgraded without its ClusterRole). Any other failure is YES: the informer's own retries
    tell of it."""
    try:
        status, _ = _get(api_client, spec.list_path(), [("limit", "1")], timeout)
    except Exception:  # the informer's own retries report transport failures
        return Served.YES
    return Served.FORBIDDEN if status == 403 else Served.YES


def _get(
    api_client: Any, path: str, query: list[tuple[str, str]], timeout: float
) -> tuple[int, bytes]:
    """(HTTP status, body) of a GET through the client (its host, auth and TLS)."""
    method, url, headers, _body, _post = api_client.param_serialize(
        "GET",
        path,
        query_params=query,
        header_params={"Accept": "application/json"},
        auth_settings=["BearerToken"],
    )
    rest = api_client.call_api(
        method, url, header_params=headers, _request_timeout=(timeout, timeout)
    )
    response = rest.response
    try:
        return int(response.status), bytes(response.data)
    finally:
        response.release_conn()
