"""TLS serving options and bearer-token authentication.

kube-scheduler's extender client can present a client certificate (`tlsConfig.certFile`) and
verify us (`tlsConfig.caFile`); mutual TLS is therefore the strong option. It cannot send
custom headers, so the bearer token protects the debug endpoints from humans and scripts
(and the verbs when kube-scheduler is fronted by a proxy that adds the header). Probes stay
open because the kubelet sends no credentials.
"""

from __future__ import annotations

import hmac
import logging
import os
import ssl
import time
from pathlib import Path
from typing import Any

import orjson
from starlette.authentication import (
    AuthCredentials,
    AuthenticationBackend,
    AuthenticationError,
    BaseUser,
    SimpleUser,
)
from starlette.requests import HTTPConnection
from starlette.responses import Response

log = logging.getLogger(__name__)


def tls_options(
    cert_file: str | None, key_file: str | None, client_ca_file: str | None
) -> dict[str, Any]:
    """uvicorn's keyword arguments for TLS (and mutual TLS when a client CA is given).

    Raises ValueError on a half-configured TLS set-up rather than silently serving plain HTTP.
    """
    if not cert_file and not key_file:
        if client_ca_file:
            raise ValueError("--client-ca needs --tls-cert and --tls-key")
        return {}
    if not cert_file or not key_file:
        raise ValueError("--tls-cert and --tls-key must be given together")
    for f in (cert_file, key_file, client_ca_file):
        if f and not Path(f).is_file():
            raise ValueError(f"TLS file not found: {f}")
    opts: dict[str, Any] = {"ssl_certfile": cert_file, "ssl_keyfile": key_file}
    if client_ca_file:
        opts["ssl_ca_certs"] = client_ca_file
        opts["ssl_cert_reqs"] = ssl.CERT_REQUIRED
    return opts


class TokenFile:
    """The expected bearer token, re-read when the file changes (e.g. a rotated Secret).

    The file is stat'ed at most once per `recheck_seconds`; if it disappears or cannot be
    read later, the last good token stays in force. An empty token denies every request:
    an empty file is a misconfiguration, never "auth off".
    """

    def __init__(self, path: str, recheck_seconds: float = 1.0) -> None:
        self._path = path
        self._recheck = recheck_seconds
        self._stamp: tuple[int, int, int] | None = None
        self._next_check = 0.0
        self._token = b""
        self._load(os.stat(path))

    def _load(self, st: os.stat_result) -> None:
        with open(self._path, "rb") as fh:
            token = fh.read().strip()
        if not token:
            log.error("token file %s is empty: every authenticated request is denied", self._path)
        self._token = token
        self._stamp = (st.st_mtime_ns, st.st_size, st.st_ino)

    def token(self) -> bytes:
        now = time.monotonic()
        if now >= self._next_check:
            self._next_check = now + self._recheck
            try:
                st = os.stat(self._path)
                if (st.st_mtime_ns, st.st_size, st.st_ino) != self._stamp:
                    self._load(st)
                    log.info("re-read token file %s", self._path)
            except OSError as exc:
                log.warning(
                    "cannot re-read token file %s, keeping the last token: %s", self._path, exc
                )
        return self._token

    def accepts(self, authorization: bytes | None) -> bool:
        """Whether an `Authorization` header value carries the token (constant-time compare)."""
        expected = self.token()
        if not expected or not authorization:
            return False
        scheme, _, presented = authorization.partition(b" ")
        if scheme.lower() != b"bearer":
            return False
        return hmac.compare_digest(presented.strip(), expected)


class BearerTokenBackend(AuthenticationBackend):
    """Starlette's authentication backend for the token: every path but `open_paths` needs it.

    Starlette's `AuthenticationMiddleware` only labels requests; refusing them is the backend's
    call (`AuthenticationError`), answered by `unauthorized` below.
    """

    def __init__(self, tokens: TokenFile, open_paths: frozenset[str]) -> None:
        self._tokens = tokens
        self._open = open_paths

    async def authenticate(self, conn: HTTPConnection) -> tuple[AuthCredentials, BaseUser] | None:
        if conn.url.path in self._open:
            return None
        header = conn.headers.get("authorization")
        if self._tokens.accepts(header.encode("latin-1") if header is not None else None):
            return AuthCredentials(["authenticated"]), SimpleUser("bearer")
        raise AuthenticationError("a valid bearer token is required")


def unauthorized(conn: HTTPConnection, exc: AuthenticationError) -> Response:
    """The answer to every refused request, in the verbs' error shape.

    401 unless the error names another status (`status_code`): 403 for a user RBAC does not
    allow, 429 when the review budget is spent, 503 when the API server could not review the
    request.
    """
    status = getattr(exc, "status_code", 401)
    message = str(exc) or "a valid bearer token is required"
    headers = {}
    if status == 401:
        headers["www-authenticate"] = 'Bearer realm="queue-extender"'
        message = f"unauthorized: {message}"
    elif status == 403:
        message = f"forbidden: {message}"
    elif status in (429, 503):
        headers["retry-after"] = "1"
    return Response(
        orjson.dumps({"Error": message}),
        status_code=status,
        media_type="application/json",
        headers=headers,
    )
