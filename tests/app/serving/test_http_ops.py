"""Health, readiness, metrics, debug and no-op endpoints over real HTTP."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from prometheus_client import CollectorRegistry, Counter
from prometheus_client.parser import text_string_to_metric_families

from app.serving.server import ServerSettings, create_app, verb_path
from app.telemetry.metrics import QueueMetrics

from ..conftest import Live, LiveFactory
from ..fake_backend import FakeBackend, Res

GI = 1024.0**3


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    out = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def test_healthz_is_always_ok(live: LiveFactory) -> None:
    svc = live(backend=FakeBackend(ready=(False, "informers syncing"), fail={"readiness"}))
    r = svc.client.get("/healthz")
    assert r.status_code == 200 and r.text == "ok"


def test_readyz_is_503_with_reason_until_backend_is_ready(svc: Live) -> None:
    svc.backend.ready = (False, "waiting for pods, queues informers to sync")
    r = svc.client.get("/readyz")
    assert r.status_code == 503
    assert "waiting for pods, queues informers to sync" in r.text
    svc.backend.ready = (True, "")
    r = svc.client.get("/readyz")
    assert r.status_code == 200 and r.text == "ok"


def test_readyz_is_503_when_the_readiness_check_raises(svc: Live) -> None:
    svc.backend.fail.add("readiness")
    r = svc.client.get("/readyz")
    assert r.status_code == 503 and "scripted readiness failure" in r.text


def test_metrics_volcano_queue_rows(live: LiveFactory) -> None:
    queues = [
        QueueMetrics(
            name="q1",
            weight=2.0,
            share=0.75,
            overused=False,
            allocated=Res(3000, 6 * GI, {"nvidia.com/gpu": 2000}),
            request=Res(5000, 8 * GI),
            deserved=Res(4000, 8 * GI, {"nvidia.com/gpu": 4000}),
            inqueue=Res(1000, GI),
            capability=Res(10000, 20 * GI),
            real_capability=None,
        ),
        QueueMetrics(
            name="q2",
            weight=3.0,
            share=1.5,
            overused=True,
            allocated=Res(6000, 0),
            request=Res(6000, 0),
            deserved=Res(4000, 0),
            inqueue=Res(),
        ),
    ]
    svc = live(backend=FakeBackend(queues=queues))
    r = svc.client.get("/metrics", follow_redirects=False)
    assert r.status_code == 200
    assert r.headers["content-type"].startswith("text/plain")
    got = samples(r.text)

    def q(name: str, queue: str, **extra: str) -> float:
        return got[(name, tuple(sorted({"queue_name": queue, **extra}.items())))]

    assert q("volcano_queue_allocated_milli_cpu", "q1") == 3000
    assert q("volcano_queue_allocated_memory_bytes", "q1") == 6 * GI
    assert q("volcano_queue_allocated_scalar_resources", "q1", resource="nvidia.com/gpu") == 2000
    assert q("volcano_queue_deserved_scalar_resources", "q1", resource="nvidia.com/gpu") == 4000
    assert q("volcano_queue_request_milli_cpu", "q1") == 5000
    assert q("volcano_queue_inqueue_memory_bytes", "q1") == GI
    assert q("volcano_queue_capacity_milli_cpu", "q1") == 10000
    assert q("volcano_queue_share", "q1") == 0.75
    assert q("volcano_queue_weight", "q2") == 3
    assert q("volcano_queue_overused", "q1") == 0
    assert q("volcano_queue_overused", "q2") == 1
    assert q("volcano_queue_deserved_milli_cpu", "q2") == 4000
    # no capability means no capacity rows (Volcano's "unlimited")
    assert ("volcano_queue_capacity_milli_cpu", (("queue_name", "q2"),)) not in got
    assert not any(name == "volcano_queue_real_capacity_milli_cpu" for name, _ in got)
    # a queue that disappears from the backend disappears from the scrape
    svc.backend.queues = queues[:1]
    assert not any(
        dict(labels).get("queue_name") == "q2"
        for _, labels in samples(svc.client.get("/metrics").text)
    )


def test_metrics_service_histogram_and_counters(svc: Live) -> None:
    svc.client.post("/filter", content=b'{"Pod": {}, "NodeNames": ["a"]}')
    svc.client.post("/filter", content=b'{"Pod": {}, "NodeNames": ["a"]}')
    svc.client.post("/prioritize", content=b"nope")
    got = samples(svc.client.get("/metrics").text)
    assert got[("queue_extender_request_duration_seconds_count", (("verb", "filter"),))] == 2
    assert got[("queue_extender_request_duration_seconds_count", (("verb", "prioritize"),))] == 1
    buckets = [
        dict(labels)["le"]
        for name, labels in got
        if name == "queue_extender_request_duration_seconds_bucket"
        and dict(labels)["verb"] == "filter"
    ]
    assert float(min(buckets, key=float)) == 0.0001 and "5.0" in buckets
    assert got[("queue_extender_decisions_total", (("outcome", "passed"), ("verb", "filter")))] == 2
    assert got[("queue_extender_bad_requests_total", (("verb", "prioritize"),))] == 1


def test_metrics_survive_a_failing_queue_source(svc: Live) -> None:
    svc.backend.fail.add("queue_metrics")
    r = svc.client.get("/metrics")
    assert r.status_code == 200
    got = samples(r.text)
    assert not any(name.startswith("volcano_queue_") for name, _ in got)
    assert got[("queue_extender_errors_total", (("verb", "queue_metrics"),))] == 1


def test_metrics_include_a_given_registry_and_extra_registries(live: LiveFactory) -> None:
    own = CollectorRegistry()
    informer = Counter("informer_relists_total", "relists", registry=own)
    informer.inc(3)
    extra = CollectorRegistry()
    Counter("engine_sessions_total", "sessions", registry=extra).inc(5)
    svc = live(ServerSettings(registry=own, extra_registries=(extra,)))
    assert svc.app.state.registry is own
    got = samples(svc.client.get("/metrics").text)
    assert got[("informer_relists_total", ())] == 3
    assert got[("engine_sessions_total", ())] == 5


def test_metrics_have_process_and_gc_collectors_and_no_created_series(live: LiveFactory) -> None:
    extra = CollectorRegistry()
    Counter("informer_events_total", "events", registry=extra).inc()
    svc = live(ServerSettings(extra_registries=(extra,)))
    svc.client.post("/filter", content=b'{"Pod": {}, "NodeNames": ["a"]}')
    names = {name for name, _ in samples(svc.client.get("/metrics").text)}
    assert "process_resident_memory_bytes" in names and "process_cpu_seconds_total" in names
    assert "python_gc_collections_total" in names
    assert "queue_extender_decisions_total" in names and "informer_events_total" in names
    assert not [name for name in names if name.endswith("_created")]


def test_debug_endpoints(svc: Live) -> None:
    r = svc.client.get("/debug/queues")
    assert r.status_code == 200 and r.json() == {"queues": {"default": {"weight": 1}}}
    r = svc.client.post("/debug/explain", content=b'{"metadata": {"name": "p1"}}')
    assert r.status_code == 200
    assert r.json() == {"pod": "p1", "queue": "default", "tags": ["a"]}
    r = svc.client.post("/debug/explain", content=b"[]")
    assert r.status_code == 400 and "Pod object" in r.json()["Error"]
    svc.backend.fail.add("debug_state")
    r = svc.client.get("/debug/queues")
    assert r.status_code == 500 and "scripted debug_state failure" in r.json()["Error"]


def test_noop_reads_the_body_and_answers_empty_object(live: LiveFactory) -> None:
    svc = live(ServerSettings(noop=True))
    r = svc.client.post("/noop", content=b'{"Pod": {}, "NodeNames": ["a"]}')
    assert r.status_code == 200 and r.json() == {}
    assert svc.backend.calls == []


def test_openapi_documents_the_wire(svc: Live) -> None:
    schema = svc.client.get("/openapi.json").json()
    filter_op = schema["paths"]["/filter"]["post"]
    ref = filter_op["requestBody"]["content"]["application/json"]["schema"]["$ref"]
    assert ref == "#/components/schemas/ExtenderArgs"
    args = schema["components"]["schemas"]["ExtenderArgs"]
    assert set(args["properties"]) == {"Pod", "Nodes", "NodeNames"}
    assert args["required"] == ["Pod"]
    assert "ExtenderPreemptionResult" in schema["components"]["schemas"]


@pytest.mark.parametrize(
    ("prefix", "verb", "path"),
    [
        ("/", "filter", "/filter"),
        ("", "filter", "/filter"),
        ("/a/b/", "/x", "/a/b/x"),
        ("scheduler", "predicates/always_true", "/scheduler/predicates/always_true"),
    ],
)
def test_verb_path_follows_kube_scheduler_url_rule(prefix: str, verb: str, path: str) -> None:
    assert verb_path(prefix, verb) == path


@pytest.mark.parametrize(
    "settings",
    [
        ServerSettings(filter_verb="metrics"),
        ServerSettings(filter_verb="x", preempt_verb="x"),
        ServerSettings(prioritize_verb=""),
        ServerSettings(on_error="ignore"),  # type: ignore[arg-type]
        ServerSettings(max_body_bytes=0),
    ],
)
def test_bad_settings_are_refused(settings: ServerSettings) -> None:
    with pytest.raises(ValueError):
        create_app(FakeBackend(), settings)


def test_openapi_version_is_the_installed_distributions(svc: Live) -> None:
    from importlib import metadata

    schema = svc.client.get("/openapi.json").json()
    assert schema["info"]["version"] == metadata.version("kube-queue-extender")


def test_requests_ask_no_opentelemetry_provider(svc: Live, monkeypatch: pytest.MonkeyPatch) -> None:
    """FastAPI's own instrumentation is off: with only the OpenTelemetry API installed it
    could record nothing, and it asked the global providers on every request."""
    import opentelemetry.metrics
    import opentelemetry.trace

    asked: list[str] = []

    def counting(name: str, real: Callable[[], object]) -> Callable[[], object]:
        def provider() -> object:
            asked.append(name)
            return real()

        return provider

    for module, name in (
        (opentelemetry.trace, "get_tracer_provider"),
        (opentelemetry.metrics, "get_meter_provider"),
    ):
        monkeypatch.setattr(module, name, counting(name, getattr(module, name)))
    assert svc.client.post("/filter", content=b'{"Pod": {}, "NodeNames": ["a"]}').is_success
    assert svc.client.get("/healthz").is_success
    assert asked == []
