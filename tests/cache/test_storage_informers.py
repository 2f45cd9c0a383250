"""The storage and device informers feed the cluster state's catalog: claims binding,
volumes, classes, CSI nodes and resource claims arrive, change and leave as the API server
says, and readiness waits for them."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from scheduler_core.cache.informers import InformerSet
from scheduler_core.cache.kinds import STORAGE_KINDS
from scheduler_core.cache.state import ClusterState
from tests.builders import csinode, pv, pvc, resource_claim, storage_class
from tests.cache.conftest import FAST, TOKEN
from tests.fakeapi import FakeApiServer, wait_until, write_kubeconfig


@pytest.fixture
def state_informers(fake_api: FakeApiServer, tmp_path: Path) -> Iterator[ClusterState]:
    fake_api.token = TOKEN
    kubeconfig = str(write_kubeconfig(tmp_path / "kubeconfig", fake_api.url, token=TOKEN))
    state = ClusterState()
    informers = InformerSet(state, kubeconfig=kubeconfig, kinds=STORAGE_KINDS, options=FAST)
    informers.start()
    try:
        assert informers.wait_for_sync(5)
        yield state
    finally:
        informers.stop()


def test_storage_objects_reach_the_catalog_and_follow_updates(
    fake_api: FakeApiServer, state_informers: ClusterState
) -> None:
    state = state_informers
    assert state.has_synced([spec.kind for spec in STORAGE_KINDS])
    fake_api.add("StorageClass", storage_class("fast"))
    fake_api.add("PersistentVolumeClaim", pvc("data", storage_class="fast"))
    fake_api.add("CSINode", csinode("n1", {"ebs.csi.example.com": 3}))
    fake_api.add("ResourceClaim", resource_claim("gpu"))
    catalog = state.snapshot().storage
    wait_until(
        lambda: (
            "ns/data" in catalog.claims
            and "fast" in catalog.classes
            and "n1" in catalog.csi_nodes
            and "ns/gpu" in catalog.resource_claims
        ),
        message="storage objects listed",
    )
    assert catalog.claims["ns/data"].volume_name == ""
    assert catalog.classes["fast"].binding_mode == "WaitForFirstConsumer"
    assert catalog.csi_nodes["n1"].drivers == {"ebs.csi.example.com": 3}
    assert not catalog.resource_claims["ns/gpu"].allocated

    fake_api.add("PersistentVolume", pv("pv-1", hostname="n2"))
    fake_api.update("PersistentVolumeClaim", pvc("data", volume="pv-1", storage_class="fast"))
    fake_api.update("ResourceClaim", resource_claim("gpu", allocated_on="n1"))
    wait_until(
        lambda: (
            catalog.claims["ns/data"].volume_name == "pv-1"
            and "pv-1" in catalog.volumes
            and catalog.resource_claims["ns/gpu"].allocated
        ),
        message="claim bound, devices allocated",
    )
    fake_api.delete("PersistentVolumeClaim", "ns/data")
    wait_until(lambda: "ns/data" not in catalog.claims, message="claim deleted")


def test_a_storage_event_moves_the_decision_version_but_no_structure(
    fake_api: FakeApiServer, state_informers: ClusterState
) -> None:
    state = state_informers
    with state.locked():
        before = state.decision_version
    fake_api.add("PersistentVolumeClaim", pvc("data"))
    wait_until(lambda: state.decision_version > before, message="version moved")
    with state.locked():
        changes = state.changes.since(before)
    assert changes is not None and not changes  # followable: no job, no node changed
