"""Kubernetes-delegated authentication and authorisation for everything that is not a verb.

The pattern of kube-rbac-proxy and controller-runtime's `WithAuthenticationAndAuthorization`
(what Kueue's metrics endpoint runs): the caller's bearer token is sent to the API server in a
`TokenReview` (authentication.k8s.io/v1), and the user it names is checked with a
`SubjectAccessReview` (authorization.k8s.io/v1) on the request's non-resource path and verb.
Access to /metrics or /debug/* is then granted with ordinary RBAC, e.g. a ClusterRole with
`nonResourceURLs: ["/metrics"], verbs: ["get"]` bound to Prometheus' ServiceAccount.

The verbs are never behind this: kube-scheduler's extender client sends no credentials (its
`tlsConfig` offers a client certificate, which is what mutual TLS is for), so they stay on
loopback inside the pod. Probes stay open too: the kubelet sends no credentials either.

Both reviews are cached for a short TTL in a bounded LRU (kube-rbac-proxy's 10 s), so a
Prometheus scraping every few seconds costs the API server one pair of reviews per TTL.
An API server that cannot answer makes the request fail with 503, never the process.

Anyone who can reach the listener can send tokens, so neither the API server nor the cache
is theirs to fill: rejected tokens are remembered in a negative cache of their own (random
tokens evict other random tokens, never an accepted one), and the reviews sent to the API
server are drawn from a token bucket (``DEFAULT_REVIEW_RATE`` a second); a request that
finds it empty is answered 429 without a review. Answers from the caches cost nothing.
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

import orjson
from starlette.authentication import (
    AuthCredentials,
    AuthenticationBackend,
    AuthenticationError,
    BaseUser,
)
from starlette.concurrency import run_in_threadpool
from starlette.requests import HTTPConnection

log = logging.getLogger(__name__)

DEFAULT_CACHE_TTL = 10.0
DEFAULT_CACHE_ENTRIES = 1024
DEFAULT_REVIEW_TIMEOUT = 5.0
#: Reviews (TokenReview and SubjectAccessReview together) sent to the API server a second,
#: and the burst allowed above it: Prometheus, a few people and their tools need a handful.
DEFAULT_REVIEW_RATE = 20.0
DEFAULT_REVIEW_BURST = 40


@dataclass(frozen=True, slots=True)
class UserInfo:
    """Who a TokenReview says the token belongs to (authentication.k8s.io/v1 UserInfo)."""

    username: str
    uid: str = ""
    groups: tuple[str, ...] = ()
    extra: tuple[tuple[str, tuple[str, ...]], ...] = ()


class KubernetesUser(BaseUser):
    """The authenticated caller, as Starlette's `request.user`."""

    def __init__(self, info: UserInfo) -> None:
        self.info = info

    @property
    def is_authenticated(self) -> bool:
        return True

    @property
    def display_name(self) -> str:
        return self.info.username


class Unauthenticated(AuthenticationError):
    """No token, or one the API server did not accept: 401."""

    status_code = 401


class Forbidden(AuthenticationError):
    """An authenticated user whom RBAC does not allow this path and verb: 403."""

    status_code = 403


class TooManyReviews(AuthenticationError):
    """The review budget is spent (new tokens or paths arriving faster than the API server
    is asked to review): 429, never sent to the API server."""

    status_code = 429


class ReviewUnavailable(AuthenticationError):
    """The API server could not answer a review (down, timing out, or refusing us): 503.

    Not the caller's fault, and never cached: the next request asks again.
    """

    status_code = 503


class Reviews(Protocol):
    """The two API calls, blocking (they run on a worker thread). Both raise
    ReviewUnavailable when the API server cannot give an answer."""

    def authenticate(self, token: str) -> UserInfo | None: ...

    def authorize(self, user: UserInfo, path: str, verb: str) -> bool: ...


K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class TTLCache(Generic[K, V]):
    """A bounded LRU whose entries expire `ttl` seconds after they were stored.

    Used from the event loop only (the reviews run on threads, their results are stored
    back on the loop), so it needs no lock. `ttl` 0 stores nothing.
    """

    def __init__(
        self, ttl: float, max_entries: int, clock: Callable[[], float] = time.monotonic
    ) -> None:
        if max_entries <= 0:
            raise ValueError("a cache needs room for at least one entry")
        self._ttl = ttl
        self._max = max_entries
        self._clock = clock
        self._entries: OrderedDict[K, tuple[float, V]] = OrderedDict()

    def get(self, key: K) -> tuple[bool, V | None]:
        """(found, value): a value may itself be None (a cached rejection)."""
        entry = self._entries.get(key)
        if entry is None:
            return False, None
        expires, value = entry
        if self._clock() >= expires:
            del self._entries[key]
            return False, None
        self._entries.move_to_end(key)
        return True, value

    def put(self, key: K, value: V) -> None:
        if self._ttl <= 0:
            return
        self._entries[key] = (self._clock() + self._ttl, value)
        self._entries.move_to_end(key)
        while len(self._entries) > self._max:
            self._entries.popitem(last=False)

    def __len__(self) -> int:
        return len(self._entries)


class TokenBucket:
    """``rate`` tokens a second, at most ``burst`` saved up; used from the event loop only."""

    def __init__(
        self, rate: float, burst: int, clock: Callable[[], float] = time.monotonic
    ) -> None:
        if rate <= 0 or burst <= 0:
            raise ValueError("a review rate and burst must be positive")
        self._rate = rate
        self._burst = float(burst)
        self._clock = clock
        self._tokens = float(burst)
        self._at = clock()

    def take(self) -> bool:
        now = self._clock()
        self._tokens = min(self._burst, self._tokens + (now - self._at) * self._rate)
        self._at = now
        if self._tokens < 1.0:
            return False
        self._tokens -= 1.0
        return True


def bearer_token(authorization: str | None) -> str | None:
    """The token of an `Authorization: Bearer <token>` header, or None."""
    if not authorization:
        return None
    scheme, _, token = authorization.partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token:
        return None
    return token


def request_verb(method: str) -> str:
    """The RBAC verb of a non-resource request, as kube-apiserver derives it: the lower-cased
    HTTP method, HEAD read as get (a `get` grant covers both)."""
    method = method.lower()
    return "get" if method == "head" else method


class DelegatedAuthBackend(AuthenticationBackend):
    """Starlette's authentication backend doing both steps: TokenReview, then a
    SubjectAccessReview on (path, verb). Paths for which `guarded` is false pass untouched."""

    def __init__(
        self,
        reviews: Reviews,
        guarded: Callable[[str], bool],
        *,
        ttl: float = DEFAULT_CACHE_TTL,
        max_entries: int = DEFAULT_CACHE_ENTRIES,
        clock: Callable[[], float] = time.monotonic,
        review_rate: float = DEFAULT_REVIEW_RATE,
        review_burst: int = DEFAULT_REVIEW_BURST,
    ) -> None:
        self._reviews = reviews
        self._guarded = guarded
        # Keyed by a digest, so the caches never hold a usable token. Accepted and rejected
        # tokens are kept apart, so a flood of invented tokens cannot evict a real user.
        self._users: TTLCache[bytes, UserInfo] = TTLCache(ttl, max_entries, clock)
        self._rejected: TTLCache[bytes, bool] = TTLCache(ttl, max_entries, clock)
        self._decisions: TTLCache[tuple[UserInfo, str, str], bool] = TTLCache(
            ttl, max_entries, clock
        )
        self._budget = TokenBucket(review_rate, review_burst, clock)
        #: Requests answered 429 because the review budget was spent.
        self.throttled = 0

    async def authenticate(self, conn: HTTPConnection) -> tuple[AuthCredentials, BaseUser] | None:
        path = conn.url.path
        if not self._guarded(path):
            return None
        token = bearer_token(conn.headers.get("authorization"))
        if token is None:
            raise Unauthenticated("a bearer token is required")
        user = await self._user(token)
        if user is None:
            raise Unauthenticated("the bearer token was not accepted by the API server")
        verb = request_verb(conn.scope.get("method", "GET"))
        if not await self._allowed(user, path, verb):
            log.info("denied %s %s to user %r", verb, path, user.username)
            raise Forbidden(f"user {user.username!r} may not {verb} {path}")
        return AuthCredentials(["authenticated"]), KubernetesUser(user)

    async def _user(self, token: str) -> UserInfo | None:
        key = hashlib.sha256(token.encode()).digest()
        found, user = self._users.get(key)
        if found:
            return user
        if self._rejected.get(key)[0]:
            return None
        self._spend("TokenReview")
        user = await run_in_threadpool(self._reviews.authenticate, token)
        if user is None:
            self._rejected.put(key, True)
        else:
            self._users.put(key, user)
        return user

    async def _allowed(self, user: UserInfo, path: str, verb: str) -> bool:
        key = (user, path, verb)
        found, allowed = self._decisions.get(key)
        if not found:
            self._spend("SubjectAccessReview")
            allowed = await run_in_threadpool(self._reviews.authorize, user, path, verb)
            self._decisions.put(key, allowed)
        return bool(allowed)

    def _spend(self, kind: str) -> None:
        if not self._budget.take():
            self.throttled += 1
            if self.throttled == 1 or self.throttled % 1000 == 0:
                log.warning(
                    "delegated auth: review budget spent, answering 429 without a %s "
                    "(%d requests so far)",
                    kind,
                    self.throttled,
                )
            raise TooManyReviews("too many new credentials to review; retry later")


class KubernetesReviews:
    """`Reviews` through the kubernetes client the informers use (same kubeconfig or
    in-cluster ServiceAccount), needing `create` on tokenreviews and subjectaccessreviews.

    Each call has its own timeout, so a hung API server holds a request for at most that
    long. Answers are read as plain JSON: the client's model classes add nothing here.
    """

    def __init__(
        self,
        api_client: Any,
        *,
        timeout: float = DEFAULT_REVIEW_TIMEOUT,
        audiences: tuple[str, ...] = (),
    ) -> None:
        from kubernetes import client as k8s_client

        self._authn = k8s_client.AuthenticationV1Api(api_client)
        self._authz = k8s_client.AuthorizationV1Api(api_client)
        self._timeout = timeout
        self._audiences = audiences

    def authenticate(self, token: str) -> UserInfo | None:
        spec: dict[str, Any] = {"token": token}
        if self._audiences:
            spec["audiences"] = list(self._audiences)
        body = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": spec}
        status = self._call("TokenReview", self._authn.create_token_review, body)
        if not status.get("authenticated"):
            if status.get("error"):
                log.debug("TokenReview rejected a token: %s", status["error"])
            return None
        user = status.get("user") or {}
        return UserInfo(
            username=str(user.get("username", "")),
            uid=str(user.get("uid", "")),
            groups=tuple(user.get("groups") or ()),
            extra=tuple(sorted((k, tuple(v)) for k, v in (user.get("extra") or {}).items())),
        )

    def authorize(self, user: UserInfo, path: str, verb: str) -> bool:
        spec: dict[str, Any] = {
            "user": user.username,
            "uid": user.uid,
            "groups": list(user.groups),
            "extra": {k: list(v) for k, v in user.extra},
            "nonResourceAttributes": {"path": path, "verb": verb},
        }
        body = {
            "apiVersion": "authorization.k8s.io/v1",
            "kind": "SubjectAccessReview",
            "spec": spec,
        }
        status = self._call("SubjectAccessReview", self._authz.create_subject_access_review, body)
        if status.get("evaluationError"):
            log.warning("SubjectAccessReview evaluation error: %s", status["evaluationError"])
        return bool(status.get("allowed")) and not status.get("denied")

    def _call(self, kind: str, create: Callable[..., Any], body: dict[str, Any]) -> dict[str, Any]:
        try:
            response = create(body, _preload_content=False, _request_timeout=self._timeout)
            try:
                answer = orjson.loads(response.data)
            finally:
                response.release_conn()  # back to the pool the informers share
        except Exception as exc:
            reason = _reason(exc)
            log.error("cannot create a %s, answering 503: %s", kind, reason)
            raise ReviewUnavailable(
                f"the API server could not review the request: {reason}"
            ) from exc
        status: dict[str, Any] = answer.get("status") or {}
        return status


def _reason(exc: Exception) -> str:
    """One line for an API failure; a 403 says which permission the extender lacks."""
    status = getattr(exc, "status", None)
    if status == 403:
        return (
            "forbidden: the extender's identity needs `create` on tokenreviews "
            "(authentication.k8s.io) and subjectaccessreviews (authorization.k8s.io)"
        )
    if status is not None:
        return f"HTTP {status} {getattr(exc, 'reason', '')}".strip()
    return f"{type(exc).__name__}: {exc}".splitlines()[0]
