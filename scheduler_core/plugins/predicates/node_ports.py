"""kube-scheduler's NodePorts filter: a pod's host ports must be free on the node.

A port is ``(hostIP, protocol, port)``; ``0.0.0.0`` binds every address, so it conflicts with
the same protocol and port on any address, and any address conflicts with it. A conflict is
``Unschedulable``: evicting the pod holding the port frees it.
"""

from __future__ import annotations

from collections.abc import Iterable

from scheduler_core.api.node import NodeInfo
from scheduler_core.api.pod_constraints import WILDCARD_IP, HostPort
from scheduler_core.api.task import TaskInfo
from scheduler_core.framework.status import Code, Status
from scheduler_core.plugins.predicates.placed import placed_pods

ERR_REASON_NODE_PORTS = "node(s) didn't have free ports for the requested pod ports"


def port_conflicts(wanted: HostPort, used: Iterable[HostPort]) -> bool:
    """Whether ``wanted`` cannot be bound while ``used`` are (``HostPortInfo.CheckConflict``)."""
    for port in used:
        if port.port != wanted.port or port.protocol != wanted.protocol:
            continue
        if wanted.ip == WILDCARD_IP or port.ip == WILDCARD_IP or port.ip == wanted.ip:
            return True
    return False


def used_ports(node: NodeInfo, judged_uid: str) -> list[HostPort]:
    """The host ports the node's staying pods hold."""
    return [port for task in placed_pods(node, judged_uid) for port in task.host_ports]


def node_ports_error(task: TaskInfo, node: NodeInfo) -> Status | None:
    """None when every host port of ``task`` is free on ``node`` (a pod without host ports
    costs one attribute read)."""
    if not task.host_ports:
        return None
    used = used_ports(node, task.uid)
    if not used:
        return None
    for port in task.host_ports:
        if port_conflicts(port, used):
            return Status(
                Code.UNSCHEDULABLE, [ERR_REASON_NODE_PORTS], task=task.key, node=node.name
            )
    return None
