"""The serving certificate follows its files (cert-manager's rotation) without a restart."""

from __future__ import annotations

import os
import shutil
import socket
import ssl
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import trustme
import uvicorn

from app.backend.build import Built
from app.cli.serve import build_servers
from app.cli.serve_flags import listening_from_args
from app.serving.tls_reload import ReloadingServerContext
from tests.app.cli.test_serve_cli import parse
from tests.ports import free_port

from ..fake_backend import FakeBackend


def write_cert(ca: trustme.CA, name: str, directory: Path) -> None:
    """tls.crt/tls.key for 127.0.0.1 whose common name tells the certificates apart."""
    cert = ca.issue_cert("127.0.0.1", common_name=name)
    staged = directory / "staging"
    staged.mkdir(exist_ok=True)
    (staged / "tls.crt").write_bytes(b"".join(p.bytes() for p in cert.cert_chain_pems))
    cert.private_key_pem.write_to_path(str(staged / "tls.key"))
    # Replaced by rename, as the kubelet swaps a Secret volume's files: never half written.
    for name_ in ("tls.crt", "tls.key"):
        os.replace(staged / name_, directory / name_)


def peer_name(port: int, ca: trustme.CA, client: trustme.LeafCert | None = None) -> str | None:
    """The common name of the certificate a fresh connection is served, None if the server
    refused the connection (e.g. no client certificate under mutual TLS)."""
    context = ssl.create_default_context()
    ca.configure_trust(context)
    if client is not None:
        client.configure_cert(context)
    try:
        with (
            socket.create_connection(("127.0.0.1", port), timeout=5) as raw,
            context.wrap_socket(raw, server_hostname="127.0.0.1") as tls,
        ):
            # TLS 1.3 reports a refused client certificate only on the first read.
            tls.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            if not tls.recv(12).startswith(b"HTTP/1.1 200"):
                return None
            subject = dict(item[0] for item in tls.getpeercert()["subject"])
            return str(subject["commonName"])
    except (ssl.SSLError, ConnectionError):
        return None


@pytest.fixture
def ca() -> trustme.CA:
    return trustme.CA()


@pytest.fixture
def tls_dir(ca: trustme.CA, tmp_path: Path) -> Path:
    write_cert(ca, "cert-A", tmp_path)
    ca.cert_pem.write_to_path(str(tmp_path / "ca.crt"))
    return tmp_path


@pytest.fixture
def running_server(tls_dir: Path) -> Iterator[tuple[uvicorn.Server, int]]:
    port = free_port()
    args = parse(
        "--port",
        str(port),
        "--tls-cert",
        str(tls_dir / "tls.crt"),
        "--tls-key",
        str(tls_dir / "tls.key"),
        "--client-ca",
        str(tls_dir / "ca.crt"),
    )
    server, _, _ = build_servers(args, listening_from_args(args), lambda _a: Built(FakeBackend()))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.01)
    assert server.started
    try:
        yield server, port
    finally:
        server.should_exit = True
        thread.join(10)


def test_a_rotated_certificate_is_served_to_new_connections(
    running_server: tuple[uvicorn.Server, int], tls_dir: Path, ca: trustme.CA
) -> None:
    _, port = running_server
    client = ca.issue_cert("kube-scheduler")
    assert peer_name(port, ca, client) == "cert-A"
    write_cert(ca, "cert-B", tls_dir)
    time.sleep(1.1)  # the files are stat'ed at most once a second
    assert peer_name(port, ca, client) == "cert-B"
    # Mutual TLS still holds with the reloaded context: no client certificate, no answer.
    assert peer_name(port, ca) is None


def test_a_broken_rotation_keeps_the_last_good_certificate(tmp_path: Path, ca: trustme.CA) -> None:
    now = [0.0]
    write_cert(ca, "cert-A", tmp_path)
    crt, key = str(tmp_path / "tls.crt"), str(tmp_path / "tls.key")
    reloading = ReloadingServerContext(crt, key, clock=lambda: now[0])
    first = reloading.current()
    assert first is reloading.context
    # Half a rotation: the next certificate beside the old key.
    other = tmp_path / "other"
    other.mkdir()
    write_cert(ca, "cert-B", other)
    shutil.copy(other / "tls.crt", crt)
    now[0] += 2
    assert reloading.current() is first and reloading.reloads == 0
    now[0] += 2
    assert reloading.current() is first  # the same broken pair is not retried
    shutil.copy(other / "tls.key", key)
    now[0] += 2
    second = reloading.current()
    assert second is not first and reloading.reloads == 1
    # Vanished files (a Secret being re-created) keep the loaded context too.
    os.unlink(crt)
    now[0] += 2
    assert reloading.current() is second


def test_unchanged_files_are_not_reloaded_and_checks_are_rate_limited(
    tmp_path: Path, ca: trustme.CA
) -> None:
    now = [0.0]
    write_cert(ca, "cert-A", tmp_path)
    crt, key = str(tmp_path / "tls.crt"), str(tmp_path / "tls.key")
    reloading = ReloadingServerContext(crt, key, recheck_seconds=5, clock=lambda: now[0])
    reloading.current()
    write_cert(ca, "cert-B", tmp_path)
    now[0] += 1
    assert reloading.current() is reloading.context  # within the recheck interval
    now[0] += 5
    assert reloading.current() is not reloading.context
    now[0] += 10
    current = reloading.current()
    now[0] += 10
    assert reloading.current() is current and reloading.reloads == 1


def test_a_rotated_client_ca_decides_which_client_certificates_pass(
    running_server: tuple[uvicorn.Server, int], tls_dir: Path, ca: trustme.CA
) -> None:
    _, port = running_server
    next_ca = trustme.CA()
    write_cert(next_ca, "cert-B", tls_dir)
    next_ca.cert_pem.write_to_path(str(tls_dir / "ca.new"))
    os.replace(tls_dir / "ca.new", tls_dir / "ca.crt")
    time.sleep(1.1)  # the files are stat'ed at most once a second
    assert peer_name(port, next_ca, next_ca.issue_cert("kube-scheduler")) == "cert-B"
    assert peer_name(port, next_ca, ca.issue_cert("kube-scheduler")) is None
