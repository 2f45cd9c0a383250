"""/debug/queues with assumed pods: it lists each one, however many there are."""

from __future__ import annotations

from typing import Any

import httpx

from app.backend.engine import EngineBackend
from app.cli.main import build_parser
from app.cli.serve import backend_from_args
from app.serving.server import create_app

from ..live import serve


def _pod(name: str, namespace: str = "production") -> dict[str, Any]:
    return {
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": f"uid-{name}",
            "annotations": {"scheduling.volcano.sh/queue-name": "production"},
        },
        "spec": {
            "schedulerName": "queue-scheduler",
            "containers": [{"name": "c", "resources": {"requests": {"cpu": "100m"}}}],
        },
    }


def _demo() -> EngineBackend:
    return backend_from_args(build_parser().parse_args(["serve", "--demo"])).backend


def test_debug_queues_lists_two_assumed_pods_sorted_by_pod() -> None:
    engine = _demo()
    nodes = engine.state.node_names()
    for name in ("zz-second", "aa-first"):
        assert engine.filter(_pod(name), nodes).passed, name
    with serve(create_app(engine)) as url:
        answer = httpx.get(url + "/debug/queues", timeout=10)
    assert answer.status_code == 200, answer.text
    assumed = answer.json()["assumed"]
    assert [a["pod"] for a in assumed] == ["production/aa-first", "production/zz-second"]
    assert {a["queue"] for a in assumed} == {"production"}
