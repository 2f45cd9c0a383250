"""A TCP forwarder on loopback that can be opened later: an API server that is not there yet."""

from __future__ import annotations

import contextlib
import socket
import threading

from tests.e2e.controlplane import free_port


class Forwarder:
    """Listens on ``port`` (nothing listens there until ``open``) and pipes every connection
    to ``target`` on 127.0.0.1."""

    def __init__(self, target: int) -> None:
        self.target = target
        self.port = free_port()
        self._server: socket.socket | None = None
        self._threads: list[threading.Thread] = []

    def open(self) -> None:
        server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        server.bind(("127.0.0.1", self.port))
        server.listen(64)
        self._server = server
        self._spawn(self._accept)

    def close(self) -> None:
        if self._server is not None:
            with contextlib.suppress(OSError):
                self._server.shutdown(socket.SHUT_RDWR)
            self._server.close()

    def _spawn(self, target: object, *args: object) -> None:
        thread = threading.Thread(target=target, args=args, daemon=True)  # type: ignore[arg-type]
        thread.start()
        self._threads.append(thread)

    def _accept(self) -> None:
        assert self._server is not None
        while True:
            try:
                client, _ = self._server.accept()
            except OSError:
                return
            upstream = socket.create_connection(("127.0.0.1", self.target))
            self._spawn(self._pipe, client, upstream)
            self._spawn(self._pipe, upstream, client)

    @staticmethod
    def _pipe(src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except OSError:
            pass
        finally:
            with contextlib.suppress(OSError):
                dst.shutdown(socket.SHUT_WR)
