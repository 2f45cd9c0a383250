"""A snapshot from converted objects, with the live cache's rules (``ClusterState``), so a
file and a cluster behave the same."""

from __future__ import annotations

from collections.abc import Sequence

from scheduler_core.api.devices import DeviceQuotaNames
from scheduler_core.api.snapshot import ClusterSnapshot
from scheduler_core.cache.objects import ClusterObjects
from scheduler_core.cache.state import ClusterState
from scheduler_core.cache.topology_source import TopologyRefusal


def build_snapshot(
    objects: ClusterObjects,
    device_names: DeviceQuotaNames | None = None,
    label_levels: Sequence[str] = (),
) -> ClusterSnapshot:
    return build_checked_snapshot(objects, device_names, label_levels)[0]


def build_checked_snapshot(
    objects: ClusterObjects,
    device_names: DeviceQuotaNames | None = None,
    label_levels: Sequence[str] = (),
) -> tuple[ClusterSnapshot, TopologyRefusal | None]:
    """The snapshot, and why its network topology was refused (None when it holds): a file
    has no earlier tree to fall back on, so its reader decides what a refusal means."""
    state = ClusterState()
    if device_names is not None:
        state.set_device_names(device_names)
    state.set_topology_levels(label_levels)
    state.apply_objects(objects)
    with state.locked():
        snapshot = state.shared_snapshot()  # the state is ours alone: no copy needed
        return snapshot, state.topology_status().refusal
