"""TLS, mutual TLS and bearer-token authentication, over real loopback connections."""

from __future__ import annotations

import socket
import ssl
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import trustme

from app.serving.guard import ListenerLimits
from app.serving.security import TokenFile, tls_options
from app.serving.server import ServerSettings, create_app

from ..conftest import LiveFactory
from ..fake_backend import FakeBackend
from ..live import serve

FILTER_REQ = b'{"Pod": {}, "NodeNames": ["a"]}'


@pytest.fixture(scope="module")
def ca() -> trustme.CA:
    return trustme.CA()


@pytest.fixture(scope="module")
def server_files(ca: trustme.CA, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    d = tmp_path_factory.mktemp("tls")
    cert = ca.issue_cert("127.0.0.1", "localhost")
    (d / "tls.crt").write_bytes(b"".join(p.bytes() for p in cert.cert_chain_pems))
    cert.private_key_pem.write_to_path(str(d / "tls.key"))
    ca.cert_pem.write_to_path(str(d / "ca.crt"))
    return {"cert": str(d / "tls.crt"), "key": str(d / "tls.key"), "ca": str(d / "ca.crt")}


def client_context(ca: trustme.CA, client_ca: trustme.CA | None = None) -> ssl.SSLContext:
    ctx = ssl.create_default_context()
    ca.configure_trust(ctx)
    if client_ca is not None:
        client_ca.issue_cert("kube-scheduler").configure_cert(ctx)
    return ctx


@pytest.fixture
def tls_url(server_files: dict[str, str]) -> Iterator[str]:
    app = create_app(FakeBackend())
    with serve(app, **tls_options(server_files["cert"], server_files["key"], None)) as url:
        yield url


@pytest.fixture
def mtls_url(server_files: dict[str, str]) -> Iterator[str]:
    app = create_app(FakeBackend())
    opts = tls_options(server_files["cert"], server_files["key"], server_files["ca"])
    with serve(app, **opts) as url:
        yield url


def test_tls_serves_the_verbs(tls_url: str, ca: trustme.CA) -> None:
    assert tls_url.startswith("https://")
    with httpx.Client(base_url=tls_url, verify=client_context(ca), timeout=10) as c:
        r = c.post("/filter", content=FILTER_REQ)
        assert r.status_code == 200 and r.json()["NodeNames"] == ["a"]


def test_tls_is_refused_by_a_client_that_does_not_trust_the_ca(tls_url: str) -> None:
    with (
        httpx.Client(base_url=tls_url, verify=client_context(trustme.CA()), timeout=10) as c,
        pytest.raises(httpx.ConnectError),
    ):
        c.get("/healthz")


def test_mutual_tls_accepts_a_client_certificate_from_the_ca(mtls_url: str, ca: trustme.CA) -> None:
    with httpx.Client(base_url=mtls_url, verify=client_context(ca, ca), timeout=10) as c:
        assert c.post("/filter", content=FILTER_REQ).status_code == 200


def test_mutual_tls_rejects_a_client_without_a_certificate(mtls_url: str, ca: trustme.CA) -> None:
    with (
        httpx.Client(base_url=mtls_url, verify=client_context(ca), timeout=10) as c,
        pytest.raises(httpx.TransportError),
    ):
        c.get("/healthz")


def test_mutual_tls_rejects_a_certificate_from_another_ca(mtls_url: str, ca: trustme.CA) -> None:
    with (
        httpx.Client(base_url=mtls_url, verify=client_context(ca, trustme.CA()), timeout=10) as c,
        pytest.raises(httpx.TransportError),
    ):
        c.get("/healthz")


def test_tls_options_refuse_half_configurations(server_files: dict[str, str]) -> None:
    assert tls_options(None, None, None) == {}
    with pytest.raises(ValueError, match="together"):
        tls_options(server_files["cert"], None, None)
    with pytest.raises(ValueError, match="--client-ca needs"):
        tls_options(None, None, server_files["ca"])
    with pytest.raises(ValueError, match="not found"):
        tls_options(server_files["cert"], "/nonexistent/key.pem", None)
    mutual = tls_options(server_files["cert"], server_files["key"], server_files["ca"])
    assert mutual["ssl_cert_reqs"] == ssl.CERT_REQUIRED


def token_settings(path: Path, metrics_auth: bool = False) -> ServerSettings:
    return ServerSettings(token_file=str(path), token_recheck_seconds=0, metrics_auth=metrics_auth)


def test_bearer_token_guards_verbs_and_debug(live: LiveFactory, tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text("s3cret-token\n")
    svc = live(token_settings(token))
    good = {"Authorization": "Bearer s3cret-token"}
    for method, path in (("POST", "/filter"), ("POST", "/preempt"), ("GET", "/debug/queues")):
        r = svc.client.request(method, path, content=FILTER_REQ)
        assert r.status_code == 401, path
        assert r.headers["www-authenticate"].startswith("Bearer")
        assert "bearer token" in r.json()["Error"]
        bad = svc.client.request(
            method, path, content=FILTER_REQ, headers={"Authorization": "Bearer nope"}
        )
        assert bad.status_code == 401
    assert svc.client.post("/filter", content=FILTER_REQ, headers=good).status_code == 200
    basic = {"Authorization": "Basic s3cret-token"}
    assert svc.client.post("/filter", content=FILTER_REQ, headers=basic).status_code == 401
    assert svc.backend.verbs_called() == ["filter"]
    # probes and (by default) metrics stay open
    assert svc.client.get("/healthz").status_code == 200
    assert svc.client.get("/readyz").status_code == 200
    assert svc.client.get("/metrics").status_code == 200


def test_metrics_auth_protects_metrics(live: LiveFactory, tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text("t0k")
    svc = live(token_settings(token, metrics_auth=True))
    assert svc.client.get("/metrics").status_code == 401
    assert svc.client.get("/metrics", headers={"Authorization": "Bearer t0k"}).status_code == 200
    assert svc.client.get("/healthz").status_code == 200


def test_token_file_is_re_read_when_it_changes(live: LiveFactory, tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text("first")
    svc = live(token_settings(token))
    assert (
        svc.client.get("/debug/queues", headers={"Authorization": "Bearer first"}).status_code
        == 200
    )
    token.write_text("second-token")
    assert (
        svc.client.get("/debug/queues", headers={"Authorization": "Bearer first"}).status_code
        == 401
    )
    ok = svc.client.get("/debug/queues", headers={"Authorization": "Bearer second-token"})
    assert ok.status_code == 200


def test_token_file_keeps_last_token_when_file_vanishes_and_empty_denies(tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text("abc")
    tokens = TokenFile(str(token), recheck_seconds=0)
    assert tokens.accepts(b"Bearer abc") and tokens.accepts(b"bearer abc")
    token.unlink()
    assert tokens.accepts(b"Bearer abc")
    token.write_text("   \n")
    assert not tokens.accepts(b"Bearer ")
    assert not tokens.accepts(b"Bearer abc")
    assert not tokens.accepts(None)


def test_missing_token_file_fails_app_creation(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        create_app(FakeBackend(), ServerSettings(token_file=str(tmp_path / "absent")))


def test_a_tls_handshake_never_finished_is_cut_at_the_read_timeout(
    server_files: dict[str, str], ca: trustme.CA
) -> None:
    """The guard sees a connection only once its handshake is done, so the handshake has a
    deadline of its own: the listeners' read timeout, not asyncio's 60 seconds."""
    app = create_app(FakeBackend())
    opts = tls_options(server_files["cert"], server_files["key"], None)
    with serve(app, limits=ListenerLimits(read_timeout=0.5), **opts) as url:
        port = int(url.rsplit(":", 1)[1])
        with socket.create_connection(("127.0.0.1", port), timeout=10) as silent:
            started = time.monotonic()
            silent.settimeout(10)
            try:
                while silent.recv(4096):
                    pass
            except ConnectionResetError:
                pass
            assert time.monotonic() - started < 5  # closed long before 60 s
        # A client that does its handshake is served as before.
        with httpx.Client(base_url=url, verify=client_context(ca), timeout=10) as c:
            assert c.get("/healthz").status_code == 200
