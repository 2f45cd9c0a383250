"""deploy/'s ValidatingAdmissionPolicy on the real API server: the extender's ServiceAccount
(impersonated by the admin) may set the retry annotation on a pod and change nothing else;
another identity is not held to it."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

from scheduler_core.controller.requeue import RETRY_ANNOTATION
from tests.deploy.deploy_manifests import DEPLOY_DIR, NAMESPACE, load_documents
from tests.e2e.controlplane import ControlPlane, wait_for

EXTENDER_USER = f"system:serviceaccount:{NAMESPACE}:kube-queue-extender"
POLICY_FILE = DEPLOY_DIR / "admission-policy.yaml"


def _as(control_plane: ControlPlane, user: str) -> client.CoreV1Api:
    """The admin's client, impersonating ``user`` (the admin is in system:masters)."""
    api = control_plane.api_client()
    api.set_default_header("Impersonate-User", user)
    return client.CoreV1Api(api)


@pytest.fixture
def policy(api: Any) -> Iterator[None]:
    admission = client.AdmissionregistrationV1Api(api)
    documents = load_documents(POLICY_FILE.read_text(), str(POLICY_FILE))
    created: list[tuple[str, str]] = []
    for document in documents:
        if document["kind"] == "ValidatingAdmissionPolicy":
            admission.create_validating_admission_policy(body=document)
        else:
            admission.create_validating_admission_policy_binding(body=document)
        created.append((document["kind"], document["metadata"]["name"]))
    try:
        yield
    finally:
        for kind, name in reversed(created):
            if kind == "ValidatingAdmissionPolicy":
                admission.delete_validating_admission_policy(name)
            else:
                admission.delete_validating_admission_policy_binding(name)


@pytest.fixture
def pod(api: Any) -> Iterator[tuple[str, str]]:
    core = client.CoreV1Api(api)
    namespace = f"vap-{uuid.uuid4().hex[:6]}"
    core.create_namespace({"metadata": {"name": namespace}})
    core.create_namespaced_service_account(namespace, {"metadata": {"name": "default"}})
    core.create_namespaced_pod(
        namespace,
        {
            "metadata": {"name": "p", "labels": {"app": "x"}, "annotations": {"keep": "me"}},
            "spec": {"containers": [{"name": "c", "image": "busybox:1"}]},
        },
    )
    try:
        yield namespace, "p"
    finally:
        # The pod only: with no namespace controller, deleting the namespace would hang.
        core.delete_namespaced_pod("p", namespace, grace_period_seconds=0)


def _denied(call: Any) -> str:
    """The API server's refusal message, or "" when the call went through."""
    try:
        call()
    except ApiException as exc:
        if exc.status in (403, 422):
            return str(exc.body)
        raise
    return ""


def test_the_extenders_account_may_set_the_retry_annotation_and_nothing_else(
    control_plane: ControlPlane, policy: None, pod: tuple[str, str]
) -> None:
    namespace, name = pod
    extender = _as(control_plane, EXTENDER_USER)

    image = {"spec": {"containers": [{"name": "c", "image": "evil:1"}]}}

    def image_patch_denied(dry_run: str | None = "All") -> str:
        return _denied(
            lambda: extender.patch_namespaced_pod(name, namespace, image, dry_run=dry_run)
        )

    # The policy takes effect once the API server has compiled it (a second or so); the
    # probe is a dry run, so nothing changes while it does not yet.
    wait_for(image_patch_denied, 30, "the admission policy to deny an image patch")
    assert "retry annotation" in image_patch_denied(dry_run=None)
    retry = {"metadata": {"annotations": {RETRY_ANNOTATION: "2026-01-01T00:00:00Z"}}}
    assert _denied(lambda: extender.patch_namespaced_pod(name, namespace, retry)) == ""
    for change in (
        {"metadata": {"labels": {"app": "y"}}},
        {"metadata": {"annotations": {"keep": None}}},
        {"metadata": {"annotations": {"other": "x"}}},
        {"metadata": {"finalizers": ["example.com/hold"]}},
    ):
        assert "retry annotation" in _denied(
            lambda c=change: extender.patch_namespaced_pod(name, namespace, c)
        ), change
    current = client.CoreV1Api(control_plane.api_client()).read_namespaced_pod(name, namespace)
    assert current.spec.containers[0].image == "busybox:1"
    assert current.metadata.labels == {"app": "x"}
    assert current.metadata.annotations == {"keep": "me", RETRY_ANNOTATION: "2026-01-01T00:00:00Z"}


def test_another_identity_is_not_held_to_the_policy(
    control_plane: ControlPlane, policy: None, pod: tuple[str, str]
) -> None:
    namespace, name = pod
    other = _as(control_plane, "system:serviceaccount:default:someone-else")
    patch = {"metadata": {"labels": {"app": "y"}}}
    assert _denied(lambda: other.patch_namespaced_pod(name, namespace, patch)) == ""
