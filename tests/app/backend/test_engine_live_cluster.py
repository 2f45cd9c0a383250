"""End to end: `serve --kubeconfig` against the stand-in API server. The extender's answers
follow the cluster as the server streams events: nothing is polled, nothing is rebuilt by hand.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from app.backend.engine import EngineBackend
from app.cli.main import build_parser
from app.cli.serve import backend_from_args
from app.serving.server import ServerSettings, create_app
from tests.app.live import serve
from tests.builders import node, pod
from tests.fakeapi.kubeconfig import write_kubeconfig
from tests.fakeapi.server import FakeApiServer

DEADLINE = 15.0


def eventually(check: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + DEADLINE
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def waiting_pod(name: str, cpu: str, node_name: str = "") -> dict[str, Any]:
    """A pod of queue ``a`` in namespace ``team`` that the extender decides for."""
    return pod(
        name,
        namespace="team",
        cpu=cpu,
        memory=None,
        node_name=node_name,
        queue="a",
        scheduler="queue-scheduler",
    )


@pytest.fixture
def api() -> Iterator[FakeApiServer]:
    with FakeApiServer() as server:
        server.add("Node", node("n1"))
        server.add("Node", node("n2"))
        server.add(
            "Queue",
            {
                "apiVersion": "scheduling.volcano.sh/v1beta1",
                "kind": "Queue",
                "metadata": {"name": "a"},
                "spec": {"weight": 1, "capability": {"cpu": "4"}},
            },
        )
        server.add("Pod", waiting_pod("waiting", "2"))
        yield server


@pytest.fixture
def backend(api: FakeApiServer, tmp_path: Path) -> Iterator[EngineBackend]:
    kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", api.url)
    args = build_parser().parse_args(["serve", "--kubeconfig", str(kubeconfig)])
    built = backend_from_args(args)
    try:
        yield built.backend
    finally:
        built.close()


def metric(client: httpx.Client, line_prefix: str) -> float | None:
    for line in client.get("/metrics").text.splitlines():
        if line.startswith(line_prefix):
            return float(line.rsplit(" ", 1)[1])
    return None


def test_answers_follow_the_cluster_as_events_stream_in(
    api: FakeApiServer, backend: EngineBackend
) -> None:
    assert backend.informers is not None
    settings = ServerSettings(extra_registries=(backend.informers.registry,))
    with serve(create_app(backend, settings)) as url, httpx.Client(base_url=url) as client:
        eventually(lambda: client.get("/readyz").status_code == 200, "initial sync")
        allocated = 'volcano_queue_allocated_milli_cpu{queue_name="a"}'
        assert metric(client, allocated) == 0.0
        explain = client.post("/debug/explain", json=waiting_pod("waiting", "2")).json()
        assert explain["filter"] == "pass"  # the API's explanation: what filter answers

        # another scheduler binds a 3-CPU pod of queue a: the stream alone must carry it
        api.add("Pod", waiting_pod("elsewhere", "3", node_name="n1"))
        eventually(lambda: metric(client, allocated) == 3000.0, "allocated to follow the bind")
        answer = client.post(
            "/filter", json={"Pod": waiting_pod("waiting", "2"), "NodeNames": ["n1", "n2"]}
        ).json()
        assert answer["NodeNames"] == []
        assert set(answer["FailedNodes"]) == {"n1", "n2"}  # 3 + 2 > capability 4
        assert "queue a" in answer["FailedNodes"]["n1"]

        # the pod goes away: the queue has room again
        api.delete("Pod", "team/elsewhere")
        eventually(lambda: metric(client, allocated) == 0.0, "allocated to follow the delete")
        answer = client.post(
            "/filter", json={"Pod": waiting_pod("waiting", "2"), "NodeNames": ["n1", "n2"]}
        ).json()
        assert answer["NodeNames"] == ["n1", "n2"]
        deletes = metric(client, 'queue_extender_informer_events_total{kind="Pod",type="deleted"}')
        assert deletes is not None and deletes >= 1


def test_not_ready_until_the_volcano_crds_exist(api: FakeApiServer, tmp_path: Path) -> None:
    api.set_crd_installed("scheduling.volcano.sh", "podgroups", False)
    kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", api.url)
    built = backend_from_args(build_parser().parse_args(["serve", "--kubeconfig", str(kubeconfig)]))
    try:
        with (
            serve(create_app(built.backend, ServerSettings())) as url,
            httpx.Client(base_url=url) as client,
        ):
            eventually(lambda: "podgroups" in client.get("/readyz").text, "the missing CRD reason")
            assert client.get("/readyz").status_code == 503
            api.set_crd_installed("scheduling.volcano.sh", "podgroups", True)
            eventually(lambda: client.get("/readyz").status_code == 200, "ready once installed")
    finally:
        built.close()


def test_close_stops_every_thread_the_live_backend_started(
    api: FakeApiServer, tmp_path: Path
) -> None:
    before = {t.ident for t in threading.enumerate()}
    kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", api.url)
    built = backend_from_args(build_parser().parse_args(["serve", "--kubeconfig", str(kubeconfig)]))
    eventually(lambda: built.backend.readiness()[0], "initial sync")
    started = [
        t  # the stand-in server's own request handlers are not the backend's
        for t in threading.enumerate()
        if t.ident not in before and "process_request_thread" not in t.name
    ]
    names = {t.name for t in started}
    assert any(n.startswith("leader-election") for n in names), names
    assert {"parked-pod-requeuer", "status-writer", "event-recorder"} <= names, names

    built.close()

    still = [t.name for t in started if t.is_alive()]
    assert still == [], f"threads left running after close(): {still}"
