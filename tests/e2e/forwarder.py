"""A TCP forwarder on loopback that can be opened later, cut, and slowed down: an API server
that is not there yet or drops off the network, or an extender that answers too late."""

from __future__ import annotations

import contextlib
import socket
import threading
import time

from tests.ports import free_port


class Forwarder:
    """Listens on ``port`` (nothing listens there until ``open``) and pipes every connection
    to ``target`` on 127.0.0.1.

    ``response_delay`` holds every chunk coming back from the target that long before passing
    it on (a slow server, as the client sees it); ``cut`` drops every connection and refuses
    new ones until the next ``open`` (a network partition)."""

    def __init__(self, target: int, port: int | None = None) -> None:
        self.target = target
        self.port = port or free_port()
        self.response_delay = 0.0
        self._server: socket.socket | None = None
        self._threads: list[threading.Thread] = []
        self._lock = threading.Lock()
        self._sockets: set[socket.socket] = set()

    def open(self) -> Forwarder:
        server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        server.bind(("127.0.0.1", self.port))
        server.listen(64)
        self._server = server
        self._spawn(self._accept, server)
        return self

    def close(self) -> None:
        if self._server is not None:
            with contextlib.suppress(OSError):
                self._server.shutdown(socket.SHUT_RDWR)
            self._server.close()
            self._server = None

    def cut(self) -> None:
        """Refuse new connections and reset the open ones."""
        self.close()
        with self._lock:
            sockets, self._sockets = self._sockets, set()
        for sock in sockets:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()

    def _spawn(self, target: object, *args: object) -> None:
        thread = threading.Thread(target=target, args=args, daemon=True)  # type: ignore[arg-type]
        thread.start()
        self._threads.append(thread)

    def _accept(self, server: socket.socket) -> None:
        while True:
            try:
                client, _ = server.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection(("127.0.0.1", self.target), timeout=5)
                upstream.settimeout(None)
            except OSError:  # the target is down: the client sees its connection reset
                client.close()
                continue
            pair = [client, upstream]
            with self._lock:
                self._sockets |= {client, upstream}
            self._spawn(self._pipe, client, upstream, False, pair)
            self._spawn(self._pipe, upstream, client, True, pair)

    def _pipe(
        self, src: socket.socket, dst: socket.socket, delayed: bool, pair: list[socket.socket]
    ) -> None:
        try:
            while data := src.recv(65536):
                if delayed and self.response_delay > 0:
                    time.sleep(self.response_delay)
                dst.sendall(data)
        except OSError:
            pass
        finally:
            with contextlib.suppress(OSError):
                dst.shutdown(socket.SHUT_WR)
            with self._lock:
                pair.pop()  # the second direction to end closes both sockets
                last = not pair
                if last:
                    self._sockets -= {src, dst}
            if last:
                src.close()
                dst.close()
