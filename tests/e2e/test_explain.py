"""explain through the real control plane: a pod held by a full queue is explained with the
very reason kube-scheduler printed in its FailedScheduling event."""

from __future__ import annotations

import io
import json
import urllib.request
from collections.abc import Iterator

import pytest

from app.cli.main import build_parser
from tests.e2e.conftest import Stack
from tests.e2e.controlplane import wait_for
from tests.e2e.kube import Kube


def _explain(url: str, namespace: str, name: str) -> dict[str, object]:
    with urllib.request.urlopen(
        f"{url}/api/v1/pods/{namespace}/{name}/explain", timeout=10
    ) as answer:
        doc: dict[str, object] = json.loads(answer.read())
        return doc


@pytest.fixture
def fresh_extender(stack: Stack) -> Iterator[str]:
    """The stack's extender with queue shares recomputed on every change: with the default
    one-second refresh a just-bound pod can be counted twice for a moment, and the event
    would carry that moment's numbers."""
    stack.extender.process.stop()
    stack.extender = stack.cp.start_extender(
        port=stack.port, args=["--refresh-interval", "0"]
    ).wait_ready()
    try:
        yield stack.extender.url
    finally:
        stack.restart_extender()


def test_explain_reads_the_reason_kube_scheduler_printed(kube: Kube, fresh_extender: str) -> None:
    ns = kube.namespace()
    kube.node("explain-n1", cpu="4")
    kube.queue("explain-full", capability={"cpu": "1"})
    kube.pod(ns, "first", cpu="1", queue="explain-full")
    kube.wait_running(ns, ["first"])
    kube.pod(ns, "second", cpu="1", queue="explain-full")
    event = kube.wait_message(ns, "second", "explain-full")
    url = fresh_extender

    def settled() -> dict[str, object] | None:
        doc = _explain(url, ns, "second")
        return doc if doc.get("reason") and str(doc["reason"]) in event else None

    last: list[object] = []

    def settled_or_note() -> dict[str, object] | None:
        doc = settled()
        if doc is None:
            last[:] = [_explain(url, ns, "second").get("reason"), event]
        return doc

    try:
        doc = wait_for(settled_or_note, 15, "explain to give the event's reason", interval=0.5)
    except TimeoutError:
        raise AssertionError(f"explain said {last[0]!r}; the event said {last[1]!r}") from None
    # A full queue refuses the job at admission (a PodGroup of one with minResources) or,
    # once admitted, at its share: the first failed step is the one the code names.
    failing = {"queue-capability": "enqueue", "queue-overused": "queue-share"}
    assert doc["code"] in failing
    steps = doc["steps"]
    first_failed = next(s for s in steps if s["verdict"] == "fail")  # type: ignore[union-attr]
    assert first_failed["name"] == failing[str(doc["code"])]
    assert first_failed["detail"] == doc["reason"]
    assert {s["name"]: s["verdict"] for s in steps}["queue-open"] == "pass"  # type: ignore[union-attr]

    # the CLI against the same server prints the same reason
    args = build_parser().parse_args(["explain", "pod/second", "-n", ns, "--server", url])
    out, err = io.StringIO(), io.StringIO()
    assert args.func(args, out=out, err=err) == 0, err.getvalue()
    assert f"Reason:  {doc['reason']}" in out.getvalue()

    # and the pending list of the queue names it with the same reason
    with urllib.request.urlopen(f"{url}/api/v1/queues/explain-full/pending", timeout=10) as r:
        page = json.loads(r.read())
    assert [j["firstPod"] for j in page["jobs"]] == [f"{ns}/second"]
    assert page["jobs"][0]["reason"] == doc["reason"]
