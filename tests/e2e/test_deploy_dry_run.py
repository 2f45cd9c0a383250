"""deploy/ and the rendered Helm chart, sent to the real kube-apiserver with a server-side dry run.

The offline checks in tests/deploy validate the manifests against published schemas; only the
API server itself knows what it accepts today (defaulting, strict field validation, CRD
structural schemas, RBAC and NetworkPolicy validation). Each object is sent the way
``kubectl apply --server-side --force-conflicts --dry-run=server`` sends it: an apply patch with
``dryRun=All`` and ``fieldValidation=Strict``, so unknown or duplicated fields fail as well as
wrong types, and an object that already exists (the CRDs the test bed installed) is validated as
an update instead of failing on who owns its fields. Nothing is persisted, except the
namespaces the objects live in, which must exist for real.
"""

from __future__ import annotations

import contextlib
import itertools
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import pytest
import yaml
from kubernetes import client
from kubernetes.dynamic import DynamicClient
from kubernetes.dynamic.exceptions import ApiException as DynamicApiException
from kubernetes.dynamic.exceptions import ResourceNotFoundError

from tests.deploy.deploy_manifests import (
    CHART_DIR,
    DEPLOY_DIR,
    Manifest,
    load_documents,
    load_kustomization,
    rendered_documents,
)
from tests.deploy.layouts import CHART_LAYOUTS

FIELD_MANAGER = "e2e-dry-run"

#: Kinds a layout may carry whose API only an add-on serves (the Prometheus operator's):
#: this control plane does not, so such objects are listed, never sent. Anything else that is
#: not served is a failure (a typo in apiVersion or kind).
OPTIONAL_KINDS = frozenset(
    {
        ("monitoring.coreos.com/v1", "ServiceMonitor"),
        ("monitoring.coreos.com/v1", "PodMonitor"),
        ("monitoring.coreos.com/v1", "PrometheusRule"),
    }
)

_fresh = itertools.count(1)


def switched_on(values: dict[str, Any]) -> dict[str, Any]:
    """Overrides turning on every boolean the chart's values.yaml defaults to false."""
    overrides: dict[str, Any] = {}
    for key, value in values.items():
        if value is False:
            overrides[key] = True
        elif isinstance(value, dict) and (nested := switched_on(value)):
            overrides[key] = nested
    return overrides


def every_switch_on() -> dict[str, Any]:
    """The chart with every feature on at once (a switch added later is on here too); TLS
    needs the name of its Secret besides."""
    overrides = switched_on(yaml.safe_load((CHART_DIR / "values.yaml").read_text()))
    overrides["extender"]["tls"]["secretName"] = "queue-extender-tls"
    return overrides


def describe(document: Manifest) -> str:
    metadata = document.get("metadata", {})
    where = f"{metadata['namespace']}/" if metadata.get("namespace") else ""
    return f"{document.get('apiVersion')} {document.get('kind')} {where}{metadata.get('name')}"


@dataclass
class DryRun:
    """What the API server said about each object of one layout."""

    accepted: list[str] = field(default_factory=list)
    rejected: list[str] = field(default_factory=list)
    unserved: list[Manifest] = field(default_factory=list)


def dry_run_apply(dynamic: DynamicClient, documents: Iterable[Manifest]) -> DryRun:
    """Sends every object as a server-side apply with ``dryRun=All``; collects the verdicts."""
    result = DryRun()
    for document in documents:
        try:
            resource = dynamic.resources.get(
                api_version=document["apiVersion"], kind=document["kind"]
            )
        except ResourceNotFoundError:
            result.unserved.append(document)
            continue
        try:
            dynamic.server_side_apply(
                resource,
                body=document,
                namespace=document.get("metadata", {}).get("namespace"),
                field_manager=FIELD_MANAGER,
                force_conflicts=True,
                dry_run="All",
                query_params=[("fieldValidation", "Strict")],
            )
        except (client.ApiException, DynamicApiException) as exc:
            reason = getattr(exc, "summary", lambda: None)() or getattr(exc, "body", exc)
            result.rejected.append(f"{describe(document)}: {exc.status} {reason}")
        else:
            result.accepted.append(describe(document))
    return result


def ensure_namespaces(core: Any, documents: Iterable[Manifest]) -> None:
    """Creates (for real) every namespace the objects live in; a dry-run Namespace does not.

    Namespaces are never deleted: no namespace controller runs here to finish the deletion.
    """
    for name in sorted(
        {d["metadata"]["namespace"] for d in documents if "namespace" in d.get("metadata", {})}
    ):
        with contextlib.suppress(client.ApiException):  # 409: already there (kube-system)
            core.create_namespace({"metadata": {"name": name}})


def crd_documents() -> list[Manifest]:
    documents: list[Manifest] = []
    for path in sorted((DEPLOY_DIR / "crds").glob("*.yaml")):
        documents.extend(load_documents(path.read_text(), str(path)))
    return documents


@pytest.fixture(scope="module")
def dynamic(api: Any) -> DynamicClient:
    return DynamicClient(api)


@pytest.fixture(scope="module")
def core(api: Any) -> Any:
    return client.CoreV1Api(api)


@pytest.fixture(scope="module")
def chart_namespace(core: Any) -> str:
    """A fresh namespace for the chart's releases: the chart must not assume its default."""
    name = f"chart-dry-run-{int(time.time()) % 100000}-{next(_fresh)}"
    core.create_namespace({"metadata": {"name": name}})
    return name


def layout(name: str, chart_namespace: str) -> list[Manifest]:
    if name == "deploy":
        return load_kustomization()
    if name == "deploy-crds":
        return crd_documents()
    if name == "chart-every-switch-on":
        return rendered_documents(every_switch_on(), namespace=chart_namespace)
    return rendered_documents(CHART_LAYOUTS[name], namespace=chart_namespace)


@pytest.mark.parametrize("name", ["deploy", "deploy-crds", *CHART_LAYOUTS, "chart-every-switch-on"])
def test_every_object_is_accepted_by_the_api_server(
    name: str, dynamic: DynamicClient, core: Any, chart_namespace: str
) -> None:
    documents = layout(name, chart_namespace)
    assert documents
    ensure_namespaces(core, documents)
    result = dry_run_apply(dynamic, documents)
    assert result.rejected == []
    expected_unserved = [d for d in documents if (d["apiVersion"], d["kind"]) in OPTIONAL_KINDS]
    assert [describe(d) for d in result.unserved] == [describe(d) for d in expected_unserved]
    assert len(result.accepted) == len(documents) - len(expected_unserved)


def test_every_switch_on_turns_on_the_known_features() -> None:
    """The automatic layout above really covers TLS and metrics (the writers, the reclaim loop
    and status write-back, are on by default: every layout renders them)."""
    values = every_switch_on()
    assert values["metrics"]["enabled"] is True
    assert values["extender"]["tls"]["enabled"] is True
    assert values["extender"]["tls"]["clientAuth"] is True
    assert values["extender"]["listenAll"] is True


def test_a_dry_run_leaves_nothing_behind(dynamic: DynamicClient, core: Any) -> None:
    """Only the namespace is real: the Deployment of deploy/ was checked, not created."""
    documents = load_kustomization()
    ensure_namespaces(core, documents)
    assert dry_run_apply(dynamic, documents).rejected == []
    deployment = next(d for d in documents if d["kind"] == "Deployment")
    apps = client.AppsV1Api(core.api_client)
    with pytest.raises(client.ApiException) as missing:
        apps.read_namespaced_deployment(
            deployment["metadata"]["name"], deployment["metadata"]["namespace"]
        )
    assert missing.value.status == 404


def _broken_deployment(namespace: str, **spec: Any) -> Manifest:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "broken", "namespace": namespace},
        "spec": {
            "selector": {"matchLabels": {"app": "broken"}},
            "template": {
                "metadata": {"labels": {"app": "broken"}},
                "spec": {"containers": [{"name": "main", "image": "registry.k8s.io/pause:3.10"}]},
            },
            **spec,
        },
    }


def test_a_wrongly_typed_field_is_rejected(dynamic: DynamicClient, chart_namespace: str) -> None:
    """The dry run is real: the API server's schema check answers, not a local stub."""
    result = dry_run_apply(dynamic, [_broken_deployment(chart_namespace, replicas="two")])
    assert result.accepted == []
    (message,) = result.rejected
    assert "apps/v1 Deployment" in message
    assert "replicas" in message


def test_an_unknown_field_is_rejected(dynamic: DynamicClient, chart_namespace: str) -> None:
    """Strict field validation: a misspelt field fails instead of being dropped silently."""
    result = dry_run_apply(dynamic, [_broken_deployment(chart_namespace, replica=2)])
    (message,) = result.rejected
    assert "replica" in message


def test_a_queue_violating_the_crd_schema_is_rejected(dynamic: DynamicClient) -> None:
    queue = {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": {"name": "dry-run-bad-queue"},
        "spec": {"weight": "heavy"},
    }
    (message,) = dry_run_apply(dynamic, [queue]).rejected
    assert "weight" in message


def test_an_existing_object_is_validated_too(dynamic: DynamicClient) -> None:
    """The CRDs exist already (the test bed installed them): a broken copy must still fail."""
    crd = next(d for d in crd_documents() if d["spec"]["names"]["kind"] == "Queue")
    broken = {**crd, "spec": {**crd["spec"], "scope": "Galaxy"}}
    (message,) = dry_run_apply(dynamic, [broken]).rejected
    assert "scope" in message


def test_an_add_on_kind_is_listed_not_sent(dynamic: DynamicClient, chart_namespace: str) -> None:
    monitor = {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "ServiceMonitor",
        "metadata": {"name": "queue-extender", "namespace": chart_namespace},
        "spec": {"endpoints": [{"port": "metrics"}]},
    }
    result = dry_run_apply(dynamic, [monitor])
    assert result.unserved == [monitor]
    assert result.accepted == result.rejected == []
