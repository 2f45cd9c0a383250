"""Bad requests (HTTP 400) and backend failures (the on_error policy) over real HTTP."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from app.serving.server import ServerSettings
from scheduler_core.extender.prioritize import HostScores

from ..captured import NODE_CACHE, body
from ..conftest import Live, LiveFactory
from ..fake_backend import FakeBackend, scripted_scores

VERBS = ["/filter", "/prioritize", "/preempt"]
FILTER_REQ = b'{"Pod": {"metadata": {"name": "p", "namespace": "ns"}}, "NodeNames": ["a", "b"]}'
PREEMPT_REQ = (
    b'{"Pod": {"metadata": {"name": "p"}}, "NodeNameToMetaVictims": '
    b'{"a": {"Pods": [{"UID": "u1"}], "NumPDBViolations": 0}}}'
)


def assert_one_line_400(svc: Live, path: str, raw: bytes, fragment: str, status: int = 400) -> Any:
    r = svc.client.post(path, content=raw, headers={"Content-Type": "application/json"})
    assert r.status_code == status, r.text
    doc = r.json()
    assert fragment in doc["Error"]
    assert "\n" not in r.text
    return doc


@pytest.mark.parametrize("path", VERBS)
@pytest.mark.parametrize(
    ("raw", "fragment"),
    [
        (b'{"Pod": {"metadata": {}}, "NodeNames": [', "malformed JSON"),
        (b'{"NodeNames": ["a"], "NodeNameToMetaVictims": {}}', "missing Pod"),
        (b'{"Pod": null, "NodeNames": ["a"]}', "missing Pod"),
        (b"", "empty request body"),
    ],
)
def test_bad_requests_get_400_with_one_line(
    svc: Live, path: str, raw: bytes, fragment: str
) -> None:
    doc = assert_one_line_400(svc, path, raw, fragment)
    if path == "/filter":
        # filter's 400 is an ExtenderFilterResult with Error set
        assert doc["NodeNames"] is None and doc["FailedNodes"] == {}
    assert svc.backend.verbs_called() == []
    assert svc.metric("queue_extender_bad_requests_total", verb=path[1:]) == 1


def test_oversized_body_by_content_length_is_a_413(live: LiveFactory) -> None:
    svc = live(ServerSettings(max_body_bytes=1024))
    raw = b'{"Pod": {}, "NodeNames": [' + b",".join(b'"node-%d"' % i for i in range(200)) + b"]}"
    assert len(raw) > 1024
    doc = assert_one_line_400(svc, "/filter", raw, "exceeds the limit of 1024 bytes", 413)
    assert doc["Error"].startswith("request body of")
    assert svc.backend.verbs_called() == []
    # a body under the limit still works on the same server
    ok = svc.client.post("/filter", content=FILTER_REQ)
    assert ok.status_code == 200 and ok.json()["NodeNames"] == ["a", "b"]


def test_oversized_body_streamed_without_content_length_is_a_413(live: LiveFactory) -> None:
    svc = live(ServerSettings(max_body_bytes=1024))

    def chunks() -> Iterator[bytes]:
        yield b'{"Pod": {}, "NodeNames": ['
        for i in range(300):
            yield b'"node-%d",' % i
        yield b'"last"]}'

    r = svc.client.post("/prioritize", content=chunks())
    assert "content-length" not in r.request.headers
    assert r.request.headers["transfer-encoding"] == "chunked"
    assert r.status_code == 413
    assert r.json()["Error"] == "request body exceeds the limit of 1024 bytes"
    assert svc.metric("queue_extender_bad_requests_total", verb="prioritize") == 1


def test_default_limit_accepts_a_large_node_cache_request(svc: Live) -> None:
    names = [f"node-{i:05d}" for i in range(5000)]
    raw = b'{"Pod": {}, "NodeNames": [' + b",".join(b'"%s"' % n.encode() for n in names) + b"]}"
    r = svc.client.post("/filter", content=raw)
    assert r.status_code == 200
    assert r.json()["NodeNames"] == names


@pytest.mark.parametrize("failing", ["filter", "is_managed"])
def test_backend_exception_pass_policy(live: LiveFactory, failing: str) -> None:
    svc = live(
        ServerSettings(on_error="pass"), FakeBackend(fail={failing, "prioritize", "preempt"})
    )
    f = svc.client.post("/filter", content=FILTER_REQ)
    assert f.status_code == 200
    assert f.json()["NodeNames"] == ["a", "b"] and f.json()["Error"] == ""
    p = svc.client.post("/prioritize", content=FILTER_REQ)
    assert p.status_code == 200
    assert p.json() == [{"Host": "a", "Score": 0}, {"Host": "b", "Score": 0}]
    e = svc.client.post("/preempt", content=PREEMPT_REQ)
    assert e.status_code == 200 and e.json() == {"NodeNameToMetaVictims": {}}
    for verb in ("filter", "prioritize", "preempt"):
        assert svc.metric("queue_extender_errors_total", verb=verb) == 1
        assert svc.metric("queue_extender_decisions_total", verb=verb, outcome="error") == 1


def test_backend_exception_fail_policy(live: LiveFactory) -> None:
    svc = live(
        ServerSettings(on_error="fail"), FakeBackend(fail={"filter", "prioritize", "preempt"})
    )
    f = svc.client.post("/filter", content=FILTER_REQ)
    assert f.status_code == 200
    doc = f.json()
    assert "scripted filter failure" in doc["Error"]
    assert doc["NodeNames"] is None
    p = svc.client.post("/prioritize", content=FILTER_REQ)
    assert p.status_code == 500 and "scripted prioritize failure" in p.json()["Error"]
    e = svc.client.post("/preempt", content=PREEMPT_REQ)
    assert e.status_code == 200 and e.json() == {"NodeNameToMetaVictims": {}}
    assert svc.metric("queue_extender_errors_total", verb="filter") == 1
    # the worker survives and keeps serving
    assert svc.client.get("/healthz").status_code == 200
    svc.backend.fail.clear()
    assert svc.client.post("/filter", content=FILTER_REQ).json()["NodeNames"] == ["a", "b"]


def test_by_default_a_backend_failure_fails_closed(live: LiveFactory) -> None:
    """No node passes filter on an internal error unless `pass` is asked for."""
    svc = live(ServerSettings(), FakeBackend(fail={"filter"}))
    doc = svc.client.post("/filter", content=FILTER_REQ).json()
    assert "scripted filter failure" in doc["Error"] and not doc["NodeNames"]


def test_malformed_backend_answer_counts_as_a_backend_failure(live: LiveFactory) -> None:
    def garbage(pod: object, names: list[str]) -> HostScores:
        return scripted_scores(("a", "high"))

    svc = live(ServerSettings(on_error="pass"), FakeBackend(prioritize_fn=garbage))
    p = svc.client.post("/prioritize", content=FILTER_REQ)
    assert p.status_code == 200 and p.json()[0] == {"Host": "a", "Score": 0}
    assert svc.metric("queue_extender_errors_total", verb="prioritize") == 1


def test_backend_failure_is_logged_with_traceback_only_at_v4(
    live: LiveFactory, caplog: pytest.LogCaptureFixture
) -> None:
    svc = live(backend=FakeBackend(fail={"filter"}))
    with caplog.at_level(1):
        svc.client.post("/filter", content=body(NODE_CACHE, "001-filter.req.json"))
    errors = [r for r in caplog.records if r.levelname == "ERROR"]
    assert len(errors) == 1
    assert "harness/low-1" in errors[0].getMessage() and errors[0].exc_info is None
    tracebacks = [r for r in caplog.records if r.exc_info is not None]
    assert [r.levelname for r in tracebacks] == ["V4"]
