"""deploy/healthprobe.py, run exactly as the kubelet runs it (python3 -I -S), against loopback
servers that answer as the extender would: plain HTTP, and mutual TLS."""

from __future__ import annotations

import http.server
import socket
import ssl
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import trustme

from .deploy_manifests import PROBE_SCRIPT

READY_REASON = "waiting for initial sync: pods (1200 listed)"


class _ExtenderLike(http.server.BaseHTTPRequestHandler):
    """/healthz 200, /readyz 503 with a reason, /slow answers after the probe gave up."""

    def do_GET(self) -> None:
        if self.path == "/slow":
            time.sleep(1.5)
        status, body = {
            "/healthz": (200, "ok"),
            "/readyz": (503, READY_REASON),
            "/slow": (200, "late"),
            "/created": (201, "not a health answer"),
        }.get(self.path, (404, "not found"))
        payload = body.encode()
        self.send_response(status)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, format: str, *args: object) -> None:
        """Keep the test output clean."""


@contextmanager
def _serve(context: ssl.SSLContext | None = None) -> Iterator[int]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _ExtenderLike)
    server.daemon_threads = True
    if context is not None:
        server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    try:
        yield int(server.server_address[1])
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def _probe(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-I", "-S", str(PROBE_SCRIPT), *args],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )


@pytest.fixture(scope="module")
def plain_port() -> Iterator[int]:
    with _serve() as port:
        yield port


def test_healthy_answer_exits_zero(plain_port: int) -> None:
    result = _probe(f"http://127.0.0.1:{plain_port}/healthz")
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""


def test_not_ready_exits_one_and_says_why(plain_port: int) -> None:
    result = _probe(f"http://127.0.0.1:{plain_port}/readyz")
    assert result.returncode == 1
    assert "HTTP 503" in result.stderr
    assert READY_REASON in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_other_success_codes_are_not_healthy(plain_port: int) -> None:
    result = _probe(f"http://127.0.0.1:{plain_port}/created")
    assert result.returncode == 1
    assert "HTTP 201" in result.stderr


def test_a_hung_server_fails_the_probe(plain_port: int) -> None:
    result = _probe(f"http://127.0.0.1:{plain_port}/slow", "--timeout", "0.3")
    assert result.returncode == 1
    assert "timed out" in result.stderr


def test_nothing_listening_fails_the_probe() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    result = _probe(f"http://127.0.0.1:{port}/healthz")
    assert result.returncode == 1
    assert "refused" in result.stderr.lower()


def test_a_proxy_in_the_environment_is_ignored(plain_port: int) -> None:
    """A cluster-wide HTTP_PROXY must not capture the probe of our own loopback."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        dead = sock.getsockname()[1]
    result = subprocess.run(
        [sys.executable, "-I", "-S", str(PROBE_SCRIPT), f"http://127.0.0.1:{plain_port}/healthz"],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
        env={"http_proxy": f"http://127.0.0.1:{dead}", "no_proxy": ""},
    )
    assert result.returncode == 0, result.stderr


def test_cert_without_key_is_a_usage_error() -> None:
    result = _probe("https://127.0.0.1:1/healthz", "--cert", "/nonexistent")
    assert result.returncode == 2


@pytest.fixture(scope="module")
def mutual_tls(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[int, Path, Path]]:
    """An HTTPS server that demands a client certificate from its CA; yields the client's."""
    ca = trustme.CA()
    server_cert = ca.issue_cert("127.0.0.1", "queue-extender.local")
    client_cert = ca.issue_cert("queue-scheduler")
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_cert.configure_cert(context)
    ca.configure_trust(context)
    context.verify_mode = ssl.CERT_REQUIRED
    directory = tmp_path_factory.mktemp("tls")
    cert_path = directory / "tls.crt"
    key_path = directory / "tls.key"
    cert_path.write_bytes(b"".join(blob.bytes() for blob in client_cert.cert_chain_pems))
    key_path.write_bytes(client_cert.private_key_pem.bytes())
    with _serve(context) as port:
        yield port, cert_path, key_path


def test_mutual_tls_with_the_client_certificate(mutual_tls: tuple[int, Path, Path]) -> None:
    port, cert, key = mutual_tls
    result = _probe(f"https://127.0.0.1:{port}/healthz", "--cert", str(cert), "--key", str(key))
    assert result.returncode == 0, result.stderr


def test_mutual_tls_without_a_client_certificate_fails(
    mutual_tls: tuple[int, Path, Path],
) -> None:
    port, _, _ = mutual_tls
    result = _probe(f"https://127.0.0.1:{port}/healthz", "--timeout", "5")
    assert result.returncode == 1
    assert result.stderr.strip()
