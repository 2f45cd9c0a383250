"""The stand-in API server speaks the protocol the reflector relies on.

These use the standard library's HTTP client, not the reflector, so a bug in one cannot be
masked by the same bug in the other.
"""

from __future__ import annotations

import http.client
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlencode, urlsplit

import orjson
import pytest

from tests.fakeapi import FakeApiServer, wait_until, write_kubeconfig


def pod(name: str, namespace: str = "default", **labels: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": namespace, "labels": labels}}


def connect(server: FakeApiServer, timeout: float = 5.0) -> http.client.HTTPConnection:
    parts = urlsplit(server.url)
    assert parts.hostname is not None
    return http.client.HTTPConnection(parts.hostname, parts.port, timeout=timeout)


def get(
    server: FakeApiServer, path: str, headers: dict[str, str] | None = None, **query: Any
) -> tuple[int, Any]:
    conn = connect(server)
    try:
        url = path + ("?" + urlencode(query) if query else "")
        conn.request("GET", url, headers=headers or {})
        response = conn.getresponse()
        return response.status, orjson.loads(response.read())
    finally:
        conn.close()


class Watch:
    """A raw watch read line by line (http.client undoes the chunked encoding)."""

    def __init__(self, server: FakeApiServer, path: str, **query: Any) -> None:
        self.conn = connect(server)
        self.conn.request("GET", path + "?" + urlencode({"watch": "1", **query}))
        self.response = self.conn.getresponse()

    def next_event(self) -> dict[str, Any]:
        line = self.response.readline()
        assert line, "stream ended"
        event: dict[str, Any] = orjson.loads(line)
        return event

    def rest(self) -> list[dict[str, Any]]:
        return [orjson.loads(line) for line in self.response.read().splitlines() if line]

    def close(self) -> None:
        self.conn.close()


@pytest.fixture
def watches() -> Iterator[list[Watch]]:
    opened: list[Watch] = []
    yield opened
    for watch in opened:
        watch.close()


def test_list_paginates_from_a_consistent_snapshot(fake_api: FakeApiServer) -> None:
    for i in range(7):
        fake_api.add("Pod", pod(f"p{i}"))
    status, first = get(fake_api, "/api/v1/pods", limit=3)
    assert status == 200
    assert first["kind"] == "PodList"
    assert [p["metadata"]["name"] for p in first["items"]] == ["p0", "p1", "p2"]
    list_rv = first["metadata"]["resourceVersion"]
    token = first["metadata"]["continue"]

    # Changes after the first page do not leak into the rest of this list.
    fake_api.delete("Pod", "default/p5")
    fake_api.add("Pod", pod("p9"))
    names = []
    while token:
        status, page = get(fake_api, "/api/v1/pods", limit=3, **{"continue": token})
        assert status == 200
        assert page["metadata"]["resourceVersion"] == list_rv
        names += [p["metadata"]["name"] for p in page["items"]]
        token = page["metadata"].get("continue")
    assert names == ["p3", "p4", "p5", "p6"]

    # A fresh list sees the new state; items carry their own resourceVersions.
    _, fresh = get(fake_api, "/api/v1/pods")
    assert sorted(p["metadata"]["name"] for p in fresh["items"]) == [
        "p0",
        "p1",
        "p2",
        "p3",
        "p4",
        "p6",
        "p9",
    ]
    assert all(int(p["metadata"]["resourceVersion"]) > 0 for p in fresh["items"])
    assert fresh["metadata"]["resourceVersion"] == str(fake_api.resource_version)


def test_expired_continue_token_is_410(fake_api: FakeApiServer) -> None:
    for i in range(4):
        fake_api.add("Node", {"metadata": {"name": f"n{i}"}})
    _, first = get(fake_api, "/api/v1/nodes", limit=2)
    fake_api.compact()
    status, body = get(
        fake_api, "/api/v1/nodes", limit=2, **{"continue": first["metadata"]["continue"]}
    )
    assert status == 410
    assert body["kind"] == "Status"
    assert body["code"] == 410
    assert body["reason"] == "Expired"


def test_namespaced_paths_and_scopes(fake_api: FakeApiServer) -> None:
    fake_api.add("Pod", pod("a1", "a"))
    fake_api.add("Pod", pod("b1", "b"))
    fake_api.add("PodGroup", {"metadata": {"name": "g", "namespace": "a"}, "spec": {}})
    fake_api.add("PodDisruptionBudget", {"metadata": {"name": "pdb", "namespace": "b"}})
    fake_api.add("Queue", {"metadata": {"name": "q1"}, "spec": {"weight": 1}})
    fake_api.add("PriorityClass", {"metadata": {"name": "high"}, "value": 1000})

    def names(path: str) -> list[str]:
        status, body = get(fake_api, path)
        assert status == 200, path
        return [item["metadata"]["name"] for item in body["items"]]

    assert names("/api/v1/namespaces/a/pods") == ["a1"]
    assert sorted(names("/api/v1/pods")) == ["a1", "b1"]
    assert names("/apis/scheduling.volcano.sh/v1beta1/namespaces/a/podgroups") == ["g"]
    assert names("/apis/scheduling.volcano.sh/v1beta1/podgroups") == ["g"]
    assert names("/apis/policy/v1/namespaces/b/poddisruptionbudgets") == ["pdb"]
    assert names("/apis/policy/v1/poddisruptionbudgets") == ["pdb"]
    assert names("/apis/scheduling.volcano.sh/v1beta1/queues") == ["q1"]
    assert names("/apis/scheduling.k8s.io/v1/priorityclasses") == ["high"]
    # A cluster-scoped resource has no namespaced path; unknown resources are 404.
    assert get(fake_api, "/api/v1/namespaces/a/nodes")[0] == 404
    assert get(fake_api, "/apis/scheduling.volcano.sh/v1beta1/jobs")[0] == 404


def test_watch_streams_events_after_the_version_then_ends_at_timeout(
    fake_api: FakeApiServer, watches: list[Watch]
) -> None:
    fake_api.add("Pod", pod("before"))
    start_rv = fake_api.resource_version
    fake_api.add("Pod", pod("p1"))
    fake_api.add("Node", {"metadata": {"name": "n1"}})  # other kinds are not streamed
    watch = Watch(fake_api, "/api/v1/pods", resourceVersion=start_rv, timeoutSeconds=1)
    watches.append(watch)
    assert watch.response.getheader("Transfer-Encoding") == "chunked"
    first = watch.next_event()
    assert first["type"] == "ADDED"
    assert first["object"]["metadata"]["name"] == "p1"
    assert fake_api.open_watches == 1

    stored = fake_api.update("Pod", pod("p1", tier="gold"))
    fake_api.delete("Pod", "default/before")
    modified = watch.next_event()
    assert modified["type"] == "MODIFIED"
    assert (
        modified["object"]["metadata"]["resourceVersion"] == stored["metadata"]["resourceVersion"]
    )
    deleted = watch.next_event()
    assert deleted["type"] == "DELETED"
    assert deleted["object"]["metadata"]["name"] == "before"
    assert int(deleted["object"]["metadata"]["resourceVersion"]) == fake_api.resource_version
    # The server ends the stream properly at timeoutSeconds (read() returns: the final chunk).
    assert watch.rest() == []
    wait_until(lambda: fake_api.open_watches == 0, message="watch closed")


@pytest.mark.parametrize("mode", ["http", "event"])
def test_watch_from_a_compacted_version_is_gone(
    fake_api: FakeApiServer, watches: list[Watch], mode: str
) -> None:
    fake_api.add("Pod", pod("p"))
    old_rv = fake_api.resource_version - 1
    fake_api.compact()
    fake_api.set_expired_mode("http" if mode == "http" else "event")
    watch = Watch(fake_api, "/api/v1/pods", resourceVersion=old_rv)
    watches.append(watch)
    if mode == "http":
        assert watch.response.status == 410
        body = orjson.loads(watch.response.read())
        assert body["code"] == 410
    else:
        assert watch.response.status == 200
        events = watch.rest()
        assert len(events) == 1
        assert events[0]["type"] == "ERROR"
        assert events[0]["object"]["code"] == 410
        assert "too old resource version" in events[0]["object"]["message"]
    # The current version is still watchable.
    current = Watch(fake_api, "/api/v1/pods", resourceVersion=fake_api.resource_version)
    watches.append(current)
    assert current.response.status == 200


def test_bookmarks_only_for_watches_that_asked(
    fake_api: FakeApiServer, watches: list[Watch]
) -> None:
    rv = fake_api.resource_version
    with_bm = Watch(fake_api, "/api/v1/nodes", resourceVersion=rv, allowWatchBookmarks="true")
    without = Watch(fake_api, "/api/v1/nodes", resourceVersion=rv, timeoutSeconds=1)
    watches += [with_bm, without]
    wait_until(lambda: fake_api.open_watches == 2, message="both watches open")
    fake_api.add("Pod", pod("elsewhere"))  # advances the version without a node event
    bookmark_rv = fake_api.bookmark()
    event = with_bm.next_event()
    assert event["type"] == "BOOKMARK"
    assert event["object"]["metadata"]["resourceVersion"] == str(bookmark_rv)
    assert event["object"]["kind"] == "Node"
    assert without.rest() == []  # only the timeout ended it, no bookmark inside


def test_periodic_bookmarks(watches: list[Watch]) -> None:
    with FakeApiServer(bookmark_interval=0.05) as server:
        watch = Watch(
            server, "/api/v1/pods", resourceVersion=server.resource_version, allowWatchBookmarks="1"
        )
        watches.append(watch)
        assert watch.next_event()["type"] == "BOOKMARK"
        assert watch.next_event()["type"] == "BOOKMARK"


def test_drop_watches_cuts_the_stream_without_the_final_chunk(
    fake_api: FakeApiServer, watches: list[Watch]
) -> None:
    watch = Watch(fake_api, "/api/v1/pods", resourceVersion=fake_api.resource_version)
    watches.append(watch)
    wait_until(lambda: fake_api.open_watches == 1, message="watch open")
    fake_api.drop_watches()
    with pytest.raises(http.client.IncompleteRead):
        watch.response.read()
    wait_until(lambda: fake_api.open_watches == 0, message="watch gone")


def test_watch_error_event(fake_api: FakeApiServer, watches: list[Watch]) -> None:
    watch = Watch(fake_api, "/api/v1/pods", resourceVersion=fake_api.resource_version)
    watches.append(watch)
    wait_until(lambda: fake_api.open_watches == 1, message="watch open")
    fake_api.watch_error(500, "etcd is sad")
    events = watch.rest()
    assert [e["type"] for e in events] == ["ERROR"]
    assert events[0]["object"]["code"] == 500


def test_fail_next_filters_and_counts(fake_api: FakeApiServer) -> None:
    fake_api.fail_next(2, 503, watch=False, path="/api/v1/pods")
    assert get(fake_api, "/api/v1/nodes")[0] == 200  # other path: untouched
    status, body = get(fake_api, "/api/v1/pods")
    assert (status, body["code"], body["kind"]) == (503, 503, "Status")
    assert get(fake_api, "/api/v1/pods")[0] == 503
    assert get(fake_api, "/api/v1/pods")[0] == 200
    fake_api.fail_next(5, 500)
    fake_api.fail_next(0)  # clears
    assert get(fake_api, "/api/v1/pods")[0] == 200
    statuses = [r.status for r in fake_api.requests("/api/v1/pods")]
    assert statuses == [503, 503, 200, 200]


def test_uninstalled_crd_is_404_for_list_and_watch(fake_api: FakeApiServer) -> None:
    path = "/apis/scheduling.volcano.sh/v1beta1/queues"
    fake_api.set_crd_installed("scheduling.volcano.sh", "queues", False)
    assert get(fake_api, path)[0] == 404
    assert get(fake_api, path, watch="1", resourceVersion="1")[0] == 404
    assert get(fake_api, "/apis/scheduling.volcano.sh/v1beta1/podgroups")[0] == 200
    fake_api.set_crd_installed("scheduling.volcano.sh", "queues", True)
    assert get(fake_api, path)[0] == 200


def test_bearer_token_required_when_configured() -> None:
    with FakeApiServer(token="s3cret") as server:
        assert get(server, "/api/v1/pods")[0] == 401
        assert get(server, "/api/v1/pods", headers={"Authorization": "Bearer wrong"})[0] == 401
        assert get(server, "/api/v1/pods", headers={"Authorization": "Bearer s3cret"})[0] == 200


def test_request_log_records_queries(fake_api: FakeApiServer) -> None:
    get(fake_api, "/api/v1/pods", limit=5)
    get(fake_api, "/api/v1/nodes", watch="true", resourceVersion="1", timeoutSeconds="1")
    pods, nodes = fake_api.request_log
    assert (pods.path, pods.param("limit"), pods.watch) == ("/api/v1/pods", "5", False)
    assert (nodes.path, nodes.watch, nodes.param("resourceVersion")) == ("/api/v1/nodes", True, "1")
    assert fake_api.requests(watch=True) == [nodes]


def test_bulk_load_serves_many_objects_in_pages() -> None:
    with FakeApiServer() as server:
        last = server.load(
            "Pod", ({"metadata": {"name": f"p{i:05}", "namespace": "bulk"}} for i in range(3000))
        )
        assert last == server.resource_version
        seen = 0
        token = ""
        while True:
            query: dict[str, Any] = {"limit": 500}
            if token:
                query["continue"] = token
            status, page = get(server, "/api/v1/namespaces/bulk/pods", **query)
            assert status == 200
            seen += len(page["items"])
            token = page["metadata"].get("continue", "")
            if not token:
                break
        assert seen == 3000


def test_event_log_is_bounded_and_old_versions_expire() -> None:
    with FakeApiServer(max_events=10) as server:
        first_rv = server.resource_version
        for i in range(30):
            server.add("Node", {"metadata": {"name": f"n{i}"}})
        status, _ = get(server, "/api/v1/nodes", watch="1", resourceVersion=str(first_rv))
        assert status == 410
        # A recent version is still in the log and replays from there.
        recent = server.resource_version - 2
        conn = connect(server)
        conn.request("GET", f"/api/v1/nodes?watch=1&resourceVersion={recent}&timeoutSeconds=1")
        lines = [ln for ln in conn.getresponse().read().splitlines() if ln]
        conn.close()
        assert [orjson.loads(ln)["object"]["metadata"]["name"] for ln in lines] == ["n28", "n29"]


def test_stop_cuts_open_connections() -> None:
    server = FakeApiServer().start()
    watch = Watch(server, "/api/v1/pods", resourceVersion=server.resource_version)
    try:
        wait_until(lambda: server.open_watches == 1, message="watch open")
        done = threading.Event()

        def stop() -> None:
            server.stop()
            done.set()

        threading.Thread(target=stop, daemon=True).start()
        wait_until(done.is_set, message="server stopped")
        with pytest.raises((http.client.IncompleteRead, ConnectionError)):
            watch.response.read()
        with pytest.raises(OSError):
            socket.create_connection(("127.0.0.1", urlsplit(server.url).port or 0), timeout=1)
    finally:
        watch.close()


def test_kubeconfig_drives_the_official_client(fake_api: FakeApiServer, tmp_path: Path) -> None:
    from kubernetes import client, config

    fake_api.token = "tok"
    fake_api.add("Node", {"metadata": {"name": "n1"}})
    path = write_kubeconfig(tmp_path / "kubeconfig", fake_api.url, token="tok")
    configuration = client.Configuration()
    config.load_kube_config(  # type: ignore[no-untyped-call]
        config_file=str(path), client_configuration=configuration, persist_config=False
    )
    with client.ApiClient(configuration) as api:
        nodes = client.CoreV1Api(api).list_node()
    assert [n.metadata.name for n in nodes.items if n.metadata] == ["n1"]
