"""NodePorts: a pod's host ports must be free on the node, with kube-scheduler's rules for
protocols and addresses (``0.0.0.0`` takes every address)."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler_core.plugins.predicates.node_ports import ERR_REASON_NODE_PORTS
from tests.builders import host_port, pod
from tests.plugins.predicates.conftest import U, Verdict, verdict, zoned

CONFLICT: Verdict = (U, [ERR_REASON_NODE_PORTS])
Port = dict[str, Any]


def on_node(used: list[Port], wanted: list[Port], *, deleting: bool = False) -> Verdict:
    objs = [
        zoned("n1"),
        pod("holder", node_name="n1", host_ports=used, deleting=deleting),
        pod("p", host_ports=wanted),
    ]
    return verdict(objs, "p", "n1")


CASES: list[tuple[str, list[Port], list[Port], Verdict]] = [
    ("no ports wanted", [host_port(80)], [], None),
    ("nothing used", [], [host_port(80)], None),
    ("same port and protocol", [host_port(80)], [host_port(80)], CONFLICT),
    ("another port", [host_port(80)], [host_port(8080)], None),
    ("same port, other protocol", [host_port(53, "UDP")], [host_port(53, "TCP")], None),
    ("same port, UDP both", [host_port(53, "UDP")], [host_port(53, "UDP")], CONFLICT),
    (
        "two specific addresses",
        [host_port(80, ip="10.0.0.1")],
        [host_port(80, ip="10.0.0.2")],
        None,
    ),
    (
        "the same specific address",
        [host_port(80, ip="10.0.0.1")],
        [host_port(80, ip="10.0.0.1")],
        CONFLICT,
    ),
    ("wildcard used, specific wanted", [host_port(80)], [host_port(80, ip="10.0.0.1")], CONFLICT),
    ("specific used, wildcard wanted", [host_port(80, ip="10.0.0.1")], [host_port(80)], CONFLICT),
    (
        "one of several conflicts",
        [host_port(443)],
        [host_port(80), host_port(443)],
        CONFLICT,
    ),
    ("SCTP apart from TCP", [host_port(9, "SCTP")], [host_port(9)], None),
]


@pytest.mark.parametrize(
    ("used", "wanted", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_host_port_conflicts(used: list[Port], wanted: list[Port], expected: Verdict) -> None:
    assert on_node(used, wanted) == expected


def test_a_leaving_pods_port_counts_as_free() -> None:
    assert on_node([host_port(80)], [host_port(80)], deleting=True) is None


def test_ports_on_another_node_do_not_matter() -> None:
    objs = [
        zoned("n1"),
        zoned("n2"),
        pod("holder", node_name="n2", host_ports=[host_port(80)]),
        pod("p", host_ports=[host_port(80)]),
    ]
    assert verdict(objs, "p", "n1") is None


def test_a_sidecars_port_is_held_and_a_plain_init_containers_is_not() -> None:
    def holder(restart: str | None) -> dict[str, Any]:
        init: dict[str, Any] = {"name": "init", "ports": [host_port(80)]}
        if restart:
            init["restartPolicy"] = restart
        return pod("holder", node_name="n1", spec={"initContainers": [init]})

    wanted = pod("p", host_ports=[host_port(80)])
    assert verdict([zoned("n1"), holder("Always"), wanted], "p", "n1") == CONFLICT
    assert verdict([zoned("n1"), holder(None), wanted], "p", "n1") is None


def test_the_check_is_off_with_its_argument() -> None:
    objs = [zoned("n1"), pod("holder", node_name="n1", host_ports=[host_port(80)])]
    objs.append(pod("p", host_ports=[host_port(80)]))
    assert verdict(objs, "p", "n1", {"predicate.NodePortsEnable": False}) is None
