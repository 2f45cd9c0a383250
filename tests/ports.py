"""Ports for the components a test starts, chosen where nothing else will take them.

``bind(("127.0.0.1", 0))`` answers with a port from the kernel's ephemeral range, the range it
also draws the source port of every outgoing connection from. Between that probe and the
component's own bind, one of the many client connections a running control plane opens
(kube-apiserver to etcd, kube-scheduler to kube-apiserver, ...) can take the port, and the
component exits with "address already in use". Ports below the ephemeral range are only ever
taken by an explicit bind, so a port probed free there stays free for the component.
"""

from __future__ import annotations

import os
import socket
from pathlib import Path

#: Where the walk starts when the kernel's range cannot be read (Linux's default floor).
_DEFAULT_EPHEMERAL_FLOOR = 32768
#: The width of the window below the ephemeral range that tests take ports from.
_WINDOW = 12000


class _Ports:
    """Hands out each port once per process, walking from a start that differs per process so
    that concurrent test processes (pytest-xdist workers, a bench beside a suite) rarely probe
    the same port at the same moment; the probe settles it when they do."""

    def __init__(self) -> None:
        high = _ephemeral_floor()
        self.low = max(1024, high - _WINDOW)
        self.high = high
        self.next = self.low + (os.getpid() * 397) % (self.high - self.low)
        self.handed: set[int] = set()

    def take(self) -> int:
        for _ in range(self.high - self.low):
            port = self.next
            self.next = self.next + 1 if self.next + 1 < self.high else self.low
            if port in self.handed or not _bindable(port):
                continue
            self.handed.add(port)
            return port
        raise RuntimeError(f"no free port in {self.low}-{self.high - 1}")


def _ephemeral_floor() -> int:
    try:
        text = Path("/proc/sys/net/ipv4/ip_local_port_range").read_text()
        return int(text.split()[0])
    except (OSError, ValueError, IndexError):
        return _DEFAULT_EPHEMERAL_FLOOR


def _bindable(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


_PORTS = _Ports()


def free_port() -> int:
    """A port nothing listens on now, below the ephemeral range; never the same one twice in
    one process."""
    return _PORTS.take()
