"""Every object validates against the Kubernetes API schemas the cluster will apply it with."""

from __future__ import annotations

import kubernetes_validate  # type: ignore[import-untyped]
import pytest

from .deploy_manifests import DEPLOY_DIR, Manifest, load_documents, load_kustomization, object_key

KUBERNETES_VERSIONS = ["1.36", "1.37"]

#: Our kinds; anything else in the output is a surprise (a CRD copy, a stray test object).
EXPECTED_KINDS = {
    "Namespace",
    "ServiceAccount",
    "ClusterRole",
    "ClusterRoleBinding",
    "Role",
    "RoleBinding",
    "ConfigMap",
    "Deployment",
    "Service",
    "NetworkPolicy",
    "PodDisruptionBudget",
    "ValidatingAdmissionPolicy",
    "ValidatingAdmissionPolicyBinding",
}


@pytest.mark.parametrize("version", KUBERNETES_VERSIONS)
def test_every_object_validates_strictly(documents: list[Manifest], version: str) -> None:
    failures = []
    for document in documents:
        try:
            kubernetes_validate.validate(document, version, strict=True)
        except kubernetes_validate.ValidationError as exc:
            path = "/".join(str(p) for p in exc.path)
            failures.append(f"{object_key(document)} at {path}: {exc.message}")
    assert not failures, "\n".join(failures)


def test_strict_validation_catches_an_unknown_field() -> None:
    """The validator is really strict: a misspelt field must not pass unnoticed."""
    deployment = next(d for d in load_kustomization() if d["kind"] == "Deployment")
    broken = {**deployment, "spec": {**deployment["spec"], "replica": 1}}
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(broken, KUBERNETES_VERSIONS[0], strict=True)


def test_only_expected_kinds(documents: list[Manifest]) -> None:
    assert {d["kind"] for d in documents} <= EXPECTED_KINDS


def test_object_names_are_unique(documents: list[Manifest]) -> None:
    keys = [object_key(d) for d in documents]
    assert len(keys) == len(set(keys))


def test_every_deploy_manifest_is_in_the_kustomization() -> None:
    """A manifest file kustomize does not list would silently never be applied."""
    listed = set(load_kustomization_resources())
    on_disk = {p.name for p in DEPLOY_DIR.glob("*.yaml")} - {"kustomization.yaml"}
    assert on_disk == listed


def load_kustomization_resources() -> list[str]:
    text = (DEPLOY_DIR / "kustomization.yaml").read_text()
    (kustomization,) = load_documents(text, "kustomization.yaml")
    resources: list[str] = kustomization["resources"]
    return resources


def test_namespaced_objects_name_their_namespace(documents: list[Manifest]) -> None:
    """kustomization.yaml sets no namespace, so each namespaced object must carry one."""
    cluster_scoped = {
        "Namespace",
        "ClusterRole",
        "ClusterRoleBinding",
        "ValidatingAdmissionPolicy",
        "ValidatingAdmissionPolicyBinding",
    }
    for document in documents:
        if document["kind"] not in cluster_scoped:
            assert document["metadata"].get("namespace"), object_key(document)
