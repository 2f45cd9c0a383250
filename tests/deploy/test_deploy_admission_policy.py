"""The admission policy that holds the extender's ServiceAccount to the retry annotation:
shipped in every layout, enforced (Deny), aimed at the pod's own ServiceAccount, and naming
the annotation the requeue code writes."""

from __future__ import annotations

from scheduler_core.controller.requeue import RETRY_ANNOTATION
from tests.deploy.deploy_manifests import Manifest, find_all, pod_spec


def _policy(documents: list[Manifest]) -> tuple[Manifest, Manifest]:
    (policy,) = find_all(documents, "ValidatingAdmissionPolicy")
    (binding,) = find_all(documents, "ValidatingAdmissionPolicyBinding")
    return policy, binding


def test_the_policy_is_shipped_bound_and_enforced(documents: list[Manifest]) -> None:
    policy, binding = _policy(documents)
    assert binding["spec"]["policyName"] == policy["metadata"]["name"]
    assert binding["spec"]["validationActions"] == ["Deny"]
    assert policy["spec"]["failurePolicy"] == "Fail"


def test_the_policy_matches_pod_updates_by_the_pods_own_service_account(
    documents: list[Manifest], layout: str
) -> None:
    policy, _ = _policy(documents)
    (rule,) = policy["spec"]["matchConstraints"]["resourceRules"]
    assert rule["resources"] == ["pods"] and rule["operations"] == ["UPDATE"]
    account = pod_spec(documents)["serviceAccountName"]
    namespace = next(d for d in documents if d["kind"] == "Deployment")["metadata"]["namespace"]
    (condition,) = policy["spec"]["matchConditions"]
    assert f"'system:serviceaccount:{namespace}:{account}'" in condition["expression"], layout


def test_the_policy_spares_exactly_the_annotation_the_extender_writes(
    documents: list[Manifest],
) -> None:
    policy, _ = _policy(documents)
    retry = next(v for v in policy["spec"]["variables"] if v["name"] == "retry")
    assert retry["expression"] == f"'{RETRY_ANNOTATION}'"
