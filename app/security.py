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
from collections.abc import Awaitable, Callable, MutableMapping
from pathlib import Path
from typing import Any

import orjson

log = logging.getLogger(__name__)

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


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


_UNAUTHORIZED = orjson.dumps({"Error": "unauthorized: a valid bearer token is required"})


class BearerAuthMiddleware:
    """Pure ASGI middleware: every HTTP path except `open_paths` needs the bearer token."""

    def __init__(self, app: ASGIApp, tokens: TokenFile, open_paths: frozenset[str]) -> None:
        self._app = app
        self._tokens = tokens
        self._open = open_paths

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] in self._open:
            await self._app(scope, receive, send)
            return
        auth: bytes | None = None
        for name, value in scope["headers"]:
            if name == b"authorization":
                auth = value
                break
        if self._tokens.accepts(auth):
            await self._app(scope, receive, send)
            return
        await send(
            {
                "type": "http.response.start",
                "status": 401,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(_UNAUTHORIZED)).encode()),
                    (b"www-authenticate", b'Bearer realm="queue-extender"'),
                ],
            }
        )
        await send({"type": "http.response.body", "body": _UNAUTHORIZED})
