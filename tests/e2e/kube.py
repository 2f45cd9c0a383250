"""Objects for the end-to-end tests, created through the real API server, and a fake kubelet.

There is no kubelet and no controller manager: the test bed creates the `default`
ServiceAccount of each namespace, takes the not-ready taint off the nodes it adds, and a
fake kubelet marks bound pods Running with a start time, as a real one would. Pods get
``terminationGracePeriodSeconds: 0`` so that a deleted (preempted) pod is gone at once.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from kubernetes import client, watch

from tests.e2e.controlplane import wait_for

log = logging.getLogger("tests.e2e")

GROUP, VERSION = "scheduling.volcano.sh", "v1beta1"
TOPOLOGY_GROUP, TOPOLOGY_VERSION = "topology.volcano.sh", "v1alpha1"
NATIVE_GROUP, NATIVE_VERSION = "scheduling.k8s.io", "v1alpha2"
QUEUE_SCHEDULER = "queue-scheduler"
_names = itertools.count(1)


def now_rfc3339() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass
class Kube:
    """The test's handle on the cluster; remembers what it created so it can clean up."""

    api: Any
    core: Any = field(init=False)
    custom: Any = field(init=False)
    scheduling: Any = field(init=False)
    policy: Any = field(init=False)
    nodes: list[str] = field(default_factory=list)
    queues: list[str] = field(default_factory=list)
    priority_classes: list[str] = field(default_factory=list)
    namespaces: list[str] = field(default_factory=list)
    hypernodes: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.core = client.CoreV1Api(self.api)
        self.custom = client.CustomObjectsApi(self.api)
        self.scheduling = client.SchedulingV1Api(self.api)
        self.policy = client.PolicyV1Api(self.api)

    # --- namespaces, nodes, priorities ----------------------------------------------------

    def namespace(self, prefix: str = "e2e") -> str:
        """A fresh namespace (never deleted: with no namespace controller it would hang)."""
        name = f"{prefix}-{int(time.time()) % 100000}-{next(_names)}"
        self.core.create_namespace({"metadata": {"name": name}})
        self.core.create_namespaced_service_account(name, {"metadata": {"name": "default"}})
        self.namespaces.append(name)
        return name

    def node(
        self, name: str, cpu: str = "4", memory: str = "16Gi", pods: int = 110, **labels: str
    ) -> str:
        capacity = {"cpu": cpu, "memory": memory, "pods": str(pods)}
        body = {
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **labels}},
            "status": {
                "capacity": capacity,
                "allocatable": capacity,
                "conditions": [
                    {
                        "type": "Ready",
                        "status": "True",
                        "reason": "KubeletReady",
                        "message": "fake kubelet",
                        "lastHeartbeatTime": now_rfc3339(),
                        "lastTransitionTime": now_rfc3339(),
                    }
                ],
            },
        }
        self.core.create_node(body)
        self.nodes.append(name)
        # Admission adds the not-ready taint; no node-lifecycle controller takes it off.
        self.core.patch_node(name, {"spec": {"taints": None}})
        return name

    def priority_class(self, name: str, value: int) -> str:
        self.scheduling.create_priority_class(
            {"metadata": {"name": name}, "value": value, "preemptionPolicy": "PreemptLowerPriority"}
        )
        self.priority_classes.append(name)
        return name

    # --- Volcano objects ----------------------------------------------------------------

    def queue(
        self,
        name: str,
        weight: int = 1,
        *,
        capability: dict[str, str] | None = None,
        reclaimable: bool | None = None,
        state: str | None = None,
        **spec: Any,
    ) -> str:
        body_spec: dict[str, Any] = {"weight": weight, **spec}
        if capability is not None:
            body_spec["capability"] = capability
        if reclaimable is not None:
            body_spec["reclaimable"] = reclaimable
        self.custom.create_cluster_custom_object(
            GROUP,
            VERSION,
            "queues",
            {
                "apiVersion": f"{GROUP}/{VERSION}",
                "kind": "Queue",
                "metadata": {"name": name},
                "spec": body_spec,
            },
        )
        self.queues.append(name)
        if state is not None:
            self.set_queue_state(name, state)
        return name

    def set_queue_state(self, name: str, state: str) -> None:
        self.custom.patch_cluster_custom_object_status(
            GROUP, VERSION, "queues", name, {"status": {"state": state, "allocated": {}}}
        )

    def patch_queue(self, name: str, spec: dict[str, Any]) -> None:
        self.custom.patch_cluster_custom_object(GROUP, VERSION, "queues", name, {"spec": spec})

    def podgroup(
        self,
        namespace: str,
        name: str,
        min_member: int,
        queue: str,
        *,
        min_resources: dict[str, str] | None = None,
        priority_class: str | None = None,
        network_topology: dict[str, Any] | None = None,
    ) -> str:
        spec: dict[str, Any] = {"minMember": min_member, "queue": queue}
        if min_resources is not None:
            spec["minResources"] = min_resources
        if network_topology is not None:
            spec["networkTopology"] = network_topology
        if priority_class is not None:
            spec["priorityClassName"] = priority_class
        self.custom.create_namespaced_custom_object(
            GROUP,
            VERSION,
            namespace,
            "podgroups",
            {
                "apiVersion": f"{GROUP}/{VERSION}",
                "kind": "PodGroup",
                "metadata": {"name": name, "namespace": namespace},
                "spec": spec,
            },
        )
        return name

    # --- the network topology ---------------------------------------------------------

    def hypernode(
        self,
        name: str,
        tier: int,
        *,
        nodes: Sequence[str] = (),
        hypernodes: Sequence[str] = (),
        tier_name: str = "",
    ) -> str:
        """A HyperNode whose members are these nodes or HyperNodes, by exact name; made
        again (replaced) when it exists, which is how a test edits one."""
        members = [{"type": "Node", "selector": {"exactMatch": {"name": n}}} for n in nodes]
        members += [
            {"type": "HyperNode", "selector": {"exactMatch": {"name": h}}} for h in hypernodes
        ]
        spec: dict[str, Any] = {"tier": tier, "members": members}
        if tier_name:
            spec["tierName"] = tier_name
        body = {
            "apiVersion": f"{TOPOLOGY_GROUP}/{TOPOLOGY_VERSION}",
            "kind": "HyperNode",
            "metadata": {"name": name},
            "spec": spec,
        }
        if name in self.hypernodes:
            current = self.custom.get_cluster_custom_object(
                TOPOLOGY_GROUP, TOPOLOGY_VERSION, "hypernodes", name
            )
            body["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
            self.custom.replace_cluster_custom_object(
                TOPOLOGY_GROUP, TOPOLOGY_VERSION, "hypernodes", name, body
            )
        else:
            self.custom.create_cluster_custom_object(
                TOPOLOGY_GROUP, TOPOLOGY_VERSION, "hypernodes", body
            )
            self.hypernodes.append(name)
        return name

    # --- Kubernetes' own PodGroups (the Workload API) -------------------------------------

    def native_served(self) -> bool:
        """Whether the API server serves native PodGroups at the version the tests write."""
        try:
            self.custom.list_cluster_custom_object(NATIVE_GROUP, NATIVE_VERSION, "podgroups")
        except client.ApiException as exc:
            if exc.status == 404:
                return False
            raise
        return True

    def native_podgroup(
        self,
        namespace: str,
        name: str,
        min_count: int | None,
        *,
        queue: str | None = None,
        priority_class: str | None = None,
        disruption_mode: str | None = None,
        topology_keys: Sequence[str] = (),
    ) -> str:
        """A native PodGroup: a gang of ``min_count``, or a ``basic`` group when None; its
        queue, when given, on the queue-name label; ``topology_keys`` its
        ``schedulingConstraints.topology``."""
        policy: dict[str, Any] = {"gang": {"minCount": min_count}} if min_count else {"basic": {}}
        spec: dict[str, Any] = {"schedulingPolicy": policy}
        if topology_keys:
            spec["schedulingConstraints"] = {"topology": [{"key": k} for k in topology_keys]}
        if priority_class is not None:
            spec["priorityClassName"] = priority_class
        if disruption_mode is not None:
            spec["disruptionMode"] = disruption_mode
        labels = {"scheduling.volcano.sh/queue-name": queue} if queue else {}
        self.custom.create_namespaced_custom_object(
            NATIVE_GROUP,
            NATIVE_VERSION,
            namespace,
            "podgroups",
            {
                "apiVersion": f"{NATIVE_GROUP}/{NATIVE_VERSION}",
                "kind": "PodGroup",
                "metadata": {"name": name, "namespace": namespace, "labels": labels},
                "spec": spec,
            },
        )
        return name

    def native_podgroup_object(self, namespace: str, name: str) -> dict[str, Any]:
        found: dict[str, Any] = self.custom.get_namespaced_custom_object(
            NATIVE_GROUP, NATIVE_VERSION, namespace, "podgroups", name
        )
        return found

    # --- pods ---------------------------------------------------------------------------

    def pod(
        self,
        namespace: str,
        name: str,
        cpu: str = "1",
        *,
        memory: str = "128Mi",
        queue: str | None = None,
        group: str | None = None,
        scheduler: str = QUEUE_SCHEDULER,
        priority_class: str | None = None,
        node: str | None = None,
        annotations: dict[str, str] | None = None,
        labels: dict[str, str] | None = None,
        node_selector: dict[str, str] | None = None,
        affinity: dict[str, Any] | None = None,
        spread: list[dict[str, Any]] | None = None,
        host_ports: list[int] | None = None,
        scheduling_group: str | None = None,
    ) -> str:
        """``affinity`` and ``spread`` (topologySpreadConstraints) go into the spec as given;
        each of ``host_ports`` is asked for on the node (TCP)."""
        notes = dict(annotations or {})
        if queue is not None:
            notes["scheduling.volcano.sh/queue-name"] = queue
        if group is not None:
            notes["scheduling.k8s.io/group-name"] = group
        spec: dict[str, Any] = {
            "schedulerName": scheduler,
            "terminationGracePeriodSeconds": 0,
            "containers": [
                {
                    "name": "main",
                    "image": "registry.k8s.io/pause:3.10",
                    "resources": {"requests": {"cpu": cpu, "memory": memory}},
                }
            ],
        }
        if priority_class is not None:
            spec["priorityClassName"] = priority_class
        if scheduling_group is not None:
            spec["schedulingGroup"] = {"podGroupName": scheduling_group}
        if node is not None:
            spec["nodeName"] = node
        if node_selector is not None:
            spec["nodeSelector"] = node_selector
        if affinity is not None:
            spec["affinity"] = affinity
        if spread is not None:
            spec["topologySpreadConstraints"] = spread
        if host_ports:
            spec["containers"][0]["ports"] = [
                {"containerPort": port, "hostPort": port, "protocol": "TCP"} for port in host_ports
            ]
        self.core.create_namespaced_pod(
            namespace,
            {
                "metadata": {"name": name, "annotations": notes, "labels": labels or {}},
                "spec": spec,
            },
        )
        return name

    def get_pod(self, namespace: str, name: str) -> Any | None:
        try:
            return self.core.read_namespaced_pod(name, namespace)
        except client.ApiException as exc:
            if exc.status == 404:
                return None
            raise

    def pods(self, namespace: str) -> dict[str, Any]:
        return {p.metadata.name: p for p in self.core.list_namespaced_pod(namespace).items}

    def bound(self, namespace: str) -> dict[str, str]:
        """Pod name -> node for every bound pod of the namespace."""
        return {n: p.spec.node_name for n, p in self.pods(namespace).items() if p.spec.node_name}

    def wait_bound(self, namespace: str, name: str, timeout: float = 30) -> str:
        def node() -> str | None:
            pod = self.get_pod(namespace, name)
            return pod.spec.node_name if pod is not None else None

        return str(wait_for(node, timeout, f"pod {namespace}/{name} to be bound"))

    def wait_running(self, namespace: str, names: list[str], timeout: float = 30) -> None:
        def running() -> bool:
            pods = self.pods(namespace)
            return all(n in pods and pods[n].status.phase == "Running" for n in names)

        wait_for(running, timeout, f"pods {names} in {namespace} to run")

    def wait_gone(self, namespace: str, name: str, timeout: float = 30) -> None:
        wait_for(lambda: self.get_pod(namespace, name) is None, timeout, f"{name} to be deleted")

    def scheduling_messages(self, namespace: str, name: str) -> list[str]:
        """The FailedScheduling (and other) event messages kube-scheduler wrote for a pod."""
        events = self.core.list_namespaced_event(
            namespace, field_selector=f"involvedObject.name={name}"
        ).items
        return [f"{e.reason}: {e.message}" for e in events]

    def wait_message(self, namespace: str, name: str, text: str, timeout: float = 30) -> str:
        def found() -> str | None:
            for message in self.scheduling_messages(namespace, name):
                if text in message:
                    return message
            return None

        return str(wait_for(found, timeout, f"an event on {name} saying {text!r}", interval=0.3))

    def delete_pod(self, namespace: str, name: str) -> None:
        with contextlib.suppress(client.ApiException):
            self.core.delete_namespaced_pod(name, namespace, grace_period_seconds=0)

    # --- cleanup ------------------------------------------------------------------------

    def cleanup(self) -> None:
        """Deletes what the test created (pods at once), so the next test's cluster totals —
        which decide every queue's deserved share — hold only its own nodes."""
        for ns in self.namespaces:
            with contextlib.suppress(client.ApiException):
                self.core.delete_collection_namespaced_pod(ns, grace_period_seconds=0)
            with contextlib.suppress(client.ApiException):
                self.custom.delete_collection_namespaced_custom_object(
                    GROUP, VERSION, ns, "podgroups"
                )
            with contextlib.suppress(client.ApiException):
                self.custom.delete_collection_namespaced_custom_object(
                    NATIVE_GROUP, NATIVE_VERSION, ns, "podgroups"
                )
        for name in self.nodes:
            with contextlib.suppress(client.ApiException):
                self.core.delete_node(name)
        for name in self.hypernodes:
            with contextlib.suppress(client.ApiException):
                self.custom.delete_cluster_custom_object(
                    TOPOLOGY_GROUP, TOPOLOGY_VERSION, "hypernodes", name
                )
        for name in self.queues:
            with contextlib.suppress(client.ApiException):
                self.custom.delete_cluster_custom_object(GROUP, VERSION, "queues", name)
        for name in self.priority_classes:
            with contextlib.suppress(client.ApiException):
                self.scheduling.delete_priority_class(name)
        for ns in self.namespaces:
            with contextlib.suppress(Exception):
                wait_for(lambda ns=ns: not self.core.list_namespaced_pod(ns).items, 20, "pods")


class FakeKubelet:
    """Marks every bound, Pending pod Running (Ready, with a start time), and removes every
    terminating bound pod (an eviction's), as a kubelet would.

    Volcano only preempts and reclaims Running tasks, and kube-scheduler breaks preemption
    ties on the victims' start time, so both need a real-looking status.
    """

    def __init__(self, api: Any) -> None:
        self.core = client.CoreV1Api(api)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="fake-kubelet", daemon=True)
        #: The watch being read, so that ``stop`` can shut its socket: a read blocks until the
        #: next pod event or the watch's 30 s timeout, and while it is open kube-apiserver
        #: waits for it when asked to stop.
        self._open_watch: watch.Watch | None = None
        self.started: int = 0

    def start(self) -> FakeKubelet:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if (open_watch := self._open_watch) is not None:
            open_watch.stop()
        self._thread.join(timeout=10)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                listed = self.core.list_pod_for_all_namespaces(field_selector="spec.nodeName!=")
                for pod in listed.items:
                    self._start(pod)
                self._watch(listed.metadata.resource_version)
            except Exception as exc:  # the API server may be restarting: list again
                log.debug("fake kubelet: %s", exc)
                self._stop.wait(0.5)

    def _watch(self, resource_version: str) -> None:
        w = self._open_watch = watch.Watch()
        if self._stop.is_set():  # stopped between the list and now: ``stop`` saw no watch
            return
        for event in self._events(w, resource_version):
            if self._stop.is_set():
                w.stop()
                return
            if event["type"] in ("ADDED", "MODIFIED"):
                self._start(event["object"])

    def _events(self, w: watch.Watch, resource_version: str) -> Iterator[dict[str, Any]]:
        yield from w.stream(
            self.core.list_pod_for_all_namespaces,
            field_selector="spec.nodeName!=",
            resource_version=resource_version,
            timeout_seconds=30,
            allow_watch_bookmarks=True,
        )

    def _start(self, pod: Any) -> None:
        if pod.metadata.deletion_timestamp is not None:
            # The containers stopped: a kubelet then removes the pod object for good.
            with contextlib.suppress(client.ApiException):
                self.core.delete_namespaced_pod(
                    pod.metadata.name, pod.metadata.namespace, grace_period_seconds=0
                )
            return
        if pod.status.phase != "Pending":
            return
        stamp = now_rfc3339()
        status = {
            "phase": "Running",
            "startTime": stamp,
            "hostIP": "127.0.0.1",
            "conditions": [
                {"type": t, "status": "True", "lastTransitionTime": stamp}
                for t in ("PodScheduled", "Initialized", "ContainersReady", "Ready")
            ],
        }
        with contextlib.suppress(client.ApiException):
            self.core.patch_namespaced_pod_status(
                pod.metadata.name, pod.metadata.namespace, {"status": status}
            )
            self.started += 1
