"""A cluster YAML loads whole or fails with one line naming the document and field."""

from __future__ import annotations

from pathlib import Path

import pytest

from scheduler_core.cache.yaml_source import ClusterFileError, load_cluster_file, load_cluster_text

NODE = """
apiVersion: v1
kind: Node
metadata: {name: n1}
status: {allocatable: {cpu: "4", memory: 8Gi, pods: "110"}}
"""


def test_multi_document_and_list_forms_are_both_read() -> None:
    list_doc = """
apiVersion: v1
kind: List
items:
- apiVersion: scheduling.volcano.sh/v1beta1
  kind: Queue
  metadata: {name: q}
- apiVersion: v1
  kind: Service
  metadata: {name: s}
"""
    loaded = load_cluster_text(NODE + "---\n" + list_doc)
    assert [n.name for n in loaded.objects.nodes] == ["n1"]
    assert [q.name for q in loaded.objects.queues] == ["q"]
    assert loaded.skipped == {"Service": 1}
    assert "1 Service" in loaded.skipped_summary()


def test_known_kind_of_another_api_group_is_skipped() -> None:
    text = "apiVersion: scheduling.incubator.k8s.io/v1alpha1\nkind: Queue\nmetadata: {name: q}\n"
    loaded = load_cluster_text(text)
    assert loaded.objects.queues == [] and loaded.skipped == {"Queue": 1}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "kind: Pod\napiVersion: v1\nmetadata: {name: p}\nspec: {}\n",
            "document 1: Pod default/p: spec.containers is required",
        ),
        (
            NODE + "---\napiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: x}\nspec:\n"
            "  containers: [{name: c, resources: {requests: {memory: 1Qi}}}]\n",
            "document 2: Pod x/p: spec.containers[0].resources.requests",
        ),
        ("apiVersion: v1\nkind: Node\nmetadata: {}\n", "document 1: Node: metadata.name"),
        ("a: [1, 2\n", "YAML error"),
        ("- 1\n- 2\n", "document 1: expected a Kubernetes object"),
        ("metadata: {name: x}\n", "document 1: 'kind' is required"),
        (
            "apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata: {name: q}\n"
            "spec: {capability: {cpu: many}}\n",
            "document 1: Queue q: spec.capability",
        ),
    ],
)
def test_bad_input_is_one_clear_error(text: str, message: str) -> None:
    with pytest.raises(ClusterFileError) as err:
        load_cluster_text(text, "c.yaml")
    assert message in str(err.value)
    assert str(err.value).startswith("c.yaml")
    assert "\n" not in str(err.value)


def test_unreadable_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(ClusterFileError, match=r"missing\.yaml: cannot read"):
        load_cluster_file(tmp_path / "missing.yaml")
    binary = tmp_path / "bin.yaml"
    binary.write_bytes(b"\xff\xfe\x00")
    with pytest.raises(ClusterFileError, match="not a text file"):
        load_cluster_file(binary)


def test_storage_and_device_objects_load_into_the_catalog() -> None:
    text = """
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: fast}
provisioner: example.com/p
volumeBindingMode: WaitForFirstConsumer
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data, namespace: ns}
spec: {storageClassName: fast, accessModes: [ReadWriteOnce]}
---
apiVersion: v1
kind: PersistentVolume
metadata: {name: pv-1}
spec: {local: {path: /mnt}, capacity: {storage: 1Gi}}
---
apiVersion: storage.k8s.io/v1
kind: CSINode
metadata: {name: n1}
spec: {drivers: [{name: d.example.com, nodeID: n1, allocatable: {count: 4}}]}
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: gpu, namespace: ns}
spec: {devices: {requests: [{name: r, exactly: {deviceClassName: gpu.example.com}}]}}
"""
    storage = load_cluster_text(text).objects.storage
    assert storage.classes["fast"].binding_mode == "WaitForFirstConsumer"
    assert storage.claims["ns/data"].storage_class == "fast"
    assert storage.volumes["pv-1"].source == "local"
    assert storage.csi_nodes["n1"].drivers == {"d.example.com": 4}
    assert not storage.resource_claims["ns/gpu"].allocated
