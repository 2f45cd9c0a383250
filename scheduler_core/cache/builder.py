"""A snapshot from converted objects, with the live cache's rules (``ClusterState``), so a
file and a cluster behave the same."""

from __future__ import annotations

from scheduler_core.api.devices import DeviceQuotaNames
from scheduler_core.api.snapshot import ClusterSnapshot
from scheduler_core.cache.objects import ClusterObjects
from scheduler_core.cache.state import ClusterState


def build_snapshot(
    objects: ClusterObjects, device_names: DeviceQuotaNames | None = None
) -> ClusterSnapshot:
    state = ClusterState()
    if device_names is not None:
        state.set_device_names(device_names)
    state.apply_objects(objects)
    with state.locked():
        return state.shared_snapshot()  # the state is ours alone: no copy needed
