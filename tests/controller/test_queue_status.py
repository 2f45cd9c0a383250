"""Queue status patches: allocated as a ResourceList, counters, and a state never overwritten."""

from __future__ import annotations

from scheduler_core.api.resource import Resource
from scheduler_core.controller.queue_status import resource_list, status_patch


def test_allocated_is_written_in_kubernetes_quantities() -> None:
    assert resource_list(Resource(1500.0, 2 * 2**30)) == {"cpu": "1500m", "memory": "2147483648"}
    assert resource_list(Resource(2000.0, 0.0)) == {"cpu": "2", "memory": "0"}


def test_an_empty_status_gets_allocated_counters_and_open() -> None:
    patch = status_patch({}, Resource(1000.0, 0.0), {"Running": 2, "Pending": 1})
    assert patch == {
        "allocated": {"cpu": "1", "memory": "0"},
        "pending": 1,
        "running": 2,
        "state": "Open",
    }  # an absent counter reads as 0: zeros are not written


def test_closed_and_closing_are_never_overwritten() -> None:
    for state in ("Closed", "Closing"):
        patch = status_patch({"state": state}, Resource(0.0, 0.0), {})
        assert "state" not in patch


def test_nothing_changed_means_an_empty_patch() -> None:
    current = {
        "state": "Open",
        "allocated": {"cpu": "1", "memory": "0"},
        "running": 1,
    }
    assert status_patch(current, Resource(1000.0, 0.0), {"Running": 1}) == {}


def test_a_resource_that_is_gone_is_removed_from_allocated() -> None:
    current = {"state": "Open", "allocated": {"cpu": "1", "memory": "0", "nvidia.com/gpu": "1"}}
    patch = status_patch(current, Resource(1000.0, 0.0), {})
    assert patch["allocated"]["nvidia.com/gpu"] is None
