"""Whether the API server serves a resource, asked the way ``kubectl api-resources`` does.

An optional kind (Volcano's HyperNode) is watched only where it is served: a reflector on a
resource that does not exist would fail forever, hold readiness and fill the log. Discovery
answers one of three things: served, not served (the group version is absent, or lists no
such resource) or unknown (the API server could not be asked: asked again later).
"""

from __future__ import annotations

import enum
import logging
from typing import Any

import orjson

from scheduler_core.cache.kinds import KindSpec

log = logging.getLogger(__name__)


class Served(enum.Enum):
    YES = "served"
    NO = "not served"
    UNKNOWN = "unknown"


def served(api_client: Any, spec: KindSpec, timeout: float = 10.0) -> Served:
    """Ask the API server's discovery document of ``spec``'s group version whether it lists
    ``spec``'s resource."""
    try:
        method, url, headers, _body, _post = api_client.param_serialize(
            "GET",
            spec.api_prefix,
            header_params={"Accept": "application/json"},
            auth_settings=["BearerToken"],
        )
        rest = api_client.call_api(
            method, url, header_params=headers, _request_timeout=(timeout, timeout)
        )
        response = rest.response
        try:
            status = int(response.status)
            body: bytes = response.data
        finally:
            response.release_conn()
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
