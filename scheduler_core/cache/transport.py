"""GET requests to the API server through the official client's transport (its host,
auth, TLS and connection pool), one in flight at a time per reflector, which another thread
can cut: the reflector's only contact with HTTP."""

from __future__ import annotations

import logging
import threading
from typing import Any, Final

import urllib3
from kubernetes.client.exceptions import ApiException

log = logging.getLogger("scheduler_core.cache.reflector")

# urllib3 is what the kubernetes client's REST layer uses underneath; failures surface as its
# exceptions (the client only wraps SSL errors), as OSError, or as the client's ApiException.
TRANSPORT_ERRORS: Final = (urllib3.exceptions.HTTPError, OSError, ApiException)


class ApiTransport:
    """GETs of one resource path; the response being read is kept so ``cut`` can end it."""

    def __init__(self, api_client: Any, path: str, connect_timeout: float, name: str) -> None:
        self._api = api_client
        self._path = path
        self._connect_timeout = connect_timeout
        self._name = name
        self._response_lock = threading.Lock()
        self._response: Any = None  # the urllib3 response being read, so cut() can end it

    def cut(self) -> None:
        """Interrupt the request in flight, if any (from another thread)."""
        with self._response_lock:
            response = self._response
        if response is not None:
            shutdown(response)

    def open(self, query: list[tuple[str, str]], read_timeout: float, stop: threading.Event) -> Any:
        """Send a GET through the client (its host, auth, TLS and pool); answer unread.

        ``param_serialize`` with the ``BearerToken`` setting is what the generated API classes
        do, so tokens from exec plugins and refreshed service-account tokens apply here too.
        """
        method, url, headers, _body, _post = self._api.param_serialize(
            "GET",
            self._path,
            query_params=query,
            header_params={"Accept": "application/json"},
            auth_settings=["BearerToken"],
        )
        rest = self._api.call_api(
            method,
            url,
            header_params=headers,
            _request_timeout=(self._connect_timeout, read_timeout),
        )
        response = rest.response
        with self._response_lock:
            self._response = response
        if stop.is_set():
            shutdown(response)
        return response

    def close(self, response: Any, reusable: bool = False) -> None:
        """Give the connection back; one not read to its end is closed first.

        A watch connection is never reused: it may hold unread bytes, and it lives for minutes
        anyway. A fully read list page goes back to the pool for the next page.
        """
        with self._response_lock:
            if self._response is response:
                self._response = None
        try:
            if not reusable:
                response.close()
            response.release_conn()
        except Exception:  # closing a broken connection may fail again; nothing to do
            log.debug("%s: closing the connection failed", self._name, exc_info=True)


def shutdown(response: Any) -> None:
    """Interrupt a blocking read on ``response`` from another thread."""
    try:
        response.shutdown()
    except Exception:
        log.debug("shutting down a response failed", exc_info=True)


def refused(exc: BaseException) -> bool:
    """A connection nobody accepted (refused, or not established in time), as opposed to a
    server that answered or broke off: only these are retried on the short backoff."""
    if isinstance(exc, urllib3.exceptions.MaxRetryError) and exc.reason is not None:
        exc = exc.reason
    return isinstance(exc, urllib3.exceptions.ConnectTimeoutError | ConnectionRefusedError)


def brief(exc: BaseException) -> str:
    text = str(exc) or type(exc).__name__
    return text if len(text) <= 200 else text[:197] + "..."
