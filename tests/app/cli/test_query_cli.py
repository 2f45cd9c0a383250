"""The query commands' output: tables by default, the API's documents with -o json/yaml,
offline (--cluster) and against a running server (--server, also as the kubectl plugin)."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from app.backend.build import demo_cluster_text
from app.cli.kubectl_plugin import main as kubectl_main
from app.cli.main import build_parser, main
from app.cli.query import render_pending, render_whatif
from app.serving.server import ServerSettings, create_app

from ..live import serve

NEW_JOB = """
apiVersion: scheduling.volcano.sh/v1beta1
kind: PodGroup
metadata: {name: extra, namespace: production}
spec: {minMember: 1, queue: production}
---
apiVersion: v1
kind: Pod
metadata:
  name: extra-0
  namespace: production
  annotations: {scheduling.k8s.io/group-name: extra}
spec:
  schedulerName: queue-scheduler
  containers: [{name: c, resources: {requests: {cpu: "1", memory: 1Gi}}}]
"""


def run(*argv: str) -> tuple[int, str, str]:
    args = build_parser().parse_args(list(argv))
    out, err = io.StringIO(), io.StringIO()
    code: int = args.func(args, out=out, err=err)
    return code, out.getvalue(), err.getvalue()


@pytest.fixture
def cluster(tmp_path: Path) -> str:
    path = tmp_path / "cluster.yaml"
    path.write_text(demo_cluster_text(), encoding="utf-8")
    return str(path)


@pytest.fixture
def job_file(tmp_path: Path) -> str:
    path = tmp_path / "job.yaml"
    path.write_text(NEW_JOB, encoding="utf-8")
    return str(path)


@pytest.fixture
def server() -> Iterator[str]:
    from app.cli.main import build_parser as serve_parser
    from app.cli.serve import backend_from_args

    engine = backend_from_args(serve_parser().parse_args(["serve", "--demo"])).backend
    with serve(create_app(engine, ServerSettings())) as url:
        yield url


def test_queues_table_has_a_row_per_queue_and_marks_overuse(cluster: str) -> None:
    code, out, _ = run("queues", "--cluster", cluster)
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split()[:4] == ["QUEUE", "PARENT", "STATE", "WEIGHT"]
    analytics = next(line for line in lines if line.startswith("analytics "))
    assert " yes " in analytics  # overused
    assert any(line.startswith("research-vision ") and " research " in line for line in lines)


def test_one_queue_shows_its_derivation_and_pending_jobs(cluster: str) -> None:
    code, out, _ = run("queues", "production", "--cluster", cluster)
    assert code == 0
    assert "Deserved derivation (proportion)" in out
    assert "pass 1" in out
    assert "Pending jobs (2), in serving order:" in out
    assert "production/billing-reconcile" in out


def test_explain_prints_each_step_and_json_is_the_api_document(cluster: str) -> None:
    code, out, _ = run("explain", "pod/report-export", "-n", "production", "--cluster", cluster)
    assert code == 0
    steps = [line.split()[0] for line in out.splitlines() if line.split()[1:2] == ["PASS"]]
    assert steps[:3] == ["job-exists", "job-valid", "queue-open"]
    code, out, _ = run(
        "explain", "pod/report-export", "-n", "production", "--cluster", cluster, "-o", "json"
    )
    doc = json.loads(out)
    assert doc["pod"] == "production/report-export"
    assert {"steps", "summary", "filter"} <= set(doc)


def test_whatif_from_a_file_lists_the_placement_and_queue_changes(
    cluster: str, job_file: str
) -> None:
    code, out, _ = run("whatif", "-f", job_file, "--cluster", cluster)
    assert code == 0, out
    placed = next(line for line in out.splitlines() if line.startswith("production/extra-0"))
    assert placed.split()[-1] == "yes"
    assert "QUEUE" in out and "->" in out
    code, out, _ = run("whatif", "-f", job_file, "--cluster", cluster, "-o", "yaml")
    assert yaml.safe_load(out)["unplaced"] == []


def test_unknown_objects_and_bad_targets_are_one_line_errors(cluster: str) -> None:
    code, out, err = run("explain", "pod/ghost", "-n", "production", "--cluster", cluster)
    assert (code, out) == (1, "")
    assert err == "error: pod production/ghost is not in the extender's cache\n"
    code, _, err = run("explain", "deployment/x", "--cluster", cluster)
    assert code == 2 and "pod/NAME" in err
    code, _, err = run("queues")
    assert code == 1 and "--server" in err


def test_against_a_running_server_the_answers_are_the_same(server: str, cluster: str) -> None:
    remote = run("queues", "--server", server, "-o", "json")
    local = run("queues", "--cluster", cluster, "-o", "json")
    assert remote[0] == local[0] == 0
    assert json.loads(remote[1]) == json.loads(local[1])
    code, _, err = run("queues", "ghost", "--server", server)
    assert code == 1 and err == "error: HTTP 404: queue ghost is not in the extender's cache\n"


def test_kubectl_plugin_explains_through_server(
    server: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code = kubectl_main(["explain", "pod/report-export", "-n", "production", "--server", server])
    assert code == 0
    assert "Pod:     production/report-export" in capsys.readouterr().out


def test_queue_extender_main_knows_the_query_commands(
    cluster: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["queues", "--cluster", cluster, "-o", "yaml"]) == 0
    assert "queues:" in capsys.readouterr().out


def test_an_offline_query_stops_what_its_engine_started(
    cluster: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import argparse

    import app.cli.serve as serve_module
    from app.backend.build import Built
    from app.backend.engine import EngineBackend

    stopped: list[str] = []

    class Part:
        def stop(self) -> None:
            stopped.append("part")

    real = serve_module.backend_from_args

    def with_a_part(args: argparse.Namespace) -> Built[EngineBackend]:
        built = real(args)
        return Built(built.backend, parts=(*built.parts, Part()))

    monkeypatch.setattr(serve_module, "backend_from_args", with_a_part)
    code, _, _ = run("queues", "--cluster", cluster)
    assert code == 0
    assert stopped == ["part"]


NATIVE_JOB = """
apiVersion: scheduling.k8s.io/v1alpha2
kind: PodGroup
metadata:
  name: native-train
  namespace: production
  labels: {scheduling.volcano.sh/queue-name: production}
spec: {schedulingPolicy: {gang: {minCount: 2}}}
---
apiVersion: v1
kind: Pod
metadata: {name: native-train-0, namespace: production}
spec:
  schedulerName: queue-scheduler
  schedulingGroup: {podGroupName: native-train}
  containers: [{name: c, resources: {requests: {cpu: "64", memory: 1Gi}}}]
---
apiVersion: v1
kind: Pod
metadata: {name: native-train-1, namespace: production}
spec:
  schedulerName: queue-scheduler
  schedulingGroup: {podGroupName: native-train}
  containers: [{name: c, resources: {requests: {cpu: "64", memory: 1Gi}}}]
"""


def test_a_native_podgroup_is_explained_and_listed_marked_by_its_source(tmp_path: Path) -> None:
    path = tmp_path / "cluster.yaml"
    path.write_text(demo_cluster_text() + "\n---\n" + NATIVE_JOB, encoding="utf-8")
    code, out, _ = run(
        "explain", "podgroup/native-train", "-n", "production", "--cluster", str(path)
    )
    assert code == 0, out
    assert "Source:   Kubernetes PodGroup (scheduling.k8s.io)" in out
    assert "job production/native:native-train in queue production" in out
    code, out, _ = run("queues", "production", "--cluster", str(path))
    assert code == 0
    assert "production/native:native-train (native)" in out


def test_pending_jobs_show_a_domain_column_only_when_a_gang_asks_for_one() -> None:
    row = {
        "position": 1,
        "job": "ns/g",
        "priority": 0,
        "ready": 0,
        "minAvailable": 4,
        "pending": 4,
        "reason": "gang ns/g asks for one network domain (hard, tier ≤ 1): ...",
    }
    plain = render_pending({"jobs": [{**row, "topology": ""}]})
    assert "DOMAIN" not in plain
    shown = render_pending({"jobs": [{**row, "topology": "none (hard, tier ≤ 1)"}]})
    assert "DOMAIN" in shown.splitlines()[0]
    assert "none (hard, tier ≤ 1)" in shown


def test_a_what_if_lists_each_gangs_network_domain() -> None:
    doc = {
        "placed": [],
        "unplaced": [],
        "evicted": [],
        "queues": [],
        "domains": [
            {
                "job": "ns/g",
                "request": "hard, tier ≤ 1",
                "domain": "s/b",
                "sentence": "domain s/b (tier 1): s/b holds all 4 members not placed yet",
            }
        ],
    }
    text = render_whatif(doc)
    assert "NETWORK TOPOLOGY" in text and "s/b holds all 4 members" in text
