"""Pod and container hardening: non-root, read-only root filesystem, no privilege escalation,
every capability dropped, a seccomp profile: the "restricted" Pod Security Standard
(https://kubernetes.io/docs/concepts/security/pod-security-standards/)."""

from __future__ import annotations

from typing import Any

import pytest

from .deploy_manifests import (
    Manifest,
    containers,
    find,
    find_all,
    load_kustomization,
    pod_spec,
)

NON_ROOT_UID = 65532

#: Volume types the restricted Pod Security Standard admits (and all this pod needs).
RESTRICTED_VOLUME_TYPES = {"configMap", "secret", "emptyDir", "projected", "downwardAPI"}


def _effective(pod: dict[str, Any], container: dict[str, Any], key: str) -> Any:
    """A securityContext field as the kubelet applies it: the container's wins over the pod's."""
    own = container.get("securityContext", {})
    if key in own:
        return own[key]
    return pod.get("securityContext", {}).get(key)


def test_every_container_is_hardened(documents: list[Manifest]) -> None:
    pod = pod_spec(documents)
    for name, container in containers(documents).items():
        context = container.get("securityContext", {})
        assert _effective(pod, container, "runAsNonRoot") is True, name
        assert _effective(pod, container, "runAsUser") == NON_ROOT_UID, name
        assert _effective(pod, container, "runAsGroup") == NON_ROOT_UID, name
        assert context.get("readOnlyRootFilesystem") is True, name
        assert context.get("allowPrivilegeEscalation") is False, name
        assert context.get("privileged", False) is False, name
        assert context.get("capabilities", {}).get("drop") == ["ALL"], name
        assert not context.get("capabilities", {}).get("add"), name
        seccomp = _effective(pod, container, "seccompProfile")
        assert seccomp == {"type": "RuntimeDefault"}, name


def test_every_container_sets_requests_and_limits(documents: list[Manifest]) -> None:
    for name, container in containers(documents).items():
        resources = container.get("resources", {})
        for bound in ("requests", "limits"):
            assert {"cpu", "memory"} <= set(resources.get(bound, {})), (name, bound)


def test_pod_shares_nothing_with_the_node(documents: list[Manifest]) -> None:
    pod = pod_spec(documents)
    for key in ("hostNetwork", "hostPID", "hostIPC", "shareProcessNamespace"):
        assert not pod.get(key), key
    for volume in pod["volumes"]:
        types = set(volume) - {"name"}
        assert types <= RESTRICTED_VOLUME_TYPES, volume
    for name, container in containers(documents).items():
        for port in container.get("ports", []):
            assert "hostPort" not in port, name


def test_images_are_pinned(documents: list[Manifest]) -> None:
    for name, container in containers(documents).items():
        image = container["image"]
        repository, _, tag = image.rpartition(":")
        assert repository and "/" not in tag, (name, image)
        assert tag and tag != "latest", (name, image)
    assert containers(documents)["kube-scheduler"]["image"] == (
        "registry.k8s.io/kube-scheduler:v1.36.2"
    )


def test_writable_paths_are_volumes(documents: list[Manifest]) -> None:
    """With a read-only root, /tmp must be a volume in each container (Python, Go TLS)."""
    for name, container in containers(documents).items():
        mounts = {m["mountPath"]: m for m in container.get("volumeMounts", [])}
        assert "/tmp" in mounts, name
        assert not mounts["/tmp"].get("readOnly", False), name
        for path, mount in mounts.items():
            if path != "/tmp":
                assert mount.get("readOnly") is True, (name, path)


@pytest.mark.parametrize("probe", ["livenessProbe", "readinessProbe"])
def test_extender_probes_hit_its_health_endpoints(documents: list[Manifest], probe: str) -> None:
    container = containers(documents)["queue-extender"]
    command = container[probe]["exec"]["command"]
    path = "/healthz" if probe == "livenessProbe" else "/readyz"
    urls = [a for a in command if a.startswith(("http://", "https://"))]
    assert len(urls) == 1
    assert urls[0].endswith(f"127.0.0.1:{_port(container)}{path}")
    # An exec probe must give up before the kubelet does.
    assert container[probe]["timeoutSeconds"] >= 2


def _port(container: dict[str, Any]) -> str:
    args: list[str] = container["args"]
    return args[args.index("--port") + 1]


@pytest.mark.parametrize("probe", ["livenessProbe", "readinessProbe"])
def test_kube_scheduler_probes_its_secure_port(documents: list[Manifest], probe: str) -> None:
    container = containers(documents)["kube-scheduler"]
    http_get = container[probe]["httpGet"]
    assert http_get["scheme"] == "HTTPS"
    assert http_get["path"] == "/healthz"
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert ports[http_get["port"]] == 10259


def test_namespace_enforces_restricted() -> None:
    namespace = find(load_kustomization(), "Namespace")
    assert namespace["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "restricted"


def test_service_account_token_is_the_only_credential(documents: list[Manifest]) -> None:
    """The pod's API identity is its one ServiceAccount; no Secret-held kubeconfig."""
    pod = pod_spec(documents)
    (account,) = find_all(documents, "ServiceAccount")
    assert pod["serviceAccountName"] == account["metadata"]["name"]
    for name, container in containers(documents).items():
        assert "--kubeconfig" not in " ".join(container.get("args", [])), name
