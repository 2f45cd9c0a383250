"""The chart and deploy/ installed as users install them, on a real node, with the image built
here: real pods, real probes, real graceful termination (tests/e2e/realnode.py).

The chart is rendered by Helm's library (helm-python-sdk, what `helm template` runs) and its
objects applied with server-side apply through the Python client, which is what `kubectl apply
--server-side` sends (there is no kubectl of the cluster's version on these machines);
`kubectl apply -k deploy/` is the kustomization's resources applied the same way.

The tests of this module run in order on one installation: install, use, upgrade, uninstall;
then deploy/ on the same node. They need root, the Debian packages in
``realnode.DEBIAN_PACKAGES`` (`REQUIRE_REAL_NODE=1 make real-node-deps`) and the shared kubelet and
kube-controller-manager; without them they skip, saying what is missing, unless
``REQUIRE_REAL_NODE=1`` (CI), where that is a failure.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client, dynamic

from tests.deploy.deploy_manifests import (
    KUBE_VERSION,
    NAMESPACE,
    RELEASE,
    load_kustomization,
    rendered_documents,
)
from tests.e2e import realnode
from tests.e2e.controlplane import BinariesMissing, ControlPlane, find_binaries, wait_for
from tests.e2e.kube import GROUP, VERSION

FIELD_MANAGER = "kube-queue-extender-tests"
INSTANCE = {"app.kubernetes.io/instance": RELEASE}
SELECTOR = "app.kubernetes.io/instance=" + RELEASE
#: The node has two cores: the chart's requests are trimmed so that workloads fit beside it.
CHART_VALUES: dict[str, Any] = {
    "extender": {
        "image": {"pullPolicy": "Never"},
        "verbosity": 4,
        "resources": {"requests": {"cpu": "50m", "memory": "128Mi"}},
        "probes": {"readiness": {"periodSeconds": 2}},
    },
    "scheduler": {
        "image": {"pullPolicy": "Never"},
        "resources": {"requests": {"cpu": "50m", "memory": "64Mi"}},
    },
}
#: Seconds between the extender's election attempts (its --leader-elect-retry-period default).
RETRY_PERIOD = 2.0
GRACE = 5


def _fail_or_skip(reason: str) -> None:
    if os.environ.get("REQUIRE_REAL_NODE") == "1":
        pytest.fail(f"REQUIRE_REAL_NODE=1 but {reason}", pytrace=False)
    pytest.skip(
        f"real-node tests skipped: {reason} (as root, `REQUIRE_REAL_NODE=1 make real-node-deps` "
        "installs the Debian packages)"
    )


@pytest.fixture(scope="module")
def real_bin() -> Path:
    missing = realnode.missing_parts()
    if missing:
        _fail_or_skip("this machine lacks " + ", ".join(missing))
    try:
        directory = find_binaries()
    except BinariesMissing as exc:
        _fail_or_skip(str(exc))
    lacking = [b for b in ("kubelet", "kube-controller-manager") if not (directory / b).exists()]
    if lacking:
        _fail_or_skip(f"{directory} lacks {', '.join(lacking)}")
    return directory


@pytest.fixture(scope="module")
def project_image(real_bin: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`make image` on a Debian 12 base made by debootstrap, by a private dockerd."""
    return realnode.project_image(realnode.CACHE, tmp_path_factory.mktemp("docker"))


@dataclass
class Cluster:
    cp: ControlPlane
    node: realnode.RealNode
    api: Any
    core: Any = field(init=False)
    apps: Any = field(init=False)
    custom: Any = field(init=False)
    coordination: Any = field(init=False)
    dyn: Any = field(init=False)
    workload_namespaces: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.core = client.CoreV1Api(self.api)
        self.apps = client.AppsV1Api(self.api)
        self.custom = client.CustomObjectsApi(self.api)
        self.coordination = client.CoordinationV1Api(self.api)
        self.dyn = dynamic.DynamicClient(self.api)

    # --- applying and deleting manifests ------------------------------------------------

    def _resource(self, document: dict[str, Any]) -> Any:
        return self.dyn.resources.get(api_version=document["apiVersion"], kind=document["kind"])

    def apply(self, documents: list[dict[str, Any]]) -> None:
        """Server-side apply, in Helm's install order (namespaces and accounts first)."""
        for document in sorted(documents, key=_install_rank):
            metadata = document["metadata"]
            self._resource(document).server_side_apply(
                body=document,
                name=metadata["name"],
                namespace=metadata.get("namespace"),
                field_manager=FIELD_MANAGER,
                force_conflicts=True,
            )

    def delete(self, documents: list[dict[str, Any]]) -> None:
        for document in sorted(documents, key=_install_rank, reverse=True):
            metadata = document["metadata"]
            with contextlib.suppress(client.ApiException):
                self._resource(document).delete(
                    name=metadata["name"],
                    namespace=metadata.get("namespace"),
                    body={"propagationPolicy": "Foreground"},
                )

    def exists(self, document: dict[str, Any]) -> bool:
        metadata = document["metadata"]
        try:
            self._resource(document).get(name=metadata["name"], namespace=metadata.get("namespace"))
        except client.ApiException as exc:
            if exc.status == 404:
                return False
            raise
        return True

    # --- the installation's pods --------------------------------------------------------

    def release_pods(self) -> list[Any]:
        return list(self.core.list_namespaced_pod(NAMESPACE, label_selector=SELECTOR).items)

    def wait_rolled_out(self, timeout: float = 180) -> Any:
        """The Deployment's one replica of the newest template Ready, old ones gone."""

        def done() -> Any:
            deployment = self.apps.read_namespaced_deployment(RELEASE, NAMESPACE)
            status = deployment.status
            pods = [p for p in self.release_pods() if p.metadata.deletion_timestamp is None]
            return (
                status.observed_generation == deployment.metadata.generation
                and status.updated_replicas == 1
                and status.ready_replicas == 1
                and (status.replicas or 0) == 1
                and len(self.release_pods()) == 1
                and pods[0]
            )

        pod = wait_for(done, timeout, "the Deployment rolled out and Ready", interval=1)
        return pod

    def delete_workloads(self) -> None:
        """Every test workload's namespace deleted (the namespace controller runs here)."""
        for name in self.workload_namespaces:
            with contextlib.suppress(client.ApiException):
                self.core.delete_namespace(name, grace_period_seconds=0)
        wait_for(
            lambda: (
                not any(
                    p.metadata.namespace in self.workload_namespaces
                    for p in self.core.list_pod_for_all_namespaces().items
                )
            ),
            120,
            "the workloads' pods gone",
            interval=1,
        )
        self.workload_namespaces.clear()

    def diagnostics(self) -> str:
        return (
            self.cp.log_tails(40)
            + "\n"
            + self.node.pod_logs_matching(NAMESPACE, RELEASE, 60)
            + "\n----- kubelet -----\n"
            + (self.node.kubelet.tail(40) if self.node.kubelet else "")
        )

    def proxy(self, path: str) -> tuple[int, str]:
        """GET through the API server's service proxy to the status Service (what `kubectl
        queue` and a browser behind `kubectl proxy` go through)."""
        try:
            response = self.core.connect_get_namespaced_service_proxy_with_path(
                f"{RELEASE}-status:8890", NAMESPACE, path.lstrip("/"), _preload_content=False
            )
        except client.ApiException as exc:
            return int(exc.status), str(exc.body)
        return int(response.status), response.data.decode()


_ORDER = [
    "Namespace",
    "CustomResourceDefinition",
    "ServiceAccount",
    "ClusterRole",
    "ClusterRoleBinding",
    "Role",
    "RoleBinding",
    "ConfigMap",
    "Service",
    "NetworkPolicy",
    "PodDisruptionBudget",
    "Deployment",
]


def _install_rank(document: dict[str, Any]) -> int:
    kind = document["kind"]
    return _ORDER.index(kind) if kind in _ORDER else len(_ORDER)


@pytest.fixture(scope="module")
def cluster(
    real_bin: Path, project_image: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Cluster]:
    work = tmp_path_factory.mktemp("real-node")
    with realnode.real_cluster(real_bin, work) as (cp, node):
        node.import_image(realnode.pause_image(work / "pause.tar"))
        node.import_image(realnode.workload_image(work / "busybox.tar"))
        node.import_image(realnode.scheduler_image(work / "sched.tar", real_bin, KUBE_VERSION))
        node.import_image(project_image)
        node.start_kubelet()
        handle = Cluster(cp, node, cp.api_client())
        try:
            yield handle
        finally:
            sys.stdout.write("\n" + handle.diagnostics() + "\n")


def chart_documents(values: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    merged = json.loads(json.dumps(CHART_VALUES))
    for key, value in (values or {}).items():
        merged[key] = {**merged.get(key, {}), **value} if isinstance(value, dict) else value
    return rendered_documents(merged)


NAMESPACE_DOC = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}}


@pytest.fixture(scope="module")
def installed(cluster: Cluster) -> Cluster:
    """`helm install --create-namespace`: the namespace, then the chart's objects."""
    cluster.apply([NAMESPACE_DOC])
    wait_for(
        lambda: cluster.core.read_namespaced_service_account("default", NAMESPACE),
        30,
        "the namespace's default ServiceAccount",
    )
    cluster.apply(chart_documents())
    try:
        cluster.wait_rolled_out()
    except TimeoutError:
        print(cluster.diagnostics())
        raise
    return cluster


# --- the workloads -----------------------------------------------------------------------


def make_namespace(cluster: Cluster, name: str) -> str:
    cluster.apply([{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}])
    cluster.workload_namespaces.append(name)
    wait_for(
        lambda: cluster.core.read_namespaced_service_account("default", name),
        30,
        f"namespace {name}'s default ServiceAccount",
    )
    return name


def make_queue(cluster: Cluster, name: str, weight: int = 1, **spec: Any) -> str:
    cluster.custom.create_cluster_custom_object(
        GROUP,
        VERSION,
        "queues",
        {
            "apiVersion": f"{GROUP}/{VERSION}",
            "kind": "Queue",
            "metadata": {"name": name},
            "spec": {"weight": weight, "reclaimable": True, **spec},
        },
    )
    return name


def make_pod(
    cluster: Cluster,
    namespace: str,
    name: str,
    queue: str,
    cpu: str,
    *,
    ignore_term: bool = False,
    group: str | None = None,
) -> str:
    """A real busybox pod of ``queue`` for the chart's scheduler; ``ignore_term``: it sleeps
    through SIGTERM, so only the grace period's end (SIGKILL) stops it."""
    script = "trap '' TERM; while true; do sleep 1; done" if ignore_term else "exec sleep 100000"
    annotations = {"scheduling.volcano.sh/queue-name": queue}
    if group is not None:
        annotations["scheduling.k8s.io/group-name"] = group
    cluster.core.create_namespaced_pod(
        namespace,
        {
            "metadata": {"name": name, "annotations": annotations},
            "spec": {
                "schedulerName": "queue-scheduler",
                "terminationGracePeriodSeconds": GRACE if ignore_term else 1,
                "containers": [
                    {
                        "name": "main",
                        "image": realnode.WORKLOAD_IMAGE,
                        "imagePullPolicy": "Never",
                        "command": ["/bin/sh", "-c", script],
                        "resources": {"requests": {"cpu": cpu, "memory": "16Mi"}},
                    }
                ],
            },
        },
    )
    return name


def pod_phase(cluster: Cluster, namespace: str, name: str) -> str:
    return str(cluster.core.read_namespaced_pod(name, namespace).status.phase)


def _millicpu(quantity: str) -> int:
    return int(quantity[:-1]) if quantity.endswith("m") else int(float(quantity) * 1000)


def free_millicpu(cluster: Cluster) -> int:
    """The node's allocatable CPU less every live pod's requests (what kube-scheduler sees)."""
    node = cluster.core.read_node("real-node")
    used = 0
    for pod in cluster.core.list_pod_for_all_namespaces().items:
        if pod.spec.node_name != "real-node" or pod.status.phase in ("Succeeded", "Failed"):
            continue
        for container in pod.spec.containers:
            requests = (container.resources.requests or {}) if container.resources else {}
            used += _millicpu(requests.get("cpu", "0"))
    return _millicpu(node.status.allocatable["cpu"]) - used


def events_for(cluster: Cluster, namespace: str, name: str) -> list[Any]:
    return [
        e
        for e in cluster.core.list_namespaced_event(namespace).items
        if e.involved_object.name == name
    ]


# --- the chart ---------------------------------------------------------------------------


def test_chart_pods_are_ready_non_root_on_a_read_only_root(installed: Cluster) -> None:
    (pod,) = installed.release_pods()
    statuses = {s.name: s for s in pod.status.container_statuses}
    assert set(statuses) == {"kube-scheduler", "queue-extender"}
    assert all(s.ready for s in statuses.values())
    assert all(s.restart_count == 0 for s in statuses.values()), installed.diagnostics()
    for container in pod.spec.containers:
        assert container.security_context.read_only_root_filesystem is True
        assert container.security_context.run_as_non_root is True
    # The kubelet enforced it: the extender's process runs as 65532 and cannot write to /.
    task = statuses["queue-extender"].container_id.split("://", 1)[1]
    uid = realnode.run(installed.node.ctr("tasks", "exec", "--exec-id", "uid", task, "id", "-u"))
    assert uid.strip() == "65532"
    touch = subprocess.run(
        installed.node.ctr("tasks", "exec", "--exec-id", "touch", task, "touch", "/x"),
        capture_output=True,
        text=True,
        check=False,
    )
    assert touch.returncode != 0 and "Read-only file system" in touch.stderr + touch.stdout


def test_real_pods_of_real_queues_are_placed_through_the_sidecar(installed: Cluster) -> None:
    ns = make_namespace(installed, "placed")
    make_queue(installed, "placed-capped", capability={"cpu": "300m"})
    make_pod(installed, ns, "first", "placed-capped", "200m")
    wait_for(lambda: pod_phase(installed, ns, "first") == "Running", 60, "first Running")
    scheduled = [e for e in events_for(installed, ns, "first") if e.reason == "Scheduled"]
    assert scheduled and scheduled[0].reporting_component == "queue-scheduler"
    # The queue's capability is the extender's rule, not kube-scheduler's: the node has room.
    make_pod(installed, ns, "second", "placed-capped", "200m")

    def refused() -> bool:
        return any(
            e.reason == "FailedScheduling" and "placed-capped" in (e.message or "")
            for e in events_for(installed, ns, "second")
        )

    wait_for(refused, 60, "the extender's refusal of the second pod")
    assert pod_phase(installed, ns, "second") == "Pending"


def test_reclaim_evicts_once_per_victim_with_graceful_termination(installed: Cluster) -> None:
    """An overused queue gives back through the Eviction API; its victims ignore SIGTERM, so
    each stays Terminating for the grace period, and the loop must not evict it again."""
    ns = make_namespace(installed, "reclaim")
    make_queue(installed, "greedy")
    make_queue(installed, "starved")
    size = (free_millicpu(installed) - 100) // 4  # four pods fill the node, bar 100m
    for index in range(4):
        make_pod(installed, ns, f"greedy-{index}", "greedy", f"{size}m", ignore_term=True)
    for index in range(4):
        wait_for(
            lambda i=index: pod_phase(installed, ns, f"greedy-{i}") == "Running",
            60,
            f"greedy-{index} Running",
        )
    make_pod(installed, ns, "starved-0", "starved", f"{size}m")
    make_pod(installed, ns, "starved-1", "starved", f"{size}m")
    wait_for(
        lambda: (
            pod_phase(installed, ns, "starved-0")
            == pod_phase(installed, ns, "starved-1")
            == "Running"
        ),
        90,
        "the starved queue's pods Running after reclaim",
        interval=0.5,
    )
    evicted: dict[str, int] = {}
    for index in range(4):
        name = f"greedy-{index}"
        count = sum(
            e.count or 1 for e in events_for(installed, ns, name) if e.reason == "Reclaimed"
        )
        if count:
            evicted[name] = count
    assert len(evicted) == 2, evicted
    assert set(evicted.values()) == {1}, f"a victim evicted more than once: {evicted}"
    # Real graceful termination: the victims outlived SIGTERM by the grace period, and the
    # starved pods could start only once they were gone.
    evictions = []
    for name in evicted:
        events = events_for(installed, ns, name)
        assert any(e.reason == "Killing" for e in events), f"{name}: the kubelet never stopped it"
        evictions += [e.event_time or e.first_timestamp for e in events if e.reason == "Reclaimed"]
    started = min(
        installed.core.read_namespaced_pod(f"starved-{i}", ns).status.start_time for i in (0, 1)
    )
    waited = (started - min(evictions)).total_seconds()
    assert waited >= GRACE - 1, f"the starved pods started {waited:.1f}s after the evictions"


def test_queue_and_podgroup_status_are_written(installed: Cluster) -> None:
    ns = make_namespace(installed, "status")
    make_queue(installed, "written")
    installed.custom.create_namespaced_custom_object(
        GROUP,
        VERSION,
        ns,
        "podgroups",
        {
            "apiVersion": f"{GROUP}/{VERSION}",
            "kind": "PodGroup",
            "metadata": {"name": "pair", "namespace": ns},
            "spec": {"minMember": 2, "queue": "written"},
        },
    )
    for name in ("pair-0", "pair-1"):
        make_pod(installed, ns, name, "written", "50m", group="pair")

    def written() -> bool:
        group = installed.custom.get_namespaced_custom_object(
            GROUP, VERSION, ns, "podgroups", "pair"
        )
        queue = installed.custom.get_cluster_custom_object(GROUP, VERSION, "queues", "written")
        status = queue.get("status") or {}
        return (group.get("status") or {}).get("phase") == "Running" and status.get("running") == 1

    wait_for(written, 60, "PodGroup Running and the Queue counting it", interval=0.5)


def _kubectl_queue(cluster: Cluster, *args: str) -> subprocess.CompletedProcess[str]:
    exe = Path(sys.executable).parent / "kubectl-queue"
    return subprocess.run(
        [str(exe), *args, "--kubeconfig", str(cluster.cp.kubeconfig)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_kubectl_queue_and_the_status_page_through_the_service_proxy(installed: Cluster) -> None:
    make_queue(installed, "proxied", weight=3)

    def listed() -> bool:
        done = _kubectl_queue(installed, "queues", "-o", "json")
        return done.returncode == 0 and "proxied" in done.stdout

    wait_for(listed, 60, "kubectl queue (default Service) to list the queue", interval=1)
    status, page = installed.proxy("/")
    assert status == 200 and "proxied" in page
    status, body = installed.proxy("/api/v1/queues")
    assert status == 200 and "proxied" in body
    # --server still reaches it directly (the pod's address on the node's bridge).
    (pod,) = installed.release_pods()
    direct = subprocess.run(
        [
            str(Path(sys.executable).parent / "kubectl-queue"),
            "queues",
            "--server",
            f"http://{pod.status.pod_ip}:8890",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert direct.returncode == 0 and "proxied" in direct.stdout, direct.stderr


@dataclass
class LeaseSample:
    at: float
    holder: str
    renew: datetime | None
    acquire: datetime | None


def _watch_leases(
    cluster: Cluster, names: list[str], until: Any, timeout: float
) -> dict[str, list[LeaseSample]]:
    """Sample each Lease every 0.1 s until ``until()`` holds. ``until`` is asked *before* the
    round of samples, so the round that ends the loop is read after the condition held: a
    handover that ``until`` saw is always in the samples, however the two reads interleave."""
    samples: dict[str, list[LeaseSample]] = {n: [] for n in names}
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        done = until()
        for name in names:
            with contextlib.suppress(client.ApiException):
                spec = cluster.coordination.read_namespaced_lease(name, NAMESPACE).spec
                samples[name].append(
                    LeaseSample(
                        time.monotonic(),
                        spec.holder_identity or "",
                        spec.renew_time,
                        spec.acquire_time,
                    )
                )
        if done:
            break
        time.sleep(0.1)
    return samples


def _longest_gap(samples: list[LeaseSample]) -> float:
    """Seconds between the old holder's last renewal and the next holder's acquisition,
    taken from the Lease's own times (an empty holder is a released lease: no one leads)."""
    gap = 0.0
    for before, after in itertools.pairwise(samples):
        if after.holder and after.holder != before.holder and after.acquire is not None:
            last = before.renew or before.acquire
            if last is not None:
                gap = max(gap, (after.acquire - last).total_seconds())
    return gap


def test_helm_upgrade_rolls_without_a_leadership_gap(installed: Cluster) -> None:
    """`helm upgrade` with a changed pod template: the Deployment surges a new pod, which
    must lead soon after the old one stopped leading: the old pod's kube-scheduler releases
    its Lease on SIGTERM (and its extender resigns first). The chart runs the extender in
    sidecar mode: it leads exactly while its own kube-scheduler holds that Lease, so the
    scheduler Lease's handover is the pair's. kube-scheduler's election retries on a jittered
    period (client-go: the retry period plus up to 1.2 times it), so the bound is that."""
    (old,) = installed.release_pods()
    leases = ["queue-scheduler"]
    wait_for(
        lambda: all(
            installed.coordination.read_namespaced_lease(n, NAMESPACE).spec.holder_identity
            for n in leases
        ),
        60,
        "both leases held",
    )
    installed.apply(chart_documents({"podAnnotations": {"rollout": "2"}}))

    def rolled() -> bool:
        pods = installed.release_pods()
        return (
            len(pods) == 1
            and pods[0].metadata.name != old.metadata.name
            and all(
                installed.coordination.read_namespaced_lease(n, NAMESPACE).spec.holder_identity
                not in ("", None)
                and pods[0].metadata.name
                in installed.coordination.read_namespaced_lease(n, NAMESPACE).spec.holder_identity
                for n in leases
            )
        )

    samples = _watch_leases(installed, leases, rolled, timeout=180)
    assert rolled(), "the upgrade did not roll to a new leading pod"
    installed.wait_rolled_out()
    for name, taken in samples.items():
        holders = [s.holder for s in taken if s.holder]
        assert len(set(holders)) >= 2, f"{name}: no change of leader was seen ({holders[:3]})"
    gaps = {name: _longest_gap(s) for name, s in samples.items()}
    print(f"FIGURES leadership gap during helm upgrade (s): {gaps}")
    assert all(gap <= RETRY_PERIOD * 2.2 for gap in gaps.values()), gaps


def test_uninstall_leaves_nothing_behind(installed: Cluster) -> None:
    documents = chart_documents()
    installed.delete(documents)
    wait_for(
        lambda: not any(installed.exists(d) for d in documents) and not installed.release_pods(),
        120,
        "every object of the chart and its pods gone",
        interval=1,
    )
    labelled = installed.apps.list_namespaced_replica_set(NAMESPACE, label_selector=SELECTOR)
    assert labelled.items == []
    rbac = client.RbacAuthorizationV1Api(installed.api)
    for listed in (rbac.list_cluster_role(), rbac.list_cluster_role_binding()):
        assert [o.metadata.name for o in listed.items if o.metadata.name.startswith(RELEASE)] == []
    # The components' Leases are theirs, not the chart's (helm uninstall keeps them too). The
    # extender's may still name the deleted pod until it expires: its RBAC is deleted while
    # the pod terminates, as helm uninstall does it (seen here; see the README).
    leases = installed.coordination.list_namespaced_lease(NAMESPACE).items
    assert {lease.metadata.name for lease in leases} <= {"queue-scheduler", RELEASE}
    print(
        "FIGURES leases after uninstall:",
        {lease.metadata.name: lease.spec.holder_identity or "" for lease in leases},
    )


def test_a_dry_run_install_decides_but_evicts_nothing(cluster: Cluster) -> None:
    """`helm install --set reclaimLoop.dryRun=true` (after the uninstall): the loop names its
    victims in WouldReclaim events and evicts none of them."""
    cluster.delete_workloads()
    documents = chart_documents({"reclaimLoop": {"enabled": True, "dryRun": True}})
    cluster.apply(documents)
    try:
        cluster.wait_rolled_out()
        ns = make_namespace(cluster, "dry-run")
        make_queue(cluster, "dry-greedy")
        make_queue(cluster, "dry-starved")
        # The shape of the reclaim test above, where the loop does evict.
        size = (free_millicpu(cluster) - 100) // 4
        greedy = [make_pod(cluster, ns, f"greedy-{i}", "dry-greedy", f"{size}m") for i in range(4)]
        for name in greedy:
            wait_for(lambda n=name: pod_phase(cluster, ns, n) == "Running", 60, f"{name} Running")
        starved = [make_pod(cluster, ns, f"starved-{i}", "dry-starved", f"{size}m") for i in (0, 1)]

        def decided() -> list[str]:
            return [
                name
                for name in greedy
                if any(e.reason == "WouldReclaim" for e in events_for(cluster, ns, name))
            ]

        # The new pod may wait out the Lease the uninstalled one left behind (15 s).
        named = wait_for(decided, 90, "a WouldReclaim event on a victim", interval=1)
        time.sleep(5)  # five more cycles of the loop, each of which would evict if it could
        for name in greedy:
            pod = cluster.core.read_namespaced_pod(name, ns)
            assert pod.metadata.deletion_timestamp is None, f"{name} was evicted"
            assert not [e for e in events_for(cluster, ns, name) if e.reason == "Reclaimed"]
        assert named and all(pod_phase(cluster, ns, name) == "Pending" for name in starved)
    finally:
        cluster.delete(documents)
    wait_for(lambda: not cluster.release_pods(), 120, "the dry-run install's pods gone", interval=1)


# --- deploy/ -----------------------------------------------------------------------------


def test_kubectl_apply_k_deploy_runs_and_places_a_pod(cluster: Cluster) -> None:
    """deploy/ as it is (image names and pull policies included), after the chart is gone."""
    cluster.delete_workloads()
    documents = load_kustomization()
    cluster.apply(documents)
    try:
        cluster.wait_rolled_out()
        ns = make_namespace(cluster, "plain")
        make_queue(cluster, "plain")
        make_queue(cluster, "plain-capped", capability={"cpu": "100m"})
        make_pod(cluster, ns, "placed", "plain", "50m")
        make_pod(cluster, ns, "refused", "plain-capped", "200m")
        wait_for(lambda: pod_phase(cluster, ns, "placed") == "Running", 60, "the pod Running")
        wait_for(
            lambda: any(e.reason == "FailedScheduling" for e in events_for(cluster, ns, "refused")),
            60,
            "the extender's refusal of the pod above its queue's capability",
        )
        status, _ = cluster.proxy("/api/v1/queues")
        assert status == 200
    finally:
        cluster.delete([d for d in documents if d["kind"] != "Namespace"])
    wait_for(lambda: not cluster.release_pods(), 120, "deploy/'s pods gone", interval=1)
