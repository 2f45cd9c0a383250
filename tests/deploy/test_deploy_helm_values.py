"""The chart's values: the schema refuses bad ones, and each hygiene switch renders what it says
(ServiceAccount, security contexts, disruption budget and spread, the kube-scheduler tag)."""

from __future__ import annotations

from typing import Any

import helm_python as helm
import pytest
import yaml

from .deploy_manifests import (
    CHART_DIR,
    NAMESPACE,
    containers,
    find,
    find_all,
    pod_spec,
    render_chart,
    rendered_documents,
)

#: Values the schema must refuse, each with the path Helm's error names.
BAD_VALUES: dict[str, tuple[dict[str, Any], str]] = {
    "weight-not-a-number": (
        {"scheduler": {"extender": {"weight": "abc"}}},
        "/scheduler/extender/weight",
    ),
    "weight-zero": ({"scheduler": {"extender": {"weight": 0}}}, "/scheduler/extender/weight"),
    "unknown-top-level-key": ({"replicas": 2}, "additional properties 'replicas'"),
    "unknown-nested-key": ({"metrics": {"enable": True}}, "additional properties 'enable'"),
    "replicas-as-string": ({"replicaCount": "two"}, "/replicaCount"),
    "switch-as-string": ({"reclaimLoop": {"enabled": "yes"}}, "/reclaimLoop/enabled"),
    "eviction-cap-negative": ({"reclaimLoop": {"maxEvictions": -1}}, "/reclaimLoop/maxEvictions"),
    "eviction-rate-as-string": (
        {"reclaimLoop": {"maxEvictionsPerMinute": "fifty"}},
        "/reclaimLoop/maxEvictionsPerMinute",
    ),
    "eviction-timeout-too-short": (
        {"reclaimLoop": {"evictionTimeout": 0.5}},
        "/reclaimLoop/evictionTimeout",
    ),
    "port-out-of-range": ({"extender": {"port": 70000}}, "/extender/port"),
    "metrics-port-as-string": ({"metrics": {"port": "http"}}, "/metrics/port"),
    "log-format-unknown": ({"extender": {"logFormat": "xml"}}, "/extender/logFormat"),
    "on-error-unknown": ({"extender": {"onError": "ignore"}}, "/extender/onError"),
    "timeout-not-a-duration": (
        {"scheduler": {"extender": {"httpTimeout": "5 seconds"}}},
        "/scheduler/extender/httpTimeout",
    ),
    "interval-not-a-duration": (
        {"metrics": {"serviceMonitor": {"interval": "often"}}},
        "/metrics/serviceMonitor/interval",
    ),
    "scheme-unknown": (
        {"metrics": {"podMonitor": {"scheme": "ftp"}}},
        "/metrics/podMonitor/scheme",
    ),
    "tolerations-not-a-list": ({"tolerations": {"key": "x"}}, "/tolerations"),
    "security-context-not-an-object": ({"securityContext": "restricted"}, "/securityContext"),
    "extra-args-not-strings": ({"extender": {"extraArgs": [1]}}, "/extender/extraArgs/0"),
    "engine-config-empty": ({"engineConfig": ""}, "/engineConfig"),
    # What the extender refuses at start: the schema refuses it at install instead.
    "verbosity-above-ten": ({"extender": {"verbosity": 11}}, "/extender/verbosity"),
    "verbosity-negative": ({"extender": {"verbosity": -1}}, "/extender/verbosity"),
    "engine-config-not-volcano": ({"engineConfig": "foo: bar\n"}, "/engineConfig"),
    "engine-config-unknown-action": (
        {"engineConfig": 'actions: "enqueue, alocate"\ntiers:\n- plugins:\n  - name: gang\n'},
        "/engineConfig",
    ),
    "engine-config-no-plugins": (
        {"engineConfig": 'actions: "allocate"\ntiers: []\n'},
        "/engineConfig",
    ),
    "listen-all-without-tls": ({"extender": {"listenAll": True}}, "/extender/tls/enabled"),
    "listen-all-without-client-ca": (
        {"extender": {"listenAll": True, "tls": {"enabled": True, "secretName": "x"}}},
        "/extender/tls/clientAuth",
    ),
    "dry-run-as-string": ({"reclaimLoop": {"enabled": True, "dryRun": "yes"}}, "/reclaimLoop"),
    "status-port-out-of-range": ({"statusPage": {"port": 0}}, "/statusPage/port"),
    "status-peers-not-a-list": ({"statusPage": {"from": "everyone"}}, "/statusPage/from"),
}


@pytest.mark.parametrize("case", sorted(BAD_VALUES))
def test_template_refuses_bad_values(case: str) -> None:
    values, where = BAD_VALUES[case]
    with pytest.raises(helm.HelmValuesError, match="schema") as caught:
        render_chart(values)
    assert where in str(caught.value)


@pytest.mark.parametrize("case", ["weight-not-a-number", "unknown-top-level-key"])
def test_lint_refuses_bad_values(case: str) -> None:
    values, where = BAD_VALUES[case]
    report = helm.lint(CHART_DIR, values, strict=True, namespace=NAMESPACE)
    assert any(where in error for error in report["errors"])


def test_schema_accepts_every_default_and_the_documented_overrides() -> None:
    """The defaults pass (else nothing would install), and so do the shapes values.yaml's
    comments suggest: null to drop a fixed ID, a Secret reference for the token."""
    defaults = yaml.safe_load((CHART_DIR / "values.yaml").read_text())
    with helm.Chart.load(CHART_DIR) as chart:
        chart.validate_schema(defaults)
    rendered_documents(
        {
            "podSecurityContext": {"runAsUser": None, "fsGroup": None},
            "scheduler": {"extender": {"httpTimeout": "1m30s"}},
            "metrics": {
                "enabled": True,
                "serviceMonitor": {
                    "enabled": True,
                    "interval": "1m",
                    "authorization": {"type": "Bearer", "credentials": {"name": "t", "key": "k"}},
                },
            },
        }
    )


def test_service_account_can_be_brought() -> None:
    documents = rendered_documents({"serviceAccount": {"create": False, "name": "platform-sa"}})
    assert find_all(documents, "ServiceAccount") == []
    assert pod_spec(documents)["serviceAccountName"] == "platform-sa"
    for binding in find_all(documents, "ClusterRoleBinding") + find_all(documents, "RoleBinding"):
        assert [s["name"] for s in binding["subjects"]] == ["platform-sa"]


def test_service_account_not_created_needs_a_name() -> None:
    with pytest.raises(helm.HelmError, match=r"serviceAccount\.name is required"):
        render_chart({"serviceAccount": {"create": False}})


def test_service_account_annotations_are_passed() -> None:
    annotations = {"eks.amazonaws.com/role-arn": "arn:aws:iam::1:role/x"}
    documents = rendered_documents({"serviceAccount": {"annotations": annotations}})
    assert find(documents, "ServiceAccount")["metadata"]["annotations"] == annotations


def test_security_contexts_are_overridable_for_assigned_uids() -> None:
    """OpenShift's restricted SCC assigns the UID: the fixed IDs must be removable while the
    rest of the lock-down stays."""
    documents = rendered_documents(
        {
            "podSecurityContext": {"runAsUser": None, "runAsGroup": None, "fsGroup": None},
            "securityContext": {"runAsUser": None, "runAsGroup": None},
        }
    )
    pod = pod_spec(documents)["securityContext"]
    assert pod == {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}}
    for name, container in containers(documents).items():
        context = container["securityContext"]
        assert "runAsUser" not in context and "runAsGroup" not in context, name
        assert context["readOnlyRootFilesystem"] is True, name
        assert context["capabilities"] == {"drop": ["ALL"]}, name


def test_single_replica_has_no_disruption_budget_or_spread() -> None:
    documents = rendered_documents({})
    assert find_all(documents, "PodDisruptionBudget") == []
    assert "topologySpreadConstraints" not in pod_spec(documents)


def test_replicas_get_a_disruption_budget_and_a_zone_spread() -> None:
    documents = rendered_documents({"replicaCount": 3})
    selector = find(documents, "Deployment")["spec"]["selector"]
    budget = find(documents, "PodDisruptionBudget")
    assert budget["spec"] == {"minAvailable": 1, "selector": selector}
    (spread,) = pod_spec(documents)["topologySpreadConstraints"]
    assert spread["topologyKey"] == "topology.kubernetes.io/zone"
    assert spread["whenUnsatisfiable"] == "ScheduleAnyway"
    assert spread["labelSelector"] == selector


def test_spread_and_budget_are_overridable() -> None:
    own = [
        {
            "maxSkew": 1,
            "topologyKey": "kubernetes.io/hostname",
            "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": {"app": "x"}},
        }
    ]
    documents = rendered_documents(
        {
            "replicaCount": 2,
            "topologySpreadConstraints": own,
            "podDisruptionBudget": {"enabled": False},
        }
    )
    assert pod_spec(documents)["topologySpreadConstraints"] == own
    assert find_all(documents, "PodDisruptionBudget") == []


@pytest.mark.parametrize(
    ("api_server", "tag"),
    [
        ("v1.36.2", "v1.36.2"),
        ("v1.31.4-eks-1a2b3c", "v1.31.4"),
        ("v1.33.1+k3s1", "v1.33.1"),
        ("v1.34.0-gke.1200", "v1.34.0"),
    ],
)
def test_kube_scheduler_tag_follows_the_api_server(api_server: str, tag: str) -> None:
    """Never newer than the API server (the version-skew policy): its own release by default."""
    documents = rendered_documents({}, kube_version=api_server)
    assert (
        containers(documents)["kube-scheduler"]["image"] == f"registry.k8s.io/kube-scheduler:{tag}"
    )


def test_kube_scheduler_tag_is_overridable() -> None:
    documents = rendered_documents(
        {"scheduler": {"image": {"tag": "v1.35.9"}}}, kube_version="v1.36.2"
    )
    assert (
        containers(documents)["kube-scheduler"]["image"] == "registry.k8s.io/kube-scheduler:v1.35.9"
    )


def test_chart_declares_the_kubernetes_versions_it_supports() -> None:
    chart = yaml.safe_load((CHART_DIR / "Chart.yaml").read_text())
    assert chart["kubeVersion"].startswith(">=1.")
