"""A server TLS context that follows its certificate files, so a rotation needs no restart.

cert-manager renews a certificate by rewriting the Secret, and the kubelet swaps the mounted
files atomically; uvicorn reads them once at start. Here the listening context carries an
SNI callback, which OpenSSL runs on every ClientHello (with or without a server name: Go's
client sends none to an IP address, as kube-scheduler's does to 127.0.0.1). The callback
re-reads the files when their stat changed and hands the handshake the newest context, so
each new connection sees the current certificate while open connections keep theirs.
"""

from __future__ import annotations

import logging
import os
import ssl
import time
from collections.abc import Callable

log = logging.getLogger(__name__)

Stamp = tuple[tuple[int, int, int], ...]


class ReloadingServerContext:
    """The `ssl.SSLContext` to listen with (`context`), re-loading cert, key and client CA.

    The files are stat'ed at most once per `recheck_seconds`. A set that does not load (a
    key from the next rotation beside the old certificate, a truncated file) leaves the last
    good context serving; it is tried again once the files change again.
    """

    def __init__(
        self,
        cert_file: str,
        key_file: str,
        client_ca_file: str | None = None,
        *,
        recheck_seconds: float = 1.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._files = tuple(f for f in (cert_file, key_file, client_ca_file) if f)
        self._cert, self._key, self._ca = cert_file, key_file, client_ca_file
        self._recheck = recheck_seconds
        self._clock = clock
        self._next_check = 0.0
        self._stamp = self._stat()
        self._failed: Stamp | None = None
        self.context = self._build()
        self.context.sni_callback = self._on_client_hello
        self._current = self.context
        self.reloads = 0

    def _stat(self) -> Stamp:
        stamps = []
        for path in self._files:
            st = os.stat(path)
            stamps.append((st.st_mtime_ns, st.st_size, st.st_ino))
        return tuple(stamps)

    def _build(self) -> ssl.SSLContext:
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(self._cert, self._key)
        if self._ca:
            context.load_verify_locations(cafile=self._ca)
            context.verify_mode = ssl.CERT_REQUIRED
        return context

    def current(self) -> ssl.SSLContext:
        """The newest context that loaded, re-reading the files if they changed."""
        now = self._clock()
        if now < self._next_check:
            return self._current
        self._next_check = now + self._recheck
        try:
            stamp = self._stat()
        except OSError as exc:
            log.warning("cannot stat the TLS files, keeping the loaded certificate: %s", exc)
            return self._current
        if stamp == self._stamp or stamp == self._failed:
            return self._current
        try:
            context = self._build()
        except (OSError, ssl.SSLError) as exc:
            self._failed = stamp
            log.error("cannot load the changed TLS files, keeping the loaded certificate: %s", exc)
            return self._current
        self._current, self._stamp, self._failed = context, stamp, None
        self.reloads += 1
        log.info("reloaded the TLS certificate from %s", self._cert)
        return context

    def _on_client_hello(
        self, connection: ssl.SSLObject | ssl.SSLSocket, server_name: str | None, _: ssl.SSLContext
    ) -> None:
        context = self.current()
        if connection.context is not context:
            connection.context = context
