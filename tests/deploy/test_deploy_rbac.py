"""RBAC grants exactly what the brief lists: the stock scheduler's roles, the lease, the
extender's read-only informers and, only when the reclaim loop is on, evictions and events."""

from __future__ import annotations

from .deploy_manifests import Manifest, find, find_all, pod_spec
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
    ]
    for verb in READ
}

RECLAIM_GRANTS: set[Grant] = {
    ("*", "", "pods/eviction", "*", "create"),
    *{
        ("*", group, "events", "*", verb)
        for group in ("", "events.k8s.io")
        for verb in ("create", "patch")
    },
}

#: Built-in roles bound as they are, exactly as the stock kube-scheduler runs with them.
BUILT_IN_ROLES = {
    ("ClusterRole", "*", "system:kube-scheduler"),
    ("ClusterRole", "*", "system:volume-scheduler"),
    ("Role", "kube-system", "extension-apiserver-authentication-reader"),
}


def _lease_grants(namespace: str) -> set[Grant]:
    return {
        (namespace, "coordination.k8s.io", "leases", name, verb)
        for name in ("queue-scheduler", "kube-queue-extender")
        for verb in ("get", "update")
    }


def _reclaim_on(layout: str) -> bool:
    """deploy/ runs the loop; the chart does unless ``reclaimLoop.enabled`` is false."""
    return bool(CHART_LAYOUTS.get(layout, {}).get("reclaimLoop", {}).get("enabled", True))


def _namespace(documents: list[Manifest]) -> str:
    namespace: str = find(documents, "Deployment")["metadata"]["namespace"]
    return namespace


def _own_roles(documents: list[Manifest]) -> dict[tuple[str, str, str], Manifest]:
    roles = {}
    for kind in ("ClusterRole", "Role"):
        for role in find_all(documents, kind):
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
    expected = INFORMER_GRANTS | _lease_grants(_namespace(documents))
    if _reclaim_on(layout):
        expected |= RECLAIM_GRANTS
    assert grants == expected
    assert built_in == BUILT_IN_ROLES


def test_no_wildcards_or_escalation_paths(documents: list[Manifest]) -> None:
    for kind in ("ClusterRole", "Role"):
        for role in find_all(documents, kind):
            assert "aggregationRule" not in role
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
    args = [a for c in pod_spec(documents)["containers"] for a in c.get("args", [])]
    assert ("--reclaim" in args) is _reclaim_on(layout)
