"""A control plane in `--authorization-mode=RBAC` with the extender running as the chart's
ServiceAccount, bound to exactly the roles the chart renders, and started with the chart's own
extender arguments. A permission the chart forgets then fails a test here, not a cluster.

The ServiceAccount's identity is a static token on the API server (user
`system:serviceaccount:<ns>:<sa>`, groups `system:serviceaccounts[:<ns>]`): RBAC matches a
ServiceAccount subject by that user name, and this control plane runs no token controller.
kube-scheduler keeps the admin identity: it is the stock binary, with the stock roles.

Writer features add their switch to `CHART_VALUES` (and their flags reach the extender through
the chart's args), and their tests use the `rbac_stack`/`rbac_kube` fixtures.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kubernetes import client

from tests.deploy.deploy_manifests import (
    NAMESPACE,
    RELEASE,
    containers,
    engine_configuration_text,
    find_all,
    rendered_documents,
    scheduler_configuration,
)
from tests.e2e.controlplane import ControlPlane, Extender
from tests.ports import free_port

#: The chart's values for this run: every switch whose rights the tests here exercise.
CHART_VALUES: dict[str, Any] = {"extender": {"delegatedAuth": {"enabled": True}}}

SERVICE_ACCOUNT = RELEASE
EXTENDER_USER = f"system:serviceaccount:{NAMESPACE}:{SERVICE_ACCOUNT}"
EXTENDER_TOKEN = "e2e-extender-sa-token"

#: Callers of the extender's /metrics under --delegated-auth: one that a cluster admin has
#: bound to the chart's metrics-reader ClusterRole, one that nobody has granted anything.
PROMETHEUS_USER = "system:serviceaccount:monitoring:prometheus"
PROMETHEUS_TOKEN = "e2e-prometheus-token"
STRANGER_USER = "system:serviceaccount:default:stranger"
STRANGER_TOKEN = "e2e-stranger-token"

RBAC_KINDS = ("ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding")
#: Flags of the chart's container that only make sense inside a pod.
POD_ONLY_FLAGS = {"--in-cluster": 0, "--host": 1, "--port": 1, "--conf": 1}
#: The chart's side listeners, on fixed ports of every address: each extender started here
#: gets them on free loopback ports instead, so that two extenders of one test (the chart's
#: ServiceAccount and a stranger) never contend for one port (the second would exit).
SIDE_LISTENER_FLAGS = ("--metrics-bind-address", "--status-address")


def _sa_groups(user: str) -> tuple[str, ...]:
    namespace = user.split(":")[2]
    return ("system:serviceaccounts", f"system:serviceaccounts:{namespace}")


def register_identities(cp: ControlPlane) -> None:
    """The static tokens, before the API server starts."""
    for token, user in (
        (EXTENDER_TOKEN, EXTENDER_USER),
        (PROMETHEUS_TOKEN, PROMETHEUS_USER),
        (STRANGER_TOKEN, STRANGER_USER),
    ):
        cp.static_tokens[token] = (user, _sa_groups(user))


def chart_documents(values: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    return rendered_documents(CHART_VALUES if values is None else values)


def apply_rbac(api: Any, documents: list[dict[str, Any]]) -> list[str]:
    """Creates the chart's namespace, ServiceAccount, roles and bindings; returns their names."""
    core, rbac = client.CoreV1Api(api), client.RbacAuthorizationV1Api(api)
    core.create_namespace({"metadata": {"name": NAMESPACE}})
    created = []
    for kind in RBAC_KINDS:
        for doc in find_all(documents, kind):
            namespace = doc["metadata"].get("namespace")
            if kind == "ServiceAccount":
                core.create_namespaced_service_account(namespace, doc)
            elif kind == "ClusterRole":
                rbac.create_cluster_role(doc)
            elif kind == "ClusterRoleBinding":
                rbac.create_cluster_role_binding(doc)
            elif kind == "Role":
                rbac.create_namespaced_role(namespace, doc)
            else:
                rbac.create_namespaced_role_binding(namespace, doc)
            created.append(f"{kind}/{doc['metadata']['name']}")
    return created


def bind_metrics_reader(api: Any, user: str) -> None:
    """What the README tells a cluster admin to do for Prometheus."""
    client.RbacAuthorizationV1Api(api).create_cluster_role_binding(
        {
            "metadata": {"name": "e2e-prometheus-reads-queue-extender-metrics"},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": f"{RELEASE}:metrics-reader",
            },
            "subjects": [{"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": user}],
        }
    )


def extender_args(documents: list[dict[str, Any]], conf_dir: Path) -> list[str]:
    """The chart's `queue-extender serve` arguments, less what only a pod can use; the engine
    configuration is the chart's ConfigMap written to a file."""
    args = list(containers(documents)["queue-extender"]["args"])
    assert args[0] == "serve"
    kept: list[str] = []
    rest = iter(args[1:])
    for arg in rest:
        if arg in POD_ONLY_FLAGS:
            for _ in range(POD_ONLY_FLAGS[arg]):
                next(rest)
            continue
        kept.append(arg)
        if arg in SIDE_LISTENER_FLAGS:
            next(rest)
            kept.append(f"127.0.0.1:{free_port()}")
    conf = conf_dir / "volcano-scheduler.conf"
    conf.write_text(engine_configuration_text(documents))
    return [*kept, "--conf", str(conf)]


class RbacStack:
    """The RBAC control plane's extender (as the chart's ServiceAccount) and kube-scheduler."""

    def __init__(self, cp: ControlPlane, api: Any) -> None:
        self.cp = cp
        self.documents = chart_documents()
        self.created = apply_rbac(api, self.documents)
        bind_metrics_reader(api, PROMETHEUS_USER)
        self.kubeconfig = cp.user_kubeconfig(EXTENDER_TOKEN, "extender-sa")
        self.args = extender_args(self.documents, cp.dir)
        self.extender: Extender = cp.start_extender(
            "extender-sa", args=self.args, kubeconfig=self.kubeconfig
        ).wait_ready()
        # Elected on the chart's own Lease, as the chart runs it: the extender beside it
        # (same host name) follows that Lease as the ServiceAccount and leads with it.
        election = scheduler_configuration(self.documents)["leaderElection"]
        self.scheduler = cp.start_scheduler(
            "kube-scheduler-rbac",
            ("default-scheduler", "queue-scheduler"),
            self.extender.url + "/",
            leader_election={
                "leaderElect": True,
                "resourceName": election["resourceName"],
                "resourceNamespace": election["resourceNamespace"],
            },
        )

    def log(self) -> str:
        return self.extender.process.log_path.read_text(errors="replace")
