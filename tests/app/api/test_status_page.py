"""The status page as a person meets it: reached through the API server's service proxy
(every link followed from there stays inside it), a parent queue showing what its branch
holds, and memory spelt as the CLI spells it."""

from __future__ import annotations

import re
from collections.abc import Iterator
from html import unescape
from pathlib import Path
from typing import Any
from urllib.parse import urljoin

import httpx
import pytest
import yaml
from starlette.responses import PlainTextResponse

from app.api.port import RecentEviction
from app.backend.engine import EngineBackend
from app.cli.main import build_parser
from app.cli.serve import backend_from_args
from app.cli.tables import fmt_resources
from app.serving.server import ServerSettings, create_app

from ..live import serve

DEMO = Path(__file__).resolve().parents[3] / "deploy" / "examples" / "demo-cluster.yaml"

#: The path the API server's service proxy serves a Service's port under.
PROXY = "/api/v1/namespaces/kube-queue-extender/services/kube-queue-extender-metrics:8888/proxy"
HREF = re.compile(r"""href=['"]([^'"]*)['"]""")

Asgi = Any


def behind_proxy(app: Asgi, prefix: str) -> Asgi:
    """What the API server's service proxy does: a request under ``prefix`` reaches the app
    with the prefix taken off; anything else never reaches it."""

    async def proxied(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            path: str = scope["path"]
            if not path.startswith(prefix + "/"):
                await PlainTextResponse("not under the proxy", 404)(scope, receive, send)
                return
            inner = path[len(prefix) :]
            scope = {**scope, "path": inner, "raw_path": inner.encode()}
        await app(scope, receive, send)

    return proxied


@pytest.fixture
def demo() -> Iterator[tuple[EngineBackend, httpx.Client]]:
    engine = backend_from_args(build_parser().parse_args(["serve", "--demo"])).backend
    with serve(create_app(engine)) as url, httpx.Client(base_url=url, timeout=30) as client:
        yield engine, client


@pytest.fixture
def proxied() -> Iterator[str]:
    engine = backend_from_args(build_parser().parse_args(["serve", "--demo"])).backend
    with serve(behind_proxy(create_app(engine), PROXY)) as url:
        yield url + PROXY + "/"


def links(html: str) -> list[str]:
    return [unescape(h) for h in HREF.findall(html)]


def test_every_link_followed_from_behind_the_service_proxy_stays_inside_it(proxied: str) -> None:
    """From the index, to each queue's page, and from there back, to the parent and to the
    JSON: every link resolves under the proxy's path and answers 200."""
    seen: set[str] = set()
    todo = [proxied]
    with httpx.Client(timeout=30) as client:
        while todo:
            url = todo.pop()
            if url in seen:
                continue
            seen.add(url)
            answer = client.get(url)
            assert answer.status_code == 200, url
            assert httpx.URL(url).path.startswith(PROXY + "/"), url
            if answer.headers["content-type"].startswith("text/html"):
                todo += [urljoin(url, href) for href in links(answer.text)]
    pages = {httpx.URL(u).path[len(PROXY) :] for u in seen}
    assert {"/", "/queues/production", "/queues/research", "/api/v1/queues"} <= pages


def test_the_proxy_stand_in_refuses_what_is_outside_it(proxied: str) -> None:
    """The check above can fail: an absolute link (``/queues/x``) leaves the proxy."""
    outside = urljoin(proxied, "/queues/production")
    assert httpx.get(outside, timeout=30).status_code == 404


def test_a_missing_queue_links_back_inside_the_proxy(proxied: str) -> None:
    answer = httpx.get(urljoin(proxied, "queues/ghost"), timeout=30)
    assert answer.status_code == 404
    for href in links(answer.text):
        target = urljoin(str(answer.url), href)
        assert httpx.get(target, timeout=30).status_code == 200, target


def test_a_parent_queue_shows_what_its_children_hold(
    demo: tuple[EngineBackend, httpx.Client],
) -> None:
    """research holds nothing itself; its children do: the index row and its page show the
    branch's sum, which is what the API says each child holds."""
    _, client = demo
    queues = {q["name"]: q for q in client.get("/api/v1/queues").json()["queues"]}
    children = queues["research"]["children"]
    assert children and queues["research"]["allocated"]["cpu"] == 0
    cpu = sum(queues[c]["allocated"]["cpu"] for c in children)
    gpus = sum(queues[c]["allocated"].get("nvidia.com/gpu", 0) for c in children)
    assert cpu > 0 and gpus > 0, "the demo's research branch holds nothing: the case is empty"
    index = client.get("/").text
    row = re.search(r"<tr class='queue[^']*' data-queue='research'>(.*?)</tr>", index, re.S)
    assert row is not None
    assert f"cpu: {cpu:g} held with its children" in row.group(1)
    assert f"nvidia.com/gpu: {gpus:g} held with its children" in row.group(1)
    page = client.get("/queues/research").text
    assert "Held with its children" in page and f"cpu {cpu:g}" in page
    leaf = re.search(r"data-queue='research-nlp'>(.*?)</tr>", index, re.S)
    assert leaf is not None and "with its children" not in leaf.group(1)


def test_memory_reads_as_the_cli_writes_it(demo: tuple[EngineBackend, httpx.Client]) -> None:
    """The CLI's table and the page spell each queue's allocated memory alike (``128Mi``,
    never ``0.125Gi``)."""
    _, client = demo
    queues = client.get("/api/v1/queues").json()["queues"]
    held = [q for q in queues if q["allocated"].get("memory") and not q["children"]]
    assert any(q["allocated"]["memory"] < 2**30 for q in held), "no queue holds under 1Gi"
    for q in held:
        spelt = re.search(r"memory=([^,]+)", fmt_resources(q["allocated"]))
        assert spelt is not None
        page = client.get(f"/queues/{q['name']}").text
        assert f"memory: {spelt.group(1)} held" in page, q["name"]
        assert not re.search(r"memory: 0\.\d+Gi", page), q["name"]


def demo_pod(name: str) -> dict[str, Any]:
    for doc in yaml.safe_load_all(DEMO.read_text()):
        if doc and doc["kind"] == "Pod" and doc["metadata"]["name"] == name:
            found: dict[str, Any] = doc
            return found
    raise AssertionError(f"the demo cluster has no pod {name}")


def test_while_a_pod_is_assumed_the_counts_agree_with_the_lists(
    demo: tuple[EngineBackend, httpx.Client],
) -> None:
    """Filter passes production's lone pending pod (assumed, not bound): the API's queue,
    its pending page and the status page then count the pending jobs they list."""
    _, client = demo
    before = client.get("/api/v1/queues/production").json()["pendingJobs"]
    lone = demo_pod("report-export")
    answer = client.post("/filter", json={"Pod": lone, "NodeNames": ["cpu-node-3"]}).json()
    assert answer["NodeNames"] == ["cpu-node-3"], answer
    queue = client.get("/api/v1/queues/production").json()
    listed = {q["name"]: q for q in client.get("/api/v1/queues").json()["queues"]}
    page = client.get("/api/v1/queues/production/pending").json()
    assert queue["assumedPods"] == 1
    assert queue["pendingJobs"] == listed["production"]["pendingJobs"] == page["total"]
    assert page["total"] == len(page["jobs"]) == before - 1
    html = client.get("/queues/production").text
    assert f"Pending jobs ({page['total']})" in html
    row = re.search(r"data-queue='production'>(.*?)</tr>", client.get("/").text, re.S)
    assert row is not None and f"{queue['jobs']} / {page['total']}" in row.group(1)


def test_the_page_shows_the_reclaim_loops_evictions_handed_to_the_service() -> None:
    """The loop's record reaches the page through the service's settings (the record
    ``build_backend`` returns), not through the backend: without one the page says no loop
    runs; with one it lists its evictions, read anew on every request."""
    engine = backend_from_args(build_parser().parse_args(["serve", "--demo"])).backend
    seen: list[RecentEviction] = []
    with serve(create_app(engine)) as url:
        assert "No reclaim loop runs" in httpx.get(url + "/").text
    with serve(create_app(engine, ServerSettings(recent_evictions=lambda: seen))) as url:
        assert "none yet" in httpx.get(url + "/").text
        seen.append(
            RecentEviction("team/victim-0", "batch", "queue batch overused", "2026-11-28T12:00:00Z")
        )
        page = httpx.get(url + "/").text
        assert "team/victim-0" in page and "queue batch overused" in page
