"""Kubernetes-delegated authentication: TokenReview + SubjectAccessReview guard every path but
the verbs and the probes; answers are cached; an API server that cannot answer is a 503."""

from __future__ import annotations

import argparse
import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from kubernetes import client as k8s_client

from app.backend.build import Built
from app.cli.serve import build_servers, run_serve
from app.cli.serve_flags import listening_from_args
from app.serving.delegated_auth import (
    KubernetesReviews,
    ReviewUnavailable,
    TokenBucket,
    TTLCache,
    UserInfo,
    bearer_token,
    request_verb,
)
from app.serving.server import ServerSettings, create_app, create_metrics_app
from tests.app.cli.test_serve_cli import parse

from ..conftest import LiveFactory
from ..fake_backend import FakeBackend
from ..live import serve

FILTER_REQ = b'{"Pod": {}, "NodeNames": ["a"]}'
PROMETHEUS = UserInfo("system:serviceaccount:monitoring:prometheus", "uid-1", ("metrics",))
NOBODY = UserInfo("system:serviceaccount:default:nobody", "uid-2")


@dataclass
class FakeReviews:
    """Tokens -> users, and the (user, path, verb) RBAC allows; records every call."""

    users: dict[str, UserInfo] = field(default_factory=dict)
    allowed: set[tuple[str, str, str]] = field(default_factory=set)
    down: bool = False
    calls: list[tuple[str, ...]] = field(default_factory=list)

    def authenticate(self, token: str) -> UserInfo | None:
        self.calls.append(("TokenReview", token))
        if self.down:
            raise ReviewUnavailable("the API server could not review the request: down")
        return self.users.get(token)

    def authorize(self, user: UserInfo, path: str, verb: str) -> bool:
        self.calls.append(("SubjectAccessReview", user.username, path, verb))
        if self.down:
            raise ReviewUnavailable("the API server could not review the request: down")
        return (user.username, path, verb) in self.allowed


def reviews() -> FakeReviews:
    return FakeReviews(
        users={"prom-token": PROMETHEUS, "nobody-token": NOBODY},
        allowed={
            (PROMETHEUS.username, "/metrics", "get"),
            (PROMETHEUS.username, "/debug/queues", "get"),
            (PROMETHEUS.username, "/debug/explain", "post"),
        },
    )


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def settings(fake: FakeReviews, ttl: float = 10.0, **kw: Any) -> ServerSettings:
    return ServerSettings(delegated_auth=fake, auth_cache_ttl=ttl, **kw)


def test_verbs_and_probes_stay_open_without_any_review(live: LiveFactory) -> None:
    fake = reviews()
    svc = live(settings(fake))
    for verb in ("/filter", "/prioritize", "/preempt"):
        assert svc.client.post(verb, content=FILTER_REQ).status_code == 200, verb
    assert svc.client.get("/healthz").status_code == 200
    assert svc.client.get("/readyz").status_code == 200
    assert fake.calls == []


def test_verbs_under_a_prefix_stay_open(live: LiveFactory) -> None:
    fake = reviews()
    svc = live(settings(fake, url_prefix="/sched"))
    assert svc.client.post("/sched/filter", content=FILTER_REQ).status_code == 200
    assert svc.client.get("/metrics").status_code == 401
    assert fake.calls == []


def test_everything_else_needs_a_token(live: LiveFactory) -> None:
    svc = live(settings(reviews()))
    for path in ("/metrics", "/debug/queues", "/openapi.json", "/docs", "/no-such-path"):
        r = svc.client.get(path)
        assert r.status_code == 401, path
        assert r.headers["www-authenticate"].startswith("Bearer")
        assert "bearer token" in r.json()["Error"]
    basic = {"Authorization": "Basic prom-token"}
    assert svc.client.get("/metrics", headers=basic).status_code == 401


def test_a_token_the_api_server_rejects_is_401(live: LiveFactory) -> None:
    fake = reviews()
    svc = live(settings(fake))
    r = svc.client.get("/metrics", headers=bearer("forged"))
    assert r.status_code == 401
    assert "not accepted" in r.json()["Error"]
    assert fake.calls == [("TokenReview", "forged")]  # never authorised


def test_rbac_decides_per_path_and_verb(live: LiveFactory) -> None:
    fake = reviews()
    svc = live(settings(fake))
    assert svc.client.get("/metrics", headers=bearer("prom-token")).status_code == 200
    assert svc.client.get("/debug/queues", headers=bearer("prom-token")).status_code == 200
    explain = svc.client.post("/debug/explain", content=b"{}", headers=bearer("prom-token"))
    assert explain.status_code != 403  # allowed: the endpoint itself judges the body
    denied = svc.client.get("/openapi.json", headers=bearer("prom-token"))
    assert denied.status_code == 403
    assert denied.json()["Error"] == (
        f"forbidden: user '{PROMETHEUS.username}' may not get /openapi.json"
    )
    other = svc.client.get("/metrics", headers=bearer("nobody-token"))
    assert other.status_code == 403
    assert ("SubjectAccessReview", NOBODY.username, "/metrics", "get") in fake.calls
    assert ("SubjectAccessReview", PROMETHEUS.username, "/debug/explain", "post") in fake.calls


def test_answers_are_cached_for_the_ttl(live: LiveFactory) -> None:
    fake = reviews()
    svc = live(settings(fake, ttl=600))
    for _ in range(3):
        assert svc.client.get("/metrics", headers=bearer("prom-token")).status_code == 200
        assert svc.client.get("/metrics", headers=bearer("forged")).status_code == 401
    assert fake.calls == [
        ("TokenReview", "prom-token"),
        ("SubjectAccessReview", PROMETHEUS.username, "/metrics", "get"),
        ("TokenReview", "forged"),
    ]


def test_a_zero_ttl_reviews_every_request(live: LiveFactory) -> None:
    fake = reviews()
    svc = live(settings(fake, ttl=0))
    for _ in range(3):
        assert svc.client.get("/metrics", headers=bearer("prom-token")).status_code == 200
    assert len(fake.calls) == 6


def test_an_api_server_that_cannot_answer_is_503_and_is_asked_again(live: LiveFactory) -> None:
    fake = reviews()
    fake.down = True
    svc = live(settings(fake))
    r = svc.client.get("/metrics", headers=bearer("prom-token"))
    assert r.status_code == 503
    assert r.headers["retry-after"] == "1"
    assert "could not review" in r.json()["Error"]
    assert svc.client.post("/filter", content=FILTER_REQ).status_code == 200  # verbs unaffected
    fake.down = False
    assert svc.client.get("/metrics", headers=bearer("prom-token")).status_code == 200


def test_the_metrics_listener_is_guarded_too() -> None:
    fake = reviews()
    app = create_app(FakeBackend(), settings(fake))
    with serve(create_metrics_app(app)) as url, httpx.Client(base_url=url, timeout=10) as c:
        assert c.get("/metrics").status_code == 401
        assert c.get("/metrics", headers=bearer("nobody-token")).status_code == 403
        assert c.get("/metrics", headers=bearer("prom-token")).status_code == 200
        assert c.get("/readyz").status_code == 200


def test_static_token_and_delegated_auth_are_alternatives(tmp_path: Any) -> None:
    token = tmp_path / "token"
    token.write_text("t")
    with pytest.raises(ValueError, match="alternatives"):
        create_app(FakeBackend(), settings(reviews(), token_file=str(token)))


def test_bearer_token_and_request_verb_parsing() -> None:
    assert bearer_token("Bearer abc") == "abc"
    assert bearer_token("bearer  abc ") == "abc"
    assert bearer_token("Bearer ") is None
    assert bearer_token("Basic abc") is None
    assert bearer_token(None) is None
    assert [request_verb(m) for m in ("GET", "HEAD", "POST", "PUT")] == [
        "get",
        "get",
        "post",
        "put",
    ]


def test_the_cache_expires_entries_and_stays_bounded() -> None:
    now = [0.0]
    cache: TTLCache[str, int | None] = TTLCache(10, 2, clock=lambda: now[0])
    cache.put("a", 1)
    cache.put("rejected", None)
    assert cache.get("a") == (True, 1)
    assert cache.get("rejected") == (True, None)  # a cached rejection is a hit
    now[0] = 10.0
    assert cache.get("a") == (False, None)
    cache.put("b", 2)
    cache.put("c", 3)
    assert cache.get("b") == (True, 2)  # b is now the most recently used
    cache.put("d", 4)
    assert len(cache) == 2
    assert cache.get("c") == (False, None)  # the least recently used went first
    assert cache.get("b") == (True, 2) and cache.get("d") == (True, 4)


# --- the API calls themselves, against a stub API server ------------------------------------


@dataclass
class StubApi:
    """Answers TokenReview and SubjectAccessReview POSTs from a script; keeps the bodies."""

    status: int = 201
    token_status: dict[str, Any] = field(default_factory=dict)
    access_status: dict[str, Any] = field(default_factory=dict)
    bodies: list[tuple[str, dict[str, Any]]] = field(default_factory=list)


@pytest.fixture
def stub_api() -> Iterator[tuple[StubApi, Any]]:
    stub = StubApi()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            stub.bodies.append((self.path, body))
            status = stub.token_status if body["kind"] == "TokenReview" else stub.access_status
            data = json.dumps({**body, "status": status}).encode()
            self.send_response(stub.status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    configuration = k8s_client.Configuration()
    configuration.host = f"http://127.0.0.1:{server.server_address[1]}"
    api_client = k8s_client.ApiClient(configuration)
    try:
        yield stub, api_client
    finally:
        api_client.close()
        server.shutdown()
        server.server_close()


def test_kubernetes_reviews_send_the_documented_bodies(stub_api: tuple[StubApi, Any]) -> None:
    stub, api_client = stub_api
    stub.token_status = {
        "authenticated": True,
        "user": {
            "username": "system:serviceaccount:monitoring:prometheus",
            "uid": "u-1",
            "groups": ["system:serviceaccounts", "system:authenticated"],
            "extra": {"authentication.kubernetes.io/pod-name": ["prom-0"]},
        },
    }
    stub.access_status = {"allowed": True}
    calls = KubernetesReviews(api_client, audiences=("https://kubernetes.default.svc",))
    user = calls.authenticate("the-token")
    assert user == UserInfo(
        "system:serviceaccount:monitoring:prometheus",
        "u-1",
        ("system:serviceaccounts", "system:authenticated"),
        (("authentication.kubernetes.io/pod-name", ("prom-0",)),),
    )
    assert calls.authorize(user, "/metrics", "get") is True
    (token_path, token_body), (access_path, access_body) = stub.bodies
    assert token_path == "/apis/authentication.k8s.io/v1/tokenreviews"
    assert token_body["spec"] == {
        "token": "the-token",
        "audiences": ["https://kubernetes.default.svc"],
    }
    assert access_path == "/apis/authorization.k8s.io/v1/subjectaccessreviews"
    assert access_body["spec"] == {
        "user": "system:serviceaccount:monitoring:prometheus",
        "uid": "u-1",
        "groups": ["system:serviceaccounts", "system:authenticated"],
        "extra": {"authentication.kubernetes.io/pod-name": ["prom-0"]},
        "nonResourceAttributes": {"path": "/metrics", "verb": "get"},
    }


def test_kubernetes_reviews_read_rejections_and_denials(stub_api: tuple[StubApi, Any]) -> None:
    stub, api_client = stub_api
    stub.token_status = {"authenticated": False, "error": "token expired"}
    stub.access_status = {"allowed": False, "reason": "no RBAC policy matched"}
    calls = KubernetesReviews(api_client)
    assert calls.authenticate("old") is None
    assert calls.authorize(NOBODY, "/metrics", "get") is False
    stub.access_status = {"allowed": True, "denied": True}
    assert calls.authorize(NOBODY, "/metrics", "get") is False


def test_a_forbidden_review_names_the_missing_permission(stub_api: tuple[StubApi, Any]) -> None:
    stub, api_client = stub_api
    stub.status = 403
    with pytest.raises(ReviewUnavailable, match="create` on tokenreviews"):
        KubernetesReviews(api_client).authenticate("t")


def test_an_unreachable_api_server_is_unavailable_not_a_crash() -> None:
    configuration = k8s_client.Configuration()
    configuration.host = "http://127.0.0.1:9"  # discard: nothing listens
    configuration.retries = 0
    with k8s_client.ApiClient(configuration) as api_client:
        calls = KubernetesReviews(api_client, timeout=2)
        with pytest.raises(ReviewUnavailable, match="could not review"):
            calls.authenticate("t")
        with pytest.raises(ReviewUnavailable):
            calls.authorize(NOBODY, "/metrics", "get")


def test_the_app_keeps_the_backend_for_the_metrics_listener() -> None:
    app: FastAPI = create_app(FakeBackend(), settings(reviews()))
    assert app.state.auth_backend is not None
    assert create_app(FakeBackend()).state.auth_backend is None


# --- the serve flags --------------------------------------------------------------------------


def test_the_flags_default_to_off_and_ten_seconds() -> None:
    args = parse()
    assert args.delegated_auth is False and args.delegated_auth_cache_ttl == 10.0
    assert parse("--delegated-auth-cache-ttl", "0").delegated_auth_cache_ttl == 0.0
    with pytest.raises(SystemExit):
        parse("--delegated-auth-cache-ttl", "-1")


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (("--demo", "--delegated-auth"), "needs an API server"),
        (("--kubeconfig", "k", "--delegated-auth", "--token-file", "t"), "alternatives"),
    ],
)
def test_delegated_auth_without_an_api_server_or_with_a_token_is_refused(
    argv: tuple[str, ...],
    message: str,
    capsys: pytest.CaptureFixture[str],
    restore_root: None,
) -> None:
    built: list[argparse.Namespace] = []

    def factory(a: argparse.Namespace) -> Built[FakeBackend]:
        built.append(a)
        return Built(FakeBackend())

    assert run_serve(parse(*argv), factory) == 2
    assert built == []  # refused before any informer starts
    assert message in capsys.readouterr().err


def test_delegated_auth_reviews_through_the_backends_api_client() -> None:
    configuration = k8s_client.Configuration()
    configuration.host = "http://127.0.0.1:9"
    with k8s_client.ApiClient(configuration) as api_client:
        record = Built(FakeBackend(), api_client=api_client)
        args = parse(
            "--kubeconfig", "unused", "--delegated-auth", "--delegated-auth-cache-ttl", "3"
        )
        server, _, _ = build_servers(args, listening_from_args(args), lambda _a: record)
        settings = server.config.app.state.settings
        assert isinstance(settings.delegated_auth, KubernetesReviews)
        assert settings.auth_cache_ttl == 3.0
        with pytest.raises(ValueError, match="no API server client"):
            build_servers(args, listening_from_args(args), lambda _a: Built(FakeBackend()))


def test_rejected_tokens_are_cached_apart_and_never_evict_an_accepted_one(
    live: LiveFactory,
) -> None:
    """A flood of invented tokens fills the negative cache only: the real user's answer is
    still cached afterwards, and each invented token is reviewed once."""
    fake = reviews()
    svc = live(settings(fake, ttl=600, auth_review_rate=1000.0))
    backend = svc.app.state.auth_backend
    backend._users = TTLCache(600, 4)  # tiny caches: any eviction would show
    backend._rejected = TTLCache(600, 4)
    assert svc.client.get("/metrics", headers=bearer("prom-token")).status_code == 200
    for i in range(20):
        assert svc.client.get("/metrics", headers=bearer(f"forged-{i}")).status_code == 401
    assert svc.client.get("/metrics", headers=bearer("forged-19")).status_code == 401
    before = len(fake.calls)
    assert svc.client.get("/metrics", headers=bearer("prom-token")).status_code == 200
    assert len(fake.calls) == before  # still cached: no review for the real user
    assert sum(1 for c in fake.calls if c == ("TokenReview", "forged-19")) == 1


def test_reviews_beyond_the_rate_are_answered_429_without_asking_the_api_server(
    live: LiveFactory,
) -> None:
    fake = reviews()
    svc = live(settings(fake, ttl=600, auth_review_rate=1.0))  # a burst of 2
    statuses = [
        svc.client.get("/metrics", headers=bearer(f"forged-{i}")).status_code for i in range(10)
    ]
    assert statuses[:2] == [401, 401]
    assert set(statuses[2:]) == {429}
    assert len(fake.calls) == 2
    r = svc.client.get("/metrics", headers=bearer("forged-new"))
    assert r.status_code == 429 and r.headers["retry-after"] == "1"
    # answers already cached cost no review: still served at once
    assert svc.client.get("/metrics", headers=bearer("forged-0")).status_code == 401
    assert svc.client.post("/filter", content=FILTER_REQ).status_code == 200  # verbs unaffected


def test_the_token_bucket_refills_at_its_rate_up_to_its_burst() -> None:
    now = [0.0]
    bucket = TokenBucket(2.0, 3, clock=lambda: now[0])
    assert [bucket.take() for _ in range(4)] == [True, True, True, False]
    now[0] = 0.5  # one token back
    assert [bucket.take(), bucket.take()] == [True, False]
    now[0] = 100.0  # never more than the burst
    assert [bucket.take() for _ in range(4)] == [True, True, True, False]
