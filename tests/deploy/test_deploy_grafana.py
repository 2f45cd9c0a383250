"""The Grafana dashboard: one JSON (deploy/grafana/, copied into the chart), shipped as a
sidecar-labelled ConfigMap, and every query in it names a metric a running server exports.

The names are checked against real scrapes: the server in-process on the bundled demo cluster
(queue gauges, request metrics), and on the stand-in API server with the reclaim loop on, as
deployed (the informers', the controller's and the reclaim loop's metrics exist only when
watching a cluster). PromQL is parsed by a real parser (promql-parser), after
Grafana's variables are replaced by values of the same kind.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import promql_parser
import pytest
from prometheus_client.parser import text_string_to_metric_families

from app.cli.main import build_parser
from app.cli.serve import backend_from_args
from app.serving.server import ServerSettings, create_app
from scheduler_core.controller.podgroup_status import PHASES
from tests.app.live import serve
from tests.fakeapi.kubeconfig import write_kubeconfig
from tests.fakeapi.server import FakeApiServer

from .deploy_manifests import CHART_DIR, DEPLOY_DIR, find, rendered_documents

DASHBOARD = DEPLOY_DIR / "grafana" / "kube-queue-extender.json"
CHART_COPY = CHART_DIR / "dashboards" / "kube-queue-extender.json"

#: Grafana's variables, replaced by a value of the same kind so the query parses.
GRAFANA_VARIABLES = {
    "$__rate_interval": "5m",
    "$__interval": "1m",
    "$__range": "1h",
    "$queue": ".*",
}
LABEL_VALUES = re.compile(r"^label_values\(\s*([A-Za-z_:][\w:]*)\s*,\s*\w+\s*\)$")

#: Samples a metric family of each type exposes, by suffix.
SUFFIXES = {
    "counter": ("_total",),
    "histogram": ("_bucket", "_sum", "_count"),
    "summary": ("", "_sum", "_count"),
    "gauge": ("",),
    "info": ("_info",),
}


def _dashboard() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(DASHBOARD.read_text())
    return loaded


def _panels(dashboard: dict[str, Any]) -> Iterator[dict[str, Any]]:
    for panel in dashboard["panels"]:
        yield panel
        yield from panel.get("panels", [])  # a collapsed row keeps its panels inside


def dashboard_queries(dashboard: dict[str, Any]) -> list[str]:
    """Every PromQL expression: panel targets, and the variables' `label_values(metric, …)`."""
    queries = [t["expr"] for p in _panels(dashboard) for t in p.get("targets", [])]
    for variable in dashboard.get("templating", {}).get("list", []):
        if variable["type"] != "query":
            continue
        query = variable["query"]
        text = query["query"] if isinstance(query, dict) else query
        match = LABEL_VALUES.match(text.strip())
        assert match, f"variable {variable['name']}: not label_values(metric, label): {text}"
        queries.append(match.group(1))
    return queries


def metric_names(expression: str) -> set[str]:
    """The metric names a PromQL expression selects."""
    for variable, value in GRAFANA_VARIABLES.items():
        expression = expression.replace(variable, value)
    names: set[str] = set()

    def visit(node: Any) -> None:
        if isinstance(node, promql_parser.VectorSelector):
            assert node.name, f"a selector without a metric name in {expression}"
            names.add(node.name)
        elif isinstance(node, promql_parser.MatrixSelector):
            visit(node.vector_selector)
        elif isinstance(node, promql_parser.Call):
            for argument in node.args:
                visit(argument)
        elif isinstance(node, promql_parser.AggregateExpr):
            visit(node.expr)
            if node.param is not None:
                visit(node.param)
        elif isinstance(node, promql_parser.BinaryExpr):
            visit(node.lhs)
            visit(node.rhs)
        elif isinstance(
            node, (promql_parser.ParenExpr, promql_parser.UnaryExpr, promql_parser.SubqueryExpr)
        ):
            visit(node.expr)

    visit(promql_parser.parse(expression))
    return names


def exported_names(text: str) -> set[str]:
    """Every sample name the exposition declares (a labelled family with no child yet still
    declares its names through its TYPE line) or carries."""
    names: set[str] = set()
    for family in text_string_to_metric_families(text):
        names.update(family.name + suffix for suffix in SUFFIXES.get(family.type, ("",)))
        names.update(sample.name for sample in family.samples)
    return names


def _eventually_ready(client: httpx.Client) -> None:
    deadline = time.monotonic() + 15.0
    while client.get("/readyz").status_code != 200:
        assert time.monotonic() < deadline, "the server never became ready"
        time.sleep(0.05)


def _drive_and_scrape(client: httpx.Client, pod: dict[str, Any], nodes: list[str]) -> str:
    """One call of each verb, so the histograms and counters carry samples, then a scrape."""
    _eventually_ready(client)
    assert client.post("/filter", json={"Pod": pod, "NodeNames": nodes}).status_code == 200
    assert client.post("/prioritize", json={"Pod": pod, "NodeNames": nodes}).status_code == 200
    return client.get("/metrics").text


def _pending_pod(queue: str, cpu: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "dashboard-probe",
            "namespace": "team",
            "uid": "uid-dashboard-probe",
            "annotations": {"scheduling.volcano.sh/queue-name": queue},
        },
        "spec": {
            "schedulerName": "queue-scheduler",
            "containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}],
        },
        "status": {"phase": "Pending"},
    }


def _scrape_demo_cluster() -> str:
    backend = backend_from_args(build_parser().parse_args(["serve", "--demo"])).backend
    queue = backend.queue_metrics()[0].name
    nodes = ["cpu-node-1"]  # a node of the bundled demo cluster
    with serve(create_app(backend, ServerSettings())) as url, httpx.Client(base_url=url) as client:
        return _drive_and_scrape(client, _pending_pod(queue, "100"), nodes)


def _scrape_watching(tmp_path: Path) -> str:
    with FakeApiServer() as api:
        api.add(
            "Node",
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {"name": "n1"},
                "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}},
            },
        )
        api.add(
            "Queue",
            {
                "apiVersion": "scheduling.volcano.sh/v1beta1",
                "kind": "Queue",
                "metadata": {"name": "a"},
                "spec": {"weight": 1},
            },
        )
        kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", api.url)
        # With the reclaim loop, as deploy/ and the chart run it by default: its metrics
        # exist only then.
        built = backend_from_args(
            build_parser().parse_args(["serve", "--kubeconfig", str(kubeconfig), "--reclaim"])
        )
        try:
            assert built.registry is not None
            settings = ServerSettings(extra_registries=(built.registry,))
            with (
                serve(create_app(built.backend, settings)) as url,
                httpx.Client(base_url=url) as client,
            ):
                return _drive_and_scrape(client, _pending_pod("a", "1"), ["n1"])
        finally:
            built.close()


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> set[str]:
    watching = _scrape_watching(tmp_path_factory.mktemp("kubeconfig"))
    return exported_names(_scrape_demo_cluster()) | exported_names(watching)


def test_every_dashboard_metric_is_exported(exported: set[str]) -> None:
    queried = {name for q in dashboard_queries(_dashboard()) for name in metric_names(q)}
    assert queried, "no query found in the dashboard"
    assert sorted(queried - exported) == []


def test_the_check_sees_a_metric_that_is_not_exported(exported: set[str]) -> None:
    """The check above can fail: a misspelt name is not among the exported ones."""
    names = metric_names(
        "sum by (le) (rate(queue_extender_request_durations_bucket[$__rate_interval]))"
    )
    assert names == {"queue_extender_request_durations_bucket"}
    assert not names <= exported
    assert "queue_extender_request_duration_seconds_bucket" in exported


def test_the_dashboard_shows_what_operators_ask_for() -> None:
    """The panels the dashboard exists for: queues over time, verb latency and outcomes,
    filter rejections, informer lag; and what runs by default besides the verbs: the reclaim
    loop (evictions by result, cycle time, skipped cycles by reason), leadership, parked
    pods and PodGroup phases."""
    queries = dashboard_queries(_dashboard())
    used = {name for q in queries for name in metric_names(q)}
    assert {
        "volcano_queue_deserved_milli_cpu",
        "volcano_queue_allocated_milli_cpu",
        "volcano_queue_share",
        "volcano_queue_overused",
        "queue_extender_request_duration_seconds_bucket",
        "queue_extender_decisions_total",
        "queue_extender_filter_rejections_total",
        "queue_extender_informer_last_event_age_seconds",
        "queue_extender_reclaim_evictions_total",
        "queue_extender_reclaim_cycle_seconds_bucket",
        "queue_extender_reclaim_cycles_skipped_total",
        "queue_extender_leader",
        "queue_extender_parked_pods",
        *(f"volcano_queue_pod_group_{phase.lower()}_count" for phase in PHASES),
    } <= used
    by_metric = {name: q for q in queries for name in metric_names(q)}
    assert "by (result)" in by_metric["queue_extender_reclaim_evictions_total"]
    assert "by (reason)" in by_metric["queue_extender_reclaim_cycles_skipped_total"]
    quantiles = [q for q in queries if q.startswith("histogram_quantile(")]
    assert {q.split(",", 1)[0] for q in quantiles} == {
        "histogram_quantile(0.5",
        "histogram_quantile(0.99",
    }


def test_panels_have_unique_ids_and_do_not_overlap() -> None:
    """Grafana lays panels out by gridPos; two panels on one cell hide each other."""
    panels = list(_panels(_dashboard()))
    ids = [p["id"] for p in panels]
    assert len(ids) == len(set(ids))
    cells: set[tuple[int, int]] = set()
    for panel in panels:
        grid = panel["gridPos"]
        assert grid["x"] + grid["w"] <= 24, panel["title"]
        own = {
            (x, y)
            for x in range(grid["x"], grid["x"] + grid["w"])
            for y in range(grid["y"], grid["y"] + grid["h"])
        }
        assert not own & cells, panel["title"]
        cells |= own


def test_chart_copy_is_identical() -> None:
    """Helm reads files only inside the chart: the chart ships a copy, kept byte for byte.
    After editing deploy/grafana/kube-queue-extender.json, copy it over."""
    assert CHART_COPY.read_bytes() == DASHBOARD.read_bytes()


def test_chart_ships_the_dashboard_for_the_grafana_sidecar() -> None:
    documents = rendered_documents({"grafana": {"dashboard": {"enabled": True}}})
    config_map = find(documents, "ConfigMap", "kube-queue-extender-dashboard")
    assert config_map["metadata"]["labels"]["grafana_dashboard"] == "1"
    (text,) = config_map["data"].values()
    assert json.loads(text) == _dashboard()


def test_no_dashboard_by_default() -> None:
    names = [d["metadata"]["name"] for d in rendered_documents({}) if d["kind"] == "ConfigMap"]
    assert "kube-queue-extender-dashboard" not in names
