"""The requeuer's pass asks the API server about pods assumed unseen: one that does not exist
(404, or another pod now has its name) loses its assumption; one that does, or a lookup that
fails, keeps it."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from kubernetes.client import ApiException

from scheduler_core.controller.requeue import ParkedPodRequeuer
from scheduler_core.extender.filter_verb import filter_pod
from tests.builders import accounting, node, pod, queue

NODES = ["n1"]


class FakeCore:
    """``read_namespaced_pod`` answering from a table: a uid, a status code, or an error."""

    def __init__(self, answers: dict[str, Any]) -> None:
        self.answers = answers
        self.asked: list[str] = []

    def read_namespaced_pod(self, name: str, namespace: str) -> Any:
        key = f"{namespace}/{name}"
        self.asked.append(key)
        answer = self.answers[key]
        if isinstance(answer, int):
            raise ApiException(status=answer, reason="scripted")
        if isinstance(answer, Exception):
            raise answer
        return SimpleNamespace(metadata=SimpleNamespace(uid=answer))


def unseen_pod(name: str) -> dict[str, Any]:
    p = pod(name, cpu="1", memory="1Gi")
    p["metadata"]["annotations"]["scheduling.volcano.sh/queue-name"] = "q"
    p["metadata"]["uid"] = f"uid-{name}"
    return p


@pytest.mark.parametrize(
    ("answer", "dropped"),
    [
        (404, True),
        ("uid-of-another-pod", True),
        ("uid-p", False),
        (500, False),
        (ConnectionError("down"), False),
    ],
)
def test_an_unseen_assumption_ends_only_when_the_api_server_says_the_pod_does_not_exist(
    answer: Any, dropped: bool
) -> None:
    acct, _ = accounting([node("n1", cpu="8"), queue("q")])
    filter_pod(acct, unseen_pod("p"), NODES)
    assert "ns/p" in acct.assumed
    requeuer = ParkedPodRequeuer(acct, None)
    requeuer.core = FakeCore({"ns/p": answer})  # type: ignore[assignment]
    assert requeuer.check_unseen() == (["ns/p"] if dropped else [])
    assert ("ns/p" not in acct.assumed) is dropped


def test_each_unseen_pod_is_looked_up_at_most_once_a_second() -> None:
    acct, _ = accounting([node("n1", cpu="8"), queue("q")])
    filter_pod(acct, unseen_pod("p"), NODES)
    core = FakeCore({"ns/p": "uid-p"})
    requeuer = ParkedPodRequeuer(acct, None)
    requeuer.core = core  # type: ignore[assignment]
    requeuer.check_unseen()
    requeuer.check_unseen()
    assert core.asked == ["ns/p"]
