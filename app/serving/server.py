"""The FastAPI application factory for the extender service.

`create_app(backend, settings)` wires routes, metrics and auth around one backend and holds
no module-level state, so tests and benchmarks can run several apps side by side. FastAPI
is used for routing and for the OpenAPI description of the wire; the verb handlers read raw
bytes and return pre-encoded bytes, so FastAPI never validates or encodes a request body.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi
from fastapi.telemetry import TelemetryConfig
from prometheus_client import (
    CollectorRegistry,
    Gauge,
    GCCollector,
    ProcessCollector,
    disable_created_metrics,
)
from pydantic import BaseModel
from pydantic.json_schema import models_json_schema
from starlette.applications import Starlette
from starlette.middleware.authentication import AuthenticationMiddleware
from starlette.routing import Route

from app.api import explain as routes_explain_api
from app.api import queues as routes_queues_api
from app.api import status_routes as routes_status_page
from app.api import topology as routes_topology_api
from app.api import whatif as routes_whatif_api
from app.api.common import answer_validation_errors_with_400, drop_validation_422
from app.api.port import InsightBackend, RecentEvictionsProvider
from app.http.errors import ErrorModel
from app.serving import debug as routes_debug
from app.serving import ops as routes_ops
from app.serving.body_limit import BodyLimit
from app.serving.delegated_auth import (
    DEFAULT_CACHE_TTL,
    DEFAULT_REVIEW_RATE,
    DelegatedAuthBackend,
    Reviews,
)
from app.serving.security import BearerTokenBackend, TokenFile, unauthorized
from app.serving.verb_router import ExtenderApp, NoopVerb, Verb
from app.telemetry.metrics import (
    AssumptionCollector,
    AssumptionCounts,
    QueueCollector,
    ServiceMetrics,
    iter_registries,
)
from app.verbs.common import OnError, VerbContext, VerbHandler
from app.verbs.filter import make_filter_handler
from app.verbs.ports import ExtenderBackend
from app.verbs.preempt import make_preempt_handler
from app.verbs.prioritize import make_prioritize_handler
from app.verbs.schema import (
    ExtenderArgs,
    ExtenderFilterResult,
    ExtenderPreemptionArgs,
    ExtenderPreemptionResult,
    HostPriority,
)
from app.version import version

DEFAULT_MAX_BODY_BYTES = 8 * 1024 * 1024
#: The metrics listener routes GETs only: any body at all is more than it needs.
METRICS_MAX_BODY_BYTES = 1024
OPEN_PATHS = frozenset({"/healthz", "/readyz"})
FIXED_PATHS = frozenset(
    {"/healthz", "/readyz", "/metrics", "/debug/queues", "/debug/explain", "/noop"}
    | {"/openapi.json", "/api/v1/whatif", "/api/v1/queues"}
)
TITLE = "kube-queue-extender"

VERSION = version()


@dataclass(slots=True)
class ServerSettings:
    """Everything `create_app` needs besides the backend.

    `registry`: the app's metric registry; pass one to register other collectors on it
    (e.g. the informers'); a fresh one is made otherwise. `extra_registries` are rendered
    after it on /metrics. `config_warnings` returns what the engine's configuration made it
    skip, read at each /readyz and scrape (so a reloaded configuration shows at once).
    `delegated_auth`: the API server's TokenReview/SubjectAccessReview, guarding every path
    but the verbs and the probes (an alternative to `token_file`, not a second layer).
    `assumptions`, when the backend keeps assumptions, feeds the assumed-pods gauge.
    `recent_evictions`, when a reclaim loop runs, is what the status page shows of its work.
    `noop`: serve POST /noop (reads the body, answers ``{}``), the floor benchmarks subtract;
    off unless asked for, since it is a way to make the server read bodies for nothing.
    `max_body_bytes` caps every endpoint's body (413 beyond it), not only the verbs'.
    """

    url_prefix: str = "/"
    filter_verb: str = "filter"
    prioritize_verb: str = "prioritize"
    preempt_verb: str = "preempt"
    on_error: OnError = "fail"
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    registry: CollectorRegistry | None = None
    extra_registries: tuple[CollectorRegistry, ...] = ()
    token_file: str | None = None
    token_recheck_seconds: float = 1.0
    metrics_auth: bool = False
    delegated_auth: Reviews | None = None
    auth_cache_ttl: float = DEFAULT_CACHE_TTL
    auth_review_rate: float = DEFAULT_REVIEW_RATE
    config_warnings: Callable[[], Sequence[str]] = tuple
    assumptions: Callable[[], AssumptionCounts] | None = None
    recent_evictions: RecentEvictionsProvider | None = None
    noop: bool = False


def verb_path(prefix: str, verb: str) -> str:
    """kube-scheduler's URL rule: `TrimRight(urlPrefix, "/") + "/" + verb`."""
    base = prefix.strip()
    if base and not base.startswith("/"):
        base = "/" + base
    return base.rstrip("/") + "/" + verb.strip().strip("/")


def verb_paths(settings: ServerSettings) -> dict[str, str]:
    """verb -> path, refusing empty, duplicate or reserved paths."""
    paths: dict[str, str] = {}
    for verb, name in (
        ("filter", settings.filter_verb),
        ("prioritize", settings.prioritize_verb),
        ("preempt", settings.preempt_verb),
    ):
        if not name.strip().strip("/"):
            raise ValueError(f"the {verb} verb name must not be empty")
        path = verb_path(settings.url_prefix, name)
        if path in FIXED_PATHS:
            raise ValueError(f"the {verb} path {path} collides with a built-in endpoint")
        if path in paths.values():
            raise ValueError(f"the {verb} path {path} is used by another verb")
        paths[verb] = path
    return paths


def _check(settings: ServerSettings) -> None:
    if settings.on_error not in ("pass", "fail"):
        raise ValueError(f"on_error must be 'pass' or 'fail', not {settings.on_error!r}")
    if settings.max_body_bytes <= 0:
        raise ValueError("max_body_bytes must be positive")
    if settings.token_file and settings.delegated_auth is not None:
        raise ValueError(
            "--token-file and --delegated-auth are alternatives: the static token guards the "
            "verbs too, delegated authentication everything but the verbs"
        )
    if settings.auth_cache_ttl < 0:
        raise ValueError("auth_cache_ttl must not be negative")


def _json_body(ref: dict[str, Any]) -> dict[str, Any]:
    return {"requestBody": {"required": True, "content": {"application/json": {"schema": ref}}}}


def _answers(ok: type[BaseModel] | dict[str, Any], bad: type[BaseModel]) -> dict[int | str, Any]:
    ok_doc: dict[str, Any] = {"description": "The answer"}
    if isinstance(ok, dict):
        ok_doc["content"] = {"application/json": {"schema": ok}}
    else:
        ok_doc["model"] = ok
    return {
        200: ok_doc,
        400: {"model": bad, "description": "Malformed or incomplete request"},
        413: {"model": bad, "description": "Body over --max-body-bytes"},
        401: {"model": ErrorModel, "description": "Bearer token missing or wrong"},
        500: {"model": ErrorModel, "description": "Backend failure under on_error=fail"},
    }


_REQUEST_MODELS: tuple[type[BaseModel], ...] = (ExtenderArgs, ExtenderPreemptionArgs)


def _request_schemas() -> tuple[dict[str, dict[str, Any]], dict[str, Any]]:
    """Model name -> `$ref`, and the definitions to add to `components.schemas`."""
    refs, top = models_json_schema(
        [(m, "validation") for m in _REQUEST_MODELS],
        ref_template="#/components/schemas/{model}",
    )
    return {model.__name__: dict(ref) for (model, _), ref in refs.items()}, top.get("$defs", {})


def _install_openapi(app: FastAPI, defs: dict[str, Any]) -> None:
    """FastAPI documents only bodies it parses; ours are parsed by hand, so add them."""

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            schema = get_openapi(
                title=app.title,
                version=app.version,
                description=app.description,
                routes=app.routes,
            )
            schemas = schema.setdefault("components", {}).setdefault("schemas", {})
            for name, definition in defs.items():
                schemas.setdefault(name, definition)
            drop_validation_422(schema)
            app.openapi_schema = schema
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]


#: FastAPI's own OpenTelemetry instrumentation, off. The image ships the OpenTelemetry API
#: without an SDK, so no provider is ever configured and it could never record a span; yet
#: FastAPI asks the global providers on every request whether one is (about 2 % of the event
#: loop's time behind kube-scheduler). Our telemetry is ``/metrics`` and the logs.
NO_OPENTELEMETRY: TelemetryConfig = {"tracing": False, "metrics": False, "logs": False}


def create_app(backend: ExtenderBackend, settings: ServerSettings | None = None) -> ExtenderApp:
    """The extender service around `backend`: its metrics, the three verbs, the probes and
    /debug, the people's API when the backend answers it, the middleware (authentication,
    body cap) and the verbs' router in front of it all (``app.serving.verb_router``)."""
    settings = settings if settings is not None else ServerSettings()
    _check(settings)
    paths = verb_paths(settings)
    registry = settings.registry if settings.registry is not None else CollectorRegistry()
    metrics = _service_metrics(backend, registry, settings)
    ctx = VerbContext(
        backend=backend,
        metrics=metrics,
        on_error=settings.on_error,
        max_body_bytes=settings.max_body_bytes,
    )
    app = ExtenderApp(
        title=TITLE,
        version=VERSION,
        description="Volcano-style queue fair share, preemption and reclaim for kube-scheduler, "
        "served as a kube-scheduler HTTP extender (k8s.io/kube-scheduler/extender/v1).",
        # Swagger UI and ReDoc load their scripts from a public CDN: blank in an air-gapped
        # cluster. The schema stays at /openapi.json for any OpenAPI viewer.
        docs_url=None,
        redoc_url=None,
        telemetry=NO_OPENTELEMETRY,
    )
    app.state.backend = backend
    app.state.metrics = metrics
    app.state.registry = registry
    app.state.settings = settings
    verbs, defs = _add_verb_routes(app, ctx, paths)
    _add_ops_routes(app, backend, ctx, registry, settings)
    if isinstance(backend, InsightBackend):
        defs.update(add_insight_routes(app, backend, settings.recent_evictions))
    _install_openapi(app, defs)
    _install_middleware(app, settings, paths, verbs)
    return app


def _service_metrics(
    backend: ExtenderBackend, registry: CollectorRegistry, settings: ServerSettings
) -> ServiceMetrics:
    """The service's own metrics on `registry`, with the process's, the queues', the
    configuration warnings' and the assumptions' collectors beside them."""
    # A `_created` series per counter and histogram doubles the scrape for a timestamp no
    # dashboard reads (the switch is process-wide in prometheus_client); the process and GC
    # collectors give memory, CPU, open files and collection pauses next to our own figures.
    disable_created_metrics()  # type: ignore[no-untyped-call]
    ProcessCollector(registry=registry)
    GCCollector(registry=registry)
    # The queue collector goes first so that a failure while reading the queues is already
    # counted in the same scrape's queue_extender_errors_total.
    queue_collector = QueueCollector(backend.queue_metrics)
    registry.register(queue_collector)
    metrics = ServiceMetrics(registry)
    Gauge(
        "queue_extender_config_warnings",
        "Configuration warnings: plugins the engine skips and a refused reload of the "
        "configuration file (each named by /readyz).",
        registry=registry,
    ).set_function(lambda: len(settings.config_warnings()))
    if settings.assumptions is not None:
        registry.register(AssumptionCollector(settings.assumptions))
    queue_errors = metrics.verb("queue_metrics")
    queue_collector.on_error = lambda _exc: queue_errors.error()
    return metrics


#: A verb's name -> its handler.
VerbHandlers = dict[str, VerbHandler[Any]]


class _VerbRoute(NamedTuple):
    """A verb's handler and its route as the OpenAPI document shows it: the 200 answer, the
    error answer and the request body."""

    name: str
    make: Callable[[VerbContext], VerbHandler[Any]]
    ok: type[BaseModel] | dict[str, Any]
    bad: type[BaseModel] = ErrorModel
    body: type[BaseModel] = ExtenderArgs


_SUMMARIES = {
    "filter": "kube-scheduler filter verb",
    "prioritize": "kube-scheduler prioritize verb (HostPriorityList)",
    "preempt": "kube-scheduler preempt verb",
}


def _add_verb_routes(
    app: FastAPI, ctx: VerbContext, paths: dict[str, str]
) -> tuple[VerbHandlers, dict[str, Any]]:
    """filter, prioritize and preempt on their paths; returns their handlers (for the verbs'
    router) and the schema definitions of their hand-parsed bodies."""
    refs, defs = _request_schemas()
    host_list = {"type": "array", "items": {"$ref": "#/components/schemas/HostPriority"}}
    defs.setdefault("HostPriority", HostPriority.model_json_schema())
    table = (
        _VerbRoute("filter", make_filter_handler, ExtenderFilterResult, ExtenderFilterResult),
        _VerbRoute("prioritize", make_prioritize_handler, host_list),
        _VerbRoute(
            "preempt", make_preempt_handler, ExtenderPreemptionResult, body=ExtenderPreemptionArgs
        ),
    )
    verbs: VerbHandlers = {}
    for name, make, ok, bad, body in table:
        verbs[name] = make(ctx)
        app.add_api_route(
            paths[name],
            verbs[name].endpoint,
            methods=["POST"],
            name=name,
            summary=_SUMMARIES[name],
            responses=_answers(ok, bad),
            openapi_extra=_json_body(refs[body.__name__]),
        )
    return verbs, defs


def _install_middleware(
    app: ExtenderApp, settings: ServerSettings, paths: dict[str, str], verbs: VerbHandlers
) -> None:
    """The middleware, innermost first: authentication, the body cap; then the verbs' router
    in front, whose chains keep the server-error handler and the same authentication."""
    _install_auth(app, settings, frozenset(paths.values()))
    # The no-op takes the verbs' way, so that it stays their floor for bench/.
    routed: dict[str, Verb] = {paths[v]: h for v, h in verbs.items()}
    if settings.noop:
        routed["/noop"] = NoopVerb(settings.max_body_bytes)
    # The protocol may answer the paths no authentication guards: the static token guards
    # the verbs, delegated authentication leaves them open (but not /noop).
    lean = set() if settings.token_file else set(paths.values())
    if settings.noop and app.state.auth_backend is None:
        lean.add("/noop")
    app.route_verbs(routed, app.state.auth_backend, settings.max_body_bytes, lean)
    # Outermost: a body over the cap is refused before anything reads it (the verbs read
    # theirs within the same cap and count their own refusals).
    app.add_middleware(
        BodyLimit, max_bytes=settings.max_body_bytes, exempt=frozenset(paths.values())
    )


def create_metrics_app(app: FastAPI) -> Starlette:
    """/metrics, /healthz and /readyz of `app` alone, for a second listener that Prometheus
    and probes may reach while the verbs and /debug stay on the main (loopback) one. Same
    registries, same readiness, same authentication (and the same review cache)."""
    endpoints = app.state.ops_endpoints
    metrics_app = Starlette(
        routes=[Route(path, endpoint, methods=["GET"]) for path, endpoint in endpoints.items()]
    )
    if app.state.auth_backend is not None:
        metrics_app.add_middleware(
            AuthenticationMiddleware, backend=app.state.auth_backend, on_error=unauthorized
        )
    # Only GETs are routed here; a body is refused at once rather than read.
    metrics_app.add_middleware(BodyLimit, max_bytes=METRICS_MAX_BODY_BYTES)
    return metrics_app


def _install_auth(app: FastAPI, settings: ServerSettings, verbs: frozenset[str]) -> None:
    backend: BearerTokenBackend | DelegatedAuthBackend | None = None
    if settings.token_file:
        open_paths = OPEN_PATHS if settings.metrics_auth else OPEN_PATHS | {"/metrics"}
        backend = BearerTokenBackend(
            TokenFile(settings.token_file, settings.token_recheck_seconds), open_paths
        )
    elif settings.delegated_auth is not None:
        # Everything but the probes and the verbs, including paths that do not exist: a
        # caller learns nothing about the routes without a token.
        open_paths = OPEN_PATHS | verbs
        backend = DelegatedAuthBackend(
            settings.delegated_auth,
            lambda path: path not in open_paths,
            ttl=settings.auth_cache_ttl,
            review_rate=settings.auth_review_rate,
            review_burst=max(1, int(2 * settings.auth_review_rate)),
        )
    app.state.auth_backend = backend
    if backend is not None:
        app.add_middleware(AuthenticationMiddleware, backend=backend, on_error=unauthorized)


def add_insight_routes(
    app: FastAPI, backend: InsightBackend, evictions: RecentEvictionsProvider | None = None
) -> dict[str, Any]:
    """The read-only API and the status page; returns the schema definitions to publish."""
    app.include_router(routes_queues_api.make_router(backend))
    app.include_router(routes_explain_api.make_router(backend))
    app.include_router(routes_whatif_api.make_router(backend))
    app.include_router(routes_topology_api.make_router(backend))
    app.include_router(routes_status_page.make_router(backend, evictions))
    answer_validation_errors_with_400(app)
    return routes_whatif_api.request_schema()[1]


def create_status_app(backend: InsightBackend, settings: ServerSettings | None = None) -> FastAPI:
    """The status page and the read-only API alone, for ``--status-address``: a listener
    that can be shown to users without exposing the verbs, /metrics or /debug. It honours
    the same bearer token (TLS is the listener's)."""
    settings = settings if settings is not None else ServerSettings()
    app = FastAPI(
        title=TITLE + " status",
        version=VERSION,
        description="The queue status page and the read-only explain / what-if API.",
        docs_url=None,
        redoc_url=None,
        telemetry=NO_OPENTELEMETRY,
    )
    app.state.backend = backend
    app.add_api_route("/healthz", routes_ops.healthz, methods=["GET"])
    _install_openapi(app, add_insight_routes(app, backend, settings.recent_evictions))
    _install_auth(app, settings, frozenset())
    app.add_middleware(BodyLimit, max_bytes=settings.max_body_bytes)
    return app


def _add_ops_routes(
    app: FastAPI,
    backend: ExtenderBackend,
    ctx: VerbContext,
    registry: CollectorRegistry,
    settings: ServerSettings,
) -> None:
    text = {"content": {"text/plain": {"schema": {"type": "string"}}}}
    readyz = routes_ops.make_readyz(backend, settings.config_warnings)
    metrics = routes_ops.make_metrics(tuple(iter_registries(registry, settings.extra_registries)))
    # What a separate metrics listener serves (`create_metrics_app`): probes and the scrape.
    app.state.ops_endpoints = {
        "/healthz": routes_ops.healthz,
        "/readyz": readyz,
        "/metrics": metrics,
    }
    app.add_api_route(
        "/healthz",
        routes_ops.healthz,
        methods=["GET"],
        responses={200: {"description": "Serving", **text}},
    )
    app.add_api_route(
        "/readyz",
        readyz,
        methods=["GET"],
        responses={
            200: {"description": "Caches synced", **text},
            503: {"description": "Not ready, with the reason", **text},
        },
    )
    app.add_api_route(
        "/metrics",
        metrics,
        methods=["GET"],
        responses={200: {"description": "Prometheus text format", **text}},
    )
    app.add_api_route(
        "/debug/queues",
        routes_debug.make_debug_queues(ctx),
        methods=["GET"],
        responses={
            200: {"description": "The engine's queue state"},
            500: {"model": ErrorModel, "description": "The backend failed"},
        },
    )
    pod_body = _json_body({"type": "object", "description": "A v1.Pod"})
    app.add_api_route(
        "/debug/explain",
        routes_debug.make_debug_explain(ctx),
        methods=["POST"],
        openapi_extra=pod_body,
        responses={
            200: {"description": "How the engine sees this pod"},
            400: {"model": ErrorModel, "description": "Malformed request"},
            500: {"model": ErrorModel, "description": "The backend failed"},
        },
    )
    if settings.noop:
        app.add_api_route(
            "/noop",
            routes_ops.noop,
            methods=["POST"],
            responses={200: {"description": "Always {}"}},
        )
