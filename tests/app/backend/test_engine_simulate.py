"""`queue-extender simulate` prints what one session decided, or one clear error line."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from app.cli.main import build_parser, main
from app.cli.simulate import run_simulate

DEMO = Path(__file__).resolve().parents[3] / "deploy" / "examples" / "demo-cluster.yaml"


def simulate(*argv: str) -> tuple[int, str, str]:
    args = build_parser().parse_args(["simulate", *argv])
    out, err = io.StringIO(), io.StringIO()
    code = run_simulate(args, out, err)
    return code, out.getvalue(), err.getvalue()


def test_demo_cluster_reclaims_for_the_production_gang() -> None:
    code, out, err = simulate("--cluster", str(DEMO))
    assert code == 0
    assert "1 Service" in err
    report = json.loads(out)
    assert set(report) == {"queues", "jobs", "allocated", "pipelined", "evicted"}
    evicted = report["evicted"]
    assert evicted and all(e["action"] == "reclaim" for e in evicted)
    assert all(e["pod"].startswith("analytics/") for e in evicted)
    assert all(e["preemptor"].startswith("production/billing-reconcile") for e in evicted)
    pipelined = {p["pod"] for p in report["pipelined"]}
    assert {f"production/billing-reconcile-worker-{i}" for i in range(3)} <= pipelined
    queues = {q["name"]: q for q in report["queues"]}
    assert queues["archive"]["state"] == "Closed"
    assert queues["analytics"]["capability"] is None
    assert isinstance(queues["analytics"]["deserved"]["cpu"], float)
    assert [q["name"] for q in report["queues"]] == sorted(queues)


def test_actions_override_runs_only_what_is_named() -> None:
    code, out, _ = simulate("--cluster", str(DEMO), "--actions", "enqueue, allocate")
    report = json.loads(out)
    assert code == 0 and report["evicted"] == []
    assert report["allocated"] == [{"pod": "production/report-export", "node": "cpu-node-3"}]


def test_table_output_is_for_people() -> None:
    code, out, _ = simulate("--cluster", str(DEMO), "-o", "table")
    assert code == 0
    assert out.splitlines()[0].split()[:4] == ["QUEUE", "PARENT", "STATE", "WEIGHT"]
    assert "EVICTED POD" in out and "reclaim" in out


def worked_example() -> list[dict[str, Any]]:
    """Proportion's worked example: 100 CPU; A/B/C weight 2/3/5, capability 50/-/-,
    guarantee 10/-/20, requests 80/60/30."""
    docs: list[dict[str, Any]] = [
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": "n"},
            "status": {"allocatable": {"cpu": "100", "memory": "1000Gi", "pods": "1000"}},
        }
    ]
    specs = {
        "a": (2, {"cpu": "50"}, {"cpu": "10"}, 80),
        "b": (3, None, None, 60),
        "c": (5, None, {"cpu": "20"}, 30),
    }
    for name, (weight, cap, guarantee, request) in specs.items():
        spec: dict[str, Any] = {"weight": weight}
        if cap:
            spec["capability"] = cap
        if guarantee:
            spec["guarantee"] = {"resource": guarantee}
        docs.append(
            {
                "apiVersion": "scheduling.volcano.sh/v1beta1",
                "kind": "Queue",
                "metadata": {"name": name},
                "spec": spec,
            }
        )
        docs.append(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {
                    "name": f"{name}-job",
                    "namespace": "w",
                    "annotations": {"scheduling.volcano.sh/queue-name": name},
                },
                "spec": {
                    "containers": [{"name": "c", "resources": {"requests": {"cpu": str(request)}}}]
                },
            }
        )
    return docs


def test_seed_worked_example_deserved_28_42_30(tmp_path: Path) -> None:
    cluster = tmp_path / "worked.yaml"
    cluster.write_text(yaml.safe_dump_all(worked_example()))
    code, out, _ = simulate("--cluster", str(cluster), "--actions", "enqueue")
    assert code == 0
    deserved = {q["name"]: q["deserved"]["cpu"] for q in json.loads(out)["queues"]}
    assert deserved["a"] == pytest.approx(28)
    assert deserved["b"] == pytest.approx(42)
    assert deserved["c"] == pytest.approx(30)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (
            "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n"
            "  - {name: c, resources: {requests: {cpu: 1.2.3}}}\n",
            "document 1: Pod default/p: spec.containers[0].resources.requests",
        ),
        ("a: [\n", "YAML error"),
    ],
)
def test_bad_cluster_exits_nonzero_with_one_line(
    tmp_path: Path, content: str, message: str
) -> None:
    cluster = tmp_path / "bad.yaml"
    cluster.write_text(content)
    code, out, err = simulate("--cluster", str(cluster))
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and message in err


def test_bad_configuration_and_actions_are_named(tmp_path: Path) -> None:
    conf = tmp_path / "sched.conf"
    conf.write_text('actions: "enqueue, teleport"\n')
    code, out, err = simulate("--cluster", str(DEMO), "--conf", str(conf))
    assert code == 2 and out == "" and "unknown action 'teleport'" in err
    code, _, err = simulate("--cluster", str(DEMO), "--actions", "allocate, nope")
    assert code == 2 and "--actions: unknown action 'nope'" in err


def test_console_entry_point_runs_simulate(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", "--cluster", str(DEMO), "-o", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["queues"]
