"""The helm chart: it lints, renders every layout, and its metrics layout IS deploy/."""

from __future__ import annotations

import re
import tomllib
from typing import Any

import helm_python as helm
import pytest
import yaml

from app.cli.query import DEFAULT_SERVICE

from .deploy_manifests import (
    CHART_DIR,
    NAMESPACE,
    ROOT,
    Manifest,
    containers,
    find,
    find_all,
    load_kustomization,
    object_key,
    option_value,
    pod_spec,
    render_chart,
    rendered_documents,
    without_helm_bookkeeping,
)
from .layouts import CHART_LAYOUTS, layout_documents

VALUES_REFERENCE = re.compile(r"\.Values((?:\.[A-Za-z_]\w*)+)")
ALIAS_DEFINITION = re.compile(r"\$(\w+)\s*:=\s*\.Values((?:\.[A-Za-z_]\w*)+)")
ALIAS_REFERENCE = re.compile(r"\$(\w+)((?:\.[A-Za-z_]\w*)+)")


def _chart_values() -> dict[str, Any]:
    values: dict[str, Any] = yaml.safe_load((CHART_DIR / "values.yaml").read_text())
    return values


def _has_path(values: dict[str, Any], dotted: str) -> bool:
    node: Any = values
    for key in dotted.strip(".").split("."):
        if not isinstance(node, dict) or key not in node:
            return False
        node = node[key]
    return True


@pytest.mark.parametrize("layout", list(CHART_LAYOUTS))
def test_lint_is_clean(layout: str) -> None:
    report = helm.lint(
        CHART_DIR,
        CHART_LAYOUTS[layout],
        strict=True,
        namespace=NAMESPACE,
        kube_version="v1.36.0",
    )
    assert report["errors"] == []
    # Severity 1 is information ("icon is recommended"); warnings and errors fail.
    assert [m for m in report["messages"] if m["severity"] >= 2] == []


def test_lint_reports_a_broken_template(tmp_path: Any) -> None:
    """The lint check above can fail: a chart with a template error is reported."""
    broken = tmp_path / "kube-queue-extender"
    with helm.Chart.load(CHART_DIR) as chart:
        chart.save_dir(tmp_path)
    (broken / "templates" / "broken.yaml").write_text("kind: {{ .Values.nope.missing }}\n")
    report = helm.lint(broken, strict=True, namespace=NAMESPACE)
    assert report["errors"] or [m for m in report["messages"] if m["severity"] == 3]


def test_chart_and_values_parse() -> None:
    chart = yaml.safe_load((CHART_DIR / "Chart.yaml").read_text())
    assert chart["apiVersion"] == "v2"
    assert chart["name"] == "kube-queue-extender"
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert chart["appVersion"] == project["version"]
    values = _chart_values()
    assert values["schedulerName"] == "queue-scheduler"
    assert values["metrics"]["enabled"] is False
    assert values["extender"]["listenAll"] is False
    assert values["reclaimLoop"]["enabled"] is True


def test_templates_reference_only_defined_values() -> None:
    """Helm renders a misspelt value as empty without a word: catch it here."""
    values = _chart_values()
    missing = []
    for template in sorted((CHART_DIR / "templates").iterdir()):
        text = template.read_text()
        for match in VALUES_REFERENCE.finditer(text):
            if not _has_path(values, match.group(1)):
                missing.append(f"{template.name}: .Values{match.group(1)}")
        aliases = {m.group(1): m.group(2) for m in ALIAS_DEFINITION.finditer(text)}
        for match in ALIAS_REFERENCE.finditer(text):
            name, rest = match.group(1), match.group(2)
            known = name in aliases and not rest.startswith(".Values")
            if known and not _has_path(values, aliases[name] + rest):
                missing.append(f"{template.name}: ${name}{rest}")
    assert missing == []


def test_deploy_is_the_chart_metrics_layout() -> None:
    """deploy/ must not drift from the chart: same objects, field for field (Helm labels aside)."""
    plain = {object_key(d): d for d in load_kustomization() if d["kind"] != "Namespace"}
    rendered = {
        object_key(d): without_helm_bookkeeping(d) for d in layout_documents("chart-metrics")
    }
    assert sorted(plain) == sorted(rendered)
    for key, document in plain.items():
        assert _yaml_data_parsed(document) == _yaml_data_parsed(rendered[key]), key


def _yaml_data_parsed(document: Manifest) -> Manifest:
    """A ConfigMap's ``*.yaml`` entries as the objects they hold: deploy/'s come from
    PyYAML (the renderer), the chart's from Helm's toYaml, which lay out the same object
    differently."""
    if document["kind"] != "ConfigMap":
        return document
    data = {
        key: yaml.safe_load(value) if key.endswith(".yaml") else value
        for key, value in document.get("data", {}).items()
    }
    return {**document, "data": data}


def test_default_layout_keeps_the_verbs_on_loopback_and_serves_the_status_page() -> None:
    """By default only the status listener (page and read-only API, no verbs) leaves
    loopback, behind the Service `kubectl queue` defaults to, open to every peer (the API
    server's service proxy has no selectable address)."""
    documents = layout_documents("chart-default")
    extender = containers(documents)["queue-extender"]
    assert option_value(extender["args"], "--host") == "127.0.0.1"
    assert option_value(extender["args"], "--status-address") == "0.0.0.0:8890"
    assert option_value(extender["args"], "--metrics-bind-address") is None
    assert extender["ports"] == [{"name": "status", "containerPort": 8890, "protocol": "TCP"}]
    (service,) = find_all(documents, "Service")
    assert service["metadata"]["name"] == "kube-queue-extender-status"
    assert service["spec"]["ports"] == [
        {"name": "status", "port": 8890, "targetPort": "status", "protocol": "TCP"}
    ]
    namespace, _, name_port = DEFAULT_SERVICE.partition("/")
    assert (namespace, name_port) == (
        service["metadata"]["namespace"],
        f"{service['metadata']['name']}:{service['spec']['ports'][0]['port']}",
    )
    (rule,) = find(documents, "NetworkPolicy")["spec"]["ingress"]
    assert rule == {"ports": [{"port": "status", "protocol": "TCP"}]}


def test_closed_layout_opens_nothing_beyond_loopback() -> None:
    documents = layout_documents("chart-closed-dry-run")
    extender = containers(documents)["queue-extender"]
    assert "ports" not in extender
    assert option_value(extender["args"], "--status-address") is None
    assert find_all(documents, "Service") == []
    assert find_all(documents, "NetworkPolicy") == []


@pytest.mark.parametrize(
    ("values", "flags"),
    [
        ({}, ["--reclaim"]),
        ({"reclaimLoop": {"enabled": True, "dryRun": True}}, ["--reclaim", "--reclaim-dry-run"]),
        ({"reclaimLoop": {"enabled": False, "dryRun": True}}, []),
    ],
)
def test_reclaim_dry_run_value_passes_the_flag(values: dict[str, Any], flags: list[str]) -> None:
    args = containers(rendered_documents(values))["queue-extender"]["args"]
    assert [a for a in args if a in ("--reclaim", "--reclaim-dry-run")] == flags


def test_status_rule_takes_its_own_peers() -> None:
    peers = [{"ipBlock": {"cidr": "10.0.0.0/8"}}]
    documents = rendered_documents({"statusPage": {"from": peers}})
    (rule,) = find(documents, "NetworkPolicy")["spec"]["ingress"]
    assert rule == {"ports": [{"port": "status", "protocol": "TCP"}], "from": peers}
    nobody = rendered_documents({"statusPage": {"from": []}})
    assert find(nobody, "NetworkPolicy")["spec"]["ingress"] == []


@pytest.mark.parametrize("layout", ["chart-metrics", "chart-mtls-reclaim-ha"])
def test_metrics_layout_exposes_only_the_metrics_listener(layout: str) -> None:
    """Prometheus reaches a second listener; the verbs' listener stays on 127.0.0.1."""
    documents = layout_documents(layout)
    extender = containers(documents)["queue-extender"]
    assert option_value(extender["args"], "--host") == "127.0.0.1"
    verbs_port = int(option_value(extender["args"], "--port") or 0)
    bind = option_value(extender["args"], "--metrics-bind-address") or ""
    host, _, metrics_port = bind.rpartition(":")
    assert host == "0.0.0.0"
    assert int(metrics_port) == 8889 != verbs_port
    assert extender["ports"] == [
        {"name": "metrics", "containerPort": int(metrics_port), "protocol": "TCP"},
        {"name": "status", "containerPort": 8890, "protocol": "TCP"},
    ]
    service = find(documents, "Service", "kube-queue-extender-metrics")
    annotations = service["metadata"]["annotations"]
    assert annotations["prometheus.io/scrape"] == "true"
    assert annotations["prometheus.io/port"] == metrics_port
    assert annotations["prometheus.io/path"] == "/metrics"
    assert annotations["prometheus.io/scheme"] == "http"
    assert service["spec"]["ports"] == [
        {"name": "metrics", "port": 8889, "targetPort": "metrics", "protocol": "TCP"}
    ]
    pod_labels = find(documents, "Deployment")["spec"]["template"]["metadata"]["labels"]
    assert service["spec"]["selector"].items() <= pod_labels.items()
    policy = find(documents, "NetworkPolicy")
    assert policy["spec"]["podSelector"]["matchLabels"].items() <= pod_labels.items()
    assert policy["spec"]["policyTypes"] == ["Ingress"]
    rule, status_rule = policy["spec"]["ingress"]
    assert status_rule == {"ports": [{"port": "status", "protocol": "TCP"}]}
    assert rule["ports"] == [{"port": "metrics", "protocol": "TCP"}]
    assert rule["from"] == [
        {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}}}
    ]


def test_metrics_port_is_configurable() -> None:
    documents = rendered_documents(
        {"metrics": {"enabled": True, "port": 9100, "service": {"port": 80}}}
    )
    extender = containers(documents)["queue-extender"]
    assert option_value(extender["args"], "--metrics-bind-address") == "0.0.0.0:9100"
    assert extender["ports"][0]["containerPort"] == 9100
    service = find(documents, "Service", "kube-queue-extender-metrics")
    assert service["metadata"]["annotations"]["prometheus.io/port"] == "9100"
    assert service["spec"]["ports"][0]["port"] == 80


def test_listen_all_with_metrics_guards_both_ports() -> None:
    documents = rendered_documents(
        {
            "metrics": {"enabled": True},
            "statusPage": {"enabled": False},
            "extender": {
                "listenAll": True,
                "tls": {"enabled": True, "secretName": "tls", "clientAuth": True},
            },
        }
    )
    extender = containers(documents)["queue-extender"]
    assert option_value(extender["args"], "--host") == "0.0.0.0"
    assert {p["name"]: p["containerPort"] for p in extender["ports"]} == {
        "extender": 8888,
        "metrics": 8889,
    }
    (rule,) = find(documents, "NetworkPolicy")["spec"]["ingress"]
    assert [p["port"] for p in rule["ports"]] == ["metrics", "extender"]


def test_listen_all_without_peers_admits_no_one() -> None:
    """An empty peer list must mean nobody, not everybody (an ingress rule with no `from`)."""
    documents = layout_documents("chart-listen-all-no-peers")
    assert find(documents, "NetworkPolicy")["spec"]["ingress"] == []
    assert find_all(documents, "Service") == []
    assert option_value(containers(documents)["queue-extender"]["args"], "--host") == "0.0.0.0"


def test_mutual_tls_layout_wires_both_sides() -> None:
    documents = layout_documents("chart-mtls-reclaim-ha")
    extender = containers(documents)["queue-extender"]
    args = extender["args"]
    assert option_value(args, "--tls-cert") == "/etc/queue-extender-tls/tls.crt"
    assert option_value(args, "--tls-key") == "/etc/queue-extender-tls/tls.key"
    assert option_value(args, "--client-ca") == "/etc/queue-extender-tls/ca.crt"
    assert option_value(args, "--log-format") == "json"
    assert "--manage-annotated" in args
    for probe in ("livenessProbe", "readinessProbe"):
        command = extender[probe]["exec"]["command"]
        assert option_value(command, "--cert") == "/etc/queue-extender-tls/tls.crt"
        assert option_value(command, "--key") == "/etc/queue-extender-tls/tls.key"
        assert any(a.startswith("https://127.0.0.1:") for a in command)
    volumes = {v["name"]: v for v in pod_spec(documents)["volumes"]}
    assert volumes["extender-tls"]["secret"]["secretName"] == "queue-extender-tls"
    affinity = pod_spec(documents)["affinity"]["podAntiAffinity"]
    assert affinity["preferredDuringSchedulingIgnoredDuringExecution"]


def test_tls_without_a_secret_is_refused() -> None:
    with pytest.raises(helm.HelmError, match=r"extender\.tls\.secretName is required"):
        render_chart({"extender": {"tls": {"enabled": True}}})


def test_config_change_rolls_the_pods() -> None:
    """The pod template carries a checksum of the ConfigMaps, so an edit restarts the pods."""

    def checksum(values: dict[str, Any]) -> str:
        deployment = find(rendered_documents(values), "Deployment")
        value: str = deployment["spec"]["template"]["metadata"]["annotations"]["checksum/config"]
        return value

    base = checksum({})
    assert checksum({}) == base
    engine = 'actions: "enqueue, allocate"\ntiers:\n- plugins:\n  - name: gang\n'
    assert checksum({"engineConfig": engine}) != base
    assert checksum({"scheduler": {"extender": {"httpTimeout": "7s"}}}) != base
    assert checksum({"scheduler": {"scoring": "extender"}}) != base


def test_two_releases_do_not_collide() -> None:
    """Cluster-scoped names carry the release's full name."""
    with helm.Chart.load(CHART_DIR) as chart:
        first = chart.render(name="queues-a", namespace="a", is_install=True)
        second = chart.render(name="queues-b", namespace="b", is_install=True)

    def cluster_names(rendered: dict[str, str]) -> set[str]:
        names = set()
        for path, text in rendered.items():
            if not path.endswith(".yaml"):
                continue
            for document in yaml.safe_load_all(text):
                if document and document["kind"].startswith("Cluster"):
                    names.add(document["metadata"]["name"])
        return names

    assert cluster_names(first)
    assert not cluster_names(first) & cluster_names(second)


def test_notes_tell_how_to_opt_in() -> None:
    notes = render_chart({})["kube-queue-extender/templates/NOTES.txt"]
    assert "schedulerName: queue-scheduler" in notes
    assert "queues.scheduling.volcano.sh" in notes


def test_deploy_layout_documents_match_count(documents: list[Manifest]) -> None:
    """Every layout has exactly one Deployment with the two containers, in this order."""
    assert len(find_all(documents, "Deployment")) == 1
    assert [c["name"] for c in pod_spec(documents)["containers"]] == [
        "kube-scheduler",
        "queue-extender",
    ]
