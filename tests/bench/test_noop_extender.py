"""The no-op extender of ``make bench-e2e`` answers each verb as kube-scheduler expects.

If it answered wrongly (dropped nodes, a malformed preempt answer), the bench's yardstick
would measure failed scheduling attempts instead of the bare cost of an exchange.
"""

from __future__ import annotations

import http.client
import json
import socket
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from bench.noop_extender import NoopHandler, NoopServer, handler_ready_when


@pytest.fixture
def server() -> Iterator[NoopServer]:
    noop = NoopServer(("127.0.0.1", 0), NoopHandler)
    thread = threading.Thread(target=noop.serve_forever, daemon=True)
    thread.start()
    yield noop
    noop.shutdown()
    noop.server_close()
    thread.join(5)


def post(server: NoopServer, path: str, body: Any) -> tuple[int, Any]:
    connection = http.client.HTTPConnection("127.0.0.1", server.server_address[1], timeout=5)
    try:
        data = json.dumps(body).encode() if not isinstance(body, bytes) else body
        connection.request("POST", path, data, {"Content-Type": "application/json"})
        response = connection.getresponse()
        return response.status, json.loads(response.read())
    finally:
        connection.close()


POD = {"metadata": {"name": "p", "namespace": "ns", "uid": "u-p"}, "spec": {}}


def test_filter_passes_every_offered_node_name(server: NoopServer) -> None:
    status, answer = post(server, "/filter", {"Pod": POD, "NodeNames": ["n1", "n2"]})
    assert status == 200
    assert answer["NodeNames"] == ["n1", "n2"]
    assert answer["FailedNodes"] == {} == answer["FailedAndUnresolvableNodes"]
    assert answer["Error"] == ""


def test_filter_passes_full_node_objects_when_not_node_cache_capable(server: NoopServer) -> None:
    nodes = {"items": [{"metadata": {"name": "n1"}}]}
    _, answer = post(server, "/filter", {"Pod": POD, "Nodes": nodes, "NodeNames": None})
    assert answer["Nodes"] == nodes
    assert answer["NodeNames"] is None


def test_prioritize_scores_every_node_zero(server: NoopServer) -> None:
    status, answer = post(server, "/prioritize", {"Pod": POD, "NodeNames": ["n1", "n2"]})
    assert status == 200
    assert answer == [{"Host": "n1", "Score": 0}, {"Host": "n2", "Score": 0}]


def test_preempt_echoes_the_candidates(server: NoopServer) -> None:
    meta = {"n1": {"Pods": [{"UID": "a"}, {"UID": "b"}], "NumPDBViolations": 1}}
    _, answer = post(server, "/preempt", {"Pod": POD, "NodeNameToMetaVictims": meta})
    assert answer == {"NodeNameToMetaVictims": meta}


def test_preempt_reduces_full_victims_to_their_uids(server: NoopServer) -> None:
    victims = {"n1": {"Pods": [{"metadata": {"uid": "a"}}], "NumPDBViolations": 0}}
    _, answer = post(
        server,
        "/preempt",
        {"Pod": POD, "NodeNameToVictims": victims, "NodeNameToMetaVictims": None},
    )
    assert answer == {
        "NodeNameToMetaVictims": {"n1": {"Pods": [{"UID": "a"}], "NumPDBViolations": 0}}
    }


def test_bad_input_and_unknown_verbs_get_a_clear_error(server: NoopServer) -> None:
    status, answer = post(server, "/filter", b"{not json")
    assert status == 400
    assert "not JSON" in answer["error"]
    status, answer = post(server, "/bind", {})
    assert status == 404


def test_accepted_sockets_do_not_wait_for_delayed_acks() -> None:
    """Without TCP_NODELAY the body write of every answer waits ~40 ms for the client's ACK."""
    probe = NoopServer(("127.0.0.1", 0), NoopHandler)
    try:
        with socket.create_connection(probe.server_address[:2], timeout=5):
            accepted, _ = probe.get_request()
            with accepted:
                assert accepted.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) != 0
    finally:
        probe.server_close()


def test_a_connection_is_kept_alive_across_requests(server: NoopServer) -> None:
    connection = http.client.HTTPConnection("127.0.0.1", server.server_address[1], timeout=5)
    try:
        for names in (["a"], ["b", "c"]):
            body = json.dumps({"Pod": POD, "NodeNames": names}).encode()
            connection.request("POST", "/filter", body, {"Content-Type": "application/json"})
            response = connection.getresponse()
            assert json.loads(response.read())["NodeNames"] == names
    finally:
        connection.close()


def test_readyz_waits_for_the_cache_when_the_noop_watches_the_cluster() -> None:
    synced = threading.Event()
    noop = NoopServer(("127.0.0.1", 0), handler_ready_when(synced.is_set))
    thread = threading.Thread(target=noop.serve_forever, daemon=True)
    thread.start()
    try:
        port = noop.server_address[1]

        def readyz() -> int:
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
            try:
                connection.request("GET", "/readyz")
                response = connection.getresponse()
                response.read()
                return response.status
            finally:
                connection.close()

        assert readyz() == 503
        synced.set()
        assert readyz() == 200
    finally:
        noop.shutdown()
        noop.server_close()
        thread.join(5)


def test_the_plain_noop_is_always_ready(server: NoopServer) -> None:
    connection = http.client.HTTPConnection("127.0.0.1", server.server_address[1], timeout=5)
    try:
        connection.request("GET", "/readyz")
        assert connection.getresponse().status == 200
    finally:
        connection.close()
