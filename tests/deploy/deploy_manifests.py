"""Loading deploy/ and the helm chart into plain objects, so every check runs on both alike.

The plain manifests are read the way `kubectl apply -k deploy/` would take them (the
resources its kustomization lists, in order); the chart is rendered offline by Helm itself
(helm-python-sdk drives Helm's Go library, no binary, no cluster).
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import helm_python as helm
import yaml
from helm_python import _native

ROOT = Path(__file__).resolve().parents[2]
DEPLOY_DIR = ROOT / "deploy"
CHART_DIR = ROOT / "helm" / "kube-queue-extender"
DOCKERFILE = ROOT / "Dockerfile"
DOCKERIGNORE = ROOT / ".dockerignore"
PROBE_SCRIPT = DEPLOY_DIR / "healthprobe.py"

#: deploy/ is the chart rendered under this release name and namespace.
RELEASE = "kube-queue-extender"
NAMESPACE = "kube-queue-extender"
SCHEDULER_NAME = "queue-scheduler"
#: The API server version the chart is rendered for: `helm install` takes it from the cluster
#: (.Capabilities.KubeVersion), and the kube-scheduler image tag follows it by default.
KUBE_VERSION = "v1.36.2"

#: Labels and annotations only Helm adds; deploy/ has no use for them.
HELM_ONLY_LABELS = ("helm.sh/chart", "app.kubernetes.io/managed-by")
HELM_ONLY_ANNOTATION_PREFIX = "checksum/"

Manifest = dict[str, Any]


def load_documents(text: str, source: str) -> list[Manifest]:
    """Every non-empty YAML document of ``text``; each must be a mapping."""
    documents: list[Manifest] = []
    for index, document in enumerate(yaml.safe_load_all(text)):
        if document is None:
            continue
        if not isinstance(document, dict):
            raise AssertionError(f"{source}: document {index} is not a mapping")
        documents.append(document)
    return documents


def load_kustomization(directory: Path = DEPLOY_DIR) -> list[Manifest]:
    """The objects `kubectl apply -k directory` would apply (plain resources only)."""
    kustomization = yaml.safe_load((directory / "kustomization.yaml").read_text())
    unsupported = set(kustomization) - {"apiVersion", "kind", "resources"}
    if unsupported:
        # Anything else (namespace:, patches, generators) would change the objects: the
        # checks here would then not be looking at what gets applied.
        raise AssertionError(f"kustomization.yaml uses {sorted(unsupported)}; extend the loader")
    documents: list[Manifest] = []
    for resource in kustomization["resources"]:
        path = directory / resource
        documents.extend(load_documents(path.read_text(), str(path)))
    return documents


def render_chart(
    values: dict[str, Any] | None = None,
    namespace: str = NAMESPACE,
    kube_version: str = KUBE_VERSION,
) -> dict[str, str]:
    """Template path -> rendered text, as `helm template --kube-version` would produce it.

    ``Chart.render`` of helm-python-sdk 0.2 has no kube-version keyword, but the library's
    render call takes the option (it rejects unknown ones): call it the way ``render`` does.
    """
    options = {"name": RELEASE, "namespace": namespace, "is_install": True}
    options["kube_version"] = kube_version
    with helm.Chart.load(CHART_DIR) as chart:
        rendered = _native.call_string(
            "helm_render",
            chart._raw(),
            None if values is None else json.dumps(values),
            json.dumps(options),
        )
    manifests: dict[str, str] = json.loads(rendered)
    return manifests


def rendered_documents(
    values: dict[str, Any] | None = None,
    namespace: str = NAMESPACE,
    kube_version: str = KUBE_VERSION,
) -> list[Manifest]:
    documents: list[Manifest] = []
    for path, text in sorted(render_chart(values, namespace, kube_version).items()):
        if path.endswith(".yaml"):
            documents.extend(load_documents(text, path))
    return documents


def find_all(documents: list[Manifest], kind: str) -> list[Manifest]:
    return [d for d in documents if d.get("kind") == kind]


def find(documents: list[Manifest], kind: str, name: str | None = None) -> Manifest:
    """The one object of ``kind`` (named ``name`` when given); fails if not exactly one."""
    matches = [
        d for d in find_all(documents, kind) if name is None or d["metadata"]["name"] == name
    ]
    if len(matches) != 1:
        raise AssertionError(f"expected one {kind} {name or ''}, found {len(matches)}")
    return matches[0]


def pod_spec(documents: list[Manifest]) -> dict[str, Any]:
    spec: dict[str, Any] = find(documents, "Deployment")["spec"]["template"]["spec"]
    return spec


def containers(documents: list[Manifest]) -> dict[str, dict[str, Any]]:
    """Every container of the Deployment (init containers too), by name."""
    spec = pod_spec(documents)
    every = list(spec.get("initContainers", [])) + list(spec["containers"])
    return {c["name"]: c for c in every}


def option_value(args: list[str], flag: str) -> str | None:
    """The value of ``flag`` in an argv list, as ``--flag value`` or ``--flag=value``."""
    for index, arg in enumerate(args):
        if arg == flag and index + 1 < len(args):
            return args[index + 1]
        if arg.startswith(flag + "="):
            return arg.split("=", 1)[1]
    return None


def mounted_file(documents: list[Manifest], container: dict[str, Any], path: str) -> str:
    """The text of the ConfigMap key that ``path`` resolves to inside ``container``."""
    volumes = {v["name"]: v for v in pod_spec(documents)["volumes"]}
    for mount in container.get("volumeMounts", []):
        prefix = mount["mountPath"].rstrip("/") + "/"
        if not path.startswith(prefix):
            continue
        volume = volumes[mount["name"]]
        if "configMap" not in volume:
            raise AssertionError(f"{path} is mounted from a {sorted(volume)} volume")
        config_map = find(documents, "ConfigMap", volume["configMap"]["name"])
        key = path[len(prefix) :]
        data: dict[str, str] = config_map["data"]
        if key not in data:
            raise AssertionError(f"ConfigMap {config_map['metadata']['name']} has no key {key}")
        return data[key]
    raise AssertionError(f"{path} is not under any volume mount of {container['name']}")


def scheduler_config_path(documents: list[Manifest]) -> str:
    args = containers(documents)["kube-scheduler"]["args"]
    path = option_value(args, "--config")
    if path is None:
        raise AssertionError("kube-scheduler runs without --config")
    return path


def scheduler_configuration(documents: list[Manifest]) -> dict[str, Any]:
    """The KubeSchedulerConfiguration kube-scheduler actually reads (through its --config)."""
    container = containers(documents)["kube-scheduler"]
    text = mounted_file(documents, container, scheduler_config_path(documents))
    config: dict[str, Any] = yaml.safe_load(text)
    return config


def engine_configuration_text(documents: list[Manifest]) -> str:
    """The volcano-scheduler.conf the extender actually reads (through its --conf)."""
    container = containers(documents)["queue-extender"]
    path = option_value(container["args"], "--conf")
    if path is None:
        raise AssertionError("queue-extender runs without --conf")
    return mounted_file(documents, container, path)


def without_helm_bookkeeping(document: Manifest) -> Manifest:
    """``document`` less the labels and annotations only a Helm release carries."""
    stripped = copy.deepcopy(document)
    metadatas = [stripped["metadata"]]
    template = stripped.get("spec", {}).get("template")
    if isinstance(template, dict):
        metadatas.append(template.setdefault("metadata", {}))
    for metadata in metadatas:
        labels = metadata.get("labels", {})
        for label in HELM_ONLY_LABELS:
            labels.pop(label, None)
        annotations = metadata.get("annotations", {})
        for key in [k for k in annotations if k.startswith(HELM_ONLY_ANNOTATION_PREFIX)]:
            del annotations[key]
        if "annotations" in metadata and not annotations:
            del metadata["annotations"]
    return stripped


def object_key(document: Manifest) -> tuple[str, str, str]:
    metadata = document["metadata"]
    return (document["kind"], metadata.get("namespace", ""), metadata["name"])
