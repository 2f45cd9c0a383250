"""The Prometheus Operator objects: a ServiceMonitor or a PodMonitor scraping the metrics
listener, validated offline against the operator's own CRD schemas.

The schemas come as pydantic models generated from the prometheus-operator CRDs
(cloudcoil-models-prometheus-operator). The models ignore unknown fields, so a field is known
exactly when it survives a validate-and-dump round trip: a misspelt field would vanish.
"""

from __future__ import annotations

from typing import Any

import helm_python as helm
import pytest
from cloudcoil.models.prometheus_operator import v1 as monitoring

from .deploy_manifests import (
    NAMESPACE,
    Manifest,
    containers,
    find,
    find_all,
    render_chart,
    rendered_documents,
)

MODELS: dict[str, Any] = {
    "ServiceMonitor": monitoring.ServiceMonitor,
    "PodMonitor": monitoring.PodMonitor,
}
ENDPOINTS = {"ServiceMonitor": "endpoints", "PodMonitor": "podMetricsEndpoints"}
VALUE_KEY = {"ServiceMonitor": "serviceMonitor", "PodMonitor": "podMonitor"}

TLS_AND_AUTH: dict[str, Any] = {
    "scheme": "https",
    "interval": "15s",
    "scrapeTimeout": "5s",
    "labels": {"release": "kube-prometheus-stack"},
    "tlsConfig": {
        "ca": {"secret": {"name": "metrics-ca", "key": "ca.crt"}},
        "cert": {"secret": {"name": "metrics-client", "key": "tls.crt"}},
        "keySecret": {"name": "metrics-client", "key": "tls.key"},
        "serverName": "kube-queue-extender-metrics",
    },
    "authorization": {"type": "Bearer", "credentials": {"name": "scrape-token", "key": "token"}},
    "metricRelabelings": [
        {"action": "drop", "sourceLabels": ["__name__"], "regex": "python_gc_.*"}
    ],
}


def validate_strictly(document: Manifest) -> None:
    """Fails on a value the CRD schema refuses, or a field the CRD does not define."""
    model = MODELS[document["kind"]].model_validate(document)
    assert model.model_dump(by_alias=True, exclude_unset=True, mode="json") == document


def _monitor(kind: str, options: dict[str, Any] | None = None) -> list[Manifest]:
    monitor = {"enabled": True, **(options or {})}
    return rendered_documents({"metrics": {"enabled": True, VALUE_KEY[kind]: monitor}})


def test_no_monitor_by_default() -> None:
    for values in ({}, {"metrics": {"enabled": True}}):
        documents = rendered_documents(values)
        assert not find_all(documents, "ServiceMonitor") + find_all(documents, "PodMonitor")


@pytest.mark.parametrize("kind", sorted(MODELS))
@pytest.mark.parametrize("options", [{}, TLS_AND_AUTH], ids=["defaults", "tls-and-auth"])
def test_monitor_validates_against_the_operators_schema(kind: str, options: dict[str, Any]) -> None:
    documents = _monitor(kind, options)
    monitor = find(documents, kind)
    validate_strictly(monitor)
    assert monitor["metadata"]["namespace"] == NAMESPACE
    (endpoint,) = monitor["spec"][ENDPOINTS[kind]]
    for key, value in options.items():
        if key != "labels":
            assert endpoint[key] == value, key
    assert monitor["metadata"]["labels"].items() >= options.get("labels", {}).items()


def test_service_monitor_scrapes_the_metrics_service() -> None:
    documents = _monitor("ServiceMonitor")
    monitor = find(documents, "ServiceMonitor")
    service = find(documents, "Service", "kube-queue-extender-metrics")
    assert (
        monitor["spec"]["selector"]["matchLabels"].items() <= service["metadata"]["labels"].items()
    )
    assert monitor["spec"]["namespaceSelector"] == {
        "matchNames": [service["metadata"]["namespace"]]
    }
    (endpoint,) = monitor["spec"]["endpoints"]
    assert endpoint["port"] in {p["name"] for p in service["spec"]["ports"]}
    assert endpoint["path"] == "/metrics"
    assert endpoint["scheme"] == "http"


def test_pod_monitor_scrapes_the_metrics_container_port() -> None:
    documents = _monitor("PodMonitor")
    monitor = find(documents, "PodMonitor")
    pod_labels = find(documents, "Deployment")["spec"]["template"]["metadata"]["labels"]
    assert monitor["spec"]["selector"]["matchLabels"].items() <= pod_labels.items()
    (endpoint,) = monitor["spec"]["podMetricsEndpoints"]
    ports = {p["name"] for p in containers(documents)["queue-extender"]["ports"]}
    assert endpoint["port"] in ports


def test_strict_validation_catches_a_misspelt_field() -> None:
    """The round trip above can fail: an unknown endpoint field disappears in the dump."""
    monitor = find(_monitor("ServiceMonitor"), "ServiceMonitor")
    endpoint = {**monitor["spec"]["endpoints"][0], "intreval": "30s"}
    broken = {**monitor, "spec": {**monitor["spec"], "endpoints": [endpoint]}}
    with pytest.raises(AssertionError):
        validate_strictly(broken)


def test_strict_validation_catches_a_bad_value() -> None:
    monitor = find(_monitor("PodMonitor"), "PodMonitor")
    endpoint = {**monitor["spec"]["podMetricsEndpoints"][0], "scheme": "ftp"}
    broken = {**monitor, "spec": {**monitor["spec"], "podMetricsEndpoints": [endpoint]}}
    with pytest.raises(ValueError, match="scheme"):
        validate_strictly(broken)


@pytest.mark.parametrize("kind", sorted(MODELS))
def test_monitor_without_the_metrics_listener_is_refused(kind: str) -> None:
    with pytest.raises(helm.HelmError, match=r"need metrics\.enabled=true"):
        render_chart({"metrics": {VALUE_KEY[kind]: {"enabled": True}}})
