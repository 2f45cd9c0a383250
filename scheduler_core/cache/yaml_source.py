"""Read a cluster described as Kubernetes YAML (``kubectl get -o yaml`` output).

Multi-document files and ``kind: List`` documents are both accepted. Objects of kinds the
engine does not read are counted and skipped (a whole ``kubectl get all`` dump works); an
object of a known kind that is broken stops the load with one line naming the document,
the object and the field, before anything is used.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from scheduler_core.cache.convert import ConversionError, describe
from scheduler_core.cache.objects import ClusterObjects, add_object

#: kind -> API groups accepted for it ("" is the core group).
KNOWN_KINDS: dict[str, frozenset[str]] = {
    "Pod": frozenset({""}),
    "Node": frozenset({""}),
    "PriorityClass": frozenset({"scheduling.k8s.io"}),
    "PodDisruptionBudget": frozenset({"policy"}),
    "Queue": frozenset({"scheduling.volcano.sh"}),
    "PodGroup": frozenset({"scheduling.volcano.sh"}),
    "PersistentVolumeClaim": frozenset({""}),
    "PersistentVolume": frozenset({""}),
    "StorageClass": frozenset({"storage.k8s.io"}),
    "CSINode": frozenset({"storage.k8s.io"}),
    "ResourceClaim": frozenset({"resource.k8s.io"}),
    "Namespace": frozenset({""}),
    "HyperNode": frozenset({"topology.volcano.sh"}),
}


NAMESPACED = frozenset(
    {"Pod", "PodDisruptionBudget", "PodGroup", "PersistentVolumeClaim", "ResourceClaim"}
)


class ClusterFileError(ValueError):
    """The file cannot be used; one line naming the file, the document and the field."""


@dataclass(slots=True)
class LoadedCluster:
    objects: ClusterObjects
    skipped: Counter[str] = field(default_factory=Counter)

    def skipped_summary(self) -> str:
        parts = [f"{count} {kind}" for kind, count in sorted(self.skipped.items())]
        return "skipped objects of kinds the engine does not read: " + ", ".join(parts)


def _group(api_version: Any) -> str:
    text = api_version if isinstance(api_version, str) else ""
    return text.rsplit("/", 1)[0] if "/" in text else ""


def _documents(text: str, source: str) -> Iterator[tuple[int, Any]]:
    try:
        for index, doc in enumerate(yaml.safe_load_all(text), start=1):
            if doc is None:
                continue
            if isinstance(doc, dict) and doc.get("kind") == "List":
                for item in doc.get("items") or []:
                    yield index, item
            else:
                yield index, doc
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" line {mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise ClusterFileError(f"{source}:{where}: YAML error: {problem}") from exc


def _check_required(obj: Mapping[str, Any], kind: str) -> None:
    meta = obj.get("metadata")
    if not isinstance(meta, dict) or not isinstance(meta.get("name"), str) or not meta["name"]:
        raise ConversionError(f"{kind}: metadata.name is required")
    namespace = str(meta.get("namespace") or ("default" if kind in NAMESPACED else ""))
    label = describe(kind, namespace, meta["name"])
    spec = obj.get("spec")
    if kind == "Pod" and (
        not isinstance(spec, dict) or not isinstance(spec.get("containers"), list)
    ):
        raise ConversionError(f"{label}: spec.containers is required")
    if kind == "PodGroup" and not isinstance(spec, dict):
        raise ConversionError(f"{label}: spec is required")
    if kind == "PriorityClass" and "value" not in obj:
        raise ConversionError(f"{label}: value is required")


def load_cluster_text(text: str, source: str = "<cluster>") -> LoadedCluster:
    objects = ClusterObjects()
    skipped: Counter[str] = Counter()
    for index, obj in _documents(text, source):
        if not isinstance(obj, dict):
            raise ClusterFileError(f"{source}: document {index}: expected a Kubernetes object")
        kind = obj.get("kind")
        if not isinstance(kind, str) or not kind:
            raise ClusterFileError(f"{source}: document {index}: 'kind' is required")
        if kind not in KNOWN_KINDS or _group(obj.get("apiVersion")) not in KNOWN_KINDS[kind]:
            skipped[kind] += 1
            continue
        try:
            _check_required(obj, kind)
            add_object(objects, obj)
        except ConversionError as exc:
            raise ClusterFileError(f"{source}: document {index}: {exc}") from exc
    return LoadedCluster(objects=objects, skipped=skipped)


def load_cluster_file(path: str | Path) -> LoadedCluster:
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ClusterFileError(f"{path}: cannot read: {exc.strerror or exc}") from exc
    except UnicodeDecodeError as exc:
        raise ClusterFileError(f"{path}: not a text file: {exc.reason}") from exc
    return load_cluster_text(text, str(path))
