"""The read-only API over HTTP: answers, 404s with a sentence, bounded what-if input."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import yaml

from app.api.whatif import MAX_WHATIF_BYTES
from app.backend.build import demo_cluster_text
from app.backend.engine import EngineBackend
from app.cli.main import build_parser
from app.cli.serve import backend_from_args
from app.serving.server import create_app
from scheduler_core.insight.whatif import MAX_OBJECTS
from tests.builders import hypernode
from tests.insight.conftest import fingerprint

from ..live import serve

NEW_POD = {
    "kind": "Pod",
    "metadata": {
        "name": "extra",
        "namespace": "production",
        "annotations": {"scheduling.volcano.sh/queue-name": "production"},
    },
    "spec": {
        "schedulerName": "queue-scheduler",
        "containers": [{"name": "c", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}],
    },
}


@pytest.fixture
def demo() -> Iterator[tuple[EngineBackend, httpx.Client]]:
    engine = backend_from_args(build_parser().parse_args(["serve", "--demo"])).backend
    with serve(create_app(engine)) as url, httpx.Client(base_url=url, timeout=30) as client:
        yield engine, client


def test_queues_list_and_one_queue_with_its_derivation(
    demo: tuple[EngineBackend, httpx.Client],
) -> None:
    _, client = demo
    queues = client.get("/api/v1/queues").json()["queues"]
    names = [q["name"] for q in queues]
    assert {"production", "research", "analytics"} <= set(names)
    analytics = next(q for q in queues if q["name"] == "analytics")
    assert analytics["overused"] is True
    one = client.get("/api/v1/queues/production").json()
    assert one["derivation"]["plugin"] == "proportion"
    assert one["derivation"]["rounds"][0]["round"] == 1
    assert set(one["derivation"]["boundBy"]) >= {"cpu", "memory"}


def test_pending_and_explain_answer_for_known_objects_and_404_otherwise(
    demo: tuple[EngineBackend, httpx.Client],
) -> None:
    _, client = demo
    page = client.get("/api/v1/queues/production/pending", params={"limit": 1}).json()
    assert page["total"] == 2 and len(page["jobs"]) == 1
    explained = client.get("/api/v1/pods/production/report-export/explain").json()
    assert explained["queue"] == "production"
    assert [s["name"] for s in explained["steps"]][:3] == ["job-exists", "job-valid", "queue-open"]
    group = client.get("/api/v1/podgroups/production/billing-reconcile/explain").json()
    assert group["kind"] == "PodGroup"
    for path, what in (
        ("/api/v1/pods/production/ghost/explain", "pod production/ghost"),
        ("/api/v1/podgroups/production/ghost/explain", "PodGroup production/ghost"),
        ("/api/v1/queues/ghost", "queue ghost"),
        ("/api/v1/queues/ghost/pending", "queue ghost"),
    ):
        answer = client.get(path)
        assert answer.status_code == 404, path
        assert what in answer.json()["Error"]


def test_malformed_names_and_parameters_are_400(
    demo: tuple[EngineBackend, httpx.Client],
) -> None:
    _, client = demo
    for path in (
        "/api/v1/pods/Bad_NS/x/explain",
        "/api/v1/queues/production/pending?limit=0",
        "/api/v1/queues/production/pending?limit=x",
    ):
        answer = client.get(path)
        assert answer.status_code == 400, path
        assert "\n" not in answer.json()["Error"]


def test_whatif_answers_and_leaves_the_live_state_alone(
    demo: tuple[EngineBackend, httpx.Client],
) -> None:
    engine, client = demo
    before = fingerprint(engine.accounting)
    answer = client.post("/api/v1/whatif", json={"add": [NEW_POD]})
    assert answer.status_code == 200, answer.text
    result = answer.json()
    assert [p["pod"] for p in result["placed"] if p["added"]] == ["production/extra"]
    assert {q["name"] for q in result["queues"]} >= {"production"}
    assert fingerprint(engine.accounting) == before


def gang(queue: str, namespace: str, name: str, members: int, cpu: str) -> list[dict[str, Any]]:
    objects: list[dict[str, Any]] = [
        {
            "kind": "PodGroup",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"minMember": members, "queue": queue},
        }
    ]
    for i in range(members):
        objects.append(
            {
                "kind": "Pod",
                "metadata": {
                    "name": f"{name}-{i}",
                    "namespace": namespace,
                    "annotations": {"scheduling.k8s.io/group-name": name},
                },
                "spec": {
                    "schedulerName": "queue-scheduler",
                    "containers": [
                        {"name": "c", "resources": {"requests": {"cpu": cpu, "memory": "12Gi"}}}
                    ],
                },
            }
        )
    return objects


def test_whatif_schedules_only_the_submission_unless_asked_for_the_whole_session(
    demo: tuple[EngineBackend, httpx.Client],
) -> None:
    engine, client = demo
    before = fingerprint(engine.accounting)
    submission = gang("production", "production", "nightly-report", 2, "6")
    mine = client.post("/api/v1/whatif", json={"add": submission})
    assert mine.status_code == 200, mine.text
    doc = mine.json()
    added = {"production/nightly-report-0", "production/nightly-report-1"}
    assert {p["pod"] for p in doc["placed"]} == added and doc["unplaced"] == []
    assert doc["evicted"] and {e["preemptor"] for e in doc["evicted"]} <= added
    # the demo's own pending jobs (billing-reconcile, resnet-train, ...) stay pending
    nlp = next(q for q in doc["queues"] if q["name"] == "research-nlp")
    assert nlp["after"]["allocated"] == nlp["before"]["allocated"]

    everything = client.post("/api/v1/whatif", json={"add": submission, "scope": "all"}).json()
    others = {p["pod"] for p in everything["placed"]} - added
    assert any(pod.startswith("production/billing-reconcile-") for pod in others)
    assert client.post("/api/v1/whatif", json={"add": submission, "scope": "x"}).status_code == 400
    assert fingerprint(engine.accounting) == before


def test_whatif_input_is_bounded(demo: tuple[EngineBackend, httpx.Client]) -> None:
    engine, client = demo
    before = fingerprint(engine.accounting)
    huge = b'{"add": [' + b" " * MAX_WHATIF_BYTES + b"]}"
    too_big = client.post(
        "/api/v1/whatif", content=huge, headers={"Content-Type": "application/json"}
    )
    assert too_big.status_code == 413
    many = client.post("/api/v1/whatif", json={"add": [NEW_POD] * (MAX_OBJECTS + 1)})
    assert many.status_code == 400
    assert "add" in many.json()["Error"]
    for body in (b"not json", b"[]", json.dumps({"add": [{"kind": "Node"}]}).encode()):
        bad = client.post(
            "/api/v1/whatif", content=body, headers={"Content-Type": "application/json"}
        )
        assert bad.status_code == 400, body
    assert fingerprint(engine.accounting) == before


def test_the_status_page_lists_queues_and_pending_reasons(
    demo: tuple[EngineBackend, httpx.Client],
) -> None:
    _, client = demo
    page = client.get("/")
    assert page.status_code == 200
    assert page.headers["content-type"].startswith("text/html")
    html = page.text
    assert "data-queue='production'" in html and "badge over" in html
    assert "passes the queue and gang checks" in html
    assert "http://" not in html and "https://" not in html  # nothing fetched from elsewhere
    detail = client.get("/queues/production")
    assert detail.status_code == 200 and "Deserved derivation (proportion)" in detail.text
    assert client.get("/queues/ghost").status_code == 404


def test_docs_are_off_and_the_schema_lists_the_api(
    demo: tuple[EngineBackend, httpx.Client],
) -> None:
    _, client = demo
    assert client.get("/docs").status_code == 404
    paths = client.get("/openapi.json").json()["paths"]
    for path in (
        "/api/v1/queues",
        "/api/v1/queues/{name}",
        "/api/v1/queues/{name}/pending",
        "/api/v1/pods/{namespace}/{name}/explain",
        "/api/v1/podgroups/{namespace}/{name}/explain",
        "/api/v1/whatif",
    ):
        assert path in paths, path


def test_debug_explain_and_the_api_explain_a_cached_pod_with_one_derivation(
    demo: tuple[EngineBackend, httpx.Client],
) -> None:
    """POST /debug/explain with a pod the cache holds answers exactly what the people's API
    answers for it (plus whether the extender manages it): one derivation, one set of
    numbers."""
    _, client = demo
    api = client.get("/api/v1/pods/research/resnet-train-worker-0/explain")
    assert api.status_code == 200, api.text
    demo_objects = yaml.safe_load_all(demo_cluster_text())
    pod = next(
        o
        for o in demo_objects
        if o and o.get("kind") == "Pod" and o["metadata"]["name"] == "resnet-train-worker-0"
    )
    debug = client.post("/debug/explain", json=pod)
    assert debug.status_code == 200, debug.text
    answer = debug.json()
    assert answer.pop("managed") is True
    assert answer == api.json()


def test_debug_queues_shows_the_api_s_queue_views(
    demo: tuple[EngineBackend, httpx.Client],
) -> None:
    _, client = demo
    debug = client.get("/debug/queues").json()["queues"]
    assert debug == client.get("/api/v1/queues").json()["queues"]


def test_the_topology_shows_the_serving_tree_by_tier_and_its_refusal(
    demo: tuple[EngineBackend, httpx.Client],
) -> None:
    engine, client = demo
    empty = client.get("/api/v1/topology").json()
    assert (empty["enabled"], empty["source"], empty["tiers"], empty["refusal"]) == (
        True,
        "none",
        [],
        None,
    )
    nodes = sorted(engine.state.snapshot().nodes)
    with engine.state.locked():
        engine.state.upsert("HyperNode", hypernode("leaf", 1, nodes=nodes[:2], tier_name="leaf"))
        engine.state.upsert("HyperNode", hypernode("spine", 2, hypernodes=["leaf"]))
    tree = client.get("/api/v1/topology").json()
    assert tree["source"] == "hypernodes" and tree["hypernodes"] == 2
    assert [(t["tier"], [d["name"] for d in t["domains"]]) for t in tree["tiers"]] == [
        (1, ["leaf"]),
        (2, ["spine"]),
    ]
    assert tree["tiers"][0]["domains"][0] == {
        "name": "leaf",
        "tier": 1,
        "tierName": "leaf",
        "nodeCount": 2,
        "parent": "spine",
        "children": [],
    }
    with engine.state.locked():
        engine.state.upsert("HyperNode", hypernode("spine", 2, hypernodes=["leaf", "spine"]))
    refused = client.get("/api/v1/topology").json()
    assert refused["refusal"]["problems"] == {"spine": "cycle: spine → spine"}
    assert refused["tiers"] == tree["tiers"]  # the last good tree keeps serving
