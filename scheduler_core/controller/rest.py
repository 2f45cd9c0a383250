"""JSON requests through the informers' ``ApiClient``, counted per resource, verb and result.

The generated API classes build typed models and pick a PATCH content type by position in a
list; the controller writes a few small documents and wants plain dicts, an explicit merge
patch, and one counter of every write it makes (``queue_extender_api_writes_total``), which is
how a burst of cluster changes is shown to cost a bounded number of writes.
"""

from __future__ import annotations

import logging
from typing import Any, Final

import orjson
from kubernetes.client.exceptions import ApiException
from prometheus_client import CollectorRegistry, Counter

log = logging.getLogger(__name__)

MERGE_PATCH: Final = "application/merge-patch+json"
JSON: Final = "application/json"

#: (connect, read) timeouts of one write: a slow API server delays a background thread only.
TIMEOUT: Final = (5.0, 15.0)


class ApiError(Exception):
    """A non-2xx answer (or a transport failure, status 0) with the server's message."""

    def __init__(self, status: int, reason: str, message: str = "") -> None:
        super().__init__(f"{status} {reason}: {message}" if message else f"{status} {reason}")
        self.status = status
        self.reason = reason
        self.message = message

    @property
    def conflict(self) -> bool:
        return self.status == 409

    @property
    def not_found(self) -> bool:
        return self.status == 404


class RestClient:
    """Plain JSON requests with the client's host, TLS and authentication."""

    def __init__(self, api_client: Any, registry: CollectorRegistry | None = None) -> None:
        self._api = api_client
        self.writes = Counter(
            "queue_extender_api_writes",
            "Writes the controller sent to the API server, by resource, verb and result code "
            "(0: no answer).",
            ["resource", "verb", "code"],
            registry=registry,
        )

    def get(self, path: str) -> dict[str, Any]:
        return self._call("GET", path, None, JSON)

    def post(self, path: str, body: dict[str, Any], resource: str) -> dict[str, Any]:
        return self._write("POST", path, body, JSON, resource, "create")

    def put(self, path: str, body: dict[str, Any], resource: str) -> dict[str, Any]:
        return self._write("PUT", path, body, JSON, resource, "update")

    def merge_patch(self, path: str, body: dict[str, Any], resource: str) -> dict[str, Any]:
        return self._write("PATCH", path, body, MERGE_PATCH, resource, "patch")

    def _write(
        self,
        method: str,
        path: str,
        body: dict[str, Any],
        content_type: str,
        resource: str,
        verb: str,
    ) -> dict[str, Any]:
        try:
            answer = self._call(method, path, body, content_type)
        except ApiError as exc:
            self.writes.labels(resource, verb, str(exc.status)).inc()
            raise
        self.writes.labels(resource, verb, "200").inc()
        return answer

    def _call(
        self, method: str, path: str, body: dict[str, Any] | None, content_type: str
    ) -> dict[str, Any]:
        headers = {"Accept": JSON}
        if body is not None:
            headers["Content-Type"] = content_type
        try:
            method, url, headers, _body, _post = self._api.param_serialize(
                method, path, header_params=headers, auth_settings=["BearerToken"]
            )
            rest = self._api.call_api(
                method,
                url,
                header_params=headers,
                body=body,
                _request_timeout=TIMEOUT,
            )
            response = rest.response
            data: bytes = response.data
            status = int(response.status)
            reason = str(response.reason or "")
        except ApiException as exc:
            raise ApiError(
                int(exc.status or 0), str(exc.reason or ""), str(exc.body or "")
            ) from exc
        except Exception as exc:  # transport failures: urllib3 errors, OSError, client errors
            raise ApiError(0, type(exc).__name__, str(exc)) from exc
        if not 200 <= status < 300:
            message = ""
            try:
                message = str(orjson.loads(data).get("message", ""))
            except (orjson.JSONDecodeError, AttributeError):
                message = data[:200].decode(errors="replace")
            raise ApiError(status, reason, message)
        try:
            decoded = orjson.loads(data) if data else {}
        except orjson.JSONDecodeError as exc:
            raise ApiError(status, "undecodable answer", str(exc)) from exc
        return decoded if isinstance(decoded, dict) else {}
