"""RBAC grants exactly what the extender needs: the stock scheduler's roles, the lease, the
extender's read-only informers (plus patching a parked pod's retry annotation) and, only with
each writer feature's switch, its own writes (reclaim loop: evictions, events, its Lease;
status write-back: PodGroups, Queue status, events) or reviews (delegated authentication:
TokenReviews, SubjectAccessReviews). One role is for users to bind, never bound by us: the
metrics reader (`get` on the non-resource URL /metrics)."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from .deploy_manifests import (
    DEPLOY_DIR,
    NAMESPACE,
    Manifest,
    containers,
    find,
    find_all,
    load_kustomization,
    object_key,
    option_value,
    pod_spec,
    rendered_documents,
    scheduler_configuration,
    without_helm_bookkeeping,
)
from .layouts import CHART_LAYOUTS

#: (namespace or "*", apiGroup, resource, resourceName or "*", verb)
Grant = tuple[str, str, str, str, str]

READ = ("get", "list", "watch")

INFORMER_GRANTS: set[Grant] = {
    ("*", group, resource, "*", verb)
    for group, resource in [
        ("", "pods"),
        ("", "nodes"),
        ("scheduling.k8s.io", "priorityclasses"),
        ("policy", "poddisruptionbudgets"),
        ("scheduling.volcano.sh", "queues"),
        ("scheduling.volcano.sh", "podgroups"),
        ("topology.volcano.sh", "hypernodes"),
        ("", "persistentvolumeclaims"),
        ("", "persistentvolumes"),
        ("storage.k8s.io", "storageclasses"),
        ("storage.k8s.io", "csinodes"),
        ("resource.k8s.io", "resourceclaims"),
        ("resource.k8s.io", "resourceclaimtemplates"),
        ("resource.k8s.io", "resourceslices"),
        ("resource.k8s.io", "deviceclasses"),
    ]
    for verb in READ
} | {
    ("*", "", "pods", "*", "patch"),  # the parked-pod retry annotation
    ("*", "", "namespaces", "*", "list"),  # pod affinity terms' namespaceSelector
    ("*", "", "namespaces", "*", "watch"),
}

EVENT_GRANTS: set[Grant] = {
    ("*", group, "events", "*", verb)
    for group in ("", "events.k8s.io")
    for verb in ("create", "patch")
}


RECLAIM_GRANTS: set[Grant] = EVENT_GRANTS | {("*", "", "pods/eviction", "*", "create")}


def _leader_grants(namespace: str, lease: str) -> set[Grant]:
    """The extender's own Lease, held by the one replica that writes or evicts, when
    kube-scheduler elects no leader (standalone mode); otherwise the extender follows the
    scheduler's Lease, which ``_lease_grants`` already lets it read."""
    return {
        (namespace, "coordination.k8s.io", "leases", "*", "create"),
        (namespace, "coordination.k8s.io", "leases", lease, "get"),
        (namespace, "coordination.k8s.io", "leases", lease, "update"),
    }


STATUS_GRANTS: set[Grant] = (
    EVENT_GRANTS
    | {
        ("*", "scheduling.volcano.sh", "podgroups", "*", verb)
        for verb in ("get", "update", "patch")
    }
    | {("*", "scheduling.volcano.sh", "queues/status", "*", verb) for verb in ("update", "patch")}
    | {("*", "scheduling.volcano.sh", "queues", "*", "patch")}
)

DELEGATED_AUTH_GRANTS: set[Grant] = {
    ("*", "authentication.k8s.io", "tokenreviews", "*", "create"),
    ("*", "authorization.k8s.io", "subjectaccessreviews", "*", "create"),
}

#: Roles the chart renders for users to bind to others (never to the pod): name suffix -> rules.
BINDABLE_ROLES: dict[str, list[dict[str, Any]]] = {
    ":metrics-reader": [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}],
}

#: Every verb any of our roles may carry; anything else (delete, escalate, bind, …) fails.
ALLOWED_VERBS = {"get", "list", "watch", "create", "update", "patch"}

#: Every switch that changes which RBAC objects render.
RBAC_SWITCHES: dict[str, dict[str, Any]] = {
    "reclaimLoop=false": {"reclaimLoop": {"enabled": False}},
    "statusWriteBack=false": {"statusWriteBack": {"enabled": False}},
    "serviceAccount.create=false": {"serviceAccount": {"create": False, "name": "byo"}},
    "metrics": {"metrics": {"enabled": True}},
    "ha": {"replicaCount": 3},
    "delegatedAuth": {"extender": {"delegatedAuth": {"enabled": True}}},
}

#: Built-in roles bound as they are, exactly as the stock kube-scheduler runs with them.
BUILT_IN_ROLES = {
    ("ClusterRole", "*", "system:kube-scheduler"),
    ("ClusterRole", "*", "system:volume-scheduler"),
    ("Role", "kube-system", "extension-apiserver-authentication-reader"),
}


def _lease_grants(namespace: str) -> set[Grant]:
    return {
        (namespace, "coordination.k8s.io", "leases", "queue-scheduler", verb)
        for verb in ("get", "update")
    }


def _switched_on(layout: str, feature: str) -> bool:
    return bool(CHART_LAYOUTS.get(layout, {}).get(feature, {}).get("enabled"))


def _delegated_auth_on(layout: str) -> bool:
    extender = CHART_LAYOUTS.get(layout, {}).get("extender", {})
    return bool(extender.get("delegatedAuth", {}).get("enabled"))


def _reclaim_on(layout: str) -> bool:
    """The reclaim loop is on unless a layout turns it off (deploy/ mirrors the default)."""
    return bool(CHART_LAYOUTS.get(layout, {}).get("reclaimLoop", {}).get("enabled", True))


def _status_on(layout: str) -> bool:
    """Status write-back is on unless a layout turns it off (deploy/ mirrors the default)."""
    return bool(CHART_LAYOUTS.get(layout, {}).get("statusWriteBack", {}).get("enabled", True))


def _expected_grants(
    namespace: str,
    reclaim: bool,
    status: bool,
    delegated_auth: bool = False,
    lease: str = "kube-queue-extender",
    scheduler_elects: bool = True,
) -> set[Grant]:
    expected = INFORMER_GRANTS | _lease_grants(namespace)
    if delegated_auth:
        expected |= DELEGATED_AUTH_GRANTS
    if reclaim:
        expected |= RECLAIM_GRANTS
    if status:
        expected |= STATUS_GRANTS
    if (reclaim or status) and not scheduler_elects:
        expected |= _leader_grants(namespace, lease)
    return expected


def _namespace(documents: list[Manifest]) -> str:
    namespace: str = find(documents, "Deployment")["metadata"]["namespace"]
    return namespace


def _bindable(role: Manifest) -> bool:
    return role["kind"] == "ClusterRole" and role["metadata"]["name"].endswith(
        tuple(BINDABLE_ROLES)
    )


def _own_roles(documents: list[Manifest]) -> dict[tuple[str, str, str], Manifest]:
    """The roles the chart renders for the pod (the ones for users to bind left out)."""
    roles = {}
    for kind in ("ClusterRole", "Role"):
        for role in find_all(documents, kind):
            if _bindable(role):
                continue
            scope = role["metadata"].get("namespace", "*") if kind == "Role" else "*"
            roles[(kind, scope, role["metadata"]["name"])] = role
    return roles


def _granted(documents: list[Manifest]) -> tuple[set[Grant], set[tuple[str, str, str]]]:
    """What the bindings give: (grants through our own roles, built-in roles bound)."""
    own = _own_roles(documents)
    grants: set[Grant] = set()
    built_in: set[tuple[str, str, str]] = set()
    for kind in ("ClusterRoleBinding", "RoleBinding"):
        for binding in find_all(documents, kind):
            ref = binding["roleRef"]
            scope = binding["metadata"]["namespace"] if kind == "RoleBinding" else "*"
            role_scope = scope if ref["kind"] == "Role" else "*"
            key = (ref["kind"], role_scope, ref["name"])
            if key not in own:
                built_in.add(key)
                continue
            for rule in own[key]["rules"]:
                for group in rule["apiGroups"]:
                    for resource in rule["resources"]:
                        for name in rule.get("resourceNames", ["*"]):
                            for verb in rule["verbs"]:
                                grants.add((scope, group, resource, name, verb))
    return grants, built_in


def test_grants_are_exactly_the_brief(layout: str, documents: list[Manifest]) -> None:
    grants, built_in = _granted(documents)
    reclaim, status = _reclaim_on(layout), _status_on(layout)
    delegated = _delegated_auth_on(layout)
    assert grants == _expected_grants(_namespace(documents), reclaim, status, delegated)
    assert built_in == BUILT_IN_ROLES


def test_no_wildcards_or_escalation_paths(documents: list[Manifest]) -> None:
    for kind in ("ClusterRole", "Role"):
        for role in find_all(documents, kind):
            assert "aggregationRule" not in role
            if _bindable(role):
                continue
            for rule in role["rules"]:
                assert "nonResourceURLs" not in rule
                for field in ("apiGroups", "resources", "verbs"):
                    assert "*" not in rule[field], (role["metadata"]["name"], field)
                assert not {"escalate", "bind", "impersonate"} & set(rule["verbs"])


def test_every_role_is_bound_and_every_binding_names_the_pods_account(
    documents: list[Manifest],
) -> None:
    own = _own_roles(documents)
    bound = set()
    account = pod_spec(documents)["serviceAccountName"]
    namespace = _namespace(documents)
    for kind in ("ClusterRoleBinding", "RoleBinding"):
        for binding in find_all(documents, kind):
            assert binding["subjects"] == [
                {"kind": "ServiceAccount", "name": account, "namespace": namespace}
            ]
            ref = binding["roleRef"]
            scope = binding["metadata"]["namespace"] if ref["kind"] == "Role" else "*"
            bound.add((ref["kind"], scope, ref["name"]))
    assert set(own) <= bound


def test_reclaim_rights_only_with_the_reclaim_loop(layout: str, documents: list[Manifest]) -> None:
    grants, _ = _granted(documents)
    can_evict = any(g[2] == "pods/eviction" for g in grants)
    assert can_evict is _reclaim_on(layout)


def _combinations() -> list[tuple[str, ...]]:
    names = sorted(RBAC_SWITCHES)
    return [c for n in range(len(names) + 1) for c in itertools.combinations(names, n)]


def _merged(switches: tuple[str, ...]) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for name in switches:
        values.update(RBAC_SWITCHES[name])
    return values


@pytest.mark.parametrize("switches", _combinations(), ids=lambda c: "+".join(c) or "defaults")
def test_every_switch_combination_grants_only_allowed_verbs(switches: tuple[str, ...]) -> None:
    """No wildcard anywhere, no verb outside the allow-list, and each writer's rights exactly
    when its switch is on, whatever else is switched."""
    documents = rendered_documents(_merged(switches))
    for kind in ("ClusterRole", "Role"):
        for role in find_all(documents, kind):
            for rule in role["rules"]:
                for field in ("apiGroups", "resources", "verbs", "resourceNames"):
                    assert "*" not in rule.get(field, []), (role["metadata"]["name"], field)
                assert set(rule["verbs"]) <= ALLOWED_VERBS, role["metadata"]["name"]
    grants, built_in = _granted(documents)
    reclaim = "reclaimLoop=false" not in switches
    status = "statusWriteBack=false" not in switches
    delegated = "delegatedAuth" in switches
    assert grants == _expected_grants(NAMESPACE, reclaim, status, delegated)
    args = containers(documents)["queue-extender"]["args"]
    assert ("--delegated-auth" in args) is delegated
    assert built_in == BUILT_IN_ROLES
    account = pod_spec(documents)["serviceAccountName"]
    created = [a["metadata"]["name"] for a in find_all(documents, "ServiceAccount")]
    assert created == ([] if "serviceAccount.create=false" in switches else [account])


def test_the_metrics_reader_is_get_on_metrics_and_bound_to_no_one(
    documents: list[Manifest],
) -> None:
    """The role a cluster admin binds to Prometheus under --delegated-auth: nothing more."""
    bindable = [r for r in find_all(documents, "ClusterRole") if _bindable(r)]
    assert [r["metadata"]["name"].rsplit(":", 1)[-1] for r in bindable] == ["metrics-reader"]
    (reader,) = bindable
    assert reader["rules"] == BINDABLE_ROLES[":metrics-reader"]
    for kind in ("ClusterRoleBinding", "RoleBinding"):
        for binding in find_all(documents, kind):
            assert binding["roleRef"]["name"] != reader["metadata"]["name"]


def test_the_plain_delegated_auth_rights_are_the_charts() -> None:
    """deploy/delegated-auth/ (applied beside deploy/ for --delegated-auth) must not drift from
    what the chart grants with extender.delegatedAuth.enabled."""
    plain = {object_key(d): d for d in load_kustomization(DEPLOY_DIR / "delegated-auth")}
    on = rendered_documents({"metrics": {"enabled": True}, **RBAC_SWITCHES["delegatedAuth"]})
    off = {object_key(d) for d in rendered_documents({"metrics": {"enabled": True}})}
    added = {object_key(d): without_helm_bookkeeping(d) for d in on if object_key(d) not in off}
    assert sorted(plain) == sorted(added)
    for key, document in plain.items():
        assert document == added[key], key
    grants, _ = _granted(list(load_kustomization()) + list(plain.values()))
    assert grants == _expected_grants(NAMESPACE, True, True, delegated_auth=True)


@pytest.mark.parametrize("scheduler_elects", [True, False])
def test_the_extender_follows_the_schedulers_lease_unless_the_scheduler_elects_none(
    scheduler_elects: bool,
) -> None:
    """Sidecar mode (no Lease of its own to write) while kube-scheduler elects a leader;
    its own Lease, and the rights to it, only when kube-scheduler does not."""
    documents = rendered_documents({"scheduler": {"leaderElect": scheduler_elects}})
    grants, _ = _granted(documents)
    assert grants == _expected_grants(NAMESPACE, True, True, scheduler_elects=scheduler_elects)
    args = containers(documents)["queue-extender"]["args"]
    assert ("--leader-elect-mode=sidecar" in args) is scheduler_elects
    if scheduler_elects:
        config = scheduler_configuration(documents)["leaderElection"]
        assert option_value(args, "--scheduler-lease-name") == config["resourceName"]
        assert option_value(args, "--scheduler-lease-namespace") == config["resourceNamespace"]
    else:
        assert option_value(args, "--leader-elect-lease-name") == "kube-queue-extender"
